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

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

constexpr uint32_t kNodes = 3, kPartitions = 6;

class EngineClusterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineClusterTest, EveryNodeEqualsTheSerialReplayOfTheMergedOrder) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  ASSERT_TRUE(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
  ModPartitioner parts(kPartitions);
  std::vector<uint32_t> node_of(kPartitions);
  for (PartitionId p = 0; p < kPartitions; ++p) node_of[p] = p % kNodes;
  InProcessPeerHub hub(node_of);

  std::vector<std::unique_ptr<ResultCollector>> clients;
  std::vector<std::unique_ptr<Engine>> nodes;
  for (uint32_t n = 0; n < kNodes; ++n) {
    clients.push_back(std::make_unique<ResultCollector>());
    EngineOptions o;
    o.lock_manager = GetParam();
    o.workers = 2;
    o.lock.table_size = 64;
    o.lock.max_active = 50;
    o.epoch_us = 500;
    o.record_history = true;
    o.peers = hub.link(n);
    o.results = clients.back().get();
    auto e = Engine::Create(o, &parts, &procs);
    ASSERT_TRUE(e.ok()) << e.status();
    ASSERT_EQ((*e)->local_partitions().size(), 2u);
    for (PartitionId p : (*e)->local_partitions())
      ASSERT_TRUE(LoadMicroTable((*e)->store(p), parts, p, kRecordsPerPartition).ok());
    nodes.push_back(std::move(*e));
  }
  pb::Txn early;
  early.set_type(kMicroTxnType);
  early.set_client_id(1);
  EXPECT_EQ(nodes[0]->Submit(early).code(), absl::StatusCode::kUnavailable) << "not ready before Start";

  const uint64_t start_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() + 20000;
  for (auto& e : nodes) ASSERT_TRUE(e->Start(start_us).ok());

  // Client c submits to node c % kNodes; client ids are the clients' own.
  const int n = std::max(300, TxnsPerRun() / 2);
  std::vector<std::vector<pb::Txn>> streams;
  for (uint32_t c = 0; c < kNodes; ++c) streams.push_back(RandomTxns(7 + c, n, kPartitions, 100 + c));
  for (size_t i = 0; i < static_cast<size_t>(n); i += 25)
    for (uint32_t c = 0; c < kNodes; ++c) {
      std::vector<pb::Txn> group(streams[c].begin() + i, streams[c].begin() + std::min<size_t>(n, i + 25));
      ASSERT_TRUE(nodes[c]->SubmitMany(&group).ok());
    }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto answered = [&] {
    int total = 0;
    for (auto& c : clients) {
      std::lock_guard<std::mutex> l(c->mu);
      total += c->count;
    }
    return total;
  };
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
    ASSERT_TRUE(LoadMicroTable(stores.back().get(), parts, p, kRecordsPerPartition).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int multi = 0;
  for (const pb::Txn& t : order) {
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
  EXPECT_GT(multi, n / 4) << "the mix should have many multi-partition txns";
  for (auto& e : nodes)
    for (auto [p, digest] : e->PartitionDigests()) EXPECT_EQ(digest, raw[p]->Digest()) << "partition " << p;
  for (auto& e : nodes) ASSERT_TRUE(e->Stop(std::chrono::seconds(10)).ok());
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, EngineClusterTest, ::testing::ValuesIn(LockManagerNames()));

}  // namespace
}  // namespace detdb
