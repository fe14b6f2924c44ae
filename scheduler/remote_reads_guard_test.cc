#include "scheduler/remote_reads_guard.h"

#include <gtest/gtest.h>

#include "scheduler/peer_link.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {

using V = RemoteReadsGuard::Verdict;
constexpr uint32_t kTable = 1;

// Partition 0 executes txns that read keys on partitions 0, 1 and 2 (of 4).
class GuardTest : public ::testing::Test {
 protected:
  RemoteReadsGuardOptions Options(bool epoch_in_id = false) {
    RemoteReadsGuardOptions o;
    o.self = 0;
    o.partitioner = &parts_;
    o.value_size = [](Key k) -> uint32_t { return KeyTable(k) == kTable ? 8 : 0; };
    o.epoch_in_id = epoch_in_id;
    o.window_epochs = 10;
    // Cluster mode: readers on other nodes (early reads are bounded).
    if (epoch_in_id) o.is_local = [](PartitionId) { return false; };
    return o;
  }
  // Reads rows 0, 1, 5, 2 (partitions 0, 1, 1, 2); writes row 0.
  pb::Txn Txn(TxnId id) {
    pb::Txn t;
    t.set_id(id);
    for (uint64_t r : {0, 1, 5, 2}) t.add_read_set(MakeKey(kTable, r));
    t.add_write_set(MakeKey(kTable, 0));
    for (uint32_t p : {0, 1, 2}) t.add_readers(p);
    t.add_writers(0);
    return t;
  }
  // What partition `from`'s ReadLocal sends for Txn(id).
  pb::RemoteReads Reads(TxnId id, PartitionId from) {
    pb::RemoteReads m;
    m.set_txn_id(id);
    m.set_from_partition(from);
    for (uint64_t r : {0, 1, 5, 2}) {
      const Key k = MakeKey(kTable, r);
      if (parts_.PartitionOf(k) != from) continue;
      pb::KeyValue* kv = m.add_reads();
      kv->set_key(k);
      kv->set_found(true);
      kv->set_value(std::string(8, static_cast<char>('a' + r)));
    }
    return m;
  }
  V On(RemoteReadsGuard* g, pb::RemoteReads m, uint64_t merged = 1) {
    std::string why;
    const V v = g->OnReads(&m, merged, /*clock_epoch=*/0, &why);
    if (v != V::kDeliver && v != V::kKept) {
      EXPECT_FALSE(why.empty());
    }
    last_why_ = why;
    return v;
  }
  ModPartitioner parts_{4};
  std::string last_why_;
};

// The oldest txn taken that still waits for reads (or has not used them):
// a stalled rejoin asks its peers again from that txn's epoch.
TEST_F(GuardTest, TheOldestExpectedTxnIsKnown) {
  RemoteReadsGuard g(Options());
  EXPECT_EQ(g.oldest_expected(), 0u);
  std::vector<pb::RemoteReads> got;
  const pb::Txn a = Txn(7), b = Txn(9);
  g.Expect(a, 1);
  g.Take(7, &got);
  g.Expect(b, 1);
  g.Take(9, &got);
  EXPECT_EQ(g.oldest_expected(), 7u);
  EXPECT_EQ(On(&g, Reads(9, 1)), V::kDeliver);
  EXPECT_EQ(On(&g, Reads(9, 2)), V::kDeliver);
  EXPECT_EQ(g.oldest_expected(), 7u) << "9 is done, 7 still waits";
  EXPECT_EQ(On(&g, Reads(7, 2)), V::kDeliver);
  EXPECT_EQ(g.oldest_expected(), 7u) << "one reader left";
  EXPECT_EQ(On(&g, Reads(7, 1)), V::kDeliver);
  EXPECT_EQ(g.oldest_expected(), 0u);
}

