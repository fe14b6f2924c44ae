// Checkpoints end to end in one process (FaultInjectingFileSystem): taken
// while txns run, under every lock manager, with 1 and 2 partitions, a
// restart loads the newest one and replays only the log after it, and the
// state equals that of the run that never stopped and of a serial oracle;
// the log is cut behind the oldest kept checkpoint; a crash at every step
// of publishing leaves a node that recovers correctly; a damaged newest
// checkpoint falls back to the older one; with no usable checkpoint and no
// log from epoch 1 the node refuses to start, naming the file; the client
// state of a checkpoint of epoch E is asked for once every result of epochs
// <= E has been handed over and comes back at restart before the replay;
// the capture waits for writers holding an intent lock on a partition.
#include <algorithm>
#include <chrono>
#include <cstring>
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

const char kLogDir[] = "/data/log";
const char kCkptDir[] = "/data/ckpt";

struct World {
  ProcedureRegistry procs;
  const uint32_t partitions;
  ModPartitioner parts;
  explicit World(uint32_t n = 2) : partitions(n), parts(n) {
    CHECK(RegisterTestProcedures(&procs).ok());
    CHECK(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
  }
  std::unique_ptr<Engine> Make(FileSystem* fs, const std::string& lm = "dclp",
                               std::function<bool(std::string_view)> hook = nullptr,
                               const std::function<void(EngineOptions*)>& tweak = nullptr) {
    CHECK(fs->CreateDir("/data").ok());
    EngineOptions o;
    o.workers = 2;
    o.lock_manager = lm;
    o.lock.table_size = 64;
    o.lock.max_active = 50;
    o.epoch_us = 300;
    o.record_history = true;
    o.log.dir = kLogDir;
    o.log.fs = fs;
    o.log.segment_bytes = 8 << 10;  // many segments, so that the cut removes some
    o.checkpoint.dir = kCkptDir;
    o.checkpoint.crash_hook = std::move(hook);
    if (tweak) tweak(&o);
    auto e = Engine::Create(o, &parts, &procs);
    CHECK(e.ok()) << e.status();
    for (PartitionId p = 0; p < partitions; ++p)
      CHECK(LoadCounterTable((*e)->store(p), parts, p, kRecordsPerPartition).ok());
    return std::move(*e);
  }
  // A serial run of the batches of epochs <= last_epoch, from the loaded state.
  uint64_t Oracle(const std::vector<std::shared_ptr<const pb::Batch>>& history, uint64_t last_epoch) {
    std::vector<std::unique_ptr<PartitionStore>> stores;
    std::vector<PartitionStore*> raw;
    for (PartitionId p = 0; p < partitions; ++p) {
      stores.push_back(std::make_unique<PartitionStore>());
      CHECK(LoadCounterTable(stores.back().get(), parts, p, kRecordsPerPartition).ok());
      raw.push_back(stores.back().get());
    }
    SerialExecutor serial(&parts, &procs, raw);
    for (const auto& b : history)
      if (b->epoch() <= last_epoch)
        for (const pb::Txn& t : b->txns()) serial.Execute(t);
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

// Feeds txns in small groups on a thread of its own, at most 100 ahead of
// the results `acked` has (so that txns keep running until the end, also
// when the machine is loaded).
class Feeder {
 public:
  Feeder(Engine* e, std::vector<pb::Txn> txns, ResultCollector* acked)
      : thread_([this, e, acked, txns = std::move(txns)]() mutable {
          for (size_t i = 0; i < txns.size() && !stop_.load(); i += 10) {
            for (int w = 0; w < 20000 && !stop_.load(); ++w) {
              {
                std::lock_guard<std::mutex> l(acked->mu);
                if (static_cast<int>(i) - acked->count < 100) break;
              }
              std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
            std::vector<pb::Txn> g(txns.begin() + i, txns.begin() + std::min(txns.size(), i + 10));
            if (!e->SubmitMany(&g).ok()) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  ~Feeder() { Join(); }
  void Stop() { stop_ = true; }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Waits until c has n results (the feeder is that far).
void WaitAcked(ResultCollector* c, int n) {
  for (int i = 0; i < 20000; ++i) {
    {
      std::lock_guard<std::mutex> l(c->mu);
      if (c->count >= n) return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  FAIL() << "never got " << n << " results";
}

// A checkpoint a few epochs ahead of the schedulers, while the feeder runs.
// (A loaded machine may pass the epoch before the hold is set: ask again.)
absl::StatusOr<CheckpointStats> CheckpointSoon(Engine* e) {
  absl::StatusOr<CheckpointStats> s = absl::UnknownError("not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    s = e->Checkpoint(e->open_epoch() + 40, std::chrono::seconds(30));
    if (!absl::IsFailedPrecondition(s.status())) break;
  }
  return s;
}

struct Case {
  std::string lock_manager;
  uint32_t partitions;
};

class CheckpointRecovery : public ::testing::TestWithParam<Case> {};

TEST_P(CheckpointRecovery, CapturedWhileTxnsRunThenRecoveredEqualsTheUninterruptedRun) {
  const Case c = GetParam();
  World w(c.partitions);
  FaultInjectingFileSystem fs;
  ResultCollector first;
  uint64_t want = 0, e1 = 0, e2 = 0;
  std::vector<std::shared_ptr<const pb::Batch>> history;
  {
    auto e = w.Make(&fs, c.lock_manager);
    ASSERT_EQ(e->RegisterClient(&first), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    Feeder feed(e.get(), RandomTxns(5, 2400, c.partitions, 1), &first);
    WaitAcked(&first, 600);
    auto s1 = CheckpointSoon(e.get());
    ASSERT_TRUE(s1.ok()) << s1.status();
    EXPECT_GT(s1->bytes, 0u);
    EXPECT_GE(s1->pause_ms, s1->fork_ms);
    WaitAcked(&first, 1400);
    auto s2 = CheckpointSoon(e.get());
    ASSERT_TRUE(s2.ok()) << s2.status();
    e1 = s1->epoch;
    e2 = s2->epoch;
    feed.Join();
    ASSERT_TRUE(e->Stop().ok());
    want = DigestOf(e.get());
    history = e->history();
    EXPECT_EQ(e->stats().checkpoints, 2u);
  }
  ASSERT_EQ(first.count, 2400);
  // The uninterrupted run is the serial order of its batches.
  EXPECT_EQ(want, w.Oracle(history, UINT64_MAX));
  // Txns ran on both sides of both checkpoints.
  uint64_t before = 0;
  for (const auto& b : history)
    if (b->epoch() <= e2) before += b->txns_size();
  ASSERT_GT(before, 0u);
  ASSERT_LT(before, 2400u);
  // The log was cut behind the oldest kept checkpoint, never past it.
  auto log_first = InputLogFirstEpoch(kLogDir, &fs);
  ASSERT_TRUE(log_first.ok() && log_first->has_value());
  EXPECT_GT(**log_first, 1u) << "no segment dropped";
  EXPECT_LE(**log_first, e1 + 1);

  ResultCollector again;
  auto e = w.Make(&fs, c.lock_manager);
  ASSERT_EQ(e->RegisterClient(&again), 1u);
  { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
  EXPECT_EQ(e->stats().restored_checkpoint, e2);
  EXPECT_EQ(e->stats().replayed_txns, 2400u - before) << "replay starts after the checkpoint";
  // New txns continue with fresh ids.
  std::vector<pb::Txn> more = RandomTxns(6, 100, c.partitions, 1);
  for (auto& t : more) t.set_client_seq(t.client_seq() + 100000);
  ASSERT_TRUE(e->SubmitMany(&more).ok());
  ASSERT_TRUE(e->Stop().ok());
  EXPECT_FALSE(again.duplicate);
  auto h2 = e->history();
  ASSERT_FALSE(h2.empty());
  TxnId last_old = 0;
  for (const auto& old : history)
    if (!old->txns().empty()) last_old = std::max(last_old, old->txns().rbegin()->id());
  for (const auto& b : h2)
    for (const pb::Txn& t : b->txns()) ASSERT_LT(last_old, t.id()) << "txn id reused after recovery";
  // The state: the first run's, then the new txns.
  for (const auto& b : h2) history.push_back(b);
  EXPECT_EQ(DigestOf(e.get()), w.Oracle(history, UINT64_MAX));
}

INSTANTIATE_TEST_SUITE_P(LockManagers, CheckpointRecovery,
                         ::testing::Values(Case{"dclp", 1}, Case{"dclp", 2}, Case{"det2pl", 1}, Case{"det2pl", 2},
                                           Case{"vll", 2}, Case{"vll_sca", 1}, Case{"dclp_frag", 2}),
                         [](const auto& info) {
                           return info.param.lock_manager + "_" + std::to_string(info.param.partitions) + "p";
                         });

// A crash at each step of publishing the second checkpoint: the node comes
// back with the first (the second once the directory sync made its name
// durable) and the state of every durable epoch.
class PublishCrash : public ::testing::TestWithParam<std::string> {};

TEST_P(PublishCrash, RecoveryIsCorrectAfterACrashAtThisStep) {
  const std::string point = GetParam();
  World w;
  FaultInjectingFileSystem fs;
  std::atomic<bool> armed{false};
  uint64_t e1 = 0, e2 = 0;
  std::vector<std::shared_ptr<const pb::Batch>> history;
  {
    auto e = w.Make(&fs, "dclp", [&](std::string_view at) {
      if (!armed.load() || at != point) return false;
      fs.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);  // power lost here
      return true;
    });
    ResultCollector c;
    ASSERT_EQ(e->RegisterClient(&c), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    Feeder feed(e.get(), RandomTxns(9, 2000, w.partitions, 1), &c);
    WaitAcked(&c, 500);
    auto s1 = CheckpointSoon(e.get());
    ASSERT_TRUE(s1.ok()) << s1.status();
    e1 = s1->epoch;
    WaitAcked(&c, 1000);
    armed = true;
    absl::StatusOr<CheckpointStats> s2 = absl::UnknownError("not tried");
    for (int attempt = 0; attempt < 5 && !absl::IsAborted(s2.status()); ++attempt) {
      e2 = e->open_epoch() + 40;
      s2 = e->Checkpoint(e2, std::chrono::seconds(30));
    }
    EXPECT_TRUE(absl::IsAborted(s2.status())) << s2.status();
    feed.Stop();
    feed.Join();
    (void)e->Stop(milliseconds(300));  // the log failed with the crash
    history = e->history();
  }
  fs.Restart();
  auto e = w.Make(&fs);
  ResultCollector again;
  ASSERT_EQ(e->RegisterClient(&again), 1u);
  auto last = e->RecoverLog();
  ASSERT_TRUE(last.ok()) << last.status();
  { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
  const uint64_t restored = e->stats().restored_checkpoint;
  if (point == "ckpt_published") {
    EXPECT_EQ(restored, e2);
  } else {
    // Before the directory sync the new name is not durable (the fault
    // layer undoes the rename and drops the never-synced temp name).
    EXPECT_EQ(restored, e1) << "an unpublished checkpoint was used";
  }
  ASSERT_GE(*last, restored);
  ASSERT_TRUE(e->Stop().ok());
  EXPECT_EQ(DigestOf(e.get()), w.Oracle(history, *last));
}

INSTANTIATE_TEST_SUITE_P(Steps, PublishCrash,
                         ::testing::Values("ckpt_written", "ckpt_synced", "ckpt_renamed", "ckpt_published"));

// Two checkpoints taken, the engine stopped cleanly; returns the digest and
// the two epochs.
struct TwoCheckpoints {
  uint64_t digest = 0, e1 = 0, e2 = 0;
  std::vector<std::shared_ptr<const pb::Batch>> history;
};
TwoCheckpoints RunWithTwoCheckpoints(World* w, FileSystem* fs) {
  TwoCheckpoints out;
  auto e = w->Make(fs);
  ResultCollector c;
  CHECK_EQ(e->RegisterClient(&c), 1u);
  absl::Status st = e->Start();
  CHECK(st.ok()) << st;
  Feeder feed(e.get(), RandomTxns(13, 1500, w->partitions, 1), &c);
  WaitAcked(&c, 400);
  auto s1 = CheckpointSoon(e.get());
  CHECK(s1.ok()) << s1.status();
  WaitAcked(&c, 900);
  auto s2 = CheckpointSoon(e.get());
  CHECK(s2.ok()) << s2.status();
  feed.Join();
  CHECK(e->Stop().ok());
  out.digest = DigestOf(e.get());
  out.e1 = s1->epoch;
  out.e2 = s2->epoch;
  out.history = e->history();
  return out;
}

TEST(CheckpointFallback, ADamagedNewestCheckpointFallsBackToTheOlder) {
  for (const bool truncate : {false, true}) {
    World w;
    FaultInjectingFileSystem fs;
    const TwoCheckpoints run = RunWithTwoCheckpoints(&w, &fs);
    const std::string newest = JoinPath(kCkptDir, CheckpointName(run.e2));
    auto size = fs.FileSize(newest);
    ASSERT_TRUE(size.ok());
    if (truncate) {
      ASSERT_TRUE(fs.Truncate(newest, *size / 2).ok());
    } else {
      ASSERT_TRUE(fs.FlipBit(newest, *size / 2, 5).ok());
    }
    auto e = w.Make(&fs);
    ResultCollector c;
    ASSERT_EQ(e->RegisterClient(&c), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    EXPECT_EQ(e->stats().restored_checkpoint, run.e1) << (truncate ? "truncated" : "bit flip");
    // The rejected file is kept for inspection under another name, never
    // counted (by pruning) or loaded again.
    EXPECT_FALSE(fs.FileSize(newest).ok());
    EXPECT_TRUE(fs.FileSize(newest + kQuarantineSuffix).ok());
    ASSERT_TRUE(e->Stop().ok());
    EXPECT_EQ(DigestOf(e.get()), run.digest);
  }
}

// A checkpoint after the epoch the node resumes at (R < its epoch: with
// --log_sync=none a cluster may resume before it) holds epochs that are cut
// from the log and sequenced anew: it is renamed before the cut and never
// loaded, also at a later restart whose log has passed its epoch again.
// Restored by hand, it is refused all the same: the CRC of its epoch's log
// records it carries differs from the log's.
TEST(CheckpointQuarantine, ACheckpointAfterTheResumeEpochIsNeverLoaded) {
  World w;
  FaultInjectingFileSystem fs;
  const TwoCheckpoints run = RunWithTwoCheckpoints(&w, &fs);
  const uint64_t resume = run.e2 - 1;
  const std::string e2_path = JoinPath(kCkptDir, CheckpointName(run.e2));
  std::vector<std::shared_ptr<const pb::Batch>> history;
  for (const auto& b : run.history)
    if (b->epoch() <= resume) history.push_back(b);
  {
    auto e = w.Make(&fs);
    ResultCollector c;
    ASSERT_EQ(e->RegisterClient(&c), 1u);
    // Txns queued before Start go into the first epoch after the resume
    // epoch, e2: its record differs from the first history's.
    std::vector<pb::Txn> first = RandomTxns(15, 10, w.partitions, 1);
    for (auto& t : first) t.set_client_seq(t.client_seq() + 200000);
    ASSERT_TRUE(e->SubmitMany(&first).ok());
    { absl::Status st = e->Start(0, resume); ASSERT_TRUE(st.ok()) << st; }
    EXPECT_EQ(e->stats().restored_checkpoint, run.e1);
    EXPECT_FALSE(fs.FileSize(e2_path).ok());
    EXPECT_TRUE(fs.FileSize(e2_path + kQuarantineSuffix).ok());
    // Other txns run past e2 this time.
    std::vector<pb::Txn> more = RandomTxns(14, 400, w.partitions, 1);
    for (auto& t : more) t.set_client_seq(t.client_seq() + 100000);
    Feeder feed(e.get(), std::move(more), &c);
    feed.Join();
    while (e->open_epoch() < run.e2 + 20) std::this_thread::sleep_for(milliseconds(1));
    ASSERT_TRUE(e->Stop().ok());
    for (const auto& b : e->history()) history.push_back(b);
    EXPECT_EQ(DigestOf(e.get()), w.Oracle(history, UINT64_MAX));
  }
  for (const bool restored_by_hand : {false, true}) {
    if (restored_by_hand) {
      ASSERT_TRUE(fs.Rename(e2_path + kQuarantineSuffix, e2_path).ok());
    }
    auto e = w.Make(&fs);
    ResultCollector c;
    ASSERT_EQ(e->RegisterClient(&c), 1u);
    auto last = e->RecoverLog();
    ASSERT_TRUE(last.ok()) << last.status();
    ASSERT_GT(*last, run.e2);
    EXPECT_EQ(std::count(e->checkpoint_epochs().begin(), e->checkpoint_epochs().end(), run.e2), 0);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    EXPECT_EQ(e->stats().restored_checkpoint, run.e1) << "the old checkpoint of e2 was loaded";
    EXPECT_FALSE(fs.FileSize(e2_path).ok());
    ASSERT_TRUE(e->Stop().ok());
    EXPECT_EQ(DigestOf(e.get()), w.Oracle(history, UINT64_MAX));
  }
}

TEST(CheckpointFallback, NoUsableCheckpointAndNoLogFromEpochOneRefusesNamingTheFile) {
  World w;
  FaultInjectingFileSystem fs;
  const TwoCheckpoints run = RunWithTwoCheckpoints(&w, &fs);
  for (uint64_t epoch : {run.e1, run.e2})
    ASSERT_TRUE(fs.FlipBit(JoinPath(kCkptDir, CheckpointName(epoch)), 60, 1).ok());
  auto log_first = InputLogFirstEpoch(kLogDir, &fs);
  ASSERT_TRUE(log_first.ok() && log_first->has_value());
  ASSERT_GT(**log_first, 1u);
  auto e = w.Make(&fs);
  ResultCollector c;
  ASSERT_EQ(e->RegisterClient(&c), 1u);
  absl::Status st = e->Start();
  ASSERT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_NE(st.message().find(JoinPath(kCkptDir, CheckpointName(run.e2))), std::string::npos) << st;
  EXPECT_NE(st.message().find("CRC mismatch"), std::string::npos) << st;
  // A node that refuses to start renames nothing (a hand restore starts
  // from the files as they were).
  for (uint64_t epoch : {run.e1, run.e2}) EXPECT_TRUE(fs.FileSize(JoinPath(kCkptDir, CheckpointName(epoch))).ok());
}

TEST(CheckpointFallback, ACheckpointEpochAlreadyMergedIsRefused) {
  World w;
  FaultInjectingFileSystem fs;
  auto e = w.Make(&fs);
  ResultCollector c;
  ASSERT_EQ(e->RegisterClient(&c), 1u);
  { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
  std::this_thread::sleep_for(milliseconds(50));
  auto s = e->Checkpoint(1, std::chrono::seconds(5));
  EXPECT_TRUE(absl::IsFailedPrecondition(s.status())) << s.status();
  ASSERT_TRUE(e->Stop().ok());
}

// The capture takes S on every local partition (docs/STORAGE.md, "Intent
// locks"): an agent holding IX on a partition (as a whole-table writer
// outside the order would) keeps the capture out until it lets go.
TEST(CheckpointIntentLocks, TheCaptureWaitsForWritersOfThePartition) {
  World w;
  FaultInjectingFileSystem fs;
  auto e = w.Make(&fs);
  ResultCollector c;
  ASSERT_EQ(e->RegisterClient(&c), 1u);
  { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
  auto writer = e->store(1)->intents().NewAgent();
  writer->Acquire(IntentLockTable::kPartitionLock, IntentMode::kIX);
  auto refused = e->Checkpoint(e->open_epoch() + 20, milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("not free for the capture"), std::string::npos) << refused.status();
  writer->EndTxn();
  writer->ReleaseAll();
  auto taken = CheckpointSoon(e.get());
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_LE(taken->lock_ms, taken->pause_ms);
  ASSERT_TRUE(e->Stop().ok());
}

// The client state (the layer above's exactly-once table; here the seqs
// the client got so far) covers every result of epochs <= E, a failing
// provider fails the checkpoint, and at restart the bytes come back before
// any replayed result.
TEST(CheckpointClientState, CoversEveryResultOfItsEpochsAndComesBackBeforeTheReplay) {
  World w;
  FaultInjectingFileSystem fs;
  ResultCollector first;
  std::atomic<bool> fail{false};
  auto provide = [&](uint64_t) -> absl::StatusOr<std::string> {
    if (fail.load()) return absl::InternalError("provider failed");
    std::lock_guard<std::mutex> l(first.mu);
    std::string out;
    for (const auto& [seq, r] : first.by_seq) out.append(reinterpret_cast<const char*>(&seq), 8);
    return out;
  };
  uint64_t epoch = 0;
  std::string saved;
  std::vector<std::shared_ptr<const pb::Batch>> history;
  {
    auto e = w.Make(&fs, "dclp", nullptr, [&](EngineOptions* o) {
      o->checkpoint.client_state = [&](uint64_t at) {
        auto s = provide(at);
        if (s.ok()) saved = *s;
        return s;
      };
    });
    ASSERT_EQ(e->RegisterClient(&first), 1u);
    { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
    Feeder feed(e.get(), RandomTxns(21, 1500, w.partitions, 1), &first);
    WaitAcked(&first, 500);
    fail = true;
    auto bad = CheckpointSoon(e.get());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal) << bad.status();
    CheckpointOptions listing;
    listing.dir = kCkptDir;
    listing.fs = &fs;
    auto none = ListCheckpoints(listing);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty()) << "a checkpoint without its client state was published";
    fail = false;
    auto s = CheckpointSoon(e.get());
    ASSERT_TRUE(s.ok()) << s.status();
    epoch = s->epoch;
    feed.Join();
    ASSERT_TRUE(e->Stop().ok());
    history = e->history();
  }
  std::set<uint64_t> covered;
  for (size_t i = 0; i + 8 <= saved.size(); i += 8) {
    uint64_t seq;
    std::memcpy(&seq, saved.data() + i, 8);
    covered.insert(seq);
  }
  size_t through = 0;
  for (const auto& b : history)
    if (b->epoch() <= epoch)
      for (const pb::Txn& t : b->txns()) {
        ++through;
        ASSERT_TRUE(covered.count(t.client_seq())) << "seq " << t.client_seq() << " of epoch " << b->epoch()
                                                   << " is not in the client state of epoch " << epoch;
      }
  ASSERT_GT(through, 0u);
  ASSERT_LT(through, 1500u);

  ResultCollector again;
  std::string restored = "not called";
  int results_before_restore = -1;
  auto e = w.Make(&fs, "dclp", nullptr, [&](EngineOptions* o) {
    o->checkpoint.client_state = provide;
    o->checkpoint.restore_client_state = [&](std::string_view bytes) {
      restored = std::string(bytes);
      std::lock_guard<std::mutex> l(again.mu);
      results_before_restore = again.count;
      return absl::OkStatus();
    };
  });
  ASSERT_EQ(e->RegisterClient(&again), 1u);
  { absl::Status st = e->Start(); ASSERT_TRUE(st.ok()) << st; }
  EXPECT_EQ(e->stats().restored_checkpoint, epoch);
  EXPECT_EQ(restored, saved);
  EXPECT_EQ(results_before_restore, 0) << "replayed results reached the client before the restore";
  EXPECT_EQ(again.count, static_cast<int>(1500 - through)) << "the replay answers the txns after the checkpoint";
  ASSERT_TRUE(e->Stop().ok());
  e.reset();

  // A restore that fails stops Start, naming the checkpoint.
  auto e2 = w.Make(&fs, "dclp", nullptr, [&](EngineOptions* o) {
    o->checkpoint.restore_client_state = [](std::string_view) { return absl::InvalidArgumentError("garbage"); };
  });
  ResultCollector third;
  ASSERT_EQ(e2->RegisterClient(&third), 1u);
  absl::Status st = e2->Start();
  EXPECT_TRUE(absl::IsDataLoss(st)) << st;
  EXPECT_NE(st.message().find(CheckpointName(epoch)), std::string::npos) << st;
}

}  // namespace
}  // namespace detdb
