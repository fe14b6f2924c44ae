// AdmissionController: growth, trial shrinks, the release-rate checks, the
// warm-up (the climb for parked txns: admission_climb_test.cc).
#include "scheduler/admission.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "scheduler/admission_test_fixture.h"

namespace detdb {
namespace {

TEST_F(Admission, FixedWindowIsTheCap) {
  AdmissionController c({.workers = 2, .max_active = 300, .adaptive = false});
  EXPECT_EQ(c.window(), 300u);
  for (int i = 0; i < 100; ++i) Generation(&c, true);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 300u);
  EXPECT_TRUE(c.MayAdmit(299));
  EXPECT_FALSE(c.MayAdmit(300));
}

TEST_F(Admission, StartsSmallAndGrowsWhileWorkersStarveUpToTheCap) {
  AdmissionController c({.workers = 2, .max_active = 2000});
  const uint64_t start = c.window();
  EXPECT_LT(start, 2000u);
  EXPECT_GE(start, c.min_window());
  uint64_t last = start;
  int steps = 0;
  while (c.window() < 2000) {
    c.Adjust(Starved());
    EXPECT_GT(c.window(), last);
    last = c.window();
    ASSERT_LT(++steps, 20) << "grows geometrically";
  }
  EXPECT_EQ(c.window(), 2000u);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 2000u) << "max_active stays the hard cap";
  EXPECT_GT(c.grows(), 0u);
}

TEST_F(Admission, ShrinksOncePerFedGenerationFasterWhenAdmissionsBlock) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  for (int i = 0; i < 20; ++i) c.Adjust(Starved());
  ASSERT_EQ(c.window(), 2000u);
  // Less than a generation: no change.
  c.Adjust(Round(100, 0));
  EXPECT_EQ(c.window(), 2000u);
  Generation(&c, false);
  const uint64_t after_fed = c.window();
  EXPECT_LT(after_fed, 2000u);
  EXPECT_GE(after_fed, 2000u - 2000u / 16 - 1);
  Generation(&c, true);
  EXPECT_LE(c.window(), after_fed - after_fed / 4 + 1) << "mostly blocked: a quarter off";
  for (int i = 0; i < 1000; ++i) Generation(&c, true);
  EXPECT_EQ(c.window(), c.min_window());
  EXPECT_GE(c.min_window(), 4u) << "at least a batch per worker";
  EXPECT_GT(c.shrinks(), 0u);
}

TEST_F(Admission, IgnoresRoundsTheWindowDidNotStop) {
  AdmissionController c({.workers = 1, .max_active = 1000});
  const uint64_t w = c.window();
  // Input idle (end of an epoch) or the lock manager's own bound (VLL's
  // blocked threshold): starving workers say nothing about the window, and
  // a generation the window never stopped is no reason to shrink it.
  c.Adjust({.starved = 5, .window_bound = false});
  for (int i = 0; i < 100; ++i) c.Adjust({.admitted = 10, .blocked = 10, .window_bound = false});
  EXPECT_EQ(c.window(), w);
}

TEST_F(Admission, FixedWindowResumesForOneTxn) {
  AdmissionController c({.workers = 1, .max_active = 800, .adaptive = false});
  EXPECT_FALSE(c.MayAdmit(800));
  EXPECT_TRUE(c.MayAdmit(799));
  EXPECT_TRUE(c.WorthResuming(799)) << "a fixed window behaves as the old max_active bound";
  EXPECT_FALSE(c.WorthResuming(800));
}

TEST_F(Admission, SettlesWhereTheWorkersAreJustFed) {
  AdmissionController probe({.workers = 2, .max_active = 2000});
  ASSERT_LT(40u, probe.window());
  ASSERT_GT(600u, probe.window());
  ExpectSettles(40, 2000);   // below the start: it must shrink
  ExpectSettles(600, 2000);  // above the start: it must grow
  ExpectSettles(600, 150);   // the cap wins
}

TEST_F(Admission, SerialChainDoesNotGrowTheWindow) {
  // Every txn conflicts with the one before (one hot record written by all):
  // workers starve whatever the window, and every admission blocks. More
  // window would only add blocked txns: it shrinks to the minimum instead.
  AdmissionController c({.workers = 2, .max_active = 2000});
  for (int i = 0; i < 5000; ++i) {
    c.Adjust({.starved = 1, .admitted = 8, .blocked = 8, .window_bound = true, .now_us = now_us});
    if (i % 8 == 7) Tick(&c);
  }
  EXPECT_EQ(c.window(), c.min_window());
  EXPECT_EQ(c.grows(), 0u);
}