TEST_F(GuardTest, AcceptsEachReaderOnceThenForgetsTheTxn) {
  RemoteReadsGuard g(Options());
  const pb::Txn t = Txn(7);
  g.Expect(t, 1);
  std::vector<pb::RemoteReads> got;
  g.Take(7, &got);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(On(&g, Reads(7, 1)), V::kDeliver);
  EXPECT_EQ(On(&g, Reads(7, 1)), V::kDuplicate) << "a resent message must not count twice";
  EXPECT_NE(last_why_.find("arrived already"), std::string::npos) << last_why_;
  EXPECT_EQ(g.expected_now(), 1u);
  EXPECT_EQ(On(&g, Reads(7, 2)), V::kDeliver);
  EXPECT_EQ(g.expected_now(), 0u) << "every reader heard from";
  EXPECT_EQ(On(&g, Reads(7, 2)), V::kLate);
  const RemoteReadsStats s = g.stats();
  EXPECT_EQ(s.accepted, 2u);
  EXPECT_EQ(s.duplicate, 1u);
  EXPECT_EQ(s.late, 1u);
  EXPECT_EQ(s.refused(), 2u);
}

TEST_F(GuardTest, RefusesForgedReadsAndStillTakesTheRealOnes) {
  RemoteReadsGuard g(Options());
  const pb::Txn t = Txn(7);
  g.Expect(t, 1);
  std::vector<pb::RemoteReads> got;
  g.Take(7, &got);
  pb::RemoteReads self = Reads(7, 0);
  EXPECT_EQ(On(&g, self), V::kForged) << "from this partition";
  pb::RemoteReads stranger = Reads(7, 1);
  stranger.set_from_partition(3);
  EXPECT_EQ(On(&g, stranger), V::kForged) << "partition 3 reads nothing of txn 7";
  EXPECT_NE(last_why_.find("not a reader"), std::string::npos) << last_why_;
  pb::RemoteReads empty = Reads(7, 1);
  empty.clear_reads();
  EXPECT_EQ(On(&g, empty), V::kForged) << "no reads: would complete the txn without values";
  pb::RemoteReads extra = Reads(7, 1);
  *extra.add_reads() = extra.reads(0);
  EXPECT_EQ(On(&g, extra), V::kForged) << "a key too many";
  pb::RemoteReads swapped = Reads(7, 1);
  swapped.mutable_reads()->SwapElements(0, 1);
  EXPECT_EQ(On(&g, swapped), V::kForged) << "not in read-set order";
  pb::RemoteReads short_value = Reads(7, 1);
  short_value.mutable_reads(0)->set_value("x");
  EXPECT_EQ(On(&g, short_value), V::kForged) << "a value of another size than its table's";
  pb::RemoteReads not_found_with_value = Reads(7, 1);
  not_found_with_value.mutable_reads(0)->set_found(false);
  EXPECT_EQ(On(&g, not_found_with_value), V::kForged) << "a missing record has no value";
  EXPECT_EQ(g.stats().forged, 7u);
  EXPECT_EQ(g.stats().accepted, 0u) << "nothing forged counts toward the txn";
  EXPECT_EQ(On(&g, Reads(7, 1)), V::kDeliver);
  pb::RemoteReads missing = Reads(7, 2);
  missing.mutable_reads(0)->set_found(false);
  missing.mutable_reads(0)->clear_value();
  EXPECT_EQ(On(&g, missing), V::kDeliver) << "a record that does not exist is a valid read";
}

TEST_F(GuardTest, EarlyReadsAreHeldAndCheckedWhenTheTxnIsTaken) {
  RemoteReadsGuard g(Options());
  EXPECT_EQ(On(&g, Reads(9, 1)), V::kKept) << "held: the txn is not known yet";
  EXPECT_EQ(On(&g, Reads(9, 1)), V::kDuplicate) << "the same content is held once";
  pb::RemoteReads stranger = Reads(9, 1);
  stranger.set_from_partition(3);
  EXPECT_EQ(On(&g, stranger), V::kKept);
  EXPECT_EQ(g.stats().held_now, 2u);
  EXPECT_GT(g.stats().held_bytes, 0u);
  const pb::Txn t = Txn(9);
  g.Expect(t, 1);
  EXPECT_EQ(g.stats().held_now, 0u);
  EXPECT_EQ(g.stats().held_bytes, 0u);
  EXPECT_EQ(g.stats().accepted, 1u);
  EXPECT_EQ(g.stats().duplicate, 1u);
  EXPECT_EQ(g.stats().forged, 1u);
  EXPECT_EQ(On(&g, Reads(9, 2)), V::kKept) << "accepted before the worker took the txn: kept for it";
  std::vector<pb::RemoteReads> got;
  g.Take(9, &got);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].from_partition(), 1u);
  EXPECT_EQ(got[1].from_partition(), 2u);
  EXPECT_EQ(g.expected_now(), 0u);
  EXPECT_EQ(On(&g, Reads(9, 2)), V::kLate);
}

