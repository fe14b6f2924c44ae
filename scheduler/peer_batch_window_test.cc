#include "scheduler/peer_batch_window.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

using V = PeerBatchWindow::Verdict;

TEST(PeerBatchWindow, TakesEachEpochOnceInAnyOrderWithinTheWindow) {
  PeerBatchWindow w(3, 1, 10);
  EXPECT_EQ(w.Record(1, 1, 1), V::kAccept);
  EXPECT_EQ(w.Record(1, 1, 1), V::kDuplicate) << "below the frontier";
  EXPECT_EQ(w.Record(1, 3, 1), V::kAccept) << "a gap is fine";
  EXPECT_EQ(w.Record(1, 3, 1), V::kDuplicate) << "recorded above the frontier";
  EXPECT_EQ(w.frontier(1), 2u);
  EXPECT_EQ(w.recorded_above(), 1u);
  EXPECT_EQ(w.Record(1, 2, 1), V::kAccept);
  EXPECT_EQ(w.frontier(1), 4u) << "the gap filled: the frontier passes 3";
  EXPECT_EQ(w.recorded_above(), 0u);
  EXPECT_EQ(w.Record(2, 1, 1), V::kAccept) << "sequencers are apart";
  EXPECT_EQ(w.frontier(0), 1u);
}

TEST(PeerBatchWindow, RefusesEpochsTooFarAheadOfTheMergedEpoch) {
  PeerBatchWindow w(2, 1, 10);
  EXPECT_EQ(w.Classify(1, 11, 1), V::kTooFarAhead);
  EXPECT_EQ(w.Classify(1, 10, 1), V::kAccept);
  EXPECT_EQ(w.Record(1, 11, 1), V::kTooFarAhead);
  EXPECT_EQ(w.recorded_above(), 0u) << "a refused epoch is not recorded";
  EXPECT_EQ(w.Record(1, 11, 2), V::kAccept) << "taken once the merge moved on";
  EXPECT_EQ(w.Classify(1, uint64_t{1} << 39, 2), V::kTooFarAhead);
}

TEST(PeerBatchWindow, AMillionFutureEpochsRecordAtMostTheWindow) {
  constexpr uint64_t kWindow = 1000;
  PeerBatchWindow w(2, 1, kWindow);
  uint64_t accepted = 0, refused = 0;
  for (uint64_t e = 2; e < 1'000'002; ++e) {  // epoch 1 never comes: the merge stays at 1
    const V v = w.Record(1, e, 1);
    accepted += v == V::kAccept;
    refused += v == V::kTooFarAhead;
  }
  EXPECT_EQ(accepted, kWindow - 1);
  EXPECT_EQ(refused, 1'000'000 - (kWindow - 1));
  EXPECT_LE(w.recorded_above(), kWindow);
  EXPECT_EQ(w.Record(1, 1, 1), V::kAccept);
  EXPECT_EQ(w.frontier(1), kWindow + 1);
  EXPECT_EQ(w.recorded_above(), 0u);
}

TEST(PeerBatchWindow, Names) {
  EXPECT_STREQ(PeerBatchWindow::Name(V::kDuplicate), "duplicate");
  EXPECT_STREQ(PeerBatchWindow::Name(V::kTooFarAhead), "too far ahead of the merged epoch");
}

}  // namespace
}  // namespace detdb
