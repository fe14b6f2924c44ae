// Re-delivery made safe (issue 13, point 6), in one process: three engines
// (nodes) of one partition each, joined by InProcessPeerHub.
//
// - Every remote read is preceded by forgeries (no reads at all; a partition
//   of another node; a txn epoch far ahead) and followed by a duplicate,
//   every batch is sent twice, and every result is preceded by forged ones
//   (from a node that is not the txn's coordinator; with another client seq
//   or id): every bad frame is refused and counted by reason, and every
//   node's digest and every result equal the serial replay of the merged
//   order (the oracle).
// - A million batches for future epochs: the window takes a bounded number,
//   refuses the rest with a reason, and memory stays bounded.
// - Txns with 1 MiB of arguments against a stalled merge: the node refuses
//   them by bytes long before max_pending txns.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "scheduler/engine_test_util.h"
#include "scheduler/peer_link.h"
#include "scheduler/serial_executor.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

constexpr uint32_t kNodes = 3;

uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A PeerLink that forwards to the hub and, when tampering, adds bad frames
// around every real one.
class TamperingLink final : public PeerLink {
 public:
  TamperingLink(InProcessPeerHub* hub, PeerLink* inner, bool tamper) : hub_(hub), inner_(inner), tamper_(tamper) {}
  uint32_t node_id() const override { return inner_->node_id(); }
  uint32_t num_nodes() const override { return inner_->num_nodes(); }
  uint32_t NodeOf(PartitionId p) const override { return inner_->NodeOf(p); }
  void SetHandler(PeerHandler* h) override { inner_->SetHandler(h); }
  void RegisterReceiver(PartitionId p, RemoteReadsReceiver* r) override { inner_->RegisterReceiver(p, r); }
  void SendBatch(uint32_t node, const pb::Batch& batch) override {
    inner_->SendBatch(node, batch);
    if (tamper_) inner_->SendBatch(node, batch);  // resent: a duplicate
  }
  void SendResult(uint32_t node, const pb::TxnResult& r) override {
    if (tamper_) {
      // Before the real result, forgeries that would answer the client with
      // another outcome (finding 4): the result sent by the third node,
      // which is not the txn's coordinator, and by the coordinator with
      // another client seq, and with another client id.
      auto forged = [&](pb::TxnResult f) {
        f.set_status(pb::STATUS_ABORTED);
        f.set_error("forged");
        f.set_result("forged");
        return f;
      };
      if (num_nodes() == 3) {
        hub_->link(3 - node_id() - node)->SendResult(node, forged(r));
        ++result_forgeries_;
      }
      pb::TxnResult seq = forged(r);
      seq.set_client_seq(r.client_seq() + 1);
      inner_->SendResult(node, seq);
      pb::TxnResult client = forged(r);
      client.set_client_id(r.client_id() + 1);
      inner_->SendResult(node, client);
      result_forgeries_ += 2;
    }
    inner_->SendResult(node, r);
  }
  void SetDurableEpoch(uint64_t epoch) override { inner_->SetDurableEpoch(epoch); }
  void SetCheckpointEpoch(uint64_t epoch) override { inner_->SetCheckpointEpoch(epoch); }
  void SendRejoinRequest(uint32_t node, const pb::RejoinRequest& r) override { inner_->SendRejoinRequest(node, r); }
  void SendRejoinReply(uint32_t node, const pb::RejoinReply& r) override { inner_->SendRejoinReply(node, r); }
  void Send(PartitionId to, pb::RemoteReads msg) override {
    if (tamper_) {
      pb::RemoteReads empty = msg;  // the right reader, no values: would complete the txn
      empty.clear_reads();
      inner_->Send(to, std::move(empty));
      pb::RemoteReads other = msg;  // a partition this node does not serve
      other.set_from_partition((msg.from_partition() + 1) % kNodes);
      inner_->Send(to, std::move(other));
      pb::RemoteReads future = msg;  // a txn far beyond the window
      future.set_txn_id(EpochBatcher::EpochSequencerId(EpochBatcher::kMaxEpoch - 1, node_id(), 0));
      inner_->Send(to, std::move(future));
      guard_forgeries_ += 1;  // the empty one (the future one counts as too early)
      link_forgeries_ += 1;
    }
    pb::RemoteReads copy;
    if (tamper_) copy = msg;
    inner_->Send(to, std::move(msg));
    ++real_;
    if (tamper_) {
      inner_->Send(to, std::move(copy));
      ++guard_forgeries_;
    }
  }
  std::atomic<uint64_t> real_{0}, guard_forgeries_{0}, link_forgeries_{0}, result_forgeries_{0};