TEST_F(GuardTest, HeldReadsOfTxnsNotExecutedHereExpire) {
  RemoteReadsGuard g(Options());
  EXPECT_EQ(On(&g, Reads(5, 1)), V::kKept);
  const pb::Txn t = Txn(8);
  g.Expect(t, 1);  // 5 was passed over: not a txn this partition executes
  EXPECT_EQ(g.stats().held_now, 0u);
  EXPECT_EQ(g.stats().expired, 1u);
  EXPECT_EQ(On(&g, Reads(5, 1)), V::kLate);
  EXPECT_EQ(On(&g, Reads(3, 1)), V::kLate);
}

TEST_F(GuardTest, EpochWindowForEarlyReads) {
  RemoteReadsGuard g(Options(/*epoch_in_id=*/true));
  auto id = [](uint64_t epoch) { return EpochBatcher::EpochSequencerId(epoch, 1, 0); };
  EXPECT_EQ(On(&g, Reads(id(13), 1), 3), V::kTooEarly) << "merged 3 + window 10";
  EXPECT_NE(last_why_.find("epochs ahead of epoch 3"), std::string::npos) << last_why_;
  EXPECT_EQ(On(&g, Reads(id(12), 1), 3), V::kKept);
  EXPECT_EQ(On(&g, Reads(id(4), 1), 3), V::kKept);
  EXPECT_EQ(On(&g, Reads(id(1), 1), 3), V::kLate) << "epoch 1 is two below the merged epoch: all taken";
  EXPECT_EQ(g.stats().held_now, 2u);
  // The merge passes epoch 4 without the txn: its reads expire.
  EXPECT_EQ(On(&g, Reads(id(14), 1), 6), V::kKept);
  EXPECT_EQ(g.stats().expired, 1u);
  EXPECT_EQ(g.stats().held_now, 2u);
  EXPECT_EQ(g.stats().too_early, 1u);
}

TEST_F(GuardTest, TheWallClockEpochMovesTheEarlyWindowWhenTheMergeLags) {
  RemoteReadsGuard g(Options(/*epoch_in_id=*/true));
  auto id = [](uint64_t epoch) { return EpochBatcher::EpochSequencerId(epoch, 1, 0); };
  std::string why;
  pb::RemoteReads m = Reads(id(105), 1);
  // The merge is held at epoch 3, the clock is at epoch 100: an honest peer
  // runs at about epoch 100, so its reads are held, not refused.
  EXPECT_EQ(g.OnReads(&m, /*merged_epoch=*/3, /*clock_epoch=*/100, &why), V::kKept) << why;
  m = Reads(id(110), 1);
  EXPECT_EQ(g.OnReads(&m, 3, 100, &why), V::kTooEarly) << "clock epoch + window";
  EXPECT_NE(why.find("wall clock 100"), std::string::npos) << why;
}

TEST_F(GuardTest, AForgeryBeforeTheRealReadsDoesNotHideThem) {
  RemoteReadsGuard g(Options());
  pb::RemoteReads empty = Reads(9, 1);
  empty.clear_reads();
  EXPECT_EQ(On(&g, empty), V::kKept) << "the txn is not known: cannot be checked yet";
  EXPECT_EQ(On(&g, Reads(9, 1)), V::kKept) << "another version: held beside it";
  EXPECT_EQ(On(&g, Reads(9, 1)), V::kDuplicate);
  EXPECT_EQ(g.stats().held_now, 2u);
  const pb::Txn t = Txn(9);
  g.Expect(t, 1);
  EXPECT_EQ(g.stats().forged, 1u);
  EXPECT_EQ(g.stats().accepted, 1u);
  std::vector<pb::RemoteReads> got;
  g.Take(9, &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reads_size(), 2) << "the real one";
}

