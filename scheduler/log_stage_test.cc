// LogStage alone: batches of two sequencers arriving out of order are
// logged in merge order with epoch_end on the last sequencer; a result
// leaves only once its epoch is durable here AND on the peer (the cluster
// durable watermark); log-then-execute holds batches until their epoch is
// durable; after a log failure nothing leaves.
#include "scheduler/log_stage.h"

#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "io/fault_injecting_file_system.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {

struct Sink {
  std::mutex mu;
  std::vector<std::pair<uint64_t, uint32_t>> executed;
  std::vector<uint64_t> delivered;
  int fatal = 0;
};

std::unique_ptr<LogStage> MakeStage(FaultInjectingFileSystem* fs, Sink* sink, bool log_then_execute,
                                    std::chrono::microseconds lazy_sync = std::chrono::microseconds(20000),
                                    uint64_t build_id = 0, bool accept_other_build = false) {
  LogStageOptions o;
  o.build_id = build_id;
  o.accept_other_build = accept_other_build;
  o.lazy_sync = lazy_sync;
  o.dir = "/log";
  o.fs = fs;
  o.log_then_execute = log_then_execute;
  return std::make_unique<LogStage>(
      o, /*num_sequencers=*/2, /*self=*/0, /*peers=*/nullptr, /*epoch_ids=*/true,
      [sink](std::shared_ptr<const pb::Batch> b) {
        std::lock_guard<std::mutex> l(sink->mu);
        sink->executed.emplace_back(b->epoch(), b->sequencer_id());
      },
      [sink](const pb::TxnResult& r) {
        std::lock_guard<std::mutex> l(sink->mu);
        sink->delivered.push_back(r.txn_id());
      },
      [sink](const absl::Status&) {
        std::lock_guard<std::mutex> l(sink->mu);
        ++sink->fatal;
      });
}

std::shared_ptr<pb::Batch> B(uint64_t epoch, uint32_t seq) {
  auto b = std::make_shared<pb::Batch>();
  b->set_epoch(epoch);
  b->set_sequencer_id(seq);
  b->add_txns()->set_id(EpochBatcher::EpochSequencerId(epoch, seq, 0));
  return b;
}

pb::TxnResult R(uint64_t epoch) {
  pb::TxnResult r;
  r.set_txn_id(EpochBatcher::EpochSequencerId(epoch, 0, 0));
  return r;
}

template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 2000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return f();
}

TEST(LogStage, MergeOrderAndTheClusterWatermark) {
  FaultInjectingFileSystem fs;
  Sink sink;
  auto stage = MakeStage(&fs, &sink, false);
  ASSERT_TRUE(stage->Recover().ok());
  ASSERT_TRUE(stage->Open(0).ok());
  // Out of order: (2,1) (1,1) (2,0) (1,0). Executed at once (execute ahead).
  for (auto b : {B(2, 1), B(1, 1), B(2, 0), B(1, 0)}) stage->Add(b);
  EXPECT_EQ(sink.executed.size(), 4u);
  stage->Hold(R(1));
  stage->Hold(R(2));
  ASSERT_TRUE(Eventually([&] { return stage->durable_epoch() == 2; }));
  {
    std::lock_guard<std::mutex> l(sink.mu);
    EXPECT_TRUE(sink.delivered.empty()) << "durable here, not yet on the peer";
  }
  stage->OnPeerDurable(1, 1);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> l(sink.mu);
    return sink.delivered.size() == 1;
  }));
  EXPECT_EQ(sink.delivered[0], R(1).txn_id());
  EXPECT_EQ(stage->watermark(), 1u);
  stage->OnPeerDurable(1, 5);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> l(sink.mu);
    return sink.delivered.size() == 2;
  }));
  stage->Hold(R(2));  // at or below the watermark: at once
  EXPECT_EQ(sink.delivered.size(), 3u);
  ASSERT_TRUE(stage->Close().ok());
  RecoveryOptions ro;
  ro.fs = &fs;
  auto records = ReadInputLog("/log", ro);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 4u);
  const std::pair<uint64_t, uint32_t> want[] = {{1, 0}, {1, 1}, {2, 0}, {2, 1}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*records)[i].header.epoch, want[i].first);
    EXPECT_EQ((*records)[i].header.sequencer_id, want[i].second);
    EXPECT_EQ((*records)[i].header.epoch_end, want[i].second == 1);
  }
}

