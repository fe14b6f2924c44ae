// The seed-000 Fig. 4 benchmark (bench/intent_bench.h) runs every
// implementation to completion: txns counted, absolute locks taken and
// granted (none timed out), and each implementation's mechanism used (LIL
// revokes cached intents, SLI reclaims and invalidates inherited ones).
#include "bench/intent_bench.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

TEST(IntentBench, EveryImplementationRunsWithAbsoluteLocks) {
  for (IntentLockKind k : {IntentLockKind::kQueue, IntentLockKind::kSli, IntentLockKind::kLil}) {
    IntentBenchOptions o;
    o.kind = k;
    o.agents = 3;
    o.absolute_share = 0.01;
    o.duration_s = 0.2;
    auto r = RunIntentBench(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->txns, 100u) << IntentLockKindName(k);
    EXPECT_GT(r->absolute, 0u) << IntentLockKindName(k);
    EXPECT_EQ(r->timeouts, 0u) << IntentLockKindName(k);
    EXPECT_GT(r->stats.absolute_grants, 0u) << IntentLockKindName(k);
    if (k == IntentLockKind::kLil) {
      EXPECT_GT(r->stats.revoked, 0u);
    }
    if (k == IntentLockKind::kSli) {
      EXPECT_GT(r->stats.reclaimed, 0u);
      EXPECT_GT(r->stats.invalidated, 0u);
    }
  }
  IntentBenchOptions bad;
  bad.absolute_share = 2;
  EXPECT_FALSE(RunIntentBench(bad).ok());
}

}  // namespace
}  // namespace detdb
