// Real processes: exactly once across a restart from a checkpoint
// (docs/DURABILITY.md, "Exactly once across restarts"). A 3-node cluster
// with --data_dir runs txns through its clients (one client more than the
// 4096 outcomes a node remembers per client), takes a checkpoint on request,
// runs more (one client sends none), and every node is killed with SIGKILL and restarted from that
// checkpoint (only the txns after it are replayed). Then for the txns
// acknowledged before the checkpoint: (a) an outcome query answers the
// original result, or UNAVAILABLE for the oldest ones the node no longer
// remembers, never NOT_FOUND; (b) resubmitting them answers the original
// result (or refuses a forgotten one as a duplicate) and runs nothing: the
// partition digests equal those before the kill and every (client, seq) is
// in the logs once; (c) Client::Run of such a seq returns the original
// result, and of a forgotten one never runs it.
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
#include "sequencer/input_log.h"
#include "workloads/micro/micro.h"

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Id = std::pair<uint64_t, uint64_t>;  // (client id, seq)
constexpr uint32_t kNodes = 3;
constexpr uint64_t kClient0 = 8100;  // client c submits through node c
constexpr size_t kRemembered = 4096;  // ClientEndpointOptions::outcomes_per_client

// Client c's txns with seqs first .. first + n - 1.
std::vector<pb::Txn> Txns(uint32_t c, uint64_t first, size_t n) {
  MicroOptions w;
  w.partitions = kNodes;
  w.records_per_partition = 1000;
  w.contention = 0.05;
  w.keys_per_txn = 4;
  w.multipartition = 0.3;
  w.seed = 300 + c * 7 + first;
  MicroGenerator gen(w);
  std::vector<pb::Txn> out(n);
  for (size_t i = 0; i < n; ++i) {
    gen.Next(&out[i]);
    out[i].set_client_id(kClient0 + c);
    out[i].set_client_seq(first + i);
  }
  return out;
}

// Submits per_client[c] through node c, at most 200 in flight per client,
// until every txn is answered; the results by (client, seq).
std::map<Id, pb::TxnResult> RunAll(ClusterClient* cc, const std::vector<std::vector<pb::Txn>>& per_client) {
  std::map<Id, pb::TxnResult> out;
  std::vector<size_t> sent(kNodes, 0), answered(kNodes, 0);
  size_t total = 0;
  for (const auto& v : per_client) total += v.size();
  const auto deadline = std::chrono::steady_clock::now() + seconds(240);
  while (out.size() < total && std::chrono::steady_clock::now() < deadline) {
    for (uint32_t c = 0; c < kNodes; ++c) {
      const auto& v = per_client[c];
      while (sent[c] < v.size() && sent[c] - answered[c] < 200) {
        std::vector<pb::Txn> g(v.begin() + sent[c], v.begin() + std::min(v.size(), sent[c] + 20));
        if (!cc->node(c)->SubmitTxns(g).ok()) break;
        sent[c] += g.size();
      }
    }
    auto r = cc->Receive(milliseconds(2));
    if (!r.ok() || !r->has_value()) continue;
    for (const pb::TxnResult& res : (*r)->second.results()) {
      const uint64_t c = res.client_id() - kClient0;
      if (c >= kNodes) continue;
      ++answered[c];
      out[{res.client_id(), res.client_seq()}] = res;
    }
  }
  EXPECT_EQ(out.size(), total) << "not every txn was answered";
  return out;
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

// (client, seq) -> times it is in a node's own batches, over every log.
std::map<Id, int> Logged(const TestCluster& cluster) {
  std::map<Id, int> out;
  for (uint32_t n = 0; n < kNodes; ++n) {
    RecoveryOptions ro;
    ro.config_hash = ClusterConfigHash(cluster.config());
    auto records = ReadInputLog(cluster.LogDir(n), ro);
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) continue;
    for (const LogRecord& r : *records) {
      if (r.header.sequencer_id != n) continue;  // a peer's batch: counted in its own log
      pb::Batch b;
      EXPECT_TRUE(b.ParseFromString(r.payload));
      for (const pb::Txn& t : b.txns()) ++out[{t.client_id(), t.client_seq()}];
    }
  }
  return out;
}

