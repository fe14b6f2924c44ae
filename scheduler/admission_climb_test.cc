// AdmissionController: hill-climbing on the release rate when parked txns
// (waiting for other partitions' reads) explain the workers' starvation.
#include <algorithm>
#include <cstdint>

#include <gtest/gtest.h>

#include "scheduler/admission.h"
#include "scheduler/admission_test_fixture.h"

namespace detdb {
namespace {

TEST_F(Admission, StarvingForRemoteReadsClimbsInsteadOfGrowing) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  const uint64_t w = c.window();
  c.Adjust({.starved = 1, .window_bound = true, .parked = w / 2, .now_us = 1000});
  EXPECT_TRUE(c.climbing());
  EXPECT_EQ(c.window(), w) << "no growth on starvation the parked txns explain";
  // A starvation with few txns parked still grows at once.
  AdmissionController d({.workers = 1, .max_active = 2000});
  d.Adjust({.starved = 1, .window_bound = true, .parked = w / 8, .now_us = 1000});
  EXPECT_FALSE(d.climbing());
  EXPECT_GT(d.window(), w);
}

TEST_F(Admission, ClimbFindsTheWindowWhereTheRateStopsRising) {
  // A long network delay: the rate rises with the window up to 600 txns in
  // flight, then stays flat.
  AdmissionController c({.workers = 1, .max_active = 5000});
  c.Adjust({.starved = 1, .window_bound = true, .parked = c.window(), .now_us = now_us});
  ASSERT_TRUE(c.climbing());
  auto rate = [](uint64_t w) { return static_cast<double>(std::min<uint64_t>(w, 600)) / 1000.0; };
  uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
  for (int i = 0; i < 400; ++i) {
    ParkedPeriod(&c, rate);
    if (i >= 300) {
      lo = std::min(lo, c.window());
      hi = std::max(hi, c.window());
      sum += c.window();
    }
  }
  EXPECT_TRUE(c.climbing());
  // It stays at 600-900 and tries a step (a third down, a half up) now and
  // then.
  EXPECT_GE(lo, 600u * 2 / 3 - 1) << "never far below the knee";
  EXPECT_LE(hi, 900u * 3 / 2 + 1) << "never far above it";
  EXPECT_GE(sum / 100, 500u);
  EXPECT_LE(sum / 100, 1100u);
  EXPECT_GT(c.climbs_kept(), 0u);
  EXPECT_GT(c.climbs_undone(), 0u);
}

TEST_F(Admission, ClimbShrinksWhenLockStateCostsMoreThanItFeeds) {
  // Two partitions sharing two cores: every txn in flight makes the lock
  // threads slower; the smallest window is fastest.
  AdmissionController c({.workers = 1, .max_active = 2000});
  c.Adjust({.starved = 1, .window_bound = true, .parked = c.window(), .now_us = now_us});
  auto rate = [](uint64_t w) { return 0.13 / (1.0 + static_cast<double>(w) / 400.0); };
  for (int i = 0; i < 200; ++i) ParkedPeriod(&c, rate);
  EXPECT_LE(c.window(), c.min_window() * 3 / 2 + 1);
}

TEST_F(Admission, ClimbIgnoresPartialPeriodsAndEndsWhenTheParkedShareFalls) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  c.Adjust({.starved = 1, .window_bound = true, .parked = c.window(), .now_us = now_us});
  const uint64_t w = c.window();
  // Shorter than a period, or less than a generation admitted: no step.
  c.Adjust({.admitted = w - 2, .released = 100, .parked = w, .now_us = now_us + 100});
  c.Adjust({.admitted = 1, .released = 100, .parked = w, .now_us = now_us + 10 * AdmissionController::kClimbPeriodUs});
  EXPECT_EQ(c.window(), w) << "a period is a whole generation, and long enough";
  ASSERT_TRUE(c.climbing());
  // A period in which hardly anything was parked: back to the plain rules.
  AdmissionController d({.workers = 1, .max_active = 2000});
  d.Adjust({.starved = 1, .window_bound = true, .parked = w, .now_us = now_us});
  ASSERT_TRUE(d.climbing());
  now_us += 20 * AdmissionController::kClimbPeriodUs;
  d.Adjust({.admitted = 2 * w, .released = 100, .parked = w / 8, .now_us = now_us});
  EXPECT_FALSE(d.climbing());
}

// One climbing period at `rate` txns per us with `parked` txns parked (a
// whole generation admitted, the workers fed).
void ClimbPeriod(AdmissionController* c, uint64_t* now_us, double rate, uint64_t parked) {
  *now_us += AdmissionController::kClimbPeriodUs;
  c->Adjust({.admitted = c->window(),
             .window_bound = true,
             .released = static_cast<uint64_t>(rate * AdmissionController::kClimbPeriodUs),
             .parked = parked,
             .now_us = *now_us});
}

