// The admission window under a noisy release rate (a 20 ms period on a
// shared 2-core host): the rules that keep it from drifting up
// (docs/ENGINE.md, "Growth needs the evidence a shrink needs"). Each test
// has its own virtual clock and, where it draws noise, its own seeded
// generator (std::mt19937_64's sequence is fixed by the standard; no
// distribution object is used, so the draws are the same everywhere).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/admission.h"

namespace detdb {
namespace {

constexpr uint64_t kPeriod = AdmissionController::kClimbPeriodUs;

class AdmissionNoise : public ::testing::Test {
 protected:
  uint64_t now_us = 0;

  AdmissionSignals Starved() const { return {.starved = 1, .window_bound = true, .now_us = now_us}; }
  static uint64_t Releases(double rate) { return static_cast<uint64_t>(rate * static_cast<double>(kPeriod)); }
  // One period with the window binding (a whole generation, one in eight
  // admissions blocked: it asks for a shrink), `rate` txns per us released.
  void Period(AdmissionController* c, double rate) {
    const uint64_t w = c->window();
    for (uint64_t n = 0; n < w; n += 8) c->Adjust({.admitted = 8, .blocked = 1, .window_bound = true, .now_us = now_us});
    now_us += kPeriod;
    c->Adjust({.window_bound = true, .released = Releases(rate), .now_us = now_us});
  }
  // One period in which the window never stopped admission (no shrink is
  // asked for): the rate at window() is measured.
  void UnboundPeriod(AdmissionController* c, double rate) {
    c->Adjust({.admitted = c->window(), .now_us = now_us});
    now_us += kPeriod;
    c->Adjust({.released = Releases(rate), .now_us = now_us});
  }
};

// A uniform draw in [0, 1) from the generator's raw 64 bits.
double Uniform(std::mt19937_64* rng) { return static_cast<double>((*rng)() >> 11) * 0x1.0p-53; }

// `periods` periods at the release rate rate(window) times a noise factor
// uniform in [1 - noise, 1 + noise], `blocked_of_8` of every 8 admissions
// blocked, a worker starving at a random round in a share `starve_share`
// of the periods (a descheduled lock thread) and in every period whose
// window is below `starves_below`. Returns the mean and the largest window
// over the second half, and the mean of rate(window) there.
struct NoisyResult {
  uint64_t mean = 0, max = 0;
  double mean_rate = 0;
};
template <typename Rate>
NoisyResult NoisyRun(uint64_t seed, Rate rate, double noise, double starve_share, uint64_t starves_below, int periods,
                     uint64_t blocked_of_8 = 1) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  std::mt19937_64 rng(seed);
  uint64_t now_us = 0, sum = 0, max = 0;
  double rate_sum = 0;
  for (int i = 0; i < periods; ++i) {
    const uint64_t w = c.window();
    const bool starve = Uniform(&rng) < starve_share;
    const uint64_t at = static_cast<uint64_t>(Uniform(&rng) * static_cast<double>(w / 8));
    for (uint64_t n = 0; n < w; n += 8) {
      const bool starving = n / 8 == at && (starve || c.window() < starves_below);
      c.Adjust({.starved = starving ? 1u : 0u, .admitted = 8, .blocked = blocked_of_8, .window_bound = true,
                .now_us = now_us});
    }
    now_us += kPeriod;
    // The rate of the window in force at the period's end (a growth in the
    // middle of it starts a new period).
    const double r = rate(c.window()) * (1.0 + noise * (2.0 * Uniform(&rng) - 1.0));
    c.Adjust({.window_bound = true, .released = static_cast<uint64_t>(r * static_cast<double>(kPeriod)), .now_us = now_us});
    if (i >= periods / 2) {
      sum += c.window();
      max = std::max(max, c.window());
      rate_sum += rate(c.window());
    }
  }
  const int n = periods - periods / 2;
  return {sum / static_cast<uint64_t>(n), max, rate_sum / n};
}

TEST_F(AdmissionNoise, AFlatRateWithNoiseDoesNotRatchetTheWindowUp) {
  // The rate is the same at every window; each period measures it within
  // +-8%, and a worker starves in 30% (then 90%) of the periods. Every
  // growth has a ~24% chance to look 5% faster on one period: before the
  // growths needed two faster periods against the best rate known and a
  // re-check, the window climbed to the cap (2,000) within a few hundred
  // periods. Now it stays at or below where it started on average (64: a
  // flat rate lets it shrink; means of 8-24 over the second half). Since
  // the descent keeps its top (docs/ENGINE.md, "The descent keeps its
  // reference") a growth kept on two lucky periods can hold the window up
  // a while longer: the largest excursion is 130 (seed 4 at 90%; before,
  // at most 106).
  AdmissionController probe({.workers = 1, .max_active = 2000});
  const uint64_t start = probe.window();
  ASSERT_EQ(start, 64u);
  for (const double starve_share : {0.3, 0.9}) {
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      const auto [mean, max, mean_rate] = NoisyRun(seed, [](uint64_t) { return 0.4; }, 0.08, starve_share, 0, 1000);
      EXPECT_LE(mean, start) << "seed " << seed << ", starving in " << starve_share << " of the periods";
      EXPECT_LE(max, 4 * start) << "seed " << seed << ", starving in " << starve_share << " of the periods";
    }
  }
}

