// The remote-read paths of the scheduler, with two partitions wired by the
// in-process transport: a txn that waits for remote reads is parked without
// blocking its (only) worker, and reads that arrive before their txn is
// dispatched are kept and used.
#include "scheduler/scheduler.h"

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "scheduler/test_workload.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

class Replies : public ReplySink {
 public:
  void OnTxnResult(const pb::Txn& txn, pb::TxnResult&& result) override {
    std::lock_guard<std::mutex> l(mu);
    results[txn.id()] = std::move(result);
  }
  size_t size() {
    std::lock_guard<std::mutex> l(mu);
    return results.size();
  }
  std::mutex mu;
  std::map<TxnId, pb::TxnResult> results;
};

template <typename F>
bool WaitFor(F cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return cond();
}

class TwoPartitions : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterTestProcedures(&procs_).ok());
    Build();
  }
  // Fresh stores and schedulers for both partitions, and the batch of T, U.
  void Build() {
    for (PartitionId p = 0; p < 2; ++p) {
      stores_[p] = std::make_unique<PartitionStore>();
      ASSERT_TRUE(LoadCounterTable(stores_[p].get(), parts_, p, 10).ok());
      SchedulerOptions o;
      o.partition = p;
      o.workers = 1;  // one worker: parking must not block it
      auto s = Scheduler::Create(o, stores_[p].get(), &parts_, &procs_, &transport_, &replies_);
      ASSERT_TRUE(s.ok()) << s.status();
      sched_[p] = std::move(*s);
      sched_[p]->Start();
    }
    // T: reads row 1 (partition 1, passive), reads and writes row 0 (partition 0).
    pb::Txn t;
    t.set_type(kRmwTxnType);
    t.add_read_set(MakeKey(kCounterTable, 1));
    t.add_read_set(MakeKey(kCounterTable, 0));
    t.add_write_set(MakeKey(kCounterTable, 0));
    // U: later, single-partition at partition 0, no conflict with T.
    pb::Txn u;
    u.set_type(kRmwTxnType);
    u.add_read_set(MakeKey(kCounterTable, 2));
    u.add_write_set(MakeKey(kCounterTable, 2));
    EpochBatcher b(0, &parts_);
    ASSERT_TRUE(b.Add(&t));
    ASSERT_TRUE(b.Add(&u));
    batch_ = b.Close();
  }
  void TearDown() override {
    for (auto& s : sched_) s->Stop();
  }
  SubBatchRef Sub(PartitionId p) {
    SubBatchRef s;
    s.epoch = batch_->epoch();
    s.owner = batch_;
    for (const pb::Txn& t : batch_->txns())
      for (PartitionId q : ParticipantsOf(t))
        if (q == p) s.txns.push_back(&t);
    return s;
  }
  const pb::Txn& T() const { return batch_->txns(0); }
  const pb::Txn& U() const { return batch_->txns(1); }

  ModPartitioner parts_{2};
  ProcedureRegistry procs_;
  InProcessTransport transport_{2};
  Replies replies_;
  std::unique_ptr<PartitionStore> stores_[2];
  std::unique_ptr<Scheduler> sched_[2];
  std::shared_ptr<pb::Batch> batch_;
};

TEST_F(TwoPartitions, WaitingTxnIsParkedAndItsWorkerRunsOtherTxns) {
  ASSERT_EQ(ExecutorsOf(T()), std::vector<PartitionId>{0});
  sched_[0]->Enqueue(Sub(0));  // T and U at partition 0; partition 1 has not read yet
  ASSERT_TRUE(WaitFor([&] { return sched_[0]->stats().parked == 1; }));
  // U runs on the only worker while T waits.
  ASSERT_TRUE(WaitFor([&] { return replies_.size() == 1; }));
  EXPECT_TRUE(replies_.results.contains(U().id()));
  EXPECT_FALSE(replies_.results.contains(T().id()));
  sched_[1]->Enqueue(Sub(1));  // partition 1 reads row 1 and sends it: T resumes
  ASSERT_TRUE(WaitFor([&] { return replies_.size() == 2; }));
  EXPECT_EQ(replies_.results[T().id()].status(), pb::STATUS_OK);
  EXPECT_EQ(sched_[1]->stats().passive, 1u) << "partition 1 only reads: passive participant";
}

TEST_F(TwoPartitions, ReadsArrivingBeforeDispatchAreKept) {
  sched_[1]->Enqueue(Sub(1));  // partition 1 sends its read before partition 0 knows T
  ASSERT_TRUE(WaitFor([&] { return sched_[1]->stats().passive == 1; }));
  sched_[0]->Enqueue(Sub(0));
  ASSERT_TRUE(WaitFor([&] { return replies_.size() == 2; }));
  EXPECT_EQ(sched_[0]->stats().parked, 0u) << "the early read was used, nothing waited";
  EXPECT_EQ(replies_.results[T().id()].status(), pb::STATUS_OK);
}

TEST_F(TwoPartitions, BothOrdersGiveTheSameResultAndState) {
  sched_[0]->Enqueue(Sub(0));
  sched_[1]->Enqueue(Sub(1));
  ASSERT_TRUE(WaitFor([&] { return replies_.size() == 2; }));
  const std::string first = replies_.results[T().id()].result();
  const uint64_t digest = [&] {
    for (auto& s : sched_) s->Stop();
    return stores_[0]->Digest();
  }();
  // Same txns, fresh partitions, reversed delivery order.
  replies_.results.clear();
  Build();
  sched_[1]->Enqueue(Sub(1));
  sched_[0]->Enqueue(Sub(0));
  ASSERT_TRUE(WaitFor([&] { return replies_.size() == 2; }));
  EXPECT_EQ(replies_.results[T().id()].result(), first);
  for (auto& s : sched_) s->Stop();
  EXPECT_EQ(stores_[0]->Digest(), digest);
}

}  // namespace
}  // namespace detdb
