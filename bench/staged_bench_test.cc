// The seed-003 benchmark runs every mode to the end (staged_bench.h); its
// figures are printed by the program, never asserted here.
#include "bench/staged_bench.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

TEST(StagedBench, EveryModeRunsOnOneAndTwoThreads) {
  for (const std::string& mode : StagedBenchModes()) {
    for (uint32_t threads : {1u, 2u}) {
      StagedBenchOptions o;
      o.mode = mode;
      o.threads = threads;
      o.txns = 5000;
      o.txns_per_epoch = 300;  // epochs and the window straddle each other
      o.window = 64;
      o.value_bytes = 20000;   // above a quarter slab: the staged large-block path
      auto r = RunStagedBench(o);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_GT(r->txns_per_sec, 0) << mode;
      EXPECT_EQ(r->options.mode, mode);
    }
  }
}

TEST(StagedBench, RejectsAnUnknownModeAndZeroSizes) {
  StagedBenchOptions o;
  o.mode = "arena";
  EXPECT_FALSE(RunStagedBench(o).ok());
  o.mode = "staged";
  o.keys = 0;
  EXPECT_FALSE(RunStagedBench(o).ok());
}

}  // namespace
}  // namespace detdb