// High contention, a gentle slope: below 64 the rate falls by a few
// percent per halving of the window. Each 1/16 step (or quarter step, when
// most admissions block, as each does when every txn writes one hot
// record) costs too little to be seen in one period measured within +-8%,
// and a trial may cost 3%. Two curves: the one measured under dclp at 80%
// writes, contention 0.1, 1 worker (fixed windows, medians of 5 rounds
// rounded to 1K: 388K, 401K, 408K, 422K and 426K at 8, 16, 32, 64 and 128,
// i.e. 0.919, 0.950, 0.967, 1.0 and 1.009 of the rate at 64;
// docs/ENGINE.md), and a steeper one (14% lower at 11, linear).
// 1 or 7 of 8 admissions blocked, with and without a worker starving in a
// tenth of the periods, 8 seeds each; the mean window and the mean rate
// over the second half of 1,000 periods. Before the descent kept its
// reference (docs/ENGINE.md), the window walked down to the minimum: on
// the measured curve mean windows of 8-23 (8-12 in 29 of the 32 runs), 92%
// of the rate at 64 (median; at most 95%); on the steep one 8-37 (8-12 in
// 29), 85% (median). Now: measured curve, 8-60 (median 39; 8-12 in 4), a
// median 98% of the rate (lower quartile 96%, lowest 92%); steep, 51-75,
// 98% (lowest 96.5%).
double MeasuredCurve(uint64_t w) {
  static constexpr double kRate[] = {0.919, 0.950, 0.967, 1.0, 1.009};  // at 8, 16, 32, 64, 128
  const double x = std::log2(static_cast<double>(std::clamp<uint64_t>(w, 8, 128))) - 3;
  const int i = std::min(static_cast<int>(x), 3);
  return 0.4 * (kRate[i] + (kRate[i + 1] - kRate[i]) * (x - i));
}
double SteepCurve(uint64_t w) { return 0.4 * (1.0 - 0.14 * static_cast<double>(64 - std::min<uint64_t>(w, 64)) / 53.0); }

TEST_F(AdmissionNoise, AGentleSlopeDoesNotWalkTheWindowDown) {
  for (const auto& [name, curve] : {std::pair{"measured", &MeasuredCurve}, std::pair{"steep", &SteepCurve}}) {
    std::vector<double> shares;
    for (const uint64_t blocked : {1, 7}) {
      for (const double starve_share : {0.0, 0.1}) {
        for (uint64_t seed = 1; seed <= 8; ++seed) {
          const auto [mean, max, mean_rate] = NoisyRun(seed, curve, 0.08, starve_share, 0, 1000, blocked);
          const double share = mean_rate / curve(64);
          EXPECT_GE(share, 0.90) << name << ", " << blocked << " of 8 blocked, starving in " << starve_share
                                 << ", seed " << seed << ": mean window " << mean;
          shares.push_back(share);
        }
      }
    }
    std::sort(shares.begin(), shares.end());
    EXPECT_GE(shares[shares.size() / 2], 0.97) << name << ": the median share of the rate at 64";
    EXPECT_GE(shares[shares.size() / 4], 0.95) << name << ": the lower quartile";
  }
}

