// The input log used end to end in one process (FaultInjectingFileSystem):
// a simulated crash loses unsynced bytes, yet every acknowledged txn is
// replayed exactly once with its original result and the state equals a
// serial replay of the durable log; an fsync error stops the engine without
// a reply that is not durable, and a restart recovers; one log replayed
// under every lock manager with 1 and 2 workers gives one digest; mid-log
// damage refuses to start with the file and offset.
#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "glog/logging.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"
#include "scheduler/serial_executor.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT
using std::chrono::milliseconds;

constexpr uint32_t kPartitions = 2;
const char kDir[] = "/log";

struct World {
  ProcedureRegistry procs;
  ModPartitioner parts{kPartitions};
  World() {
    CHECK(RegisterTestProcedures(&procs).ok());
    CHECK(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
  }
  std::unique_ptr<Engine> Make(FileSystem* fs, const std::string& lm = "dclp", uint32_t workers = 2,
                               bool log_then_execute = false, std::function<void(const absl::Status&)> fail = nullptr) {
    EngineOptions o;
    o.workers = workers;
    o.lock_manager = lm;
    o.lock.table_size = 64;
    o.lock.max_active = 50;
    o.epoch_us = 300;
    o.log.dir = kDir;
    o.log.fs = fs;
    o.log.segment_bytes = 16 << 10;  // several segments
    o.log.log_then_execute = log_then_execute;
    o.on_log_failure = std::move(fail);
    auto e = Engine::Create(o, &parts, &procs);
    CHECK(e.ok()) << e.status();
    for (PartitionId p = 0; p < kPartitions; ++p)
      CHECK(LoadCounterTable((*e)->store(p), parts, p, kRecordsPerPartition).ok());
    return std::move(*e);
  }
  // The digest of a serial run of every txn in the durable log.
  uint64_t SerialDigest(FileSystem* fs, std::map<uint64_t, pb::TxnResult>* results = nullptr) {
    std::vector<std::unique_ptr<PartitionStore>> stores;
    std::vector<PartitionStore*> raw;
    for (PartitionId p = 0; p < kPartitions; ++p) {
      stores.push_back(std::make_unique<PartitionStore>());
      CHECK(LoadCounterTable(stores.back().get(), parts, p, kRecordsPerPartition).ok());
      raw.push_back(stores.back().get());
    }
    SerialExecutor serial(&parts, &procs, raw);
    RecoveryOptions ro;
    ro.fs = fs;
    auto records = ReadInputLog(kDir, ro);
    CHECK(records.ok()) << records.status();
    for (const LogRecord& r : *records) {
      pb::Batch b;
      CHECK(b.ParseFromString(r.payload));
      for (const pb::Txn& t : b.txns()) {
        pb::TxnResult res = serial.Execute(t);
        if (results != nullptr) (*results)[t.client_seq()] = res;
      }
    }
    uint64_t d = 0;
    for (auto* s : raw) d = Mix64(d ^ s->Digest());
    return d;
  }
};

uint64_t DigestOf(Engine* e) {
  uint64_t d = 0;
  for (auto [p, digest] : e->PartitionDigests()) d = Mix64(d ^ digest);
  return d;
}

// Submits txns in small groups with pauses until `stop` says so or the
// engine refuses; returns how many were accepted.
size_t Feed(Engine* e, std::vector<pb::Txn> txns, const std::function<bool()>& stop) {
  size_t accepted = 0;
  for (size_t i = 0; i < txns.size() && !stop(); i += 20) {
    std::vector<pb::Txn> g(txns.begin() + i, txns.begin() + std::min(txns.size(), i + 20));
    const size_t n = g.size();
    if (!e->SubmitMany(&g).ok()) break;
    accepted += n;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return accepted;
}

struct CrashCase {
  FaultInjectingFileSystem::CrashMode mode;
  bool log_then_execute;
};

class LogCrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(LogCrashTest, EveryAcknowledgedTxnSurvivesExactlyOnce) {
  const CrashCase c = GetParam();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    World s;
    FaultInjectingFileSystem fs;
    ResultCollector acked;
    {
      auto e = s.Make(&fs, "dclp", 2, c.log_then_execute);
      ASSERT_EQ(e->RegisterClient(&acked), 1u);
      { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
      std::atomic<bool> crashed{false};
      std::thread crasher([&] {
        // Crash once a few hundred txns were acknowledged, while more run.
        for (int i = 0; i < 5000; ++i) {
          {
            std::lock_guard<std::mutex> l(acked.mu);
            if (acked.count >= 300 + 100 * static_cast<int>(seed)) break;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        fs.SimulateCrash(c.mode, seed);
        crashed = true;  // the feeder stops submitting
      });
      Feed(e.get(), RandomTxns(seed, 3000, kPartitions, 1), [&] { return crashed.load(); });
      crasher.join();
      // The engine notices the crash at its next write to the log (the
      // sequencer appends a record every epoch, empty ones lazily synced);
      // stopping before that would close a log that never saw the crash.
      // Until Restart() the file system refuses the dead process every
      // call, a segment rotation racing the crash included.
      for (int i = 0; i < 6000 && !e->log_failed(); ++i) std::this_thread::sleep_for(milliseconds(1));
      EXPECT_TRUE(e->log_failed());
      (void)e->Stop(milliseconds(300));  // the log failed: in-flight txns never answer
    }
    fs.Restart();
    ASSERT_FALSE(acked.duplicate);
    ASSERT_GT(acked.count, 0);
    // Restart on what the "disk" kept: replay answers every logged txn again.
    ResultCollector replayed;
    auto e2 = s.Make(&fs);
    ASSERT_EQ(e2->RegisterClient(&replayed), 1u);
    { absl::Status st = e2->Start(); ASSERT_TRUE(st.ok()) << st; }
    ASSERT_TRUE(e2->Stop().ok());
    ASSERT_FALSE(replayed.duplicate) << "a txn ran twice";
    for (const auto& [seq, r] : acked.by_seq) {
      auto it = replayed.by_seq.find(seq);
      ASSERT_NE(it, replayed.by_seq.end()) << "acknowledged txn seq " << seq << " lost (seed " << seed << ")";
      EXPECT_EQ(it->second.txn_id(), r.txn_id());
      EXPECT_EQ(it->second.status(), r.status());
      EXPECT_EQ(it->second.result(), r.result());
    }
    std::map<uint64_t, pb::TxnResult> serial;
    EXPECT_EQ(DigestOf(e2.get()), s.SerialDigest(&fs, &serial));
    EXPECT_EQ(serial.size(), replayed.by_seq.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, LogCrashTest,
                         ::testing::Values(CrashCase{FaultInjectingFileSystem::CrashMode::kDrop, false},
                                           CrashCase{FaultInjectingFileSystem::CrashMode::kTear, false},
                                           CrashCase{FaultInjectingFileSystem::CrashMode::kTear, true}),
                         [](const auto& info) {
                           return std::string(info.param.mode == FaultInjectingFileSystem::CrashMode::kDrop
                                                  ? "drop"
                                                  : "tear") +
                                  (info.param.log_then_execute ? "_log_then_execute" : "_execute_ahead");
                         });

// The two faults of the disk under the input log: an fsync that fails
// (EIO) and a disk that fills up (ENOSPC after a partial write). Either
// stops the log once, no reply leaves after it, the node accepts nothing,
// and once the fault is gone a restart recovers every acknowledged txn.
enum class DiskFault { kFsyncError, kDiskFull };

class EngineLogFault : public ::testing::TestWithParam<DiskFault> {};

TEST_P(EngineLogFault, StopsRepliesAndARestartRecovers) {
  const DiskFault fault = GetParam();
  World s;
  FaultInjectingFileSystem fs;
  ResultCollector acked;
  std::atomic<int> failures{0};
  std::string error;
  std::set<uint64_t> acked_before_failure;
  {
    auto e = s.Make(&fs, "vll", 2, false, [&](const absl::Status& st) {
      error = std::string(st.message());
      ++failures;
    });
    ASSERT_EQ(e->RegisterClient(&acked), 1u);
    if (fault == DiskFault::kFsyncError) fs.FailSyncAfter(30);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    // The disk fills once some txns were answered (their records are
    // durable): the next append writes nothing and fails with ENOSPC.
    bool full = fault != DiskFault::kDiskFull;
    auto fill_once_answered = [&] {
      if (full) return;
      std::lock_guard<std::mutex> l(acked.mu);
      if (acked.count < 50) return;
      fs.SetSpaceLimit(1);
      full = true;
    };
    Feed(e.get(), RandomTxns(7, 3000, kPartitions, 1), [&] {
      fill_once_answered();
      return failures.load() > 0;
    });
    if (!full) {  // every txn fed before 50 were answered: fill it now
      for (int i = 0; i < 5000 && !full; ++i) {
        fill_once_answered();
        std::this_thread::sleep_for(milliseconds(1));
      }
      Feed(e.get(), RandomTxns(10, 200, kPartitions, 1), [&] { return failures.load() > 0; });
    }
    for (int i = 0; i < 2000 && failures.load() == 0; ++i) std::this_thread::sleep_for(milliseconds(1));
    ASSERT_EQ(failures.load(), 1) << "the fault must stop the log once";
    EXPECT_NE(error.find(fault == DiskFault::kFsyncError ? "Input/output error" : "No space left"), std::string::npos)
        << error;
    {
      std::lock_guard<std::mutex> l(acked.mu);
      EXPECT_GT(acked.count, 0) << "txns before the fault were made durable and answered";
    }
    // Replies freed by a sync that succeeded before the failure may still be
    // on their way out; after that, none.
    std::this_thread::sleep_for(milliseconds(100));
    const int at_failure = [&] {
      std::lock_guard<std::mutex> l(acked.mu);
      return acked.count;
    }();
    const absl::Status refused = e->Submit(RandomTxns(8, 1, kPartitions, 1)[0]);
    EXPECT_FALSE(refused.ok()) << "a failed node accepts nothing";
    EXPECT_NE(std::string(refused.message()).find("input log failed"), std::string::npos) << refused;
    // Nor does it answer an admin snapshot of state that is not durable.
    auto digests = e->SnapshotDigests(e->merged_epoch() + 50, milliseconds(2000));
    EXPECT_TRUE(absl::IsUnavailable(digests.status())) << digests.status();
    (void)e->Stop(milliseconds(300));
    {
      std::lock_guard<std::mutex> l(acked.mu);
      EXPECT_EQ(acked.count, at_failure) << "no reply after the fsync failed";
    }
    if (fault == DiskFault::kFsyncError) {
      EXPECT_GT(fs.failed_syncs(), 0);
      EXPECT_EQ(fs.failed_syncs(), 1) << "a failed fsync is never retried";
    }
  }
  fs.ClearFaults();
  fs.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
  fs.Restart();
  ResultCollector replayed;
  auto e2 = s.Make(&fs, "vll");
  ASSERT_EQ(e2->RegisterClient(&replayed), 1u);
  { absl::Status st = e2->Start(); ASSERT_TRUE(st.ok()) << st; }
  // New txns after recovery are appended after the verified end.
  std::vector<pb::Txn> more = RandomTxns(9, 200, kPartitions, 1);
  for (auto& t : more) t.set_client_seq(t.client_seq() + 100000);
  ASSERT_TRUE(e2->SubmitMany(&more).ok());
  ASSERT_TRUE(e2->Stop().ok());
  for (const auto& [seq, r] : acked.by_seq) {
    auto it = replayed.by_seq.find(seq);
    ASSERT_NE(it, replayed.by_seq.end()) << "acknowledged txn seq " << seq << " lost";
    EXPECT_EQ(it->second.result(), r.result());
  }
  EXPECT_FALSE(replayed.duplicate);
  EXPECT_EQ(DigestOf(e2.get()), s.SerialDigest(&fs));
}

INSTANTIATE_TEST_SUITE_P(Faults, EngineLogFault,
                         ::testing::Values(DiskFault::kFsyncError, DiskFault::kDiskFull),
                         [](const auto& info) { return info.param == DiskFault::kFsyncError ? "fsync_error" : "disk_full"; });

TEST(EngineLog, OneLogReplaysToOneDigestUnderEveryLockManagerAndWorkerCount) {
  World s;
  FaultInjectingFileSystem fs;
  ResultCollector first;
  {
    auto e = s.Make(&fs, "dclp", 2);
    ASSERT_EQ(e->RegisterClient(&first), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    Feed(e.get(), RandomTxns(11, 2000, kPartitions, 1), [] { return false; });
    ASSERT_TRUE(e->Stop().ok());
    ASSERT_EQ(first.count, 2000);
  }
  const uint64_t want = s.SerialDigest(&fs);
  for (const std::string& lm : LockManagerNames()) {
    for (uint32_t w : {1u, 2u}) {
      ResultCollector again;
      auto e = s.Make(&fs, lm, w);
      ASSERT_EQ(e->RegisterClient(&again), 1u);
      { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
      ASSERT_TRUE(e->Stop().ok());
      EXPECT_EQ(DigestOf(e.get()), want) << lm << ", " << w << " workers";
      EXPECT_EQ(e->stats().replayed_txns, 2000u);
      ASSERT_EQ(again.by_seq.size(), first.by_seq.size());
      for (const auto& [seq, r] : first.by_seq) EXPECT_EQ(again.by_seq.at(seq).result(), r.result()) << lm;
    }
  }
}

TEST(EngineLog, ATxnSubmittedBeforeStartWaitsForTheReplayAndIsAnswered) {
  World s;
  FaultInjectingFileSystem fs;
  {
    ResultCollector first;
    auto e = s.Make(&fs);
    ASSERT_EQ(e->RegisterClient(&first), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    Feed(e.get(), RandomTxns(21, 300, kPartitions, 1), [] { return false; });
    ASSERT_TRUE(e->Stop().ok());
  }
  ResultCollector again;
  auto e = s.Make(&fs);
  ASSERT_EQ(e->RegisterClient(&again), 1u);
  pb::Txn early = RandomTxns(22, 1, kPartitions, 1)[0];
  early.set_client_seq(1'000'000);
  ASSERT_TRUE(e->Submit(early).ok()) << "one process takes txns before Start";
  // Start used to wait for replied >= submitted, which the early txn (held
  // in the sequencer until after the replay) never let hold.
  { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
  EXPECT_EQ(e->stats().replayed_txns, 300u);
  ASSERT_TRUE(e->Stop().ok());
  std::lock_guard<std::mutex> l(again.mu);
  EXPECT_EQ(again.count, 301);
  EXPECT_EQ(again.by_seq.count(1'000'000), 1u);
}

TEST(EngineLog, DamageInsideTheLogRefusesToStartNamingFileAndOffset) {
  World s;
  FaultInjectingFileSystem fs;
  ResultCollector c;
  {
    auto e = s.Make(&fs);
    ASSERT_EQ(e->RegisterClient(&c), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    Feed(e.get(), RandomTxns(3, 1500, kPartitions, 1), [] { return false; });
    ASSERT_TRUE(e->Stop().ok());
  }
  auto names = fs.ListDir(kDir);
  ASSERT_TRUE(names.ok());
  ASSERT_GE(names->size(), 2u);
  const std::string first = std::string(kDir) + "/" + names->front();
  ASSERT_TRUE(fs.FlipBit(first, 100, 3).ok());
  auto e = s.Make(&fs);
  ResultCollector c2;
  e->RegisterClient(&c2);
  absl::Status st = e->Start();
  ASSERT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_NE(st.message().find(first), std::string::npos) << st;
  EXPECT_NE(st.message().find("offset"), std::string::npos) << st;
}

}  // namespace
}  // namespace detdb
