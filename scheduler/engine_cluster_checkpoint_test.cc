// Checkpoints of a cluster without the network: two engines joined by an
// InProcessPeerHub, each with its own input log and checkpoint directory on
// one FaultInjectingFileSystem. The nodes take checkpoints at different
// epochs (node 0 at e1, e2, e3; node 1 at e1 and e4: it missed two, as with
// another --checkpoint_interval_s); each gossips its newest one beside its
// durable epoch, keeps every checkpoint from the newest one all nodes hold
// on and cuts its log only behind it. A restart of all finds e1 on both and
// comes back to the state before the stop; once newer checkpoints are held
// by both, the older ones are pruned and the logs cut further, and a second
// restart starts from the newest common one.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"
#include "scheduler/peer_link.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kNodes = 2, kPartitions = 4;
// Epochs follow the wall clock. Under a sanitizer a node runs ~10x slower:
// with 500 us epochs its merge fell minutes behind the clock (empty epochs
// to log, merge and replay), and with 2 ms epochs under TSan a checkpoint
// asked 200 epochs ahead still took up to 40 s to be reached and each
// restart replayed ~34,000 txns over 22,000 epochs in 40 s (the test took
// 195-233 s). There: 8 ms epochs, and the feeder submits a quarter as fast.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kEpochUs = 8000;
constexpr uint64_t kLeadEpochs = 50;  // 400 ms
constexpr int kFeedPauseMs = 20;
#else
constexpr uint32_t kEpochUs = 500;
constexpr uint64_t kLeadEpochs = 200;  // 100 ms
constexpr int kFeedPauseMs = 5;
#endif

std::string Dir(uint32_t n, const char* what) { return absl::StrCat("/n", n, "/", what); }

uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<uint64_t> Listed(FileSystem* fs, uint32_t n) {
  CheckpointOptions o;
  o.dir = Dir(n, "ckpt");
  o.fs = fs;
  auto l = ListCheckpoints(o);
  CHECK(l.ok()) << l.status();
  return *l;
}

// One start of the cluster (the engines of one "process lifetime").
struct Cluster {
  FileSystem* const fs;
  ProcedureRegistry procs;
  ModPartitioner parts{kPartitions};
  std::unique_ptr<InProcessPeerHub> hub;
  std::vector<std::unique_ptr<ResultCollector>> clients;
  std::vector<std::unique_ptr<Engine>> nodes;
  uint64_t resume = 0, from = 0;  // what the last Start agreed