 private:
  InProcessPeerHub* const hub_;
  PeerLink* const inner_;
  const bool tamper_;
};

struct Cluster {
  ProcedureRegistry procs;
  ModPartitioner parts{kNodes};
  std::unique_ptr<InProcessPeerHub> hub;
  std::vector<std::unique_ptr<TamperingLink>> links;
  std::vector<std::unique_ptr<ResultCollector>> clients;
  std::vector<std::unique_ptr<Engine>> nodes;

  absl::Status Create(bool tamper, const EngineOptions& base = EngineOptions(), uint32_t nodes_n = kNodes) {
    absl::Status s = RegisterTestProcedures(&procs);
    if (s.ok()) s = procs.Register(kRandomTxnType, "random", &RandomProcedure);
    if (!s.ok()) return s;
    std::vector<uint32_t> node_of(kNodes);
    for (PartitionId p = 0; p < kNodes; ++p) node_of[p] = p % nodes_n;
    hub = std::make_unique<InProcessPeerHub>(node_of);
    for (uint32_t n = 0; n < nodes_n; ++n) {
      links.push_back(std::make_unique<TamperingLink>(hub.get(), hub->link(n), tamper));
      clients.push_back(std::make_unique<ResultCollector>());
      EngineOptions o = base;
      o.workers = 2;
      o.lock.table_size = 64;
      o.lock.max_active = 50;
      o.epoch_us = 500;
      o.record_history = true;
      o.peers = links.back().get();
      o.results = clients.back().get();
      auto e = Engine::Create(o, &parts, &procs);
      if (!e.ok()) return e.status();
      for (PartitionId p : (*e)->local_partitions()) {
        s = LoadCounterTable((*e)->store(p), parts, p, kRecordsPerPartition);
        if (!s.ok()) return s;
      }
      nodes.push_back(std::move(*e));
    }
    return absl::OkStatus();
  }
  int answered() {
    int total = 0;
    for (auto& c : clients) {
      std::lock_guard<std::mutex> l(c->mu);
      total += c->count;
    }
    return total;
  }
  ~Cluster() {
    for (auto& e : nodes) (void)e->Stop(std::chrono::seconds(2));
  }
};