TEST_F(Admission, StarvingBetweenEpochsDoesNotStopShrinking) {
  // Bursty input: workers starve at every epoch's end (window not binding),
  // and are fed inside epochs. The window still comes down.
  AdmissionController c({.workers = 1, .max_active = 2000});
  for (int i = 0; i < 20; ++i) c.Adjust(Starved());
  ASSERT_EQ(c.window(), 2000u);
  for (int epoch = 0; epoch < 400; ++epoch) {
    for (int r = 0; r < 50; ++r) c.Adjust(Round(8, 1));
    c.Adjust({.starved = 3, .window_bound = false, .now_us = now_us});
    Tick(&c);
  }
  EXPECT_LT(c.window(), 200u);
}

TEST_F(Admission, NoShrinkWhileTheLockThreadRunsOutOfInput) {
  // TPC-C's closed loop: the window binds now and then and most admissions
  // block (chains through the warehouse rows), but the lock thread also
  // takes all of its input in every generation. It has time to spare: the
  // window must not shrink (a small one only wakes the lock thread more).
  AdmissionController c({.workers = 2, .max_active = 2000});
  const uint64_t start = c.window();
  for (int g = 0; g < 100; ++g) {
    c.Adjust({.admitted = 4, .blocked = 3, .input_ran_out = true, .now_us = now_us});
    for (uint64_t n = 0; n < start; n += 8) c.Adjust(Round(8, 7));
    Tick(&c);
  }
  EXPECT_EQ(c.window(), start);
  EXPECT_EQ(c.shrinks(), 0u);
  // The same generations without the lock thread ever running dry shrink it.
  for (int g = 0; g < 100; ++g) Generation(&c, true);
  EXPECT_EQ(c.window(), c.min_window());
}

TEST_F(Admission, AtTheCapResumesForOneTxn) {
  AdmissionController c({.workers = 1, .max_active = 64});
  for (int i = 0; i < 10; ++i) c.Adjust(Starved());
  ASSERT_EQ(c.window(), 64u);
  EXPECT_TRUE(c.WorthResuming(63)) << "at the cap, as a plain max_active bound";
  Generation(&c, false);
  ASSERT_LT(c.window(), 64u);
  EXPECT_FALSE(c.WorthResuming(c.window() - 1)) << "below it, once per batch";
}

TEST_F(Admission, UnboundedCapAndTinyCap) {
  AdmissionController unbounded({.workers = 1, .max_active = 0});
  for (int i = 0; i < 100; ++i) unbounded.Adjust(Starved());
  EXPECT_GT(unbounded.window(), 1000000u);
  AdmissionController tiny({.workers = 8, .max_active = 3});
  EXPECT_EQ(tiny.window(), 3u);
  EXPECT_EQ(tiny.min_window(), 3u);
  Generation(&tiny, true);
  EXPECT_EQ(tiny.window(), 3u);
  tiny.Adjust(Starved());
  EXPECT_EQ(tiny.window(), 3u) << "more workers than max_active: still the hard cap";
}

TEST_F(Admission, ShrinkThatLowersTheReleaseRateIsUndone) {
  // The workers never starve, yet below 64 the lock thread sleeps and is
  // woken so often that fewer txns finish (dclp, 1 worker): the window
  // must not shrink below 64 for long.
  AdmissionController c({.workers = 1, .max_active = 2000});
  ASSERT_EQ(c.window(), 64u);
  auto rate = [](uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 64)) / 64.0; };
  uint64_t below = 0;
  for (int i = 0; i < 400; ++i) {
    FedPeriod(&c, rate);
    EXPECT_GE(c.window(), 60u) << "one trial step below at most, period " << i;
    if (c.window() < 64) ++below;
  }
  EXPECT_GT(c.shrinks_undone(), 0u);
  // A trial below each time it has come down again from a probe up: about
  // one period in eight.
  EXPECT_LT(below, 80u) << "trials below the knee are a small share of the time";
}

