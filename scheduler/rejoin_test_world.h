// Shared by the rejoin tests (engine_rejoin_test.cc): three engines joined
// by an InProcessPeerHub, each with its own input log on its own
// FaultInjectingFileSystem; clients that feed them; every node's digests
// at a boundary; the check against the serial replay of the logged global
// order.
//
// Thread-safety: World's members are set up before the engines run; a
// Feeder runs one thread; the rest runs on the test's thread.
#ifndef DETDB_SCHEDULER_REJOIN_TEST_WORLD_H_
#define DETDB_SCHEDULER_REJOIN_TEST_WORLD_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "glog/logging.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"
#include "scheduler/peer_link.h"
#include "scheduler/serial_executor.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace rejoin_testing {
using namespace testing_util;  // NOLINT
using std::chrono::milliseconds;
using std::chrono::seconds;

inline constexpr uint32_t kNodes = 3;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

inline uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Every txn a client of node n ever got an answer for, by client seq.
struct Answers {
  std::mutex mu;
  std::map<uint64_t, pb::TxnResult> by_seq;
  bool duplicate = false;
};

// One engine incarnation's results sink: forwards into the node's answers.
class Sink : public TxnClient {
 public:
  explicit Sink(Answers* a) : a_(a) {}
  void OnResult(pb::TxnResult&& r) override {
    std::lock_guard<std::mutex> l(a_->mu);
    auto [it, fresh] = a_->by_seq.emplace(r.client_seq(), r);
    if (!fresh && (it->second.txn_id() != r.txn_id() || it->second.result() != r.result() ||
                   it->second.status() != r.status()))
      a_->duplicate = true;  // a replayed answer must be the original one
    ++count;
  }
  std::atomic<int> count{0};

 private:
  Answers* const a_;
};