TEST_F(GuardTest, ASecondValidVersionIsAConflictAndNeverUsed) {
  RemoteReadsGuard g(Options());
  const pb::Txn t = Txn(7);
  g.Expect(t, 1);
  std::vector<pb::RemoteReads> got;
  g.Take(7, &got);
  EXPECT_EQ(On(&g, Reads(7, 1)), V::kDeliver);
  pb::RemoteReads other = Reads(7, 1);
  other.mutable_reads(0)->set_value(std::string(8, 'z'));  // right keys and sizes, other values
  EXPECT_EQ(On(&g, other), V::kConflict);
  EXPECT_NE(last_why_.find("other values"), std::string::npos) << last_why_;
  EXPECT_EQ(g.stats().conflicting, 1u);
  EXPECT_EQ(g.stats().accepted, 1u);
  // Held early: the first valid version is used, the second is a conflict.
  EXPECT_EQ(On(&g, Reads(8, 1)), V::kKept);
  other.set_txn_id(8);
  EXPECT_EQ(On(&g, other), V::kKept);
  const pb::Txn t8 = Txn(8);
  g.Expect(t8, 1);
  EXPECT_EQ(g.stats().conflicting, 2u);
  g.Take(8, &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].reads(0).value(), std::string(8, 'b'));
}

TEST_F(GuardTest, HeldVersionsOfOneReaderAreBounded) {
  RemoteReadsGuard g(Options());
  for (size_t i = 0; i < RemoteReadsGuard::kMaxVariants; ++i) {
    pb::RemoteReads m = Reads(9, 1);
    m.mutable_reads(0)->set_value(std::string(8, static_cast<char>('A' + i)));
    EXPECT_EQ(On(&g, m), V::kKept) << i;
  }
  EXPECT_EQ(On(&g, Reads(9, 1)), V::kForged) << "one version too many";
  EXPECT_EQ(On(&g, Reads(9, 2)), V::kKept) << "another reader is apart";
}

TEST_F(GuardTest, HeldBytesAreBounded) {
  RemoteReadsGuardOptions o = Options(/*epoch_in_id=*/true);
  o.max_held_bytes = 1000;
  o.is_local = [](PartitionId) { return false; };  // every reader on another node
  RemoteReadsGuard g(o);
  int kept = 0;
  for (uint32_t i = 1; i <= 100; ++i) kept += On(&g, Reads(EpochBatcher::EpochSequencerId(2, 1, i), 1)) == V::kKept;
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 100);
  EXPECT_LE(g.stats().held_bytes, 1000u);
  EXPECT_EQ(g.stats().over_budget, static_cast<uint64_t>(100 - kept));
}

TEST_F(GuardTest, ReadsFromThisProcessAreNeverRefusedAsEarlyOrOverBudget) {
  RemoteReadsGuardOptions o = Options(/*epoch_in_id=*/true);
  o.max_held_bytes = 1000;
  o.is_local = [](PartitionId p) { return p == 1; };
  RemoteReadsGuard g(o);
  for (uint32_t i = 1; i <= 100; ++i)
    EXPECT_EQ(On(&g, Reads(EpochBatcher::EpochSequencerId(2, 1, i), 1)), V::kKept) << i;
  EXPECT_EQ(On(&g, Reads(EpochBatcher::EpochSequencerId(500, 1, 0), 1)), V::kKept) << "far ahead, but local";
  EXPECT_EQ(On(&g, Reads(EpochBatcher::EpochSequencerId(2, 1, 0), 2)), V::kOverBudget) << "partition 2 is remote";
  EXPECT_EQ(g.stats().held_now, 101u);
}

TEST(CheckReadsSender, OnlyTheNodeServingThePartition) {
  InProcessPeerHub hub({0, 1, 1});
  pb::RemoteReads m;
  m.set_from_partition(2);
  EXPECT_TRUE(CheckReadsSender(m, 1, *hub.link(1), 3).ok());
  const absl::Status s = CheckReadsSender(m, 0, *hub.link(1), 3);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("which node 1 serves"), std::string::npos) << s;
  m.set_from_partition(3);
  EXPECT_FALSE(CheckReadsSender(m, 1, *hub.link(1), 3).ok()) << "no partition 3";
}

}  // namespace
}  // namespace detdb