TEST_F(Admission, ShrinksWhileTheRateHoldsAndStopsAtTheKnee) {
  // The rate is flat down to 24 and falls below it: the window comes down
  // from 64 and stays near 24.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 24)) / 24.0; };
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < 600; ++i) {
    FedPeriod(&c, rate);
    if (i >= 300) {
      lo = std::min(lo, c.window());
      hi = std::max(hi, c.window());
    }
  }
  EXPECT_GE(lo, 24u - 24u / 16 - 1);
  EXPECT_LE(hi, 24u + 24u / 2) << "it came down to the knee";
  EXPECT_GT(c.shrinks(), 5u);
  EXPECT_GT(c.shrinks_undone(), 0u);
}

TEST_F(Admission, SmallStepsDoNotWalkDownASlope) {
  // Each 1/16 step costs ~1.5% of the rate, less than the 3% a trial may
  // lose: compared with the previous step, every trial would pass and the
  // window would reach the minimum at 80% of the rate. Compared with the
  // best rate of the descent, it stops within 3% of it.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) { return 0.4 * (0.75 + 0.25 * static_cast<double>(std::min<uint64_t>(w, 64)) / 64.0); };
  for (int i = 0; i < 400; ++i) {
    FedPeriod(&c, rate);
    EXPECT_GE(rate(c.window()), 0.95 * rate(64)) << "period " << i << ", window " << c.window();
  }
  EXPECT_GT(c.shrinks_undone(), 0u);
}

TEST_F(Admission, ShrinkKeptOnNoiseIsCorrectedByAProbeUp) {
  // Below 64 the rate falls. One lucky period keeps the trial at 60; the
  // trials below it are undone, and the probe up that follows finds the
  // larger window faster: the window goes back above the knee.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 64)) / 64.0; };
  int periods = 0;
  while (!(c.trying_shrink() && c.window() == 60)) {
    FedPeriod(&c, rate);
    ASSERT_LT(++periods, 100);
  }
  FedPeriod(&c, [](uint64_t) { return 0.4; });  // noise: as fast as at 64
  ASSERT_LT(c.window(), 64u) << "kept (and the next trial below it begun)";
  uint64_t below = 0;
  for (int i = 0; i < 200; ++i) {
    FedPeriod(&c, rate);
    if (c.window() < 64) ++below;
  }
  EXPECT_LT(below, 100u) << "stuck below the knee";
}

TEST_F(Admission, UndoneTrialsBackOff) {
  // At a peak every trial, down and up, is undone: they come ever more
  // rarely, at least once every kMaxHoldPeriods + 3 periods.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) {
    return w <= 64 ? 0.4 * static_cast<double>(w) / 64.0 : 0.4 * 64.0 / static_cast<double>(w);
  };
  for (int i = 0; i < 600; ++i) FedPeriod(&c, rate);
  const uint64_t undone = c.shrinks_undone();
  EXPECT_GE(undone, 600u / (AdmissionController::kMaxHoldPeriods + 3));
  EXPECT_LE(undone, 30u) << "one trial every other period would be 300";
  EXPECT_LE(c.grows_undone(), undone + 1) << "a probe up after every undone shrink";
  EXPECT_GE(c.grows_undone() + 1, undone);
  // A starvation grows the window whatever the shrinks' hold, once the
  // growths' hold (which the undone probes up share) has passed: within
  // kMaxHoldPeriods periods.
  for (uint64_t i = 0;; ++i) {
    ASSERT_LE(i, AdmissionController::kMaxHoldPeriods + 2) << "held too long";
    const uint64_t w = c.window(), grows = c.grows();
    c.Adjust({.starved = 1, .window_bound = true, .now_us = now_us});
    if (c.grows() > grows) {
      EXPECT_GT(c.window(), w);
      break;
    }
    FedPeriod(&c, rate);
  }
}

