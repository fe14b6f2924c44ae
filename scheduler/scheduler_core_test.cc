// The scheduler's logic without threads (scheduler_core.h): the merge waits
// for a missing sub-batch and drops duplicates, admission takes txns in merge
// order and a conflicting txn runs only after its predecessor's release, a
// hold stops the merge at an epoch boundary, and parked txns resume when
// their last remote read arrives (also when reads come first).
#include "scheduler/scheduler_core.h"

#include <utility>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace detdb {
namespace {

class Input final : public MergedInput {
 public:
  explicit Input(SubBatchMerger* m) : m_(m) {}
  bool TakeNext(SubBatchRef* out) override { return m_->TakeNext(out); }
  bool NextHasTxns() override { return m_->NextHasTxns(); }

 private:
  SubBatchMerger* const m_;
};

struct Batch {
  std::shared_ptr<std::vector<pb::Txn>> txns = std::make_shared<std::vector<pb::Txn>>();
  SubBatchRef Ref(uint64_t epoch, uint32_t seq) const {
    SubBatchRef r{epoch, seq, txns, {}};
    for (const pb::Txn& t : *txns) r.txns.push_back(&t);
    return r;
  }
};

pb::Txn Txn(TxnId id, std::vector<Key> writes) {
  pb::Txn t;
  t.set_id(id);
  for (Key k : writes) {
    t.add_write_set(k);
    t.add_read_set(k);
  }
  t.add_writers(0);
  t.add_readers(0);
  return t;
}

TEST(SubBatchMerger, MergesInEpochSequencerOrderWaitingForAMissingOne) {
  SubBatchMerger m(2, 1);
  Batch a, b, c;
  EXPECT_TRUE(m.Add(b.Ref(1, 1)));
  SubBatchRef out;
  EXPECT_FALSE(m.TakeNext(&out));  // (1, 0) is missing: wait, never skip
  EXPECT_TRUE(m.Add(a.Ref(1, 0)));
  EXPECT_FALSE(m.Add(a.Ref(1, 0)));  // duplicate
  ASSERT_TRUE(m.TakeNext(&out));
  EXPECT_EQ(out.sequencer_id, 0u);
  ASSERT_TRUE(m.TakeNext(&out));
  EXPECT_EQ(out.sequencer_id, 1u);
  EXPECT_EQ(m.merged_epoch(), 2u);
  EXPECT_FALSE(m.Add(c.Ref(1, 1)));  // already merged
  EXPECT_TRUE(m.HoldAt(2));
  EXPECT_TRUE(m.Add(c.Ref(2, 0)));
  EXPECT_FALSE(m.TakeNext(&out));  // held at epoch 2
  m.ReleaseHold(2);
  EXPECT_TRUE(m.TakeNext(&out));
  EXPECT_FALSE(m.HoldAt(2));  // part of epoch 2 is merged
}

// Two callers wait for their own boundaries at once: the merge stops at the
// lower, then, once that one is released, at the higher.
TEST(SubBatchMerger, HoldsAddUpAndTheLowestStopsTheMerge) {
  SubBatchMerger m(1, 1);
  Batch a;
  SubBatchRef out;
  EXPECT_TRUE(m.HoldAt(3));
  EXPECT_TRUE(m.HoldAt(2));
  EXPECT_TRUE(m.HoldAt(2));
  for (uint64_t e = 1; e <= 3; ++e) EXPECT_TRUE(m.Add(a.Ref(e, 0)));
  ASSERT_TRUE(m.TakeNext(&out));
  EXPECT_FALSE(m.TakeNext(&out));  // held at 2
  m.ReleaseHold(2);
  EXPECT_FALSE(m.TakeNext(&out));  // the second hold at 2
  m.ReleaseHold(2);
  ASSERT_TRUE(m.TakeNext(&out));
  EXPECT_EQ(out.epoch, 2u);
  EXPECT_FALSE(m.TakeNext(&out));  // held at 3
  m.ReleaseHold(7);                // not held: no effect
  EXPECT_FALSE(m.TakeNext(&out));
  m.ReleaseHold(3);
  ASSERT_TRUE(m.TakeNext(&out));
  EXPECT_EQ(out.epoch, 3u);
}

TEST(PartitionCore, AdmitsInMergeOrderAndGrantsAConflictOnlyAfterRelease) {
  ModPartitioner partitioner(1);
  TxnExecutor exec(0, nullptr, &partitioner, nullptr, nullptr, nullptr);
  SubBatchMerger merger(1, 1);
  Input input(&merger);
  auto lm = NewLockManager("dclp", LockManagerOptions{});
  ASSERT_TRUE(lm.ok());
  PartitionCore core({.workers = 1, .max_active = 100, .adaptive_admission = false}, std::move(*lm), &exec, &input);
  Batch b1, b2;
  b1.txns->push_back(Txn(1, {MakeKey(0, 7)}));
  b1.txns->push_back(Txn(2, {MakeKey(0, 8)}));
  b2.txns->push_back(Txn(3, {MakeKey(0, 7)}));  // conflicts with 1
  ReadyList ready;
  AdmitResult r = core.Admit(64, {}, &ready);
  EXPECT_EQ(r.admitted, 0u);  // no input yet
  merger.Add(b2.Ref(2, 0));
  r = core.Admit(64, {}, &ready);
  EXPECT_EQ(r.admitted, 0u);  // epoch 1 is missing
  merger.Add(b1.Ref(1, 0));
  r = core.Admit(64, {}, &ready);
  EXPECT_EQ(r.admitted, 3u);
  EXPECT_EQ(r.blocked, 1u);
  ASSERT_EQ(ready.size(), 2u);
  auto* t1 = static_cast<PartitionTxn*>(ready[0]->user);
  EXPECT_EQ(t1->txn->id(), 1u);
  EXPECT_EQ(static_cast<PartitionTxn*>(ready[1]->user)->txn->id(), 2u);
  EXPECT_EQ(core.active(), 3u);
  ready.clear();
  t1->owner.reset();
  core.Release(t1, &ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(static_cast<PartitionTxn*>(ready[0]->user)->txn->id(), 3u);
  EXPECT_EQ(core.active(), 2u);
  EXPECT_FALSE(core.IsQuiescent());
}

// Staged allocation: each sub-batch's states come from one group, which
// goes back to the pool when its last txn is released, whatever the order.
TEST(PartitionCore, StagedStatesOfASubBatchGoBackWithItsLastRelease) {
  ModPartitioner partitioner(1);
  TxnExecutor exec(0, nullptr, &partitioner, nullptr, nullptr, nullptr);
  SubBatchMerger merger(1, 1);
  Input input(&merger);
  auto lm = NewLockManager("dclp", LockManagerOptions{});
  ASSERT_TRUE(lm.ok());
  PartitionCore core({.workers = 1, .max_active = 100, .adaptive_admission = false, .staged_alloc = true},
                     std::move(*lm), &exec, &input);
  ASSERT_NE(core.staged(), nullptr);
  Batch b1, b2;
  b1.txns->push_back(Txn(1, {MakeKey(0, 7)}));
  b1.txns->push_back(Txn(2, {MakeKey(0, 8)}));
  b2.txns->push_back(Txn(3, {MakeKey(0, 9)}));
  merger.Add(b1.Ref(1, 0));
  merger.Add(b2.Ref(2, 0));
  ReadyList ready;
  EXPECT_EQ(core.Admit(64, {}, &ready).admitted, 3u);
  ASSERT_EQ(ready.size(), 3u);
  std::vector<PartitionTxn*> st;
  for (LockTxn* lt : ready) st.push_back(static_cast<PartitionTxn*>(lt->user));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(st[i]->txn->id(), i + 1);
    EXPECT_EQ(st[i]->local_writes.get_allocator().resource(), st[i]->staged);
  }
  EXPECT_EQ(core.staged()->stats().groups_open, 2u);
  ready.clear();
  for (PartitionTxn* t : st) t->owner.reset();
  core.Release(st[0], &ready);
  core.Release(st[2], &ready);  // b2's only txn: its group goes
  EXPECT_EQ(core.staged()->stats().groups_open, 1u);
  core.Release(st[1], &ready);
  EXPECT_EQ(core.staged()->stats().groups_open, 0u);
  EXPECT_EQ(core.staged()->stats().pool.slabs_out, 0u);
  EXPECT_TRUE(core.IsQuiescent());
}

TEST(RemoteReadsTable, ParkedTxnResumesOnItsLastReadAndEarlyReadsWait) {
  ModPartitioner partitioner(3);
  TxnExecutor exec(0, nullptr, &partitioner, nullptr, nullptr, nullptr);
  pb::Txn txn;
  txn.set_id(42);
  txn.add_write_set(MakeKey(0, 0));  // partition 0 writes: it executes
  txn.add_read_set(MakeKey(0, 1));   // partition 1 reads
  txn.add_read_set(MakeKey(0, 2));   // partition 2 reads
  txn.add_writers(0);
  txn.add_readers(1);
  txn.add_readers(2);
  PartitionTxn st;
  exec.Init(&st, &txn, nullptr);
  ASSERT_EQ(st.remote_expected, 2u);
  RemoteReadsTable table({.self = 0, .partitioner = &partitioner, .value_size = [](Key) { return 8u; },
                          .epoch_in_id = false,
                          .window_epochs = 16,
                          .max_held_bytes = 1u << 20,
                          .is_local = nullptr});
  table.Expect(st, /*merged_epoch=*/1);  // the lock side took it
  RemoteReadsGuard::Verdict v = RemoteReadsGuard::Verdict::kDeliver;
  std::string why;
  auto reads = [](PartitionId from) {
    pb::RemoteReads m;
    m.set_txn_id(42);
    m.set_from_partition(from);
    pb::KeyValue* kv = m.add_reads();
    kv->set_key(MakeKey(0, from));
    kv->set_found(false);
    return m;
  };
  EXPECT_EQ(table.OnRemoteReads(reads(1), 1, 0, &v, &why), nullptr);  // before dispatch: kept
  EXPECT_EQ(v, RemoteReadsGuard::Verdict::kKept);
  EXPECT_EQ(table.OnRemoteReads(reads(1), 1, 0, &v, &why), nullptr);  // the same reader again
  EXPECT_EQ(v, RemoteReadsGuard::Verdict::kDuplicate) << why;
  std::vector<pb::RemoteReads> spent;
  EXPECT_FALSE(table.TakeEarlyOrPark(&st, &spent));  // one of two: parked
  EXPECT_EQ(st.remote_received, 1u);
  EXPECT_EQ(table.parked(), 1u);
  EXPECT_EQ(table.OnRemoteReads(reads(2), 1, 0, &v, &why), &st);
  EXPECT_EQ(v, RemoteReadsGuard::Verdict::kDeliver);
  EXPECT_TRUE(st.resumed);
  EXPECT_EQ(table.parked(), 0u);
}

}  // namespace
}  // namespace detdb
