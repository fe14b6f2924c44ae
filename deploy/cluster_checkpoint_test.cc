// Real processes: a 3-node cluster with --data_dir takes checkpoints while
// clients write, periodically (--checkpoint_interval_s) and on request
// (Client::Checkpoint, what `detdb-ctl checkpoint` sends, the same epoch on
// every node); every node is killed with SIGKILL and restarted: each loads
// the same checkpoint, replays only its log after it, and the partition
// digests equal those taken before the kill (the state of the run that
// never stopped). The logs were cut behind the oldest kept checkpoint.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "client/client.h"
#include "client/cluster_config.h"
#include "deploy/test_cluster.h"
#include "sequencer/input_log.h"
#include "workloads/micro/micro.h"

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr uint32_t kNodes = 3;

// Submits micro txns through every node until `stop`, then waits for every
// reply; returns how many were answered.
uint64_t Drive(const pb::ClusterConfig& config, const std::atomic<bool>& stop) {
  auto cc = ClusterClient::Connect(config);
  EXPECT_TRUE(cc.ok());
  if (!cc.ok()) return 0;
  MicroOptions w;
  w.partitions = config.num_partitions();
  w.records_per_partition = 1000;
  w.contention = 0.05;
  w.keys_per_txn = 4;
  w.multipartition = 0.3;
  w.seed = 77;
  MicroGenerator gen(w);
  uint64_t seq = 1, outstanding = 0, answered = 0;
  auto receive = [&] {
    auto r = (*cc)->Receive(milliseconds(2));
    if (!r.ok() || !r->has_value()) return;
    for (const pb::TxnResult& res : (*r)->second.results()) {
      (void)res;
      --outstanding;
      ++answered;
    }
  };
  while (!stop.load()) {
    if (outstanding < 300) {
      for (uint32_t n = 0; n < kNodes; ++n) {
        std::vector<pb::Txn> g;
        for (int i = 0; i < 10; ++i) {
          pb::Txn t;
          gen.Next(&t);
          t.set_client_id(9000 + n);
          t.set_client_seq(seq++);
          g.push_back(std::move(t));
        }
        if ((*cc)->node(n)->SubmitTxns(g).ok()) outstanding += g.size();
      }
    }
    receive();
  }
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (outstanding > 0 && std::chrono::steady_clock::now() < deadline) receive();
  EXPECT_EQ(outstanding, 0u);
  return answered;
}

// Every node's partition digests at one boundary ahead of all of them.
std::map<uint32_t, uint64_t> Digests(const pb::ClusterConfig& config) {
  std::map<uint32_t, uint64_t> out;
  auto cc = ClusterClient::Connect(config);
  EXPECT_TRUE(cc.ok());
  auto infos = (*cc)->InfoAll(seconds(5));
  EXPECT_TRUE(infos.ok());
  if (!infos.ok()) return out;
  uint64_t epoch = 0;
  for (const auto& i : *infos) epoch = std::max<uint64_t>(epoch, i.epoch());
  epoch += 300;
  // Asked of every node at once, each over a connection of its own (as
  // detdb-ctl digest does): each pauses at the boundary.
  std::vector<absl::StatusOr<std::vector<pb::PartitionDigest>>> got(kNodes, absl::UnknownError("not asked"));
  std::vector<std::thread> ask;
  for (uint32_t n = 0; n < kNodes; ++n)
    ask.emplace_back([&, n] {
      auto own = ClusterClient::Connect(config);
      got[n] = own.ok() ? (*own)->node(n)->Digests(epoch, seconds(30)) : own.status();
    });
  for (auto& t : ask) t.join();
  for (uint32_t n = 0; n < kNodes; ++n) {
    EXPECT_TRUE(got[n].ok()) << got[n].status();
    if (got[n].ok())
      for (const auto& pd : *got[n]) out[pd.partition()] = pd.digest();
  }
  return out;
}

TEST(ClusterCheckpointTest, EveryNodeRecoversFromTheSameCheckpointToTheStateBeforeTheKill) {
  TestClusterOptions o;
  o.nodes = kNodes;
  o.epoch_us = 2000;
  o.data_dirs = true;
  o.flags = {"--micro_records=1000", "--drain_timeout_s=1", "--checkpoint_interval_s=1",
             "--log_segment_kb=16"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();

  std::atomic<bool> stop{false};
  uint64_t answered = 0;
  std::thread driver([&] { answered = Drive(cluster.config(), stop); });
  std::this_thread::sleep_for(milliseconds(2500));  // periodic checkpoints at the same epochs
  // On request: one epoch for every node, asked of all at once. ~1.5 s
  // ahead: a node's periodic checkpoint may hold it up that long under a
  // sanitizer, and the epoch must still be ahead of every node then.
  uint64_t requested = 0;
  std::vector<absl::StatusOr<pb::CheckpointInfo>> out(kNodes, absl::UnknownError("not asked"));
  {
    auto cc = ClusterClient::Connect(cluster.config());
    auto infos = cc.ok() ? (*cc)->InfoAll(seconds(5)) : cc.status();
    EXPECT_TRUE(infos.ok()) << infos.status();
    if (infos.ok()) {
      for (const auto& i : *infos) requested = std::max<uint64_t>(requested, i.epoch());
      requested += 750;
      std::vector<std::thread> ask;
      for (uint32_t n = 0; n < kNodes; ++n)
        ask.emplace_back([&, n] {
          auto own = ClusterClient::Connect(cluster.config());
          out[n] = own.ok() ? (*own)->node(n)->Checkpoint(requested, seconds(60)) : own.status();
        });
      for (auto& t : ask) t.join();
    }
  }
  std::this_thread::sleep_for(milliseconds(500));  // txns after the checkpoint, to replay
  stop = true;
  driver.join();
  for (uint32_t n = 0; n < kNodes; ++n) {
    ASSERT_TRUE(out[n].ok()) << "node " << n << ": " << out[n].status() << "\n" << cluster.Logs();
    EXPECT_EQ(out[n]->epoch(), requested);
    EXPECT_GT(out[n]->bytes(), 0u);
  }
  ASSERT_GT(answered, 100u);
  const std::map<uint32_t, uint64_t> before = Digests(cluster.config());
  ASSERT_EQ(before.size(), kNodes);
  for (uint32_t n = 0; n < kNodes; ++n) {
    auto first = InputLogFirstEpoch(cluster.LogDir(n));
    ASSERT_TRUE(first.ok() && first->has_value());
    EXPECT_GT(**first, 1u) << "node " << n << ": the log was not cut behind the checkpoints";
  }

  for (uint32_t n = 0; n < kNodes; ++n) cluster.Kill(n, SIGKILL);
  for (uint32_t n = 0; n < kNodes; ++n)
    for (int i = 0; i < 200 && cluster.Running(n); ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();

  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());
  auto infos = (*cc)->InfoAll(seconds(5));
  ASSERT_TRUE(infos.ok());
  const uint64_t restored = (*infos)[0].restored_checkpoint();
  EXPECT_GE(restored, requested) << cluster.Logs();
  for (const auto& i : *infos) {
    EXPECT_EQ(i.restored_checkpoint(), restored) << "node " << i.node_id() << " started from another checkpoint";
    EXPECT_LT(i.replayed_txns(), answered) << "node " << i.node_id() << " replayed the whole run";
  }
  EXPECT_EQ(Digests(cluster.config()), before) << cluster.Logs();
  const absl::Status stopped = cluster.Stop();  // its message holds the logs
  ASSERT_TRUE(stopped.ok()) << stopped;
}

}  // namespace
}  // namespace detdb