// Runs the seeded mix on every node and checks every result and digest
// against the serial replay of the merged order. pace: the pause between
// groups of 20 txns per node; during: run on a thread meanwhile (joined
// before the answers are counted).
void RunAndCheck(Cluster* cluster, int n, std::chrono::milliseconds pace = std::chrono::milliseconds(1),
                 const std::function<void()>& during = nullptr) {
  const uint64_t start_us = NowMicros() + 20000;
  for (auto& e : cluster->nodes) ASSERT_TRUE(e->Start(start_us).ok());
  std::thread side;
  if (during) side = std::thread(during);
  std::vector<std::vector<pb::Txn>> streams;
  for (uint32_t c = 0; c < kNodes; ++c) streams.push_back(RandomTxns(31 + c, n, kNodes, 100 + c));
  for (int i = 0; i < n; i += 20) {
    for (uint32_t c = 0; c < kNodes; ++c) {
      std::vector<pb::Txn> group(streams[c].begin() + i, streams[c].begin() + std::min(n, i + 20));
      ASSERT_TRUE(cluster->nodes[c]->SubmitMany(&group).ok());
    }
    std::this_thread::sleep_for(pace);
  }
  if (side.joinable()) side.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (cluster->answered() < static_cast<int>(kNodes) * n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(cluster->answered(), static_cast<int>(kNodes) * n) << "every txn answered";
  uint64_t last_epoch = 0;
  for (auto& e : cluster->nodes) last_epoch = std::max(last_epoch, e->open_epoch());
  for (auto& e : cluster->nodes) ASSERT_TRUE(e->WaitIdle(last_epoch, std::chrono::seconds(30)).ok());
  std::vector<pb::Txn> order;
  for (auto& e : cluster->nodes)
    for (const auto& b : e->history())
      for (const pb::Txn& t : b->txns()) order.push_back(t);
  std::sort(order.begin(), order.end(), [](const pb::Txn& a, const pb::Txn& b) { return a.id() < b.id(); });
  ASSERT_EQ(order.size(), static_cast<size_t>(kNodes) * n);
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < kNodes; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(stores.back().get(), cluster->parts, p, kRecordsPerPartition).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&cluster->parts, &cluster->procs, raw);
  int multi = 0;
  for (const pb::Txn& t : order) {
    const pb::TxnResult want = serial.Execute(t);
    ResultCollector& c = *cluster->clients[t.origin_node()];
    std::lock_guard<std::mutex> l(c.mu);
    const pb::TxnResult& got = c.by_seq.at(t.client_seq());
    ASSERT_EQ(got.txn_id(), t.id());
    ASSERT_EQ(got.status(), want.status()) << "txn " << t.id() << " " << got.error();
    ASSERT_EQ(got.result(), want.result()) << "txn " << t.id();
    multi += t.readers_size() > 1;
  }
  EXPECT_GT(multi, n / 4) << "many txns read on several partitions";
  for (auto& e : cluster->nodes)
    for (auto [p, digest] : e->PartitionDigests()) EXPECT_EQ(digest, raw[p]->Digest()) << "partition " << p;
  for (auto& c : cluster->clients) EXPECT_FALSE(c->duplicate);
}

TEST(Redelivery, DuplicateAndForgedReadsAndBatchesAreRefusedAndTheRunEqualsTheOracle) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Create(/*tamper=*/true).ok());
  RunAndCheck(&cluster, std::max(300, TxnsPerRun() / 3));
  uint64_t real = 0, guard_forgeries = 0, link_forgeries = 0, result_forgeries = 0;
  for (auto& l : cluster.links) {
    real += l->real_;
    guard_forgeries += l->guard_forgeries_;
    link_forgeries += l->link_forgeries_;
    result_forgeries += l->result_forgeries_;
  }
  RemoteReadsStats sum;
  uint64_t duplicate_batches = 0, forged_results = 0;
  for (auto& e : cluster.nodes) {
    const EngineStats s = e->stats();
    duplicate_batches += s.duplicate_peer_batches;
    forged_results += s.forged_peer_results;
    EXPECT_EQ(s.bad_peer_batches, 0u);
    EXPECT_EQ(s.bad_peer_results, 0u) << "every forged result names an awaited txn";
    EXPECT_EQ(s.far_peer_batches, 0u);
    for (const SchedulerStats& p : s.partitions) {
      const RemoteReadsStats& r = p.remote_reads;
      sum.accepted += r.accepted;
      sum.duplicate += r.duplicate;
      sum.forged += r.forged;
      sum.too_early += r.too_early;
      sum.late += r.late;
      sum.over_budget += r.over_budget;
      sum.expired += r.expired;
      EXPECT_EQ(r.held_now, 0u) << "nothing left held";
    }
  }
  EXPECT_GT(real, 100u);
  EXPECT_EQ(sum.accepted, real) << "every real read used once";
  EXPECT_EQ(sum.too_early, real) << "every far-future read refused";
  EXPECT_EQ(sum.duplicate + sum.forged + sum.late, guard_forgeries) << "every duplicate and forgery refused";
  EXPECT_GT(sum.forged, 0u);
  EXPECT_GT(sum.duplicate + sum.late, 0u);
  EXPECT_EQ(sum.expired, 0u);
  EXPECT_EQ(sum.over_budget, 0u);
  EXPECT_EQ(cluster.hub->refused_reads(), link_forgeries) << "reads of another node's partition refused by the link";
  EXPECT_GT(duplicate_batches, 0u) << "every batch came twice";
  EXPECT_GT(result_forgeries, 30u) << "many results crossed nodes";
  EXPECT_EQ(forged_results, result_forgeries)
      << "every result from a node that is not the coordinator, or for another client id or seq, refused";
  for (auto& e : cluster.nodes) ASSERT_TRUE(e->Stop(std::chrono::seconds(10)).ok());
}