void ExpectSameResult(const pb::TxnResult& got, const pb::TxnResult& want) {
  EXPECT_EQ(got.status(), want.status()) << "client " << got.client_id() << " seq " << got.client_seq() << ": "
                                         << got.error();
  EXPECT_EQ(got.txn_id(), want.txn_id()) << "client " << got.client_id() << " seq " << got.client_seq();
  EXPECT_EQ(got.result(), want.result());
}

TEST(ClusterExactlyOnceTest, TxnsAcknowledgedBeforeACheckpointAreNeverRunAgainAfterARestartFromIt) {
  TestClusterOptions o;
  o.nodes = kNodes;
  o.epoch_us = 2000;
  o.data_dirs = true;
  o.flags = {"--micro_records=1000", "--drain_timeout_s=1"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());

  // Before the checkpoint: client 0 more than a node remembers.
  const std::vector<size_t> before_n = {kRemembered + 300, 300, 300};
  std::vector<std::vector<pb::Txn>> before(kNodes), after(kNodes);
  for (uint32_t c = 0; c < kNodes; ++c) before[c] = Txns(c, 1, before_n[c]);
  const std::map<Id, pb::TxnResult> acked = RunAll(cc->get(), before);
  for (const auto& [id, r] : acked)
    ASSERT_TRUE(r.status() == pb::STATUS_OK || r.status() == pb::STATUS_ABORTED)
        << "client " << id.first << " seq " << id.second << ": " << r.error();

  // The checkpoint, one epoch on every node, ahead of all of them.
  auto infos = (*cc)->InfoAll(seconds(5));
  ASSERT_TRUE(infos.ok()) << infos.status();
  uint64_t requested = 0;
  for (const auto& i : *infos) requested = std::max<uint64_t>(requested, i.epoch());
  requested += 750;
  std::vector<absl::StatusOr<pb::CheckpointInfo>> taken(kNodes, absl::UnknownError("not asked"));
  {
    std::vector<std::thread> ask;
    for (uint32_t n = 0; n < kNodes; ++n)
      ask.emplace_back([&, n] {
        auto own = ClusterClient::Connect(cluster.config());
        taken[n] = own.ok() ? (*own)->node(n)->Checkpoint(requested, seconds(60)) : own.status();
      });
    for (auto& t : ask) t.join();
  }
  for (uint32_t n = 0; n < kNodes; ++n)
    ASSERT_TRUE(taken[n].ok()) << "node " << n << ": " << taken[n].status() << "\n" << cluster.Logs();

  // After it: replayed at the restart. Client 2 sends none: the replay
  // tells the node nothing about it (the case that ran txns twice).
  for (uint32_t c = 0; c < 2; ++c) after[c] = Txns(c, before_n[c] + 1, 100);
  const std::map<Id, pb::TxnResult> acked_after = RunAll(cc->get(), after);
  const std::map<uint32_t, uint64_t> digests = Digests(cluster.config());
  ASSERT_EQ(digests.size(), kNodes);

  for (uint32_t n = 0; n < kNodes; ++n) cluster.Kill(n, SIGKILL);
  for (uint32_t n = 0; n < kNodes; ++n)
    for (int i = 0; i < 200 && cluster.Running(n); ++i) std::this_thread::sleep_for(milliseconds(10));
  cc->reset();
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());
  infos = (*cc)->InfoAll(seconds(5));
  ASSERT_TRUE(infos.ok()) << infos.status();
  for (const auto& i : *infos) {
    ASSERT_EQ(i.restored_checkpoint(), requested) << "node " << i.node_id() << "\n" << cluster.Logs();
    EXPECT_LE(i.replayed_txns(), 2 * 100u) << "node " << i.node_id() << " replayed txns before the checkpoint";
  }

  // (a) Outcome queries: the original result, or UNAVAILABLE for the oldest
  // of client 0 (forgotten: 4096 remembered, 100 of them after the
  // checkpoint); never NOT_FOUND.
  std::vector<Id> forgotten;
  for (uint32_t c = 0; c < kNodes; ++c) {
    for (size_t i = 0; i < before[c].size(); i += 500) {
      std::vector<pb::Txn> part(before[c].begin() + i, before[c].begin() + std::min(before[c].size(), i + 500));
      auto out = (*cc)->node(c)->Outcomes(part, seconds(10));
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), part.size());
      for (const pb::TxnResult& r : *out) {
        ASSERT_NE(r.status(), pb::STATUS_NOT_FOUND)
            << "client " << r.client_id() << " seq " << r.client_seq()
            << " was acknowledged before the checkpoint: a client would resubmit it";
        if (r.status() == pb::STATUS_UNAVAILABLE) {
          forgotten.push_back({r.client_id(), r.client_seq()});
          continue;
        }
        ExpectSameResult(r, acked.at({r.client_id(), r.client_seq()}));
      }
    }
    if (after[c].empty()) continue;
    auto out = (*cc)->node(c)->Outcomes(after[c], seconds(10));
    ASSERT_TRUE(out.ok()) << out.status();
    for (const pb::TxnResult& r : *out) ExpectSameResult(r, acked_after.at({r.client_id(), r.client_seq()}));
  }
  ASSERT_FALSE(forgotten.empty()) << "client 0's oldest results should be forgotten";
  EXPECT_LE(forgotten.size(), before_n[0] + 100 - kRemembered);
  for (const Id& id : forgotten) EXPECT_EQ(id.first, kClient0) << "seq " << id.second;

  // (b) Resubmitted: the last 50 of every client (remembered) and 20
  // forgotten ones of client 0. Each gets its original result or a
  // duplicate refusal; nothing runs (digests and logs below).
  std::map<Id, pb::Txn> resent;
  for (uint32_t c = 0; c < kNodes; ++c) {
    std::vector<pb::Txn> g(before[c].end() - 50, before[c].end());
    if (c == 0)
      for (size_t i = 0; i < 20 && i < forgotten.size(); ++i) g.push_back(before[0][forgotten[i].second - 1]);
    for (const pb::Txn& t : g) resent[{t.client_id(), t.client_seq()}] = t;
    ASSERT_TRUE((*cc)->node(c)->SubmitTxns(g).ok());
  }
  const std::set<Id> forgotten_set(forgotten.begin(), forgotten.end());
  size_t answered = 0;
  for (int i = 0; i < 1000 && answered < resent.size(); ++i) {
    auto r = (*cc)->Receive(milliseconds(20));
    ASSERT_TRUE(r.ok()) << r.status();
    if (!r->has_value()) continue;
    for (const pb::TxnResult& res : (*r)->second.results()) {
      const Id id{res.client_id(), res.client_seq()};
      ASSERT_EQ(resent.count(id), 1u) << "an answer for client " << id.first << " seq " << id.second;
      ++answered;
      if (forgotten_set.count(id)) {
        EXPECT_EQ(res.status(), pb::STATUS_INVALID_ARGUMENT) << res.error();
        EXPECT_NE(res.error().find("duplicate"), std::string::npos) << res.error();
      } else {
        ExpectSameResult(res, acked.at(id));
      }
    }
  }
  EXPECT_EQ(answered, resent.size());

  // (c) Client::Run of a txn acknowledged before the checkpoint (of the
  // client with no txn after it): its original result; of a forgotten one:
  // no outcome, and it does not run.
  const pb::Txn& old = before[2][10];
  auto ran = (*cc)->node(2)->Run(old, seconds(30));
  ASSERT_TRUE(ran.ok()) << ran.status();
  ExpectSameResult(*ran, acked.at({old.client_id(), old.client_seq()}));
  const pb::Txn& lost = before[0][forgotten.back().second - 1];
  auto waited = (*cc)->node(0)->Run(lost, seconds(2));
  EXPECT_TRUE(absl::IsDeadlineExceeded(waited.status())) << waited.status();

  EXPECT_EQ(Digests(cluster.config()), digests) << "a txn ran again after the restart";
  ASSERT_TRUE(cluster.Stop().ok()) << cluster.Logs();
  const auto logged = Logged(cluster);
  for (const auto& [id, n] : logged) ASSERT_EQ(n, 1) << "client " << id.first << " seq " << id.second << " ran twice";
  for (const auto& [id, r] : acked) ASSERT_EQ(logged.count(id), 1u) << "client " << id.first << " seq " << id.second;
}

}  // namespace
}  // namespace detdb
