// The fixture of the AdmissionController unit tests (admission_test.cc,
// admission_climb_test.cc): rounds and periods as a lock thread would feed
// them, on the test's own virtual clock.
#ifndef DETDB_SCHEDULER_ADMISSION_TEST_FIXTURE_H_
#define DETDB_SCHEDULER_ADMISSION_TEST_FIXTURE_H_

#include <algorithm>
#include <cstdint>

#include <gtest/gtest.h>

#include "scheduler/admission.h"

namespace detdb {

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

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ADMISSION_TEST_FIXTURE_H_
