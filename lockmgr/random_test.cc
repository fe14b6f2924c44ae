// Randomized differential test of every lock manager (LOCKING.md 7): seeded
// random workloads with hot keys, blind writes, keys both read and written,
// duplicate keys and tiny slot tables (hash collisions), driven with random,
// oldest-first and adversarial newest-first completion orders. At every
// dispatch no earlier conflicting txn may hold its locks (G1), every txn is
// dispatched exactly once (G4), the manager's invariants hold after every
// operation, and at the end every structure is empty (G5).
//
// DETDB_RANDOM_WORKLOADS (default 4000) sets the workloads per manager.
#include <cstdlib>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_test_driver.h"

namespace detdb {
namespace {

int Workloads() {
  const char* v = std::getenv("DETDB_RANDOM_WORKLOADS");
  return v != nullptr ? std::atoi(v) : 4000;
}

std::vector<TestTxn> RandomWorkload(std::mt19937_64& rng) {
  const int n_txn = 30 + static_cast<int>(rng() % 51);    // 30..80
  const int n_keys = 3 + static_cast<int>(rng() % 10);    // 3..12
  const int n_hot = 1 + static_cast<int>(rng() % 2);
  auto key = [&]() -> Key {
    // A third of the accesses go to the hot keys.
    const Key k = rng() % 3 == 0 ? rng() % n_hot : rng() % n_keys;
    return MakeKey(static_cast<uint32_t>(k % 2), 1000 + k);  // two tables
  };
  std::vector<TestTxn> txns;
  TxnId id = 1 + rng() % 5;
  for (int i = 0; i < n_txn; ++i) {
    TestTxn t{id, {}, {}};
    id += 1 + rng() % 3;  // ids increase but need not be dense (multi-partition)
    const int r = static_cast<int>(rng() % 4), w = static_cast<int>(rng() % 3);
    for (int j = 0; j < r; ++j) t.reads.push_back(key());
    for (int j = 0; j < w; ++j) t.writes.push_back(key());  // blind writes too
    if (rng() % 5 == 0 && !t.writes.empty()) t.reads.push_back(t.writes[0]);  // read-modify-write
    if (rng() % 7 == 0 && !t.reads.empty()) t.reads.push_back(t.reads[0]);    // duplicate key
    if (rng() % 25 == 0) t.reads.clear(), t.writes.clear();                   // no local keys
    txns.push_back(std::move(t));
  }
  return txns;
}

LockManagerOptions RandomOptions(std::mt19937_64& rng, int iteration) {
  LockManagerOptions o;
  o.check_invariants = false;  // the driver checks after every operation itself
  o.table_size = iteration % 3 == 0 ? 4u : (iteration % 3 == 1 ? 64u : 1u << 12);
  o.sca_bits = rng() % 2 ? 64u : 1u << 12;
  o.vll_blocked_threshold = 1 + static_cast<uint32_t>(rng() % 4);
  o.sca_first_hit = rng() % 2;
  o.sca_when_idle = rng() % 2;
  o.max_active = rng() % 4 == 0 ? 3 + static_cast<uint32_t>(rng() % 6) : 0;
  return o;
}

class RandomizedLockTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RandomizedLockTest, SafeLiveAndQuiescentUnderEveryCompletionOrder) {
  const int n = Workloads();
  std::mt19937_64 rng(0xdecafbadULL ^ std::hash<std::string>()(GetParam()));
  for (int it = 0; it < n; ++it) {
    const uint64_t seed = rng();
    std::mt19937_64 wrng(seed);
    const std::vector<TestTxn> txns = RandomWorkload(wrng);
    const LockManagerOptions options = RandomOptions(wrng, it);
    for (auto order : {LockTestDriver::Order::kRandom, LockTestDriver::Order::kNewestFirst,
                       LockTestDriver::Order::kOldestFirst}) {
      auto lm = NewLockManager(GetParam(), options);
      ASSERT_TRUE(lm.ok()) << lm.status();
      LockTestDriver driver(lm->get(), txns);
      std::mt19937_64 orng(seed + 1);
      absl::Status s = driver.RunToEnd(order, &orng);
      ASSERT_TRUE(s.ok()) << s << "\n  workload seed " << seed << ", iteration " << it
                          << ", order " << static_cast<int>(order) << ", table_size "
                          << options.table_size;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, RandomizedLockTest,
                         ::testing::ValuesIn(LockManagerNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace detdb