TEST(Redelivery, WithoutBadFramesNothingIsRefused) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Create(/*tamper=*/false).ok());
  RunAndCheck(&cluster, 300);
  for (auto& e : cluster.nodes) {
    const EngineStats s = e->stats();
    EXPECT_EQ(s.duplicate_peer_batches + s.far_peer_batches + s.bad_peer_batches, 0u);
    for (const SchedulerStats& p : s.partitions) EXPECT_EQ(p.remote_reads.refused(), 0u);
  }
  EXPECT_EQ(cluster.hub->refused_reads(), 0u);
}

TEST(Redelivery, AMergeHeldLongerThanTheWindowNeverStallsLaterTxns) {
  // The window is 0.1 s (200 epochs of 500 us); node 0's merge is held for
  // 1 s (a digest or checkpoint hold, a pause) while every node keeps
  // submitting for 1.5 s. Bounding by the merged epoch would refuse the
  // peers' batches and early reads past the window, which nobody resends:
  // node 0 would never answer again. Bounded by the wall-clock epoch, every
  // later txn completes and the run equals the oracle.
  EngineOptions o;
  o.peer_window_us = 100'000;
  Cluster cluster;
  ASSERT_TRUE(cluster.Create(/*tamper=*/false, o).ok());
  Engine& held = *cluster.nodes[0];
  std::atomic<bool> was_held{false};
  auto hold = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    absl::Status s;
    for (int tries = 0; tries < 10 && !was_held; ++tries) {  // the merge may pass the epoch first: a later one
      s = held.AtEpochBoundary(held.merged_epoch() + 20, std::chrono::seconds(30), nullptr, [&] {
        was_held = true;
        std::this_thread::sleep_for(std::chrono::seconds(1));
      });
    }
    EXPECT_TRUE(s.ok()) << s;
  };
  RunAndCheck(&cluster, 300, std::chrono::milliseconds(100), hold);
  EXPECT_TRUE(was_held);
  const uint64_t window = held.stats().peer_window_epochs;
  EXPECT_EQ(window, 200u);
  for (auto& e : cluster.nodes) {
    const EngineStats s = e->stats();
    EXPECT_EQ(s.far_peer_batches, 0u) << "no honest batch is too far";
    for (const SchedulerStats& p : s.partitions) {
      EXPECT_EQ(p.remote_reads.too_early + p.remote_reads.over_budget + p.remote_reads.dropped_expected, 0u);
      EXPECT_EQ(p.remote_reads.refused(), 0u);
    }
  }
  EXPECT_GT(held.open_epoch(), 2 * window) << "the clock ran well past the window during the hold";
}

uint64_t ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