  explicit Cluster(FileSystem* f) : fs(f) {
    CHECK(RegisterTestProcedures(&procs).ok());
    CHECK(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
    std::vector<uint32_t> node_of(kPartitions);
    for (PartitionId p = 0; p < kPartitions; ++p) node_of[p] = p % kNodes;
    hub = std::make_unique<InProcessPeerHub>(node_of);
    for (uint32_t n = 0; n < kNodes; ++n) {
      CHECK(fs->CreateDir(absl::StrCat("/n", n)).ok());
      clients.push_back(std::make_unique<ResultCollector>());
      EngineOptions o;
      o.workers = 2;
      o.lock.table_size = 64;
      o.lock.max_active = 50;
      o.epoch_us = kEpochUs;
      o.peers = hub->link(n);
      o.results = clients.back().get();
      o.log.dir = Dir(n, "log");
      o.log.fs = fs;
      o.log.segment_bytes = 8 << 10;  // many segments, so that a cut removes some
      o.checkpoint.dir = Dir(n, "ckpt");
      auto e = Engine::Create(o, &parts, &procs);
      CHECK(e.ok()) << e.status();
      for (PartitionId p : (*e)->local_partitions())
        CHECK(LoadCounterTable((*e)->store(p), parts, p, kRecordsPerPartition).ok());
      nodes.push_back(std::move(*e));
    }
  }
  ~Cluster() { StopAll(); }

  // The handshake's part (ZmqPeerNet::resume_epoch, checkpoint_epoch):
  // resume at the smallest recovered epoch, from the newest checkpoint at or
  // before it that every node holds; all nodes replay at once.
  absl::Status Start() {
    resume = UINT64_MAX;
    for (auto& e : nodes) {
      auto r = e->RecoverLog();
      if (!r.ok()) return r.status();
      resume = std::min(resume, *r);
    }
    from = 0;
    for (uint64_t c : nodes[0]->checkpoint_epochs()) {
      bool everywhere = c <= resume;
      for (auto& e : nodes)
        everywhere = everywhere && std::count(e->checkpoint_epochs().begin(), e->checkpoint_epochs().end(), c) > 0;
      if (everywhere) {
        from = c;
        break;
      }
    }
    for (uint32_t n = 0; n < kNodes && from == 0; ++n)
      if (!nodes[n]->log_from_start())
        return absl::FailedPreconditionError(absl::StrCat("no checkpoint every node holds, and node ", n,
                                                          "'s log no longer starts at epoch 1"));
    const uint64_t start_us = NowMicros() + 20000;
    std::vector<absl::Status> st(kNodes);
    std::vector<std::thread> t;
    for (uint32_t n = 0; n < kNodes; ++n) t.emplace_back([&, n] { st[n] = nodes[n]->Start(start_us, resume, from); });
    for (auto& th : t) th.join();
    for (const absl::Status& s : st)
      if (!s.ok()) return s;
    return absl::OkStatus();
  }
  void StopAll() {
    for (auto& e : nodes) (void)e->Stop(seconds(2));
  }
  uint64_t OpenEpoch() {
    uint64_t e = 0;
    for (auto& n : nodes) e = std::max(e, n->open_epoch());
    return e;
  }
  // Asks the nodes in `who` at once, each in its own thread, for
  // ask(node, epoch) at one epoch kLeadEpochs ahead of the open one; again,
  // later, if a node had passed it already (FailedPrecondition), up to 5
  // times. Any other error fails the test binary. Returns the epoch and
  // puts each node's answer in *out; 0 (a test failure) after 5 attempts.
  template <typename T, typename Ask>
  uint64_t AskTogether(const std::vector<uint32_t>& who, Ask ask, std::vector<T>* out) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      const uint64_t epoch = OpenEpoch() + kLeadEpochs;
      std::vector<absl::StatusOr<T>> got(who.size(), absl::UnknownError("not asked"));
      std::vector<std::thread> t;
      for (size_t i = 0; i < who.size(); ++i) t.emplace_back([&, i] { got[i] = ask(nodes[who[i]].get(), epoch); });
      for (auto& th : t) th.join();
      bool again = false;
      for (const auto& g : got) {
        again |= absl::IsFailedPrecondition(g.status());
        CHECK(g.ok() || absl::IsFailedPrecondition(g.status())) << g.status();
      }
      if (again) continue;
      out->clear();
      for (auto& g : got) out->push_back(std::move(*g));
      return epoch;
    }
    ADD_FAILURE() << "nothing asked of the nodes together after 5 attempts";
    return 0;
  }
  // The nodes in `who` each take a checkpoint of one epoch, asked at once
  // (AskTogether); then every node prunes and cuts as the reports allow
  // (reclaim: asked for here; else the engines' reclaimers do it). Returns
  // the epoch.
  uint64_t CheckpointTogether(const std::vector<uint32_t>& who, bool reclaim = true) {
    std::vector<CheckpointStats> stats;
    const uint64_t epoch = AskTogether(
        who, [](Engine* e, uint64_t epoch) { return e->Checkpoint(epoch, seconds(180)); }, &stats);
    if (epoch != 0 && reclaim)
      for (auto& e : nodes) CHECK(e->ReclaimCheckpoints().ok());
    return epoch;
  }
  // Every node's partition digests at one boundary after every answered txn
  // (AskTogether).
  std::map<PartitionId, uint64_t> Snapshot() {
    std::vector<uint32_t> all(kNodes);
    for (uint32_t n = 0; n < kNodes; ++n) all[n] = n;
    std::vector<std::vector<std::pair<PartitionId, uint64_t>>> digests;
    AskTogether(
        all, [](Engine* e, uint64_t boundary) { return e->SnapshotDigests(boundary, seconds(180)); }, &digests);
    std::map<PartitionId, uint64_t> out;
    for (const auto& d : digests)
      for (auto [p, digest] : d) out[p] = digest;
    return out;
  }
  std::map<PartitionId, uint64_t> DigestsAfterStop() {
    StopAll();
    std::map<PartitionId, uint64_t> out;
    for (auto& e : nodes)
      for (auto [p, digest] : e->PartitionDigests()) out[p] = digest;
    return out;
  }
};