struct World {
  explicit World(bool checkpoints) : checkpoints(checkpoints) {
    CHECK(RegisterTestProcedures(&procs).ok());
    CHECK(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
    for (uint32_t n = 0; n < kNodes; ++n) {
      fs.push_back(std::make_unique<FaultInjectingFileSystem>());
      answers.push_back(std::make_unique<Answers>());
      engines.emplace_back(nullptr);
    }
  }
  ~World() {
    frozen = -1;  // a test that failed while a disk stalled
    for (auto& e : engines)
      if (e != nullptr) (void)e->Stop(seconds(2));
  }

  std::unique_ptr<Engine> Make(uint32_t n) {
    sinks.push_back(std::make_unique<Sink>(answers[n].get()));
    EngineOptions o;
    o.workers = 2;
    o.lock.table_size = 64;
    o.epoch_us = kSanitized ? 3000 : 1000;  // a sanitized engine keeps up with its clock
    o.peers = hub.link(n);
    o.results = sinks.back().get();
    o.log.dir = "/log";
    o.log.fs = fs[n].get();
    o.log.segment_bytes = 32 << 10;
    o.rejoin_progress_timeout = rejoin_timeout;
    o.rejoin_retention_bytes = retention_bytes;
    o.rejoin_reply_bytes = reply_bytes;
    o.max_held_reads_bytes = held_reads_bytes;
    o.max_keys_per_txn = max_keys_per_txn;
    o.lock.max_active = 50;
    o.peer_window_us = peer_window_us;
    if (checkpoints) o.checkpoint.dir = "/ckpt";
    // The writer stalls before its fsync while this node is `frozen` (a slow disk).
    o.log.crash_hook = [this, n](std::string_view point) {
      while (point == "log_written" && frozen.load() == static_cast<int>(n))
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    };
    auto e = Engine::Create(o, &parts, &procs);
    CHECK(e.ok()) << e.status();
    for (PartitionId p : (*e)->local_partitions())
      CHECK(LoadCounterTable((*e)->store(p), parts, p, kRecordsPerPartition).ok());
    return std::move(*e);
  }

  const bool checkpoints;
  std::chrono::milliseconds rejoin_timeout{60000};  // for engines made from now on
  uint64_t retention_bytes = 64u << 20;             // likewise
  uint64_t reply_bytes = 32u << 20;                 // likewise
  uint64_t held_reads_bytes = 64u << 20;            // likewise
  size_t max_keys_per_txn = 10000;                  // likewise
  uint64_t peer_window_us = 10'000'000;             // likewise
  std::atomic<int> frozen{-1};
  ProcedureRegistry procs;
  ModPartitioner parts{kNodes};
  InProcessPeerHub hub{{0, 1, 2}};
  std::vector<std::unique_ptr<FaultInjectingFileSystem>> fs;
  std::vector<std::unique_ptr<Answers>> answers;
  std::vector<std::unique_ptr<Sink>> sinks;  // every incarnation's (kept: the engines point to them)
  std::vector<std::unique_ptr<Engine>> engines;
};

inline int Answered(Answers* a) {
  std::lock_guard<std::mutex> l(a->mu);
  return static_cast<int>(a->by_seq.size());
}

// Submits node n's txns in groups while allowed; a refused group is tried
// again (the node is overloaded, not ready, or its log failed).
class Feeder {
 public:
  Feeder(World* w, uint32_t n, uint64_t seed) : w_(w), n_(n), txns_(RandomTxns(seed, 40000, kNodes, 100 + n)) {}
  ~Feeder() { Stop(); }
  void Start() {
    stop_ = false;
    // Txns unanswered now may be lost with a dead node: not counted.
    const uint64_t answered = static_cast<uint64_t>(Answered(w_->answers[n_].get()));
    slack_ = next_ > answered ? next_ - answered : 0;
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Txns accepted by the engine (client seqs below this one).
  uint64_t accepted() const { return next_.load(); }
  // n more at once (the feeder runs).
  void Burst(size_t n) { burst_ += n; }

 private:
  void Run() {
    while (!stop_) {
      const uint64_t at = next_.load();
      // At most ~300 unanswered (beyond those of bursts, which a crash may lose).
      if (at > static_cast<uint64_t>(Answered(w_->answers[n_].get())) + 300 + bursted_ + slack_) {
        std::this_thread::sleep_for(milliseconds(3));
        continue;
      }
      const uint64_t burst = burst_.exchange(0);
      bursted_ += burst;
      const uint64_t n = 10 + burst;
      if (at + n > txns_.size()) break;
      std::vector<pb::Txn> group(txns_.begin() + at, txns_.begin() + at + n);
      if (w_->engines[n_]->SubmitMany(&group).ok()) next_ += n;
      std::this_thread::sleep_for(milliseconds(3));
    }
  }
  World* const w_;
  const uint32_t n_;
  const std::vector<pb::Txn> txns_;
  std::atomic<uint64_t> next_{0}, burst_{0};
  uint64_t bursted_ = 0, slack_ = 0;  // feeder thread (slack_: set by Start)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};


// Every node's partition digests at the boundary of `epoch`, taken at once.
inline std::map<PartitionId, uint64_t> SnapshotAll(World* w, uint64_t epoch) {
  std::map<PartitionId, uint64_t> out;
  std::mutex mu;
  std::vector<std::thread> t;
  for (uint32_t n = 0; n < kNodes; ++n)
    t.emplace_back([&, n] {
      // Three sanitized engines on a loaded CI host may need minutes to
      // log and merge up to the boundary (as engine_cluster_checkpoint_test).
      auto d = w->engines[n]->SnapshotDigests(epoch, seconds(kSanitized ? 180 : 60));
      std::lock_guard<std::mutex> l(mu);
      EXPECT_TRUE(d.ok()) << "node " << n << ": " << d.status();
      if (d.ok())
        for (auto [p, digest] : *d) out[p] = digest;
    });
  for (auto& th : t) th.join();
  return out;
}

// Takes a checkpoint of one epoch on every node (asked ~100 ms ahead).
inline uint64_t CheckpointAll(World* w) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    uint64_t epoch = 0;
    for (auto& e : w->engines) epoch = std::max(epoch, e->open_epoch());
    epoch += 100;
    std::vector<absl::Status> st(kNodes);
    std::vector<std::thread> t;
    for (uint32_t n = 0; n < kNodes; ++n)
      t.emplace_back([&, n] { st[n] = w->engines[n]->Checkpoint(epoch, seconds(60)).status(); });
    for (auto& th : t) th.join();
    if (std::all_of(st.begin(), st.end(), [](const absl::Status& s) { return s.ok(); })) return epoch;
    for (const absl::Status& s : st) EXPECT_TRUE(s.ok() || absl::IsFailedPrecondition(s)) << s;
  }
  ADD_FAILURE() << "no checkpoint every node took";
  return 0;
}

// Starts every engine on one clock.
inline void StartAll(World* w) {
  const uint64_t start_us = NowMicros() + 20000;
  std::vector<absl::Status> st(kNodes);
  std::vector<std::thread> t;
  for (uint32_t n = 0; n < kNodes; ++n) t.emplace_back([&, n] { st[n] = w->engines[n]->Start(start_us); });
  for (auto& th : t) th.join();
  for (const absl::Status& s : st) ASSERT_TRUE(s.ok()) << s;
}

// Once every engine stopped: the global order (every node's own batches,
// from its log) of the epochs below boundary, replayed serially. Every txn
// is in the logs once, each node's own epochs are consecutive (from 1
// without checkpoints), every answer a client got is in the order and
// equals the serial replay's, every txn of the order is answered unless
// may_be_unanswered(txn), and every partition's digest at the boundary
// equals the serial replay's. Call it with ASSERT_NO_FATAL_FAILURE.
inline void ExpectTheSerialReplay(World* w, uint64_t boundary, const std::map<PartitionId, uint64_t>& digests,
                                  const std::function<bool(const pb::Txn&)>& may_be_unanswered) {
  std::vector<pb::Txn> order;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (uint32_t n = 0; n < kNodes; ++n) {
    RecoveryOptions ro;
    ro.fs = w->fs[n].get();
    auto records = ReadInputLog("/log", ro);
    ASSERT_TRUE(records.ok()) << records.status();
    uint64_t next = 0;
    for (const LogRecord& r : *records) {
      if (r.header.sequencer_id != n) continue;
      if (next != 0) {
        EXPECT_EQ(r.header.epoch, next) << "node " << n << "'s own epochs are consecutive";
      }
      next = r.header.epoch + 1;
      pb::Batch b;
      ASSERT_TRUE(b.ParseFromString(r.payload));
      for (const pb::Txn& t : b.txns()) {
        ASSERT_TRUE(seen.emplace(t.client_id(), t.client_seq()).second)
            << "client " << t.client_id() << " seq " << t.client_seq() << " sequenced twice";
        if (EpochBatcher::IdEpoch(t.id()) < boundary) order.push_back(t);
      }
    }
    if (!w->checkpoints) {
      EXPECT_EQ(records->front().header.epoch, 1u) << "node " << n << "'s log is whole";
    }
  }
  std::sort(order.begin(), order.end(), [](const pb::Txn& a, const pb::Txn& b) { return a.id() < b.id(); });
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < kNodes; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(stores.back().get(), w->parts, p, kRecordsPerPartition).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&w->parts, &w->procs, raw);
  std::vector<int> in_order(kNodes, 0);
  for (const pb::Txn& t : order) {
    const pb::TxnResult want = serial.Execute(t);
    Answers& a = *w->answers[t.origin_node()];
    std::lock_guard<std::mutex> l(a.mu);
    auto it = a.by_seq.find(t.client_seq());
    if (it == a.by_seq.end()) {
      EXPECT_TRUE(may_be_unanswered(t)) << "txn " << t.id() << " of node " << t.origin_node() << " was never answered";
      continue;
    }
    ++in_order[t.origin_node()];
    ASSERT_EQ(it->second.txn_id(), t.id());
    ASSERT_EQ(it->second.status(), want.status()) << "txn " << t.id();
    ASSERT_EQ(it->second.result(), want.result()) << "txn " << t.id();
  }
  for (uint32_t n = 0; n < kNodes; ++n) {
    EXPECT_FALSE(w->answers[n]->duplicate) << "node " << n << " gave two answers to one txn";
    EXPECT_EQ(in_order[n], Answered(w->answers[n].get())) << "every answer of node " << n << " is in the log";
  }
  for (PartitionId p = 0; p < kNodes; ++p) EXPECT_EQ(digests.at(p), raw[p]->Digest()) << "partition " << p;
}

}  // namespace rejoin_testing
}  // namespace detdb

#endif  // DETDB_SCHEDULER_REJOIN_TEST_WORLD_H_
