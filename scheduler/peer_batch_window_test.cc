#include "scheduler/peer_batch_window.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

using V = PeerBatchWindow::Verdict;

TEST(PeerBatchWindow, TakesEachEpochOnceInAnyOrderWithinTheWindow) {
  PeerBatchWindow w(3, 1, 10);
  EXPECT_EQ(w.Record(1, 1, 1, 0, 7), V::kAccept);
  EXPECT_EQ(w.Record(1, 1, 1, 0, 7), V::kDuplicate) << "below the frontier";
  EXPECT_EQ(w.Record(1, 3, 1, 0, 7), V::kAccept) << "a gap is fine";
  EXPECT_EQ(w.Record(1, 3, 1, 0, 7), V::kDuplicate) << "recorded above the frontier";
  EXPECT_EQ(w.frontier(1), 2u);
  EXPECT_EQ(w.recorded_above(), 1u);
  EXPECT_EQ(w.Record(1, 2, 1, 0, 7), V::kAccept);
  EXPECT_EQ(w.frontier(1), 4u) << "the gap filled: the frontier passes 3";
  EXPECT_EQ(w.recorded_above(), 0u);
  EXPECT_EQ(w.Record(2, 1, 1, 0, 7), V::kAccept) << "sequencers are apart";
  EXPECT_EQ(w.frontier(0), 1u);
}

TEST(PeerBatchWindow, RefusesEpochsTooFarAheadOfTheMergedEpoch) {
  PeerBatchWindow w(2, 1, 10);
  EXPECT_EQ(w.Classify(1, 11, 1, 0, 7), V::kTooFarAhead);
  EXPECT_EQ(w.Classify(1, 10, 1, 0, 7), V::kAccept);
  EXPECT_EQ(w.Record(1, 11, 1, 0, 7), V::kTooFarAhead);
  EXPECT_EQ(w.recorded_above(), 0u) << "a refused epoch is not recorded";
  EXPECT_EQ(w.Record(1, 11, 2, 0, 7), V::kAccept) << "taken once the merge moved on";
  EXPECT_EQ(w.Classify(1, uint64_t{1} << 39, 2, 0, 7), V::kTooFarAhead);
}

TEST(PeerBatchWindow, AMillionFutureEpochsRecordAtMostTheWindow) {
  constexpr uint64_t kWindow = 1000;
  PeerBatchWindow w(2, 1, kWindow);
  uint64_t accepted = 0, refused = 0;
  for (uint64_t e = 2; e < 1'000'002; ++e) {  // epoch 1 never comes: the merge stays at 1
    const V v = w.Record(1, e, 1, 0, 7);
    accepted += v == V::kAccept;
    refused += v == V::kTooFarAhead;
  }
  EXPECT_EQ(accepted, kWindow - 1);
  EXPECT_EQ(refused, 1'000'000 - (kWindow - 1));
  EXPECT_LE(w.recorded_above(), kWindow);
  EXPECT_EQ(w.Record(1, 1, 1, 0, 7), V::kAccept);
  EXPECT_EQ(w.frontier(1), kWindow + 1);
  EXPECT_EQ(w.recorded_above(), 0u);
}

TEST(PeerBatchWindow, TheWallClockEpochMovesTheWindowWhenTheMergeLags) {
  PeerBatchWindow w(2, 1, 10);
  // The merge is held at epoch 1 while the clock is at epoch 1000: an honest
  // peer is at about epoch 1000, and must still be taken.
  EXPECT_EQ(w.Record(1, 1005, 1, 1000, 7), V::kAccept);
  EXPECT_EQ(w.Record(1, 1009, 1, 1000, 7), V::kAccept);
  EXPECT_EQ(w.Record(1, 1010, 1, 1000, 7), V::kTooFarAhead) << "clock epoch + window";
  EXPECT_EQ(w.Record(1, 5, 1, 1000, 7), V::kAccept) << "behind the clock: the merge needs it";
}

TEST(PeerBatchWindow, TheFrontierFollowsTheMergeSoRecordsStayBounded) {
  PeerBatchWindow w(2, 1, 10);
  // A recovery skipped the merge to epoch 500: epochs below are duplicates,
  // and the frontier does not stay behind at 1 (which would record every
  // later epoch above it forever).
  EXPECT_EQ(w.Record(1, 499, 500, 0, 7), V::kDuplicate);
  for (uint64_t e = 500; e < 600; ++e) EXPECT_EQ(w.Record(1, e, e, 0, 7), V::kAccept) << e;
  EXPECT_EQ(w.frontier(1), 600u);
  EXPECT_EQ(w.recorded_above(), 0u);
  EXPECT_EQ(w.Record(1, 645, 640, 0, 7), V::kAccept) << "after a gap the merge passed (skipped)";
  EXPECT_EQ(w.recorded_above(), 1u);
  EXPECT_EQ(w.Record(1, 651, 651, 0, 7), V::kAccept);
  EXPECT_EQ(w.recorded_above(), 0u);
  EXPECT_EQ(w.frontier(1), 652u);
}

TEST(PeerBatchWindow, ADuplicateWithOtherContentIsAConflict) {
  PeerBatchWindow w(2, 1, 10);
  EXPECT_EQ(w.Record(1, 1, 1, 0, 111), V::kAccept);
  EXPECT_EQ(w.Record(1, 3, 1, 0, 333), V::kAccept);
  EXPECT_EQ(w.Record(1, 1, 1, 0, 111), V::kDuplicate) << "the same content: a resend";
  EXPECT_EQ(w.Record(1, 1, 1, 0, 112), V::kConflict) << "below the frontier";
  EXPECT_EQ(w.Classify(1, 3, 1, 0, 334), V::kConflict) << "recorded above the frontier";
  EXPECT_EQ(w.Record(0, 1, 1, 0, 112), V::kAccept) << "another sequencer's epoch 1";
  EXPECT_EQ(w.Record(1, 1 + PeerBatchWindow::kRecent, 1 + PeerBatchWindow::kRecent, 0, 5), V::kAccept);
  EXPECT_EQ(w.Record(1, 1, 1 + PeerBatchWindow::kRecent, 0, 112), V::kDuplicate) << "forgotten: too old to tell";
}

TEST(PeerBatchWindow, Names) {
  EXPECT_STREQ(PeerBatchWindow::Name(V::kDuplicate), "duplicate");
  EXPECT_STREQ(PeerBatchWindow::Name(V::kTooFarAhead), "too far ahead of the wall-clock epoch");
}

}  // namespace
}  // namespace detdb
