#include "lockmgr/normalize.h"

#include <gtest/gtest.h>

#include <random>

namespace detdb {
namespace {

std::vector<std::pair<uint64_t, LockMode>> Norm(std::vector<Key> reads, std::vector<Key> writes,
                                                uint64_t modulo = 0, uint32_t* num_x = nullptr) {
  std::vector<NormRequest> out;
  uint32_t x = NormalizeRequests(
      reads, writes, [&](Key k) { return modulo == 0 ? k : k % modulo; }, &out);
  if (num_x != nullptr) *num_x = x;
  std::vector<std::pair<uint64_t, LockMode>> v;
  for (auto& r : out) v.emplace_back(r.slot, r.mode);
  return v;
}

constexpr LockMode X = LockMode::kExclusive;
constexpr LockMode S = LockMode::kShared;

TEST(Normalize, ExclusiveFirstThenSharedEachAscending) {
  uint32_t num_x;
  EXPECT_EQ(Norm({9, 3, 7}, {8, 1}, 0, &num_x),
            (std::vector<std::pair<uint64_t, LockMode>>{{1, X}, {8, X}, {3, S}, {7, S}, {9, S}}));
  EXPECT_EQ(num_x, 2u);
}

TEST(Normalize, KeyReadAndWrittenIsOneExclusiveRequest) {  // N3, C1
  EXPECT_EQ(Norm({5}, {5}), (std::vector<std::pair<uint64_t, LockMode>>{{5, X}}));
}

TEST(Normalize, DuplicateKeysCollapse) {  // C11
  EXPECT_EQ(Norm({4, 4, 2}, {2, 2}),
            (std::vector<std::pair<uint64_t, LockMode>>{{2, X}, {4, S}}));
}

TEST(Normalize, KeysSharingASlotCollapseAndWriteWins) {  // N3 on hash slots, C2/C3
  // 3 and 13 share slot 3 (mod 10); 4 and 14 share slot 4.
  EXPECT_EQ(Norm({3, 4, 14}, {13}, 10),
            (std::vector<std::pair<uint64_t, LockMode>>{{3, X}, {4, S}}));
}

TEST(Normalize, EmptyTxnHasNoRequests) {  // C12
  EXPECT_TRUE(Norm({}, {}).empty());
}

TEST(Normalize, LargeTxnsUseTheSortPath) {
  std::vector<Key> reads, writes;
  for (Key k = 100; k > 0; --k) (k % 3 == 0 ? writes : reads).push_back(k);
  reads.push_back(3);  // also written
  auto v = Norm(reads, writes);
  ASSERT_EQ(v.size(), 100u);
  for (size_t i = 0; i < 33; ++i) EXPECT_EQ(v[i], std::make_pair(uint64_t{3 * (i + 1)}, X));
  for (size_t i = 34; i < 100; ++i) EXPECT_LT(v[i - 1].first, v[i].first);
}

// NormalizePacked gives exactly NormalizeRequests' requests, in its order.
TEST(Normalize, PackedMatchesPairs) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> packed;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<Key> reads(rng() % 12), writes(rng() % 12);
    if (iter % 100 == 0) reads.resize(40 + rng() % 40);  // the std::sort path, shared part
    if (iter % 100 == 50) writes.resize(40 + rng() % 40);  // and exclusive part
    const uint64_t modulo = 1 + rng() % 20;
    for (Key& k : reads) k = rng() % 64;
    for (Key& k : writes) k = rng() % 64;
    uint32_t num_x;
    auto want = Norm(reads, writes, modulo, &num_x);
    packed.assign(reads.size() + writes.size(), 0);
    uint32_t got_x;
    packed.resize(NormalizePacked(reads, writes, [&](Key k) { return k % modulo; }, packed.data(), &got_x));
    ASSERT_EQ(got_x, num_x);
    std::vector<std::pair<uint64_t, LockMode>> got;
    for (uint32_t r : packed)
      got.emplace_back(r & ~kPackedShared, (r & kPackedShared) != 0 ? S : X);
    ASSERT_EQ(got, want) << "iteration " << iter;
  }
}

}  // namespace
}  // namespace detdb
