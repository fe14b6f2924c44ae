#include "bench/lockbench.h"

#include <gtest/gtest.h>

#include "bench/micro_workload.h"

namespace detdb {
namespace {

TEST(MicroWorkload, ShapeMatchesOptions) {
  MicroWorkloadOptions o;
  o.contention = 0.1;
  o.keys_per_txn = 10;
  o.write_fraction = 0.5;
  o.cold_records = 1000;
  auto set = MicroTxnSet::Generate(o, 500);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->hot_records(), 10u);
  uint64_t writes = 0;
  for (uint64_t i = 0; i < set->size(); ++i) {
    EXPECT_EQ(set->reads(i).size() + set->writes(i).size(), 10u);
    writes += set->writes(i).size();
    int hot = 0;
    for (auto span : {set->reads(i), set->writes(i)})
      for (Key k : span) hot += KeyRow(k) < 10;
    EXPECT_EQ(hot, 1) << "txn " << i;
  }
  EXPECT_NEAR(writes / 5000.0, 0.5, 0.05);
}

TEST(MicroWorkload, RejectsBadOptions) {
  MicroWorkloadOptions o;
  o.contention = 0;
  EXPECT_FALSE(MicroTxnSet::Generate(o, 1).ok());
  o.contention = 0.5;
  o.write_fraction = 2;
  EXPECT_FALSE(MicroTxnSet::Generate(o, 1).ok());
}

TEST(LockBench, EveryLockManagerCommitsEveryTxnAndEndsQuiescent) {
  MicroWorkloadOptions o;
  o.contention = 0.1;
  o.write_fraction = 0.7;
  o.cold_records = 2000;
  auto set = MicroTxnSet::Generate(o, 3000);
  ASSERT_TRUE(set.ok());
  for (const std::string& name : LockManagerNames()) {
    LockManagerOptions lo;
    lo.table_size = 1 << 12;
    lo.max_active = 100;
    // The per-operation invariant check of debug builds (lockmgr's own
    // tests run it) walks the whole table: under TSan it made this test
    // take 40-76 s instead of milliseconds. Here the bench is tested.
    lo.check_invariants = false;
    auto lm = NewLockManager(name, lo);
    ASSERT_TRUE(lm.ok());
    auto r = RunLockBench(lm->get(), *set, LockBenchOptions{});
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_EQ(r->stats.admitted, 3000u) << name;
    EXPECT_EQ(r->stats.released, 3000u) << name;
    EXPECT_GT(r->stats.blocked_at_admission, 0u) << name << " saw no contention";
    EXPECT_LE(r->stats.peak_active, 100u) << name;
    EXPECT_GT(r->txns_per_sec, 0) << name;
  }
}

}  // namespace
}  // namespace detdb