TEST(Redelivery, AMillionFutureEpochBatchesAreRefusedWithBoundedMemory) {
  Cluster cluster;
  ASSERT_TRUE(cluster.Create(/*tamper=*/false).ok());
  Engine& e = *cluster.nodes[0];
  const uint64_t window = e.stats().peer_window_epochs;
  EXPECT_EQ(window, 10'000'000u / 500) << "10 s of 500 us epochs (EngineOptions::peer_window_us)";
  // Not started: the merge stays at epoch 1, as with a peer that never sends it.
  const uint64_t rss_before = ResidentBytes();
  constexpr uint64_t kBatches = 1'000'000;
  for (uint64_t epoch = 2; epoch < 2 + kBatches; ++epoch) {
    auto b = std::make_shared<pb::Batch>();
    b->set_sequencer_id(1);
    b->set_epoch(epoch);
    e.OnPeerBatch(b);
  }
  const uint64_t rss_growth = ResidentBytes() - std::min(ResidentBytes(), rss_before);
  EngineStats s = e.stats();
  EXPECT_EQ(s.far_peer_batches, kBatches - (window - 1)) << "refused: too far ahead of the merged epoch";
  EXPECT_EQ(s.bad_peer_batches, 0u);
  ASSERT_EQ(s.partitions.size(), 1u);
  EXPECT_EQ(s.partitions[0].pending_sub_batches, window - 1) << "only the window is queued";
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // they keep freed memory a while
  EXPECT_LT(rss_growth, uint64_t{64} << 20) << "memory bounded by the window, not the number of batches";
#else
  (void)rss_growth;
#endif
  // Resent copies are dropped idempotently, however often.
  for (int i = 0; i < 3; ++i) {
    auto b = std::make_shared<pb::Batch>();
    b->set_sequencer_id(1);
    b->set_epoch(2);
    e.OnPeerBatch(b);
  }
  s = e.stats();
  EXPECT_EQ(s.duplicate_peer_batches, 3u);
  EXPECT_EQ(s.partitions[0].pending_sub_batches, window - 1);
  // A copy with other txns is a forgery or a divergence: refused, counted
  // apart (hashes are kept for the last PeerBatchWindow::kRecent epochs).
  auto other = std::make_shared<pb::Batch>();
  other->set_sequencer_id(1);
  other->set_epoch(window);  // the last one taken
  pb::Txn* t = other->add_txns();
  t->set_id(EpochBatcher::EpochSequencerId(window, 1, 0));
  t->set_type(kRmwTxnType);
  t->add_read_set(MakeKey(kCounterTable, 0));
  e.OnPeerBatch(other);
  s = e.stats();
  EXPECT_EQ(s.conflicting_peer_batches, 1u);
  EXPECT_EQ(s.duplicate_peer_batches, 3u);
  EXPECT_EQ(s.partitions[0].pending_sub_batches, window - 1);
}

TEST(Redelivery, LargeArgumentsAgainstAStalledMergeAreBoundedByBytes) {
  EngineOptions o;
  o.max_pending_bytes = 16u << 20;
  Cluster cluster;
  ASSERT_TRUE(cluster.Create(/*tamper=*/false, o, /*nodes_n=*/2).ok());
  // Only node 0 runs: it waits for node 1's batches, so its merge stalls.
  ASSERT_TRUE(cluster.nodes[0]->Start(NowMicros()).ok());
  Engine& e = *cluster.nodes[0];
  // Epoch 1's own part merges before the merge waits for node 1's: submit later.
  while (e.open_epoch() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int accepted = 0;
  absl::Status refused;
  for (uint64_t i = 0; i < 256 && refused.ok(); ++i) {
    pb::Txn t;
    t.set_type(kRmwTxnType);
    t.set_client_id(100);
    t.set_client_seq(i + 1);
    t.set_args(std::string(o.max_args_bytes, 'a'));  // the largest accepted
    t.add_read_set(MakeKey(kCounterTable, 0));
    t.add_write_set(MakeKey(kCounterTable, 0));
    refused = e.Submit(std::move(t));
    accepted += refused.ok();
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_NE(refused.message().find("max_pending_bytes"), std::string::npos) << refused;
  EXPECT_EQ(accepted, 15) << "16 MiB hold 15 txns of 1 MiB plus keys";
  EXPECT_LE(e.stats().pending_bytes, o.max_pending_bytes);
  EXPECT_EQ(e.stats().replied, 0u) << "the merge is stalled; merged epoch " << e.merged_epoch() << ", open " << e.open_epoch();
  // Refused txns are not counted; small ones still fit.
  pb::Txn small;
  small.set_type(kRmwTxnType);
  small.set_client_id(100);
  small.set_client_seq(1000);
  small.add_read_set(MakeKey(kCounterTable, 0));
  EXPECT_TRUE(e.Submit(small).ok());
  EXPECT_EQ(e.Stop(std::chrono::milliseconds(100)).code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(Redelivery, PendingBytesMustHoldTheLargestTxn) {
  ProcedureRegistry procs;
  ModPartitioner parts(1);
  EngineOptions o;
  o.max_pending_bytes = 1000;
  auto e = Engine::Create(o, &parts, &procs);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("max_pending_bytes"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace detdb