TEST_F(Admission, AClimbStepUpNeedsTwoFasterPeriods) {
  // A flat rate measured 6% high in one period: before, that kept the step
  // up (one lucky period in five on a +-8% host); now the next period must
  // be 5% faster too.
  AdmissionController c({.workers = 1, .max_active = 2000});
  c.Adjust({.starved = 1, .window_bound = true, .parked = c.window(), .now_us = now_us});
  ASSERT_TRUE(c.climbing());
  const uint64_t base = c.window();
  ClimbPeriod(&c, &now_us, 0.4, c.window());  // the base measured; a step up
  ASSERT_GT(c.window(), base);
  const uint64_t up = c.window();
  ClimbPeriod(&c, &now_us, 0.424, c.window());  // 6% faster: checked again
  EXPECT_EQ(c.window(), up);
  EXPECT_EQ(c.climbs_kept(), 0u);
  ClimbPeriod(&c, &now_us, 0.4, c.window());  // not faster: back
  EXPECT_EQ(c.window(), base);
  EXPECT_EQ(c.climbs_undone(), 1u);
  EXPECT_TRUE(c.climbing());
  // Two faster periods keep it.
  ClimbPeriod(&c, &now_us, 0.4, c.window());  // the base again; a step down (the other way)
  ClimbPeriod(&c, &now_us, 0.3, c.window());  // slower: back, the next step up
  ASSERT_EQ(c.window(), base);
  ClimbPeriod(&c, &now_us, 0.4, c.window());  // the base; a step up
  ASSERT_EQ(c.window(), up);
  ClimbPeriod(&c, &now_us, 0.44, c.window());
  ClimbPeriod(&c, &now_us, 0.44, c.window());
  EXPECT_EQ(c.climbs_kept(), 1u);
  EXPECT_GT(c.window(), up) << "kept, and the climb goes on up";
}

TEST_F(Admission, AStepTheClimbEndsOnIsJudgedNotKeptByDefault) {
  // The period that ends the climb (the parked share fell) also ends a step
  // up. Before, the step stayed unjudged: each dip of the parked share kept
  // one step up, and the window ratcheted to 600-1,600 where 64 would do
  // (AdmissionNoise.WithParkedTxnsAndRandomStarvationTheWindowDoesNotRatchetUp).
  AdmissionController c({.workers = 1, .max_active = 2000});
  c.Adjust({.starved = 1, .window_bound = true, .parked = c.window(), .now_us = now_us});
  const uint64_t base = c.window();
  ClimbPeriod(&c, &now_us, 0.4, c.window());
  ASSERT_GT(c.window(), base);
  ClimbPeriod(&c, &now_us, 0.4, 1);  // not faster, and the climb ends
  EXPECT_FALSE(c.climbing());
  EXPECT_EQ(c.window(), base) << "not faster: back";
  EXPECT_EQ(c.climbs_undone(), 1u);

  // Faster in its first period, and the climb ends: the plain rules check
  // the period it still owes, as a growth from the base.
  AdmissionController d({.workers = 1, .max_active = 2000});
  d.Adjust({.starved = 1, .window_bound = true, .parked = d.window(), .now_us = now_us});
  ClimbPeriod(&d, &now_us, 0.4, d.window());
  const uint64_t up = d.window();
  ClimbPeriod(&d, &now_us, 0.44, 1);
  ASSERT_FALSE(d.climbing());
  EXPECT_EQ(d.window(), up) << "one faster period: still checked";
  ClimbPeriod(&d, &now_us, 0.4, 1);  // the second is not faster
  EXPECT_EQ(d.window(), base);
  EXPECT_EQ(d.grows_undone(), 1u);

  // Faster in both: kept.
  AdmissionController e({.workers = 1, .max_active = 2000});
  e.Adjust({.starved = 1, .window_bound = true, .parked = e.window(), .now_us = now_us});
  ClimbPeriod(&e, &now_us, 0.4, e.window());
  ClimbPeriod(&e, &now_us, 0.44, 1);
  ClimbPeriod(&e, &now_us, 0.44, 1);
  EXPECT_EQ(e.window(), up);
  EXPECT_EQ(e.grows_undone(), 0u);
  EXPECT_EQ(e.grows(), 1u);
  // Kept after the one period it owed (not still checked): the next period
  // measures it afresh and starts the re-check, a trial back at the base.
  ClimbPeriod(&e, &now_us, 0.44, 1);
  EXPECT_TRUE(e.trying_shrink());
  EXPECT_EQ(e.window(), base);
}

TEST_F(Admission, AGrowthStillCheckedWhenAClimbStartsIsJudgedByTheClimb) {
  // A step up handed over to the plain rules (one check owed), then a
  // worker starves with a quarter of the window parked: a new climb starts
  // at the unproven window. Before, it became the climb's base unjudged;
  // now the climb judges it first: a flat rate sends it back.
  AdmissionController c({.workers = 1, .max_active = 2000});
  c.Adjust({.starved = 1, .window_bound = true, .parked = c.window(), .now_us = now_us});
  const uint64_t base = c.window();
  ClimbPeriod(&c, &now_us, 0.4, c.window());
  const uint64_t up = c.window();
  ASSERT_GT(up, base);
  ClimbPeriod(&c, &now_us, 0.44, 1);  // faster once, and the climb ends
  ASSERT_FALSE(c.climbing());
  ASSERT_EQ(c.window(), up);
  c.Adjust({.starved = 1, .window_bound = true, .parked = up, .now_us = now_us});
  ASSERT_TRUE(c.climbing());
  ClimbPeriod(&c, &now_us, 0.4, c.window());  // not faster than the base
  EXPECT_EQ(c.window(), base);
  EXPECT_EQ(c.grows_undone(), 1u);
  EXPECT_EQ(c.grows(), 1u);
  EXPECT_TRUE(c.climbing());
}


TEST_F(Admission, FixedWindowNeverClimbs) {
  AdmissionController c({.workers = 1, .max_active = 300, .adaptive = false});
  c.Adjust({.starved = 1, .window_bound = true, .parked = 300, .now_us = 5});
  EXPECT_FALSE(c.climbing());
  EXPECT_EQ(c.window(), 300u);
}


}  // namespace
}  // namespace detdb