TEST_F(AdmissionNoise, AKneeIsStillFoundUnderNoise) {
  // The rate rises with the window up to 300 and is flat above; the workers
  // starve below 300 (and in 30% of the other periods). With +-8% noise
  // the window still climbs to the knee and stays near it.
  auto rate = [](uint64_t w) { return 0.4 * static_cast<double>(std::min<uint64_t>(w, 300)) / 300.0; };
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const auto [mean, max, mean_rate] = NoisyRun(seed, rate, 0.08, 0.3, 300, 1000);
    EXPECT_GE(mean, 270u) << "seed " << seed;
    EXPECT_LE(mean, 450u) << "seed " << seed;
    EXPECT_LE(max, 1000u) << "seed " << seed;
  }
}

TEST_F(AdmissionNoise, AGrowthNeedsTwoFasterPeriods) {
  // One lucky period (10% faster) does not keep a growth: the next one is
  // not 5% faster, so it is undone.
  AdmissionController c({.workers = 1, .max_active = 2000});
  UnboundPeriod(&c, 0.4);  // 64: 0.4
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u);
  Period(&c, 0.44);
  EXPECT_EQ(c.window(), 96u) << "one faster period: still checked";
  Period(&c, 0.4);
  EXPECT_EQ(c.window(), 64u) << "the second was not faster: back";
  EXPECT_EQ(c.grows_undone(), 1u);
}

TEST_F(AdmissionNoise, AGrowthMustBeatTheBestRateOfTheDescent) {
  // The descent measured 0.44 at 64 (a lucky period) and 0.43 at 60, which
  // was kept (within 3%). A growth from 60 is judged against 0.44, as a
  // trial shrink is: 5.8% above the last period is not 5% above the best.
  AdmissionController c({.workers = 1, .max_active = 2000});
  Period(&c, 0.44);  // 64: the best; a trial at 60
  ASSERT_TRUE(c.trying_shrink());
  ASSERT_EQ(c.window(), 60u);
  UnboundPeriod(&c, 0.43);  // kept; no shrink asked for
  ASSERT_FALSE(c.trying_shrink());
  ASSERT_EQ(c.window(), 60u);
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 90u);
  Period(&c, 0.455);
  EXPECT_EQ(c.window(), 60u) << "not 5% above the descent's best (0.44): back";
  EXPECT_EQ(c.grows_undone(), 1u);
}

TEST_F(AdmissionNoise, AKeptGrowthIsReCheckedByATrialBack) {
  // Two lucky periods keep a growth from 64 to 96; the rate is in fact the
  // same. Once 96 is measured afresh, a trial back at 64 is judged as a
  // shrink (not 3% slower): kept, the window is back at 64 (before, the
  // next shrink was a 1/16 step from 96).
  AdmissionController c({.workers = 1, .max_active = 2000});
  UnboundPeriod(&c, 0.4);  // 64: 0.4
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u);
  Period(&c, 0.43);
  Period(&c, 0.43);
  ASSERT_EQ(c.window(), 96u) << "two periods 7.5% faster: kept";
  ASSERT_EQ(c.grows_undone(), 0u);
  c.Adjust(Starved());
  EXPECT_EQ(c.window(), 96u) << "no growth before the re-check";
  Period(&c, 0.4);  // 96 measured afresh: a trial back at 64
  EXPECT_TRUE(c.trying_shrink());
  EXPECT_EQ(c.window(), 64u);
  Period(&c, 0.4);
  EXPECT_EQ(c.shrinks_undone(), 0u);
  EXPECT_LE(c.window(), 64u) << "as fast at 64: the growth is given back";
}

TEST_F(AdmissionNoise, AGrowthRightAfterAnUndoneShrinkIsChecked) {
  // A trial at 60 is undone (slower); the window is back at 64, whose rate
  // the descent measured. A starvation grows it to 96, and a flat rate
  // there undoes the growth: it is checked against 64's rate (before, a
  // growth right after an undone shrink had no reference and was kept).
  AdmissionController c({.workers = 1, .max_active = 2000});
  Period(&c, 0.4);   // 64; a trial at 60
  Period(&c, 0.35);  // slower: back to 64
  ASSERT_EQ(c.window(), 64u);
  ASSERT_EQ(c.shrinks_undone(), 1u);
  c.Adjust(Starved());
  ASSERT_EQ(c.window(), 96u);
  Period(&c, 0.4);
  EXPECT_EQ(c.window(), 64u) << "not faster than 64: back";
  EXPECT_EQ(c.grows_undone(), 1u);
}