TEST_F(Admission, GrowthThatLowersTheReleaseRateIsUndoneAndHeld) {
  // The rate peaks at 64; above it more lock state only slows the lock
  // thread. A starvation (a descheduled lock thread on a loaded host) grows
  // the window; the next period shows it slower: back, and the next
  // starvation does not grow it until the hold has passed.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) {
    return w <= 64 ? 0.4 * static_cast<double>(w) / 64.0 : 0.4 * 64.0 / static_cast<double>(w);
  };
  uint64_t before = 0;
  int periods = 0;
  do {
    before = c.window();
    FedPeriod(&c, rate);
    ASSERT_LT(++periods, 100);
  } while (!(before == 64 && c.window() == 64));
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u) << "growth stays immediate";
  FedPeriod(&c, rate);
  EXPECT_EQ(c.window(), 64u) << "slower: back";
  EXPECT_EQ(c.grows_undone(), 1u);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 64u) << "held";
  for (uint64_t i = 0; i < 2; ++i) FedPeriod(&c, rate);
  c.Adjust(Starved());
  EXPECT_GT(c.window(), 64u) << "the hold has passed";
}

// The release rate peaks at 64 (below it the lock thread sleeps and is
// woken too often): 0.4 txns per us there.
double KneeAt64(uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 64)) / 64.0; }
double Flat(uint64_t) { return 0.4; }

TEST_F(Admission, AWorkerStarvingDuringATrialShrinkLeavesItToTheRate) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  FedPeriod(&c, KneeAt64);
  ASSERT_TRUE(c.trying_shrink());
  ASSERT_EQ(c.window(), 60u);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 60u) << "neither undone nor grown";
  EXPECT_TRUE(c.trying_shrink());
  FedPeriod(&c, KneeAt64);
  EXPECT_EQ(c.window(), 64u) << "slower: undone";
  EXPECT_EQ(c.shrinks_undone(), 1u);
}

// One period at window() in which the window never stopped admission (so
// no shrink is asked for): the rate there is measured.
void UnboundPeriod(AdmissionController* c, uint64_t* now_us, double rate) {
  c->Adjust({.admitted = c->window(), .now_us = *now_us});
  *now_us += AdmissionController::kClimbPeriodUs;
  c->Adjust({.released = static_cast<uint64_t>(rate * AdmissionController::kClimbPeriodUs), .now_us = *now_us});
}

TEST_F(Admission, AGrowthOnStarvationIsKeptOnlyIfFivePercentFaster) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  UnboundPeriod(&c, &now_us, 0.4);
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u);
  FedPeriod(&c, [](uint64_t w) { return w > 64 ? 1.03 * 0.4 : 0.4; });
  EXPECT_EQ(c.window(), 64u) << "3% faster is not enough";
  EXPECT_EQ(c.grows_undone(), 1u);
}

TEST_F(Admission, StarvationWhileAGrowthIsCheckedDoesNotRestartTheGeneration) {
  // The rate rises with the window: the growth is checked over two periods,
  // a worker starving in the middle of each (neither a new growth nor an
  // undo, and the generations go on), and kept; the next period measures
  // 96 afresh and the growth is re-checked by a trial back at 64, which is
  // slower: undone.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 200)) / 200.0; };
  UnboundPeriod(&c, &now_us, rate(64));
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u);
  for (int period = 0; period < 2; ++period) {
    for (int n = 0; n < 6; ++n) c.Adjust(Round(8, 1));
    c.Adjust(Starved());
    ASSERT_EQ(c.window(), 96u);
    for (int n = 0; n < 6; ++n) c.Adjust(Round(8, 1));
    now_us += AdmissionController::kClimbPeriodUs;
    c.Adjust({.window_bound = true, .released = Releases(rate(96)), .now_us = now_us});
  }
  EXPECT_EQ(c.grows_undone(), 0u);
  EXPECT_EQ(c.window(), 96u);
  FedPeriod(&c, rate);
  EXPECT_TRUE(c.trying_shrink());
  EXPECT_EQ(c.window(), 64u);
  FedPeriod(&c, rate);
  EXPECT_EQ(c.window(), 96u) << "slower: the growth stays";
  EXPECT_EQ(c.shrinks_undone(), 1u);
}

TEST_F(Admission, OnceARateIsMeasuredTheWindowGrowsOnceAPeriod) {
  // The rate rises with the window up to 1,000.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 1000)) / 1000.0; };
  FedPeriod(&c, rate);  // 64 measured, trial at 60
  FedPeriod(&c, rate);  // slower: back to 64
  ASSERT_EQ(c.window(), 64u);
  ASSERT_EQ(c.shrinks_undone(), 1u);
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u);
  c.Adjust(Starved());
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 96u) << "a burst of starvation is one growth in a period";
  FedPeriod(&c, rate);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 96u) << "the growth is checked over two periods";
  FedPeriod(&c, rate);  // kept
  FedPeriod(&c, rate);  // 96 measured afresh: a trial back at 64
  FedPeriod(&c, rate);  // slower: back to 96
  ASSERT_EQ(c.window(), 96u);
  ASSERT_EQ(c.grows_undone(), 0u);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 144u) << "checked and re-checked: the next period may grow it again";
}

