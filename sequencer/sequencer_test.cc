#include "sequencer/sequencer.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {

pb::Txn MakeTxn(std::vector<Key> reads, std::vector<Key> writes, uint64_t seq = 0) {
  pb::Txn t;
  for (Key k : reads) t.add_read_set(k);
  for (Key k : writes) t.add_write_set(k);
  t.set_client_seq(seq);
  return t;
}

TEST(EpochBatcher, IdsIncreaseInMergeOrderAndParticipantsAreComputed) {
  ModPartitioner parts(3);
  EpochBatcher b(/*sequencer_id=*/2, &parts, /*first_epoch=*/5);
  pb::Txn t1 = MakeTxn({0, 4, 7}, {4});
  pb::Txn t2 = MakeTxn({}, {2, 5, 8});
  ASSERT_TRUE(b.Add(&t1));
  ASSERT_TRUE(b.Add(&t2));
  auto batch = b.Close();
  EXPECT_EQ(batch->epoch(), 5u);
  EXPECT_EQ(batch->sequencer_id(), 2u);
  ASSERT_EQ(batch->txns_size(), 2);
  EXPECT_EQ(batch->txns(0).id(), 1u);  // dense positions in the global order
  EXPECT_EQ(batch->txns(1).id(), 2u);
  EXPECT_EQ(std::vector<uint32_t>(batch->txns(0).readers().begin(), batch->txns(0).readers().end()),
            (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(std::vector<uint32_t>(batch->txns(0).writers().begin(), batch->txns(0).writers().end()),
            (std::vector<uint32_t>{1}));
  EXPECT_EQ(std::vector<uint32_t>(batch->txns(1).writers().begin(), batch->txns(1).writers().end()),
            (std::vector<uint32_t>{2}));
  EXPECT_TRUE(batch->txns(1).readers().empty());
  auto empty = b.Close();  // empty epochs are batches too
  EXPECT_EQ(empty->epoch(), 6u);
  EXPECT_EQ(empty->txns_size(), 0);
  pb::Txn t3 = MakeTxn({1}, {});
  ASSERT_TRUE(b.Add(&t3));
  EXPECT_EQ(b.Close()->txns(0).id(), 3u) << "ids continue across epochs, empty ones included";
}

TEST(EpochBatcher, ParticipantsOnOnePartitionAndOutOfOrderKeys) {
  const auto readers = [](const pb::Txn& t) { return std::vector<uint32_t>(t.readers().begin(), t.readers().end()); };
  const auto writers = [](const pb::Txn& t) { return std::vector<uint32_t>(t.writers().begin(), t.writers().end()); };
  ModPartitioner one(1);
  EpochBatcher b1(1, &one, 1);
  pb::Txn a = MakeTxn({3, 9, 12}, {});
  ASSERT_TRUE(b1.Add(&a));
  auto batch = b1.Close();
  EXPECT_EQ(readers(batch->txns(0)), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(writers(batch->txns(0)).empty());
  ModPartitioner three(3);
  EpochBatcher b3(1, &three, 1);
  pb::Txn c = MakeTxn({5, 3, 8, 2}, {4, 7, 1});  // partitions 2, 0, 2, 2 and 1, 1, 1
  ASSERT_TRUE(b3.Add(&c));
  batch = b3.Close();
  EXPECT_EQ(readers(batch->txns(0)), (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(writers(batch->txns(0)), (std::vector<uint32_t>{1}));
}

class CollectingSink : public BatchSink {
 public:
  void OnBatch(std::shared_ptr<const pb::Batch> batch) override {
    std::lock_guard<std::mutex> l(mu);
    batches.push_back(std::move(batch));
  }
  // The client_seq of every txn of every batch, in order.
  std::vector<uint64_t> Seqs() {
    std::lock_guard<std::mutex> l(mu);
    std::vector<uint64_t> out;
    for (const auto& b : batches)
      for (const pb::Txn& t : b->txns()) out.push_back(t.client_seq());
    return out;
  }
  std::mutex mu;
  std::vector<std::shared_ptr<const pb::Batch>> batches;
};

TEST(Sequencer, EmitsEveryEpochInOrderAndKeepsSubmissionOrder) {
  ModPartitioner parts(2);
  CollectingSink sink;
  SequencerOptions o;
  o.epoch_us = 500;
  Sequencer seq(o, &parts, &sink);
  seq.Start();
  constexpr int kTxns = 5000;
  std::vector<pb::Txn> group;
  for (int i = 0; i < kTxns; ++i) {
    group.push_back(MakeTxn({static_cast<Key>(i)}, {}, i));
    if (group.size() == 50) {
      ASSERT_TRUE(seq.SubmitMany(&group).ok());
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  ASSERT_TRUE(seq.SubmitMany(&group).ok());
  seq.Stop();
  EXPECT_FALSE(seq.Submit(MakeTxn({1}, {})).ok()) << "submissions after Stop are refused";
  std::lock_guard<std::mutex> l(sink.mu);
  ASSERT_GE(sink.batches.size(), 2u);
  uint64_t expect_seq = 0;
  TxnId last_id = 0;
  for (size_t b = 0; b < sink.batches.size(); ++b) {
    EXPECT_EQ(sink.batches[b]->epoch(), b + 1) << "epochs are consecutive";
    for (const pb::Txn& t : sink.batches[b]->txns()) {
      EXPECT_EQ(t.client_seq(), expect_seq++);
      EXPECT_EQ(t.id(), last_id + 1) << "ids are dense in submission order";
      last_id = t.id();
    }
  }
  EXPECT_EQ(expect_seq, static_cast<uint64_t>(kTxns)) << "every txn sequenced exactly once";
}

// Singles (Submit) and groups (SubmitMany, taken whole) keep their
// submission order and are each sequenced once, also when an epoch fills
// up (by bytes: two 22 MiB txns fill one) and its rest is carried into the
// next epoch while more singles and groups arrive. (The order and the count
// must hold whichever way the epochs fall.)
TEST(Sequencer, SinglesAndGroupsKeepTheirOrderAcrossFullEpochs) {
  // Keeps what the check needs, not the batches (their 22 MiB txns).
  struct Sink : BatchSink {
    void OnBatch(std::shared_ptr<const pb::Batch> batch) override {
      std::lock_guard<std::mutex> l(mu);
      int big = 0;
      for (const pb::Txn& t : batch->txns()) {
        seqs.push_back(t.client_seq());
        big += !t.args().empty();
      }
      most_big = std::max(most_big, big);
    }
    std::mutex mu;
    std::vector<uint64_t> seqs;
    int most_big = 0;
  } sink;
  ModPartitioner parts(1);
  SequencerOptions o;
  o.epoch_us = 2000;
  Sequencer seq(o, &parts, &sink);
  seq.Start();
  const std::string big_args(22u << 20, 'x');
  ASSERT_GT(3 * big_args.size(), EpochBatcher::kMaxBatchBytes);
  uint64_t next = 0;
  const auto txn = [&](bool big) {
    pb::Txn t = MakeTxn({1}, {}, next++);
    if (big) t.set_args(big_args);
    return t;
  };
  // Round 0 fills an epoch (two of its three big txns) and leaves a carry;
  // round 1 comes right after that epoch closed, so the next one takes the
  // carry first, then round 1.
  struct Round {
    std::vector<pb::Txn> bigs, smalls;
    pb::Txn single;
  };
  Round rounds[2];
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < (r == 0 ? 3 : 1); ++i) rounds[r].bigs.push_back(txn(true));
    rounds[r].single = txn(false);
    for (int i = 0; i < 5; ++i) rounds[r].smalls.push_back(txn(false));
  }
  for (Round& r : rounds) {
    const uint64_t closed = seq.epochs_closed();
    while (seq.epochs_closed() == closed) std::this_thread::yield();
    ASSERT_TRUE(seq.SubmitMany(&r.bigs).ok());
    EXPECT_TRUE(r.bigs.empty());
    ASSERT_TRUE(seq.Submit(std::move(r.single)).ok());
    ASSERT_TRUE(seq.SubmitMany(&r.smalls).ok());
  }
  seq.Stop();
  std::lock_guard<std::mutex> l(sink.mu);
  ASSERT_EQ(sink.seqs.size(), next) << "every txn sequenced exactly once";
  for (uint64_t i = 0; i < next; ++i) ASSERT_EQ(sink.seqs[i], i) << "in submission order";
  EXPECT_EQ(sink.most_big, 2) << "an epoch holds at most two 22 MiB txns";
}

// A batched group's vector goes back to a later SubmitMany caller, emptied
// but with its capacity (no regrowth per group for a steady client).
TEST(Sequencer, SubmitManyHandsBackAnEarlierGroupsCapacity) {
  ModPartitioner parts(1);
  CollectingSink sink;
  SequencerOptions o;
  o.epoch_us = 200;
  Sequencer seq(o, &parts, &sink);
  seq.Start();
  std::vector<pb::Txn> first;
  first.reserve(64);
  first.push_back(MakeTxn({1}, {}, 0));
  const uint64_t closed = seq.epochs_closed();
  ASSERT_TRUE(seq.SubmitMany(&first).ok());
  EXPECT_EQ(first.capacity(), 0u) << "no spare yet: the caller gets an empty vector";
  while (seq.epochs_closed() < closed + 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
  std::vector<pb::Txn> second;
  second.push_back(MakeTxn({1}, {}, 1));
  ASSERT_TRUE(seq.SubmitMany(&second).ok());
  EXPECT_TRUE(second.empty());
  EXPECT_GE(second.capacity(), 64u) << "the first group's vector, batched and emptied";
  seq.Stop();
  EXPECT_EQ(sink.Seqs(), (std::vector<uint64_t>{0, 1}));
}

TEST(Sequencer, RefusesWhenOverloaded) {
  ModPartitioner parts(1);
  CollectingSink sink;
  SequencerOptions o;
  o.max_pending = 3;
  Sequencer seq(o, &parts, &sink);  // not started: nothing drains
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(seq.Submit(MakeTxn({1}, {})).ok());
  EXPECT_EQ(seq.Submit(MakeTxn({1}, {})).code(), absl::StatusCode::kUnavailable);
}

// SubmitMany counts against max_pending with Submit, all or none: a group
// that does not fit is refused and left with its caller.
TEST(Sequencer, RefusesAGroupPastMaxPendingWhole) {
  ModPartitioner parts(1);
  CollectingSink sink;
  SequencerOptions o;
  o.max_pending = 3;
  Sequencer seq(o, &parts, &sink);  // not started: nothing drains
  std::vector<pb::Txn> group = {MakeTxn({1}, {}, 0), MakeTxn({1}, {}, 1)};
  ASSERT_TRUE(seq.SubmitMany(&group).ok());
  EXPECT_TRUE(group.empty());
  std::vector<pb::Txn> none;
  EXPECT_TRUE(seq.SubmitMany(&none).ok());
  group = {MakeTxn({1}, {}, 2), MakeTxn({1}, {}, 3)};
  EXPECT_EQ(seq.SubmitMany(&group).code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(group.size(), 2u) << "refused whole: the caller keeps the group";
  EXPECT_EQ(group[0].client_seq(), 2u);
  EXPECT_TRUE(seq.Submit(MakeTxn({1}, {}, 2)).ok());
  EXPECT_EQ(seq.Submit(MakeTxn({1}, {}, 3)).code(), absl::StatusCode::kUnavailable);
  seq.Start();
  seq.Stop();  // flushes the three
  EXPECT_EQ(sink.Seqs(), (std::vector<uint64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace detdb
