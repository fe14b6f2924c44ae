#include "sequencer/sequencer.h"

#include <mutex>
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

TEST(Sequencer, RefusesWhenOverloaded) {
  ModPartitioner parts(1);
  CollectingSink sink;
  SequencerOptions o;
  o.max_pending = 3;
  Sequencer seq(o, &parts, &sink);  // not started: nothing drains
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(seq.Submit(MakeTxn({1}, {})).ok());
  EXPECT_EQ(seq.Submit(MakeTxn({1}, {})).code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace detdb