TEST(LogStage, LogThenExecuteWaitsForTheFsyncAndAFailureStopsEverything) {
  FaultInjectingFileSystem fs;
  Sink sink;
  auto stage = MakeStage(&fs, &sink, true);
  ASSERT_TRUE(stage->Recover().ok());
  ASSERT_TRUE(stage->Open(0).ok());
  stage->Add(B(1, 1));
  {
    std::lock_guard<std::mutex> l(sink.mu);
    EXPECT_TRUE(sink.executed.empty()) << "epoch 1 is not complete, so not durable";
  }
  stage->Add(B(1, 0));
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> l(sink.mu);
    return sink.executed.size() == 2;
  }));
  fs.FailNextSync();
  stage->Hold(R(2));
  stage->Add(B(2, 0));
  stage->Add(B(2, 1));
  ASSERT_TRUE(Eventually([&] { return stage->failed(); }));
  stage->OnPeerDurable(1, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::lock_guard<std::mutex> l(sink.mu);
  EXPECT_EQ(sink.fatal, 1);
  EXPECT_TRUE(sink.delivered.empty()) << "nothing leaves after the log failed";
  EXPECT_EQ(sink.executed.size(), 2u) << "epoch 2 was never durable, so never executed";
  EXPECT_EQ(stage->durable_epoch(), 1u);
}

}  // namespace
}  // namespace detdb

namespace detdb {
namespace {

std::shared_ptr<pb::Batch> Empty(uint64_t epoch, uint32_t seq) {
  auto b = std::make_shared<pb::Batch>();
  b->set_epoch(epoch);
  b->set_sequencer_id(seq);
  return b;
}

TEST(LogStage, OpenWithoutRecoverIsAnErrorAndAddAfterCloseExecutesNothing) {
  FaultInjectingFileSystem fs;
  Sink sink;
  auto stage = MakeStage(&fs, &sink, false);
  EXPECT_EQ(stage->Open(0).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(stage->Recover().ok());
  ASSERT_TRUE(stage->Open(0).ok());
  stage->Add(B(1, 0));
  ASSERT_TRUE(stage->Close().ok());
  stage->Add(B(1, 1));  // after Close: never executed unlogged
  std::lock_guard<std::mutex> l(sink.mu);
  EXPECT_EQ(sink.executed.size(), 1u);
}

TEST(LogStage, ALogOfAnotherBuildIsRefusedUnlessAccepted) {
  FaultInjectingFileSystem fs;
  const auto lazy = std::chrono::microseconds(20000);
  {
    Sink sink;
    auto stage = MakeStage(&fs, &sink, false, lazy, /*build_id=*/5);
    ASSERT_TRUE(stage->Recover().ok());
    ASSERT_TRUE(stage->Open(0).ok());
    stage->Add(B(1, 0));
    stage->Add(B(1, 1));
    ASSERT_TRUE(stage->Close().ok());
  }
  {  // the same build: recovers
    Sink sink;
    auto stage = MakeStage(&fs, &sink, false, lazy, 5);
    ASSERT_TRUE(stage->Recover().ok());
  }
  {  // another build: refused, naming the file, the offset and both ids
    Sink sink;
    auto stage = MakeStage(&fs, &sink, false, lazy, 6);
    auto r = stage->Recover();
    ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    const std::string msg(r.status().message());
    EXPECT_NE(msg.find("build id 5 differs from this build's 6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/log/"), std::string::npos) << msg;
    EXPECT_NE(msg.find("offset 0"), std::string::npos) << msg;
  }
  {  // accepted: replayed with this build, which writes its own id from now on
    Sink sink;
    auto stage = MakeStage(&fs, &sink, false, lazy, 6, /*accept_other_build=*/true);
    auto r = stage->Recover();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(*r, 1u);
  }
}

TEST(LogStage, IdleEmptyEpochsAreSyncedLazilyAndABatchWithTxnsAtOnce) {
  FaultInjectingFileSystem fs;
  Sink sink;
  auto stage = MakeStage(&fs, &sink, false, std::chrono::milliseconds(300));
  ASSERT_TRUE(stage->Recover().ok());
  ASSERT_TRUE(stage->Open(0).ok());
  const int64_t syncs0 = fs.syncs();
  for (uint64_t e = 1; e <= 20; ++e) {
    stage->Add(Empty(e, 0));
    stage->Add(Empty(e, 1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(stage->durable_epoch(), 0u) << "nothing waits on empty epochs: no sync yet";
  EXPECT_EQ(fs.syncs(), syncs0);
  // A batch with a txn forces the group (and the empty epochs before it) out.
  stage->Add(B(21, 0));
  stage->Add(Empty(21, 1));
  EXPECT_TRUE(Eventually([&] { return stage->durable_epoch() == 21; }));
  // Empty epochs alone become durable by the deadline, with one sync.
  const int64_t syncs1 = fs.syncs();
  for (uint64_t e = 22; e <= 40; ++e) {
    stage->Add(Empty(e, 0));
    stage->Add(Empty(e, 1));
  }
  EXPECT_TRUE(Eventually([&] { return stage->durable_epoch() == 40; }));
  EXPECT_LE(fs.syncs() - syncs1, 2);
  ASSERT_TRUE(stage->Close().ok());
  EXPECT_EQ(ReadInputLog("/log", [&] {
              RecoveryOptions ro;
              ro.fs = &fs;
              return ro;
            }())->size(),
            80u);
}

}  // namespace
}  // namespace detdb
