#include "scheduler/admission.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace detdb {
namespace {

// Each test feeds the controller the rounds a lock thread would see, with
// its own virtual clock (now_us; no test reads a real clock). A shrink is a
// trial measured over a period (AdmissionController::kClimbPeriodUs).
class Admission : public ::testing::Test {
 protected:
  uint64_t now_us = 0;

  // A period passes with releases at a flat rate, whatever the window (so
  // every trial is kept).
  void Tick(AdmissionController* c) {
    now_us += AdmissionController::kClimbPeriodUs;
    c->Adjust({.released = 1000, .now_us = now_us});
  }
  AdmissionSignals Starved() const { return {.starved = 1, .window_bound = true, .now_us = now_us}; }
  // A round that admitted n txns, `blocked` of them not granted at once, and
  // stopped at the window.
  AdmissionSignals Round(uint64_t n, uint64_t blocked) const {
    return {.admitted = n, .blocked = blocked, .window_bound = true, .now_us = now_us};
  }
  // Feeds one whole generation (window() admissions) in rounds of 8, then a
  // period passes.
  void Generation(AdmissionController* c, bool mostly_blocked) {
    const uint64_t w = c->window();
    for (uint64_t n = 0; n < w; n += 8) c->Adjust(Round(8, mostly_blocked ? 7 : 0));
    Tick(c);
  }
  // A single-partition workload whose workers are fed at every window (no
  // starvation, the window binding): one period of it, releases at
  // `rate(window)` txns per us.
  template <typename Rate>
  void FedPeriod(AdmissionController* c, Rate rate) {
    const uint64_t w = c->window();
    for (uint64_t n = 0; n < w; n += 8) c->Adjust(Round(8, 1));
    now_us += AdmissionController::kClimbPeriodUs;
    c->Adjust({.window_bound = true, .released = Releases(rate(w)), .now_us = now_us});
  }
  // Txns released in a period at `rate` txns per us.
  static uint64_t Releases(double rate) {
    return static_cast<uint64_t>(rate * static_cast<double>(AdmissionController::kClimbPeriodUs));
  }
  // Multi-partition txns parked for remote reads: one climbing period of
  // the controller at the rate `rate(window)`, every txn in the window
  // parked, the workers starving.
  template <typename Rate>
  void ParkedPeriod(AdmissionController* c, Rate rate) {
    now_us += AdmissionController::kClimbPeriodUs;
    c->Adjust({.starved = 1,
               .admitted = c->window(),
               .window_bound = true,
               .released = Releases(rate(c->window())),
               .parked = c->window(),
               .now_us = now_us});
  }
  // Workers starve below `need` active txns and are fed above it; a quarter
  // of the admissions block. The window settles just above `need`, from
  // below (need above the start) and from above (need below it).
  void ExpectSettles(uint64_t need, uint32_t cap) {
    AdmissionController c({.workers = 2, .max_active = cap});
    const uint64_t start = c.window();
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 20000; ++i) {
      if (c.window() < need) {
        c.Adjust({.starved = 1, .admitted = 8, .blocked = 2, .window_bound = true, .now_us = now_us});
      } else {
        c.Adjust(Round(8, 2));
      }
      if (i % 8 == 7) Tick(&c);
      if (i > 15000) {
        lo = std::min(lo, c.window());
        hi = std::max(hi, c.window());
      }
    }
    const uint64_t target = std::min<uint64_t>(need, cap);
    EXPECT_GE(hi, target) << "need " << need << ", started at " << start;
    EXPECT_LE(hi, std::min<uint64_t>(cap, target + target / 2 + 2)) << "need " << need << ", started at " << start;
    EXPECT_GE(lo, std::min<uint64_t>(target - target / 4, c.min_window())) << "need " << need;
    EXPECT_LE(lo, target + target / 2);
  }
};

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
