// TPC-C random input: NURand's range and constants (clause 2.1.6), last
// names (clause 4.3.2.3), scale validation, and customer names that are a
// pure function of (seed, w, d, c).
#include "workloads/tpcc/random.h"

#include <set>

#include <gtest/gtest.h>

namespace detdb {
namespace tpcc {
namespace {

TEST(TpccRandom, LastNamesFromSyllables) {
  EXPECT_EQ(LastName(0), "BARBARBAR");
  EXPECT_EQ(LastName(371), "PRICALLYOUGHT");
  EXPECT_EQ(LastName(999), "EINGEINGEING");
  EXPECT_EQ(LastName(40), "BARPRESBAR");
}

TEST(TpccRandom, NURandStaysInRangeAndIsNonUniform) {
  Rng r(5);
  std::vector<int> hits(1000, 0);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t v = r.NURand(255, 0, 999, 123);
    ASSERT_LE(v, 999u);
    ++hits[v];
  }
  const auto [mn, mx] = std::minmax_element(hits.begin(), hits.end());
  EXPECT_GT(*mx, 3 * std::max(1, *mn)) << "NURand is skewed";
  for (int i = 0; i < 10000; ++i) {
    const uint32_t v = r.NURand(8191, 1, 100000, 77);
    ASSERT_GE(v, 1u);
    ASSERT_LE(v, 100000u);
  }
}

TEST(TpccRandom, RunConstantsDifferFromLoadAsRequired) {
  for (uint64_t seed = 1; seed < 200; ++seed) {
    const NURandC load = LoadConstants(seed), run = RunConstants(load, seed);
    const int delta = std::abs(static_cast<int>(run.c_last) - static_cast<int>(load.c_last));
    EXPECT_GE(delta, 65);
    EXPECT_LE(delta, 119);
    EXPECT_NE(delta, 96);
    EXPECT_NE(delta, 112);
  }
}

TEST(TpccRandom, StringsAndUniform) {
  Rng r(9);
  for (int i = 0; i < 1000; ++i) {
    const std::string a = r.AString(8, 16), n = r.NString(4, 4);
    ASSERT_GE(a.size(), 8u);
    ASSERT_LE(a.size(), 16u);
    ASSERT_EQ(n.size(), 4u);
    for (char c : n) ASSERT_TRUE(c >= '0' && c <= '9');
    const int64_t u = r.Uniform(-3, 3);
    ASSERT_GE(u, -3);
    ASSERT_LE(u, 3);
  }
}

TEST(TpccRandom, CustomerNamesArePureAndFollowTheSpec) {
  const Scale s = Scale::Spec(2);
  const NURandC load = LoadConstants(1);
  EXPECT_EQ(CustomerNameOf(s, load, 1, 1, 1, 1).last, "BARBARBAR");
  EXPECT_EQ(CustomerNameOf(s, load, 1, 2, 5, 1000).last, LastName(999));
  std::set<std::string> lasts;
  for (uint32_t c = 1001; c <= 3000; ++c) {
    const CustomerName a = CustomerNameOf(s, load, 1, 1, 3, c), b = CustomerNameOf(s, load, 1, 1, 3, c);
    EXPECT_EQ(a.first, b.first);
    EXPECT_EQ(a.last, b.last);
    lasts.insert(a.last);
  }
  EXPECT_GT(lasts.size(), 100u);
  EXPECT_NE(CustomerNameOf(s, load, 1, 1, 3, 2000).first, CustomerNameOf(s, load, 2, 1, 3, 2000).first)
      << "another seed, other names";
}

TEST(TpccRandom, ScaleValidation) {
  EXPECT_TRUE(Scale::Spec(1).Validate().ok());
  EXPECT_TRUE(Scale::Small(3).Validate().ok());
  EXPECT_EQ(Scale::Small(3).LastNameRange(), 300u);
  Scale bad = Scale::Spec(0);
  EXPECT_FALSE(bad.Validate().ok());
  bad = Scale::Spec(1);
  bad.orders_per_district = 10;
  EXPECT_FALSE(bad.Validate().ok());
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
