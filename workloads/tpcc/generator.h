// TPC-C input generation (clause 2) for one client: which txn comes next
// (the mix), its inputs, and its read and write sets. Dependent txns
// (Delivery, Stock-Level) come as their reconnaissance first; FromRecon()
// turns a reconnaissance result into the real txn. Customers selected by
// last name (60% of Payment and Order-Status) are resolved here with a
// LastNameIndex computed from the loader's seed (C_LAST never changes, so
// that reconnaissance can never be contradicted).
//
// Inputs: home warehouse uniform over the client's warehouses; New-Order:
// district uniform 1..10, customer NURand(1023, 1, customers), 5..15 lines,
// items NURand(8191, 1, items), 1% of lines from a remote warehouse (when
// there is more than one; `remote_line`), quantity 1..10, 1% of txns with an
// unused item in the last line (rollback). Payment: 85% home customer, 15%
// remote (`remote_payment`), 60% by last name, amount 1.00..5,000.00.
// Order-Status: 60% by last name. Delivery: carrier 1..10. Stock-Level:
// threshold 10..20, district of the terminal (uniform here).
//
// Thread-safety: not thread-safe (one per client thread).
#ifndef DETDB_WORKLOADS_TPCC_GENERATOR_H_
#define DETDB_WORKLOADS_TPCC_GENERATOR_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/types.h"
#include "glog/logging.h"
#include "workloads/tpcc/random.h"
#include "proto/detdb.pb.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {

enum class TxnKind { kNewOrder = 0, kPayment = 1, kOrderStatus = 2, kDelivery = 3, kStockLevel = 4 };
inline constexpr int kNumKinds = 5;
const char* KindName(TxnKind kind);

// Percentages of New-Order, Payment, Order-Status, Delivery, Stock-Level.
struct Mix {
  std::array<double, kNumKinds> percent = {45, 43, 4, 4, 4};
  // "45,43,4,4,4" (five numbers summing to 100), or the names "full" and
  // "no+payment" (50,50,0,0,0). InvalidArgument otherwise.
  static absl::StatusOr<Mix> Parse(const std::string& text);
};

// Customers of each district by last name, sorted by first name (clause
// 2.5.2.2 picks the one at position ceil(n / 2)).
class LastNameIndex {
 public:
  LastNameIndex(const Scale& scale, const NURandC& load, uint64_t load_seed);
  // The customer to use for last name `last` in (w, d); 0 if none has it.
  uint32_t Lookup(uint32_t w, uint32_t d, const std::string& last);
  // The same for last name LastName(num) (random.h), without building the
  // string. REQUIRES: num < scale.LastNameRange().
  uint32_t LookupNumber(uint32_t w, uint32_t d, uint32_t num) {
    DCHECK_LT(num, scale_.LastNameRange());
    return Of(w, d).by_number[num];
  }

 private:
  const Scale scale_;
  const NURandC load_;
  const uint64_t seed_;
  struct District {
    absl::flat_hash_map<std::string, std::vector<uint32_t>> by_name;  // customer ids sorted by first name
    std::vector<uint32_t> by_number;  // LastName(num) -> the customer Lookup picks, or 0
  };
  // (w, d)'s, built on first use.
  District& Of(uint32_t w, uint32_t d);
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, District> districts_;
};

struct GeneratorOptions {
  Scale scale;
  uint64_t load_seed = 1;          // the seed the database was loaded with
  uint64_t seed = 1;               // this client's stream
  Mix mix;
  std::vector<uint32_t> home_warehouses;  // empty: all of 1..scale.warehouses
  double remote_line = 0.01;       // New-Order: share of lines supplied by another warehouse
  double remote_payment = 0.15;    // Payment: share of customers of another warehouse
  double by_last_name = 0.60;      // Payment, Order-Status
  double rollback = 0.01;          // New-Order: share with an unused item
};

class Generator {
 public:
  // REQUIRES: options.scale.Validate().ok().
  explicit Generator(const GeneratorOptions& options);

  struct Request {
    TxnKind kind;
    pb::Txn txn;      // type, args, read_set, write_set filled; client id/seq left to the caller
    bool recon;       // true: txn is the reconnaissance of a Delivery / Stock-Level
    uint32_t w = 0, d = 0;   // the home warehouse and district (d: Stock-Level only)
    uint32_t param = 0;      // Delivery: the carrier; Stock-Level: the threshold
    uint64_t draw = 0;       // the generator's state when it drew this request (Redraw)
  };
  Request Next();
  // The request drawn at state `draw` (a Request's `draw`), again: the same
  // txn, bytes equal. The generator's own stream is not touched. A client
  // that submits a txn by moving it out of its request rebuilds it with this
  // when it must submit it again (a refusal, a reconnaissance restart),
  // rather than keeping a copy of every txn in flight.
  Request Redraw(uint64_t draw);
  // The real txn of a dependent request, from its reconnaissance's result.
  // The same inputs (carrier, threshold) as drawn for the request.
  absl::StatusOr<pb::Txn> FromRecon(const Request& request, const std::string& recon_result);

  const GeneratorOptions& options() const { return o_; }

 private:
  // Draws one request from *rng.
  Request Draw(Rng* rng);

  std::vector<Key> reads_, writes_;  // Draw's scratch (kept: no allocation per txn)
  pb::tpcc::NewOrderArgs new_order_;  // the same: its arrays keep their capacity

  GeneratorOptions o_;
  NURandC load_, run_;
  Rng rng_;
  LastNameIndex names_;
};

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_GENERATOR_H_