TEST_F(Admission, WhenAClimbEndsANewDescentBegins) {
  // A trial shrink is pending when parked txns start a climb. When the climb
  // ends, that trial is not judged by a period that spans the climb.
  AdmissionController c({.workers = 1, .max_active = 2000});
  FedPeriod(&c, Flat);
  ASSERT_TRUE(c.trying_shrink());
  const uint64_t w = c.window();
  c.Adjust({.starved = 1, .window_bound = true, .parked = w, .now_us = now_us});
  ASSERT_TRUE(c.climbing());
  now_us += 20 * AdmissionController::kClimbPeriodUs;
  c.Adjust({.admitted = 2 * w, .released = 100, .parked = 0, .now_us = now_us});
  ASSERT_FALSE(c.climbing());
  EXPECT_EQ(c.window(), w);
  EXPECT_EQ(c.shrinks_undone(), 0u);
  EXPECT_FALSE(c.trying_shrink());
}

TEST_F(Admission, AStarvingRoundAtTheCapCountsInTheRate) {
  // At the cap (64), half of a period's releases come in a round in which a
  // worker starved. Dropped, the period would measure half the rate at 64,
  // and the trial at 60 (slower) would be kept against it.
  AdmissionController c({.workers = 1, .max_active = 64});
  ASSERT_EQ(c.window(), 64u);
  const uint64_t half = Releases(KneeAt64(64)) / 2;
  for (int n = 0; n < 8; ++n) c.Adjust(Round(8, 1));
  now_us += AdmissionController::kClimbPeriodUs / 2;
  c.Adjust({.starved = 1, .window_bound = true, .released = half, .now_us = now_us});
  ASSERT_EQ(c.window(), 64u);
  for (int n = 0; n < 8; ++n) c.Adjust(Round(8, 1));
  now_us += AdmissionController::kClimbPeriodUs / 2;
  c.Adjust({.window_bound = true, .released = half, .now_us = now_us});
  ASSERT_TRUE(c.trying_shrink());
  ASSERT_EQ(c.window(), 60u);
  FedPeriod(&c, KneeAt64);
  EXPECT_EQ(c.window(), 64u) << "the trial is slower than the whole period at the cap";
  EXPECT_EQ(c.shrinks_undone(), 1u);
}

TEST_F(Admission, APeriodWithAnInputGapIsDiscarded) {
  // The rate is the same at every window, but during the trial's period the
  // lock thread ran out of input for a whole period's time: the trial is not
  // undone for it, and the next whole period keeps it.
  AdmissionController c({.workers = 1, .max_active = 2000});
  FedPeriod(&c, Flat);
  ASSERT_TRUE(c.trying_shrink());
  const uint64_t w = c.window();
  for (uint64_t n = 0; n < w; n += 8) c.Adjust(Round(8, 1));
  c.Adjust({.input_ran_out = true, .now_us = now_us});
  now_us += 2 * AdmissionController::kClimbPeriodUs;
  c.Adjust({.window_bound = true, .released = Releases(Flat(w)), .now_us = now_us});
  EXPECT_EQ(c.window(), w);
  EXPECT_TRUE(c.trying_shrink()) << "still pending";
  FedPeriod(&c, Flat);
  EXPECT_EQ(c.shrinks_undone(), 0u);
  EXPECT_LT(c.window(), 64u);
}

TEST_F(Admission, APeriodWithNoReleaseIsNoReferenceRate) {
  // The first period of a descent releases nothing (a stall): it sets no
  // best rate of 0 that any trial would beat. The trial at 60 is judged
  // against the rate measured at 64 in the next period, and undone.
  AdmissionController c({.workers = 1, .max_active = 2000});
  FedPeriod(&c, [](uint64_t) { return 0.0; });
  FedPeriod(&c, KneeAt64);
  ASSERT_TRUE(c.trying_shrink());
  ASSERT_EQ(c.window(), 60u);
  FedPeriod(&c, KneeAt64);
  EXPECT_EQ(c.window(), 64u);
  EXPECT_EQ(c.shrinks_undone(), 1u);
}

