// Engine::Checkpoint's capture in one process (docs/DURABILITY.md, review
// findings 4 and 5): Stop() does not hang on a stuck capture child (it is
// killed and reaped, the checkpoint answers Cancelled, no temp file stays);
// a stuck child is killed at the checkpoint's timeout; a checkpoint of an
// epoch at or below one already captured is refused.
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "glog/logging.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const char kCkptDir[] = "/data/ckpt";

struct World {
  ProcedureRegistry procs;
  ModPartitioner parts{2};
  FaultInjectingFileSystem fs;
  World() { CHECK(RegisterTestProcedures(&procs).ok()); }
  std::unique_ptr<Engine> Start(milliseconds child_stall, uint64_t epoch_us = 300) {
    CHECK(fs.CreateDir("/data").ok());
    EngineOptions o;
    o.epoch_us = epoch_us;
    o.log.dir = "/data/log";
    o.log.fs = &fs;
    o.checkpoint.dir = kCkptDir;
    o.checkpoint.test_child_stall = child_stall;
    auto e = Engine::Create(o, &parts, &procs);
    CHECK(e.ok()) << e.status();
    for (PartitionId p = 0; p < 2; ++p) CHECK(LoadCounterTable((*e)->store(p), parts, p, kRecordsPerPartition).ok());
    CHECK((*e)->Start().ok());
    return std::move(*e);
  }
  std::vector<std::string> TempFiles() {
    std::vector<std::string> out;
    auto names = fs.ListDir(kCkptDir);
    if (names.ok())
      for (const std::string& n : *names)
        if (IsCheckpointTempName(n)) out.push_back(n);
    return out;
  }
};

// No child of this process is left, running or unreaped.
bool NoChildren() {
  int st = 0;
  return waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD;
}

void WaitForCaptureChild(Engine* e) {
  for (int i = 0; i < 3000 && e->stats().capture_children == 0; ++i) std::this_thread::sleep_for(milliseconds(2));
  ASSERT_EQ(e->stats().capture_children, 1u);
  std::this_thread::sleep_for(milliseconds(50));  // past the fork
}

TEST(EngineCheckpointCapture, StopDoesNotHangOnAStuckCaptureChild) {
  World w;
  auto e = w.Start(milliseconds(60000));
  absl::StatusOr<CheckpointStats> result = absl::UnknownError("not run");
  std::thread t([&] { result = e->Checkpoint(e->open_epoch() + 20, std::chrono::seconds(60)); });
  WaitForCaptureChild(e.get());
  const auto t0 = Clock::now();
  EXPECT_TRUE(e->Stop(milliseconds(1000)).ok());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  t.join();
  EXPECT_TRUE(absl::IsCancelled(result.status())) << result.status();
  EXPECT_EQ(e->stats().capture_children, 0u);
  EXPECT_TRUE(NoChildren());
  EXPECT_TRUE(w.TempFiles().empty());
}

TEST(EngineCheckpointCapture, AStuckCaptureChildIsKilledAtTheTimeout) {
  World w;
  auto e = w.Start(milliseconds(60000));
  std::atomic<bool> cancel{false};
  const auto t0 = Clock::now();
  auto c = e->Checkpoint(e->open_epoch() + 20, milliseconds(1500), &cancel);
  EXPECT_TRUE(absl::IsDeadlineExceeded(c.status())) << c.status();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(NoChildren());
  EXPECT_TRUE(w.TempFiles().empty());
  // And a cancel ends one as promptly.
  absl::StatusOr<CheckpointStats> result = absl::UnknownError("not run");
  std::thread t([&] { result = e->Checkpoint(e->open_epoch() + 20, std::chrono::seconds(60), &cancel); });
  WaitForCaptureChild(e.get());
  const auto t1 = Clock::now();
  cancel.store(true);
  t.join();
  EXPECT_LT(Clock::now() - t1, std::chrono::seconds(5));
  EXPECT_TRUE(absl::IsCancelled(result.status())) << result.status();
  EXPECT_TRUE(NoChildren());
  EXPECT_TRUE(e->Stop().ok());
}

TEST(EngineCheckpointCapture, AnEpochAtOrBelowTheLastCapturedIsRefused) {
  World w;
  // Long epochs: right after a checkpoint of E the schedulers usually still
  // wait for E + 1, so the boundary hold alone would let E be taken twice.
  auto e = w.Start(milliseconds(0), 50000);
  const uint64_t epoch = e->open_epoch() + 2;
  auto first = e->Checkpoint(epoch, std::chrono::seconds(30));
  ASSERT_TRUE(first.ok()) << first.status();
  for (uint64_t again : {epoch, epoch - 1}) {
    auto c = e->Checkpoint(again, std::chrono::seconds(30));
    EXPECT_TRUE(absl::IsFailedPrecondition(c.status())) << again << ": " << c.status();
    EXPECT_NE(c.status().message().find("already captured"), std::string::npos) << c.status();
  }
  auto later = e->Checkpoint(e->open_epoch() + 2, std::chrono::seconds(30));
  EXPECT_TRUE(later.ok()) << later.status();
  EXPECT_TRUE(w.TempFiles().empty());
  EXPECT_TRUE(e->Stop().ok());
  EXPECT_TRUE(NoChildren());
}

}  // namespace
}  // namespace detdb