int Answered(Cluster* c) {
  int total = 0;
  for (auto& cl : c->clients) {
    std::lock_guard<std::mutex> l(cl->mu);
    total += cl->count;
  }
  return total;
}

// Submits txns to every node in small groups until stopped; waits for
// their answers in Finish.
class Feeder {
 public:
  Feeder(Cluster* c, uint64_t seed, uint64_t seq_base) : c_(c), already_(Answered(c)) {
    for (uint32_t n = 0; n < kNodes; ++n) {
      streams_.push_back(RandomTxns(seed + n, 20000, kPartitions, 100 + n));
      for (auto& t : streams_.back()) t.set_client_seq(t.client_seq() + seq_base);
    }
    thread_ = std::thread([this] {
      for (size_t i = 0; i + 10 <= streams_[0].size() && !stop_.load(); i += 10) {
        for (uint32_t n = 0; n < kNodes; ++n) {
          std::vector<pb::Txn> g(streams_[n].begin() + i, streams_[n].begin() + i + 10);
          CHECK(c_->nodes[n]->SubmitMany(&g).ok());
          submitted_ += 10;
        }
        std::this_thread::sleep_for(milliseconds(kFeedPauseMs));
      }
    });
  }
  ~Feeder() { Finish(); }
  // Stops submitting and waits until every txn is answered; returns their number.
  int Finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int i = 0; i < 60000; ++i) {
      if (Answered(c_) >= submitted_ + already_) return submitted_;
      std::this_thread::sleep_for(milliseconds(1));
    }
    ADD_FAILURE() << "not every txn was answered";
    return submitted_;
  }

 private:
  Cluster* const c_;
  const int already_;  // answers before (of replayed txns)
  std::vector<std::vector<pb::Txn>> streams_;
  std::atomic<bool> stop_{false};
  int submitted_ = 0;  // feeder thread, then Finish
  std::thread thread_;
};