// Multi-partition txns: a share of the admitted txns is parked (waiting
// for other partitions' reads), drifting around a quarter of the window,
// so the controller switches between its climb on the release rate and its
// plain rules (starvation grows, validated shrinks). The rate rises with
// the window up to `knee` and is flat above, measured within +-8% each
// period. Returns the mean window over the second half and the mean rate
// there as a share of the best.
std::pair<uint64_t, double> NoisyParked(uint64_t seed, uint64_t knee, double starve_share, int periods) {
  AdmissionController c({.workers = 1, .max_active = 2000});
  std::mt19937_64 rng(seed);
  const auto rate = [knee](uint64_t w) {
    return 0.4 * std::min<double>(1.0, static_cast<double>(w) / static_cast<double>(knee));
  };
  uint64_t now_us = 0, sum = 0;
  double rate_sum = 0;
  for (int i = 0; i < periods; ++i) {
    const uint64_t w = c.window();
    // Parked: 10% to 40% of the window this period.
    const uint64_t parked = static_cast<uint64_t>(static_cast<double>(w) * (0.1 + 0.3 * Uniform(&rng)));
    // A worker starves once a period while the window is below the knee
    // (and, with `starve_share`, in that share of the other periods too: a
    // descheduled lock thread).
    const bool starve = Uniform(&rng) < starve_share;
    const uint64_t at = static_cast<uint64_t>(Uniform(&rng) * static_cast<double>(w / 8));
    for (uint64_t n = 0; n < w; n += 8)
      c.Adjust({.starved = n / 8 == at && (w < knee || starve) ? 1u : 0u, .admitted = 8, .blocked = 1, .window_bound = true,
                .parked = parked, .now_us = now_us});
    now_us += kPeriod;
    const double r = rate(c.window()) * (1.0 + 0.08 * (2.0 * Uniform(&rng) - 1.0));
    c.Adjust({.window_bound = true, .released = static_cast<uint64_t>(r * static_cast<double>(kPeriod)),
              .parked = parked, .now_us = now_us});
    if (i >= periods / 2) {
      sum += c.window();
      rate_sum += rate(c.window());
    }
  }
  const int n = periods - periods / 2;
  return {sum / static_cast<uint64_t>(n), rate_sum / n / 0.4};
}

// The window follows the knee with parked txns: it keeps 97% of the best
// rate (no walk down into the rising part) and stays within twice the
// knee. (Measured: mean windows 18-19 for a knee of 16, 74-81 for 64,
// 298-322 for 256; 98.5-99.6% of the best rate.)
TEST_F(AdmissionNoise, WithParkedTxnsTheWindowFollowsTheKnee) {
  for (const uint64_t knee : {16, 64, 256}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const auto [mean_window, share] = NoisyParked(seed, knee, 0.0, 800);
      SCOPED_TRACE(testing::Message() << "knee " << knee << ", seed " << seed << ": mean window " << mean_window
                                      << ", " << share << " of the best rate");
      EXPECT_GE(share, 0.97);
      EXPECT_LE(mean_window, 2 * knee);
    }
  }
}

// The same with a worker starving at random in a share of the periods
// above the knee too (a descheduled lock thread on a shared host). Before
// the climb judged the step it ended on and wanted two faster periods for a
// step up, each dip of the parked share below a quarter kept a step up
// unjudged and one lucky period kept another: mean windows of 350-1,050
// for a knee of 16, 380-1,350 for 64 and 380-1,400 for 256 (medians over 5
// seeds 6-45x the knee). Now the medians are 1.2-1.6x the knee (single
// seeds up to 2.2x), and every run keeps 97% of the best rate.
TEST_F(AdmissionNoise, WithParkedTxnsAndRandomStarvationTheWindowDoesNotRatchetUp) {
  for (const uint64_t knee : {16, 64, 256}) {
    for (const double starve_share : {0.1, 0.33}) {
      std::vector<uint64_t> means;
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        const auto [mean_window, share] = NoisyParked(seed, knee, starve_share, 800);
        EXPECT_GE(share, 0.97) << "knee " << knee << ", starving in " << starve_share << ", seed " << seed;
        means.push_back(mean_window);
      }
      std::sort(means.begin(), means.end());
      EXPECT_LE(means[2], 5 * knee / 2) << "knee " << knee << ", starving in " << starve_share
                                        << " of the periods: median of the mean windows";
      EXPECT_LE(means[4], 4 * knee) << "knee " << knee << ", starving in " << starve_share
                                    << " of the periods: the largest mean window";
    }
  }
}

}  // namespace
}  // namespace detdb
