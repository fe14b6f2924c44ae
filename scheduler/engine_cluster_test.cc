// Cluster mode without the network: three engines (nodes), each with its own
// sequencer and two of six partitions, connected by InProcessPeerHub. Clients
// submit a seeded mix of single- and multi-partition txns to every node; the
// merged global order (every node's batches, ordered by id = epoch,
// sequencer, index) replayed by the serial executor must give every result
// and every partition's digest, under every lock manager. This is the
// multi-sequencer merge, batch routing and result forwarding under the
// sanitizers; deploy/cluster_test runs the same over ZeroMQ.
#include <algorithm>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "scheduler/engine_test_util.h"
#include "scheduler/peer_link.h"
#include "scheduler/serial_executor.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

constexpr uint32_t kNodes = 3, kPartitions = 6;

uint64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Three engines joined by an InProcessPeerHub. Every engine is stopped
// before any is destroyed (their sequencers call into each other).
struct InProcessCluster {
  ProcedureRegistry procs;
  ModPartitioner parts{kPartitions};
  std::unique_ptr<InProcessPeerHub> hub;
  std::vector<std::unique_ptr<ResultCollector>> clients;
  std::vector<std::unique_ptr<Engine>> nodes;

  absl::Status Create(const std::string& lock_manager) {
    absl::Status s = RegisterTestProcedures(&procs);
    if (s.ok()) s = procs.Register(kRandomTxnType, "random", &RandomProcedure);
    if (!s.ok()) return s;
    std::vector<uint32_t> node_of(kPartitions);
    for (PartitionId p = 0; p < kPartitions; ++p) node_of[p] = p % kNodes;
    hub = std::make_unique<InProcessPeerHub>(node_of);
    for (uint32_t n = 0; n < kNodes; ++n) {
      clients.push_back(std::make_unique<ResultCollector>());
      EngineOptions o;
      o.lock_manager = lock_manager;
      o.workers = 2;
      o.lock.table_size = 64;
      o.lock.max_active = 50;
      o.epoch_us = 500;
      o.record_history = true;
      o.peers = hub->link(n);
      o.results = clients.back().get();
      o.staged_alloc = n % 2 == 1;  // staged and pooled txn states must agree (staged_states.h)
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
  absl::Status Start() {
    const uint64_t start_us = NowMicros() + 20000;
    for (auto& e : nodes) {
      absl::Status s = e->Start(start_us);
      if (!s.ok()) return s;
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
  ~InProcessCluster() {
    for (auto& e : nodes) (void)e->Stop(std::chrono::seconds(2));
  }
};

class EngineClusterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineClusterTest, EveryNodeEqualsTheSerialReplayOfTheMergedOrder) {
  InProcessCluster cluster;
  ASSERT_TRUE(cluster.Create(GetParam()).ok());
  ProcedureRegistry& procs = cluster.procs;
  ModPartitioner& parts = cluster.parts;
  std::vector<std::unique_ptr<ResultCollector>>& clients = cluster.clients;
  std::vector<std::unique_ptr<Engine>>& nodes = cluster.nodes;
  for (uint32_t n = 0; n < kNodes; ++n) {
    ASSERT_EQ(nodes[n]->local_partitions().size(), 2u);
  }
  if (false) {
    EngineOptions o;
  }
  pb::Txn early;
  early.set_type(kRmwTxnType);
  early.set_client_id(1);
  EXPECT_EQ(nodes[0]->Submit(early).code(), absl::StatusCode::kUnavailable) << "not ready before Start";

  ASSERT_TRUE(cluster.Start().ok());

  // Client c submits to node c % kNodes; client ids are the clients' own.
  const int n = std::max(300, TxnsPerRun() / 2);
  std::vector<std::vector<pb::Txn>> streams;
  for (uint32_t c = 0; c < kNodes; ++c) streams.push_back(RandomTxns(7 + c, n, kPartitions, 100 + c));
  // Half the txns, then a snapshot at an epoch boundary while the other
  // half streams in: the digests must equal the serial replay of exactly
  // the txns of the epochs before the boundary.
  auto submit = [&](size_t from, size_t to, bool slow) {
    for (size_t i = from; i < to; i += 25) {
      for (uint32_t c = 0; c < kNodes; ++c) {
        std::vector<pb::Txn> group(streams[c].begin() + i, streams[c].begin() + std::min<size_t>(to, i + 25));
        ASSERT_TRUE(nodes[c]->SubmitMany(&group).ok());
      }
      if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  };
  const size_t half = static_cast<size_t>(n) / 2 / 25 * 25;
  submit(0, half, false);
  while (nodes[0]->open_epoch() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Well ahead (100 ms): the snapshot threads must ask before any partition
  // reaches it, also on a loaded machine under the sanitizers.
  const uint64_t boundary = nodes[0]->open_epoch() + 200;
  std::vector<absl::StatusOr<std::vector<std::pair<PartitionId, uint64_t>>>> snaps(kNodes);
  std::vector<std::thread> snappers;
  for (uint32_t c = 0; c < kNodes; ++c)
    snappers.emplace_back([&, c] { snaps[c] = nodes[c]->SnapshotDigests(boundary, std::chrono::seconds(60)); });
  while (nodes[0]->open_epoch() + 2 < boundary) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  submit(half, static_cast<size_t>(n) - 25, true);
  // The last group only once every node's sequencer is past the boundary,
  // so that the run straddles it also when a loaded machine starves the
  // sequencers (seen under TSan at a load average of 20).
  for (auto& e : nodes)
    while (e->open_epoch() <= boundary) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  submit(static_cast<size_t>(n) - 25, static_cast<size_t>(n), false);
  for (std::thread& t : snappers) t.join();
  for (const auto& s : snaps) ASSERT_TRUE(s.ok()) << s.status();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto answered = [&] { return cluster.answered(); };
  while (answered() < static_cast<int>(kNodes) * n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(answered(), static_cast<int>(kNodes) * n) << "every txn answered";
  uint64_t last_epoch = 0;
  for (auto& e : nodes) last_epoch = std::max(last_epoch, e->open_epoch());
  for (auto& e : nodes) ASSERT_TRUE(e->WaitIdle(last_epoch, std::chrono::seconds(30)).ok());
  for (auto& c : clients) EXPECT_FALSE(c->duplicate);

  // The merged global order: every node's batches, by txn id.
  std::vector<pb::Txn> order;
  for (auto& e : nodes)
    for (const auto& b : e->history())
      for (const pb::Txn& t : b->txns()) order.push_back(t);
  std::sort(order.begin(), order.end(), [](const pb::Txn& a, const pb::Txn& b) { return a.id() < b.id(); });
  ASSERT_EQ(order.size(), static_cast<size_t>(kNodes) * n);

  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < kPartitions; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(stores.back().get(), parts, p, kRecordsPerPartition).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int multi = 0, before_boundary = 0;
  bool snapshot_checked = false;
  auto check_snapshot = [&] {
    for (const auto& s : snaps)
      for (auto [p, digest] : *s) EXPECT_EQ(digest, raw[p]->Digest()) << "partition " << p << " at the boundary";
    snapshot_checked = true;
  };
  for (const pb::Txn& t : order) {
    if (!snapshot_checked && EpochBatcher::IdEpoch(t.id()) >= boundary) check_snapshot();
    before_boundary += EpochBatcher::IdEpoch(t.id()) < boundary;
    const pb::TxnResult want = serial.Execute(t);
    ASSERT_EQ(t.origin_node(), t.client_id() - 100);
    ResultCollector& c = *clients[t.origin_node()];
    std::lock_guard<std::mutex> l(c.mu);
    const pb::TxnResult& got = c.by_seq.at(t.client_seq());
    ASSERT_EQ(got.txn_id(), t.id());
    ASSERT_EQ(got.status(), want.status()) << "txn " << t.id();
    ASSERT_EQ(got.result(), want.result()) << "txn " << t.id();
    multi += ParticipantsOf(t).size() > 1;
  }
  if (!snapshot_checked) check_snapshot();
  EXPECT_GT(multi, n / 4) << "the mix should have many multi-partition txns";
  EXPECT_GT(before_boundary, 0) << "the snapshot should fall inside the run";
  EXPECT_LT(before_boundary, static_cast<int>(order.size())) << "the snapshot should fall inside the run";
  for (auto& e : nodes)
    for (auto [p, digest] : e->PartitionDigests()) EXPECT_EQ(digest, raw[p]->Digest()) << "partition " << p;
  for (auto& e : nodes) ASSERT_TRUE(e->Stop(std::chrono::seconds(10)).ok());
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, EngineClusterTest, ::testing::ValuesIn(LockManagerNames()));

// Without an input log no node can rejoin, and no durable epoch ever rises
// to trim what is kept for one: nothing is kept (review finding 1: every
// part of every batch, and every remote read and result, was kept forever).
TEST(EngineCluster, WithoutALogNothingIsKeptForARejoin) {
  InProcessCluster cluster;
  ASSERT_TRUE(cluster.Create("dclp").ok());
  ASSERT_TRUE(cluster.Start().ok());
  const int n = 150;
  for (uint32_t c = 0; c < kNodes; ++c) {
    std::vector<pb::Txn> txns = RandomTxns(40 + c, n, kPartitions, 100 + c);
    ASSERT_TRUE(cluster.nodes[c]->SubmitMany(&txns).ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (cluster.answered() < static_cast<int>(kNodes) * n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(cluster.answered(), static_cast<int>(kNodes) * n);
  // Idle epochs too (an empty part goes to every node every epoch).
  const uint64_t until = cluster.nodes[0]->open_epoch() + 50;
  for (auto& e : cluster.nodes)
    while (e->open_epoch() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (uint32_t c = 0; c < kNodes; ++c) {
    const EngineStats s = cluster.nodes[c]->stats();
    EXPECT_GT(s.epochs, 50u);
    EXPECT_EQ(s.retained_batches, 0u) << "node " << c;
    EXPECT_EQ(s.retained_batch_bytes, 0u) << "node " << c;
    EXPECT_EQ(s.retained_bytes, 0u) << "node " << c;
  }
}

// A peer's batch is checked before use: out-of-place ids, bad partitions in
// derived fields, unknown procedures. A bad batch is dropped (the merge
// stalls at its epoch: never a divergence, never a crash); good derived
// fields are recomputed from the keys.
TEST(EngineCluster, BadPeerInputIsDroppedNotTrusted) {
  InProcessCluster cluster;
  ASSERT_TRUE(cluster.Create("dclp").ok());
  Engine& e = *cluster.nodes[0];
  auto batch_from_1 = [](uint64_t epoch) {
    auto b = std::make_shared<pb::Batch>();
    b->set_sequencer_id(1);
    b->set_epoch(epoch);
    return b;
  };
  auto txn = [](uint64_t id, Key k) {
    pb::Txn t;
    t.set_id(id);
    t.set_type(kRmwTxnType);
    t.set_client_id(5);
    t.add_read_set(k);
    t.add_write_set(k);
    return t;
  };
  const Key local = MakeKey(kCounterTable, 0);  // partition 0: node 0
  // Forged derived fields: a writer partition that does not exist and an origin node that does not exist.
  auto b = batch_from_1(3);
  pb::Txn t = txn(EpochBatcher::EpochSequencerId(3, 1, 0), local);
  t.add_writers(77);
  t.set_origin_node(50);
  *b->add_txns() = t;
  e.OnPeerBatch(b);
  EXPECT_EQ(e.stats().bad_peer_batches, 0u) << "derived fields are recomputed, not refused";
  ASSERT_EQ(b->txns(0).writers_size(), 1);
  EXPECT_EQ(b->txns(0).writers(0), 0u);
  EXPECT_EQ(b->txns(0).origin_node(), 1u);
  // Out-of-place ids, another sequencer's id, unknown procedure, unknown table, epoch 0.
  std::vector<std::shared_ptr<pb::Batch>> bad;
  bad.push_back(batch_from_1(4));
  *bad.back()->add_txns() = txn(EpochBatcher::EpochSequencerId(4, 1, 5), local);
  *bad.back()->add_txns() = txn(EpochBatcher::EpochSequencerId(4, 1, 5), local);  // index not increasing
  bad.push_back(batch_from_1(5));
  *bad.back()->add_txns() = txn(EpochBatcher::EpochSequencerId(5, 2, 0), local);  // sequencer 2's id
  bad.push_back(batch_from_1(6));
  *bad.back()->add_txns() = txn(EpochBatcher::EpochSequencerId(6, 1, 0), local);
  bad.back()->mutable_txns(0)->set_type(999);
  bad.push_back(batch_from_1(7));
  *bad.back()->add_txns() = txn(EpochBatcher::EpochSequencerId(7, 1, 0), MakeKey(99, 1));
  bad.push_back(batch_from_1(0));
  auto self = batch_from_1(8);
  self->set_sequencer_id(0);  // claims to be this node's own sequencer
  bad.push_back(self);
  for (auto& x : bad) e.OnPeerBatch(x);
  EXPECT_EQ(e.stats().bad_peer_batches, bad.size());
  // Results for txns this node does not wait for are dropped and leave
  // admission alone.
  for (uint64_t i = 0; i < 10; ++i) {
    pb::TxnResult r;
    r.set_txn_id(1000 + i);
    r.set_client_id(5);
    e.OnPeerResult(1, r);
  }
  EXPECT_EQ(e.stats().bad_peer_results, 10u);
  EXPECT_EQ(e.stats().replied, 0u);
  ASSERT_TRUE(cluster.Start().ok());
  pb::Txn good = txn(0, local);
  good.set_client_seq(1);
  EXPECT_TRUE(e.Submit(good).ok()) << "admission still works";
}

}  // namespace
}  // namespace detdb