TEST(ClusterCheckpoints, NodesWithDifferentCheckpointEpochsKeepACommonOneAndRestartFromIt) {
  FaultInjectingFileSystem fs;
  uint64_t e1 = 0, e2 = 0, e3 = 0, e4 = 0;
  std::map<PartitionId, uint64_t> before;
  {
    Cluster c(&fs);
    ASSERT_TRUE(c.Start().ok());
    Feeder feed(&c, 21, 0);
    std::this_thread::sleep_for(milliseconds(100));
    e1 = c.CheckpointTogether({0, 1});
    e2 = c.CheckpointTogether({0});
    e3 = c.CheckpointTogether({0});
    e4 = c.CheckpointTogether({1});
    ASSERT_TRUE(e1 > 0 && e1 < e2 && e2 < e3 && e3 < e4);
    for (auto& e : c.nodes) EXPECT_EQ(e->common_checkpoint(), e1);
    // Node 0 alone would keep e2 and e3 and cut its log behind e2; node 1
    // alone e1 and e4: no checkpoint in common.
    EXPECT_EQ(Listed(&fs, 0), (std::vector<uint64_t>{e3, e2, e1}));
    EXPECT_EQ(Listed(&fs, 1), (std::vector<uint64_t>{e4, e1}));
    for (uint32_t n = 0; n < kNodes; ++n) {
      auto first = InputLogFirstEpoch(Dir(n, "log"), &fs);
      ASSERT_TRUE(first.ok() && first->has_value());
      EXPECT_LE(**first, e1 + 1) << "node " << n << " cut its log behind the only common checkpoint";
    }
    ASSERT_GT(feed.Finish(), 0);
    before = c.Snapshot();
    ASSERT_EQ(before.size(), kPartitions);
  }

  uint64_t e5 = 0, e6 = 0;
  {
    Cluster c(&fs);
    absl::Status st = c.Start();
    ASSERT_TRUE(st.ok()) << st;
    EXPECT_EQ(c.from, e1);
    for (auto& e : c.nodes) {
      EXPECT_EQ(e->stats().restored_checkpoint, e1);
      EXPECT_GT(e->stats().replayed_txns, 0u) << "the txns after e1 are replayed";
    }
    EXPECT_EQ(c.DigestsAfterStop(), before) << "the restart from e1 is the state before the stop";
  }
  {
    // Newer checkpoints held by both: the older ones go, the logs are cut.
    Cluster c(&fs);
    ASSERT_TRUE(c.Start().ok());
    Feeder feed(&c, 31, 1000000);
    std::this_thread::sleep_for(milliseconds(100));
    e5 = c.CheckpointTogether({0, 1});
    // Everything from the oldest kept anchor (e1) on stays (finding 16).
    EXPECT_EQ(Listed(&fs, 0), (std::vector<uint64_t>{e5, e3, e2, e1}));
    EXPECT_EQ(Listed(&fs, 1), (std::vector<uint64_t>{e5, e4, e1}));
    e6 = c.CheckpointTogether({0, 1});
    for (uint32_t n = 0; n < kNodes; ++n) {
      EXPECT_EQ(c.nodes[n]->common_checkpoint(), e6);
      EXPECT_EQ(Listed(&fs, n), (std::vector<uint64_t>{e6, e5})) << "e2, e3 (node 0's only), e4 (node 1's only) go";
      auto first = InputLogFirstEpoch(Dir(n, "log"), &fs);
      ASSERT_TRUE(first.ok() && first->has_value());
      EXPECT_LE(**first, e5 + 1);
      EXPECT_GT(**first, e1 + 1) << "node " << n << ": the log was not cut behind e5";
    }
    ASSERT_GT(feed.Finish(), 0);
    before = c.Snapshot();
  }
  Cluster c(&fs);
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(c.from, e6);
  for (auto& e : c.nodes) EXPECT_EQ(e->stats().restored_checkpoint, e6);
  EXPECT_EQ(c.DigestsAfterStop(), before);
}

// Finding 17: with requested checkpoints only (no periodic loop calling
// ReclaimCheckpoints), two checkpoints held by both nodes are enough to cut
// both logs behind the first: the node that published the second before
// its peer's report arrived re-plans when the report comes (the engine's
// reclaimer), not one checkpoint later.
TEST(ClusterCheckpoints, TwoRequestedCheckpointsCutBothLogsWithoutAPeriodicLoop) {
  FaultInjectingFileSystem fs;
  Cluster c(&fs);
  ASSERT_TRUE(c.Start().ok());
  Feeder feed(&c, 41, 0);
  std::this_thread::sleep_for(milliseconds(100));
  const uint64_t e1 = c.CheckpointTogether({0, 1}, /*reclaim=*/false);
  const uint64_t e2 = c.CheckpointTogether({0, 1}, /*reclaim=*/false);
  ASSERT_TRUE(e1 > 0 && e1 < e2);
  for (uint32_t n = 0; n < kNodes; ++n) {
    uint64_t first = 0;
    for (int i = 0; i < 1000; ++i) {
      auto f = InputLogFirstEpoch(Dir(n, "log"), &fs);
      ASSERT_TRUE(f.ok() && f->has_value());
      first = **f;
      if (first > 1 && c.nodes[n]->common_checkpoint() == e2) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(c.nodes[n]->common_checkpoint(), e2) << "node " << n;
    EXPECT_GT(first, 1u) << "node " << n << ": the log was not cut behind e1";
    EXPECT_LE(first, e1 + 1) << "node " << n;
    EXPECT_EQ(Listed(&fs, n), (std::vector<uint64_t>{e2, e1})) << "node " << n;
  }
  ASSERT_GT(feed.Finish(), 0);
}

}  // namespace
}  // namespace detdb
