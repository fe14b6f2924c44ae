#include "scheduler/admission.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace detdb {
namespace {

AdmissionSignals Starved() { return {.starved = 1, .window_bound = true}; }
// A round that admitted n txns, `blocked` of them not granted at once, and
// stopped at the window.
AdmissionSignals Round(uint64_t n, uint64_t blocked) {
  return {.admitted = n, .blocked = blocked, .window_bound = true};
}
// Feeds one whole generation (window() admissions) in rounds of 8.
void Generation(AdmissionController* c, bool mostly_blocked) {
  const uint64_t w = c->window();
  for (uint64_t n = 0; n < w; n += 8) c->Adjust(Round(8, mostly_blocked ? 7 : 0));
}

TEST(Admission, FixedWindowIsTheCap) {
  AdmissionController c({.workers = 2, .max_active = 300, .adaptive = false});
  EXPECT_EQ(c.window(), 300u);
  for (int i = 0; i < 100; ++i) Generation(&c, true);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 300u);
  EXPECT_TRUE(c.MayAdmit(299));
  EXPECT_FALSE(c.MayAdmit(300));
}

TEST(Admission, StartsSmallAndGrowsWhileWorkersStarveUpToTheCap) {
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

TEST(Admission, ShrinksOncePerFedGenerationFasterWhenAdmissionsBlock) {
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

TEST(Admission, IgnoresRoundsTheWindowDidNotStop) {
  AdmissionController c({.workers = 1, .max_active = 1000});
  const uint64_t w = c.window();
  // Input idle (end of an epoch) or the lock manager's own bound (VLL's
  // blocked threshold): starving workers say nothing about the window, and
  // a generation the window never stopped is no reason to shrink it.
  c.Adjust({.starved = 5, .window_bound = false});
  for (int i = 0; i < 100; ++i) c.Adjust({.admitted = 10, .blocked = 10, .window_bound = false});
  EXPECT_EQ(c.window(), w);
}

TEST(Admission, ResumesInBatches) {
  AdmissionController c({.workers = 1, .max_active = 800, .adaptive = false});
  EXPECT_FALSE(c.MayAdmit(800));
  EXPECT_TRUE(c.MayAdmit(799));
  EXPECT_FALSE(c.WorthResuming(799)) << "one free slot is not worth a wake-up";
  EXPECT_TRUE(c.WorthResuming(700));
}

TEST(Admission, SettlesWhereTheWorkersAreJustFed) {
  // Workers starve below 120 active; above it they are fed. The window
  // settles around 120, whatever it started from.
  for (uint32_t cap : {150u, 2000u}) {
    AdmissionController c({.workers = 2, .max_active = cap});
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 3000; ++i) {
      if (c.window() < 120) {
        c.Adjust(Starved());
      } else {
        c.Adjust(Round(8, 2));
      }
      if (i > 2000) {
        lo = std::min(lo, c.window());
        hi = std::max(hi, c.window());
      }
    }
    EXPECT_GE(hi, 120u) << cap;
    EXPECT_LE(hi, std::min<uint64_t>(cap, 200u)) << cap;
    EXPECT_GE(lo, 90u) << cap;
  }
}

TEST(Admission, UnboundedCapAndTinyCap) {
  AdmissionController unbounded({.workers = 1, .max_active = 0});
  for (int i = 0; i < 100; ++i) unbounded.Adjust(Starved());
  EXPECT_GT(unbounded.window(), 1000000u);
  AdmissionController tiny({.workers = 8, .max_active = 3});
  EXPECT_EQ(tiny.window(), 3u);
  EXPECT_EQ(tiny.min_window(), 3u);
  Generation(&tiny, true);
  EXPECT_EQ(tiny.window(), 3u);
}

}  // namespace
}  // namespace detdb