TEST_F(Admission, AProbeUpIsKeptOnlyIfFivePercentFaster) {
  // Above 64 the rate is 3% higher: not worth half as much lock state again.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto rate = [](uint64_t w) { return w <= 64 ? KneeAt64(w) : 1.03 * KneeAt64(64); };
  int periods = 0;
  while (c.window() != 96) {  // a trial at 60 undone, then a probe up
    FedPeriod(&c, rate);
    ASSERT_LT(++periods, 20);
  }
  ASSERT_EQ(c.shrinks_undone(), 1u);
  FedPeriod(&c, rate);
  EXPECT_EQ(c.window(), 64u) << "3% faster is not enough";
  EXPECT_EQ(c.grows_undone(), 1u);
}

TEST_F(Admission, ABestWindowThatFallsBelowTheTopStepsBackUpTowardsIt) {
  // A flat 0.4 lets the descent come down from 64 (its top) to 51; a trial
  // at 45 is undone, and the probe up from 51 (to 76) too: the descent's
  // best (51) and top (64) are put back. Measured again, 51's mean falls
  // more than 3% below the top's: one step back up, to the top (not to 76,
  // a step by half), and held there.
  AdmissionController c({.workers = 1, .max_active = 2000});
  auto at = [](double r) { return [r](uint64_t) { return r; }; };
  for (int i = 0; i < 5; ++i) FedPeriod(&c, at(0.4));
  ASSERT_EQ(c.window(), 48u);
  FedPeriod(&c, at(0.39));  // 48 kept; a trial at 45
  FedPeriod(&c, at(0.38));  // 3% below the best (51, 0.4): back
  ASSERT_EQ(c.window(), 51u);
  ASSERT_EQ(c.shrinks_undone(), 1u);
  FedPeriod(&c, at(0.37));  // held
  FedPeriod(&c, at(0.37));  // then a probe up
  ASSERT_EQ(c.window(), 76u);
  FedPeriod(&c, at(0.37));
  ASSERT_EQ(c.window(), 51u) << "the probe up undone";
  ASSERT_EQ(c.grows_undone(), 1u);
  ASSERT_EQ(c.steps_back_up(), 0u);
  FedPeriod(&c, at(0.37));  // 51 measured 4 times: 0.38 on average, the top 0.4
  EXPECT_EQ(c.steps_back_up(), 1u);
  EXPECT_EQ(c.window(), 64u) << "one step up, at most to the top";
  FedPeriod(&c, at(0.37));
  FedPeriod(&c, at(0.37));
  EXPECT_EQ(c.window(), 64u) << "held";
  EXPECT_EQ(c.grows(), 1u) << "a step back up is not a growth";
}

TEST_F(Admission, RatesOfTheWarmUpAreDiscarded) {
  // A new engine's first periods are slow (its memory touched for the first
  // time), and the rate rises while the descent tries smaller windows: it
  // would take the rise for their gain, and unchecked growths on the slow
  // rounds would set the window. Within warmup_us of the first round
  // nothing is measured and nothing changes; after it, trials start.
  AdmissionController c({.workers = 1, .max_active = 2000, .warmup_us = 5 * AdmissionController::kClimbPeriodUs});
  now_us = 1'000'000'000;  // a real clock's
  c.Adjust(Starved());      // the first round: no growth either in the warm-up
  ASSERT_EQ(c.window(), 64u);
  for (int i = 0; i < 4; ++i) {
    FedPeriod(&c, [](uint64_t) { return 0.8; });  // nothing of it counts
    c.Adjust(Starved());
    EXPECT_EQ(c.window(), 64u) << "period " << i;
    EXPECT_EQ(c.shrinks(), 0u);
  }
  for (int i = 0; i < 3; ++i) FedPeriod(&c, [](uint64_t) { return 0.4; });
  EXPECT_GT(c.shrinks(), 0u) << "measured after the warm-up";
  EXPECT_EQ(c.shrinks_undone(), 0u) << "judged against 0.4, not the warm-up's 0.8";
}

}  // namespace
}  // namespace detdb
