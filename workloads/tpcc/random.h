// TPC-C's scale and random input (clause 4.3.2 for loading, clause 2 for
// txn inputs): a seeded generator with uniform and NURand draws, the
// alphanumeric strings, and the customer last names built from syllables.
// Everything is a pure function of the seed, so the loader and a client
// computing the last-name index on its own side agree on every name.
//
// Thread-safety: Rng is not thread-safe (one per thread); the rest is pure.
#ifndef DETDB_WORKLOADS_TPCC_RANDOM_H_
#define DETDB_WORKLOADS_TPCC_RANDOM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace detdb {
namespace tpcc {

// How much data per warehouse. Spec(): clause 4.3 (100,000 items, 3,000
// customers and 3,000 orders per district, the last 900 undelivered).
// Small(): the documented shrink for small machines and tests: 10% of items,
// customers and orders (the same proportions).
struct Scale {
  uint32_t warehouses = 1;
  uint32_t items = 100000;
  uint32_t customers_per_district = 3000;
  uint32_t orders_per_district = 3000;      // initial orders, one per customer
  uint32_t new_orders_per_district = 900;   // the last ones are undelivered

  static Scale Spec(uint32_t warehouses);
  static Scale Small(uint32_t warehouses);
  // InvalidArgument when out of range (warehouses 1..65535, items >= 1000
  // and <= 2^20, customers 30..1M, orders == customers, new orders <=
  // orders).
  absl::Status Validate() const;
  // Last names of customers come from 0 .. LastNameRange() - 1 (1,000 in
  // the spec; fewer when there are fewer customers, so that every name a
  // txn looks up exists).
  uint32_t LastNameRange() const { return customers_per_district < 1000 ? customers_per_district : 1000; }
};

// The C constants of NURand (clause 2.1.6).
struct NURandC {
  uint32_t c_last = 0, c_id = 0, ol_i_id = 0;
};
// The constants used for loading.
NURandC LoadConstants(uint64_t seed);
// The constants for a run: C_LAST differs from the load's by 65..119 (not
// 96 or 112), as clause 2.1.6.1 requires; the others are fresh.
NURandC RunConstants(const NURandC& load, uint64_t seed);

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform integer in [lo, hi].
  int64_t Uniform(int64_t lo, int64_t hi);
  // NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
  uint32_t NURand(uint32_t a, uint32_t x, uint32_t y, uint32_t c);
  // Random alphanumeric / numeric string, length uniform in [lo, hi].
  std::string AString(int lo, int hi);
  std::string NString(int lo, int hi);

  // The whole state: a generator made by FromState(state()) draws the same
  // numbers from here on as this one.
  uint64_t state() const { return state_; }
  static Rng FromState(uint64_t state) {
    Rng r(0);
    r.state_ = state;
    return r;
  }

 private:
  uint64_t state_;
};

// "BARBARBAR" ... from the three decimal digits of num (0..999), clause 4.3.2.3.
std::string LastName(uint32_t num);

// The first and last name of customer (w, d, c) as the loader writes them.
// c <= LastNameRange(): LastName(c - 1); else LastName(NURand(255, 0,
// LastNameRange() - 1, load.c_last)) with a generator seeded from (seed, w,
// d, c). First names: 8..16 random letters from the same generator.
struct CustomerName {
  std::string first, last;
};
CustomerName CustomerNameOf(const Scale& scale, const NURandC& load, uint64_t seed, uint32_t w, uint32_t d,
                            uint32_t c);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_RANDOM_H_
