// Shared by the engine tests: a random read/write procedure with
// deterministic aborts, a seeded txn generator over the counter table of test_workload.h, and a
// TxnClient that collects results.
#ifndef DETDB_SCHEDULER_ENGINE_TEST_UTIL_H_
#define DETDB_SCHEDULER_ENGINE_TEST_UTIL_H_

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/hash.h"
#include "scheduler/engine.h"
#include "scheduler/test_workload.h"

namespace detdb {
namespace testing_util {

constexpr uint32_t kRandomTxnType = 2;
constexpr uint64_t kRecordsPerPartition = 64;

inline int TxnsPerRun() {
  const char* v = std::getenv("DETDB_E2E_TXNS");
  return v != nullptr ? std::atoi(v) : 3000;
}

// Reads every key of the read set; writes every key of the write set (blind
// writes included) with a value derived from all reads, the key and the id.
// Aborts (deterministically) when the reads hash to 0 mod 97.
inline absl::Status RandomProcedure(TxnContext* ctx, std::string* result) {
  uint64_t acc = 0;
  for (Key k : ctx->txn().read_set()) {
    auto v = ctx->Read(k);
    if (!v.ok()) return v.status();
    uint64_t x;
    std::memcpy(&x, v->data(), 8);
    acc = Mix64(acc + x);
  }
  if (acc % 97 == 0 && ctx->txn().read_set_size() > 0) return absl::AbortedError("unlucky reads");
  for (Key k : ctx->txn().write_set()) {
    const uint64_t nv = Mix64(acc ^ k ^ ctx->txn().id());
    absl::Status s = ctx->Write(k, std::string_view(reinterpret_cast<const char*>(&nv), 8));
    if (!s.ok()) return s;
  }
  result->assign(reinterpret_cast<const char*>(&acc), 8);
  return absl::OkStatus();
}

inline std::vector<pb::Txn> RandomTxns(uint64_t seed, int n, uint32_t partitions, uint32_t client) {
  std::mt19937_64 rng(seed);
  std::vector<pb::Txn> out;
  const uint64_t rows = kRecordsPerPartition * partitions;
  auto key = [&]() -> Key {
    const uint64_t r = rng() % 4 == 0 ? rng() % (2 * partitions) : rng() % rows;  // hot rows
    return MakeKey(kCounterTable, r);
  };
  for (int i = 0; i < n; ++i) {
    pb::Txn t;
    t.set_client_id(client);
    t.set_client_seq(i);
    if (rng() % 2 == 0) {
      t.set_type(kRandomTxnType);
      const int nr = static_cast<int>(rng() % 4), nw = static_cast<int>(rng() % 3);
      for (int j = 0; j < nr; ++j) t.add_read_set(key());
      for (int j = 0; j < nw; ++j) t.add_write_set(key());
      if (nr + nw == 0) t.add_read_set(key());
    } else {
      t.set_type(kRmwTxnType);
      const int nk = 1 + static_cast<int>(rng() % 5);
      for (int j = 0; j < nk; ++j) {
        const Key k = key();
        t.add_read_set(k);
        if (rng() % 2) t.add_write_set(k);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

class ResultCollector : public TxnClient {
 public:
  void OnResult(pb::TxnResult&& r) override {
    std::lock_guard<std::mutex> l(mu);
    ++count;
    if (!by_seq.emplace(r.client_seq(), r).second) duplicate = true;
  }
  std::mutex mu;
  int count = 0;
  bool duplicate = false;
  std::map<uint64_t, pb::TxnResult> by_seq;
};

}  // namespace testing_util
}  // namespace detdb

#endif  // DETDB_SCHEDULER_ENGINE_TEST_UTIL_H_
