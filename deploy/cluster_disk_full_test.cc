// A real node whose disk fills up (RELIABILITY.md matrix: disk full): the
// node is started under a file-size limit (RLIMIT_FSIZE, the test-side
// stand-in for a small tmpfs, which needs mount rights CI may lack), so
// its input log's write fails with EFBIG once a segment reaches it. The
// node must stop with that error in its log, acknowledge nothing it did not
// make durable, and, restarted without the limit, recover: every txn a
// client heard "committed" for comes back with its original result
// (outcome query), none is NOT_FOUND, and new txns run.
#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <utility>
#include <vector>

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

TEST(ClusterDiskFull, TheNodeStopsWithTheErrorAndARestartLosesNothingAcknowledged) {
  TestClusterOptions o;
  o.nodes = 1;
  o.partitions_per_node = 2;
  o.data_dirs = true;
  // RLIMIT_FSIZE caps each file: the segment must be able to outgrow it.
  o.flags = {"--micro_records=1000", "--log_segment_kb=65536"};
  TestCluster cluster(o);
  // About 2.5K micro txns fill 256 KiB of log; the node's text log stays
  // far below it.
  constexpr uint64_t kLimit = 256 << 10;
  cluster.SetNextStartFileSizeLimit(0, kLimit);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();

  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok()) << cc.status();
  MicroOptions w;
  w.partitions = cluster.config().num_partitions();
  w.records_per_partition = 1000;
  w.contention = 0.05;  // a hot set inside the 1000 records
  w.keys_per_txn = 4;
  w.multipartition = 0.3;
  MicroGenerator gen(w);
  std::map<uint64_t, pb::Txn> sent;           // by seq
  std::map<uint64_t, pb::TxnResult> acked;    // by seq: OK or aborted
  uint64_t next = 1, outstanding = 0;
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  while (cluster.Running(0) && std::chrono::steady_clock::now() < deadline) {
    if (outstanding < 400) {
      std::vector<pb::Txn> group;
      for (int i = 0; i < 50; ++i) {
        pb::Txn t;
        gen.Next(&t);
        t.set_client_id(91);
        t.set_client_seq(next++);
        sent[t.client_seq()] = t;
        group.push_back(std::move(t));
      }
      (void)(*cc)->node(0)->SubmitTxns(group);
      outstanding += group.size();
    }
    auto r = (*cc)->Receive(milliseconds(2));
    if (!r.ok() || !r->has_value()) continue;
    for (const pb::TxnResult& res : (*r)->second.results()) {
      if (outstanding > 0) --outstanding;
      if (res.status() == pb::STATUS_OK || res.status() == pb::STATUS_ABORTED) acked[res.client_seq()] = res;
    }
  }
  ASSERT_FALSE(cluster.Running(0)) << "the node should have stopped when its disk filled; sent " << sent.size()
                                   << "\n" << cluster.Logs();
  const std::string logs = cluster.NodeLog(0);
  EXPECT_NE(logs.find("File too large"), std::string::npos) << logs;
  EXPECT_NE(logs.find("its input log failed"), std::string::npos) << logs;
  EXPECT_GT(acked.size(), 200u) << "txns before the disk filled were made durable and answered";
  EXPECT_LT(acked.size(), sent.size()) << "nothing was answered past the failure";

  // The disk has room again: the node recovers; every acknowledged txn is
  // in its log once, and asked again it answers with the original result
  // (a node keeps the last 4096 outcomes per client: the last 3000 asked).
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  {
    RecoveryOptions ro;
    ro.config_hash = ClusterConfigHash(cluster.config());
    auto records = ReadInputLog(cluster.LogDir(0), ro);
    ASSERT_TRUE(records.ok()) << records.status();
    std::map<uint64_t, int> logged;
    for (const LogRecord& rec : *records) {
      pb::Batch b;
      ASSERT_TRUE(b.ParseFromString(rec.payload));
      for (const pb::Txn& t : b.txns())
        if (t.client_id() == 91) ++logged[t.client_seq()];
    }
    for (const auto& [seq, n] : logged) ASSERT_EQ(n, 1) << "seq " << seq << " logged twice";
    for (const auto& [seq, res] : acked) ASSERT_EQ(logged.count(seq), 1u) << "acknowledged seq " << seq << " lost";
  }
  cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok()) << cc.status();
  std::vector<pb::Txn> ask;
  for (const auto& [seq, res] : acked) ask.push_back(sent[seq]);
  if (ask.size() > 3000) ask.erase(ask.begin(), ask.end() - 3000);
  size_t checked = 0;
  for (size_t i = 0; i < ask.size(); i += 500) {
    std::vector<pb::Txn> chunk(ask.begin() + i, ask.begin() + std::min(ask.size(), i + 500));
    absl::StatusOr<std::vector<pb::TxnResult>> out = absl::UnavailableError("not asked");
    for (int tries = 0; tries < 100; ++tries) {  // UNAVAILABLE while the node recovers
      out = (*cc)->node(0)->Outcomes(chunk, seconds(10));
      bool pending = !out.ok();
      if (out.ok())
        for (const pb::TxnResult& r : *out) pending = pending || r.status() == pb::STATUS_UNAVAILABLE;
      if (!pending) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), chunk.size());
    for (const pb::TxnResult& r : *out) {
      const pb::TxnResult& before = acked.at(r.client_seq());
      ASSERT_NE(r.status(), pb::STATUS_NOT_FOUND) << "acknowledged seq " << r.client_seq() << " lost";
      ASSERT_EQ(r.status(), before.status()) << "seq " << r.client_seq() << ": " << r.error();
      EXPECT_EQ(r.result(), before.result()) << "seq " << r.client_seq();
      ++checked;
    }
  }
  EXPECT_EQ(checked, ask.size());
  // And it serves new txns.
  pb::Txn t;
  gen.Next(&t);
  t.set_client_id(92);
  t.set_client_seq(1);
  auto r = (*cc)->node(0)->Run(t, seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->status() == pb::STATUS_OK || r->status() == pb::STATUS_ABORTED) << r->error();
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace detdb
