// Table scans and table operations end to end, on a real 2-node cluster
// (4 partitions): `detdb-ctl scan` and the client's scan request (every
// record once, in key order, bounded by a limit, while txns run), and a
// truncate and a bulk load submitted by a client: sequenced, sent to the
// other node in its batch, run by every partition, then seen by a scan.
#include <stdio.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/partitioner.h"
#include "deploy/cluster_admin.h"
#include "deploy/test_cluster.h"
#include "workloads/micro/micro.h"
#include "workloads/micro/micro_table.h"

#ifndef DETDB_CTL_BIN
#error "DETDB_CTL_BIN must name the detdb-ctl binary"
#endif

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kRecords = 300;  // per partition

std::string RunCommand(const std::string& cmd, int* rc) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[1024];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  *rc = p != nullptr ? pclose(p) : -1;
  return out;
}

// Submits txns to node 0 and waits for all their results.
std::vector<pb::TxnResult> SubmitAndWait(ClusterClient* cc, std::vector<pb::Txn> txns) {
  EXPECT_TRUE(cc->node(0)->SubmitTxns(txns).ok());
  std::vector<pb::TxnResult> out;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (out.size() < txns.size() && std::chrono::steady_clock::now() < deadline) {
    auto r = cc->Receive(milliseconds(100));
    if (!r.ok() || !r->has_value()) continue;
    for (const pb::TxnResult& res : (*r)->second.results()) out.push_back(res);
  }
  return out;
}

TEST(ClusterScan, ScansWhileTxnsRunAndTableOpsInTheOrder) {
  TestClusterOptions o;
  o.nodes = 2;
  o.partitions_per_node = 2;
  o.flags = {"--micro_records=" + std::to_string(kRecords), "--allow_table_ops", "--workers=2"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok()) << cc.status();
  const uint32_t partitions = cluster.config().num_partitions();
  const uint64_t rows = kRecords * partitions;
  ModPartitioner parts(partitions);

  // The loaded table: every record once, in key order, from both nodes.
  auto all = ScanTable(cc->get(), "micro", 0, 10000, seconds(30));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->node_errors.empty());
  EXPECT_EQ(all->name, "micro");
  EXPECT_EQ(all->value_size, kMicroValueSize);
  ASSERT_EQ(all->rows.size(), rows);
  EXPECT_FALSE(all->more);
  for (uint64_t i = 0; i < rows; ++i) {
    ASSERT_EQ(all->rows[i].key(), MakeKey(kMicroTable, i));
    EXPECT_EQ(all->rows[i].partition(), parts.PartitionOf(all->rows[i].key()));
  }
  // Bounded, from a row on.
  auto page = ScanTable(cc->get(), "1", 100, 5, seconds(30));
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->rows.size(), 5u);
  EXPECT_TRUE(page->more);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(KeyRow(page->rows[i].key()), 100 + i);
  EXPECT_TRUE(absl::IsNotFound(ScanTable(cc->get(), "no_such_table", 0, 5, seconds(30)).status()));
  // A scan after an epoch beyond the node's window (a buggy or hostile
  // client) is refused at once, not waited for.
  for (uint64_t bad : {uint64_t{1} << 39, ~uint64_t{0}}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto refused = cc->get()->node(0)->Scan("micro", 0, 5, seconds(30), bad);
    EXPECT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("beyond this node's epochs"), std::string::npos) << refused.status();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(10));
  }
  // A scan after an epoch long applied is answered.
  EXPECT_TRUE(cc->get()->node(1)->Scan("micro", 0, 5, seconds(30), 2).ok());

  // Scans while a client keeps writing.
  std::atomic<bool> done{false};
  std::atomic<int> scans{0}, failed{0};
  std::thread scanner([&] {
    auto own = ClusterClient::Connect(cluster.config());
    if (!own.ok()) return failed.fetch_add(1), void();
    while (!done.load()) {
      auto s = ScanTable(own->get(), "micro", 0, 10000, seconds(30));
      if (!s.ok() || s->rows.size() != rows) failed.fetch_add(1);
      scans.fetch_add(1);
    }
  });
  MicroOptions w;
  w.partitions = partitions;
  w.records_per_partition = kRecords;
  w.keys_per_txn = 4;
  w.multipartition = 0.3;
  MicroGenerator gen(w);
  std::vector<pb::Txn> txns;
  for (int i = 0; i < 2000; ++i) {
    pb::Txn t;
    gen.Next(&t);
    t.set_client_id(77);
    t.set_client_seq(i + 1);
    txns.push_back(std::move(t));
  }
  const std::vector<pb::TxnResult> results = SubmitAndWait(cc->get(), txns);
  done.store(true);
  scanner.join();
  EXPECT_EQ(results.size(), txns.size());
  EXPECT_GT(scans.load(), 0);
  EXPECT_EQ(failed.load(), 0);

  // A truncate, then a bulk load of 50 rows: in the order, on every node.
  pb::Txn truncate;
  truncate.set_client_id(78);
  truncate.set_client_seq(1);
  truncate.mutable_table_op()->set_kind(pb::TableOp::TRUNCATE);
  truncate.mutable_table_op()->set_table(kMicroTable);
  pb::Txn load;
  load.set_client_id(78);
  load.set_client_seq(2);
  load.mutable_table_op()->set_kind(pb::TableOp::BULK_LOAD);
  load.mutable_table_op()->set_table(kMicroTable);
  for (uint64_t r = 0; r < 50; ++r) {
    pb::KeyValue* kv = load.mutable_table_op()->add_rows();
    kv->set_key(MakeKey(kMicroTable, 3 * r));
    const uint64_t v = 1000 + r;
    kv->set_value(std::string(reinterpret_cast<const char*>(&v), 8));
  }
  const std::vector<pb::TxnResult> ops = SubmitAndWait(cc->get(), {truncate, load});
  ASSERT_EQ(ops.size(), 2u);
  for (const pb::TxnResult& r : ops) EXPECT_EQ(r.status(), pb::STATUS_OK) << r.error();
  auto loaded = ScanTable(cc->get(), "micro", 0, 10000, seconds(30));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->rows.size(), 50u);
  for (uint64_t r = 0; r < 50; ++r) {
    EXPECT_EQ(loaded->rows[r].key(), MakeKey(kMicroTable, 3 * r));
    uint64_t v;
    std::memcpy(&v, loaded->rows[r].value().data(), 8);
    EXPECT_EQ(v, 1000 + r);
  }

  // detdb-ctl scan prints them.
  int rc = 0;
  const std::string out = RunCommand(
      std::string(DETDB_CTL_BIN) + " --config=" + cluster.config_path() + " scan micro --limit=3 --from=4", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("table 1 (micro), records of 8 bytes: 3 shown, more follow"), std::string::npos) << out;
  EXPECT_NE(out.find("row 6  partition " + std::to_string(parts.PartitionOf(MakeKey(kMicroTable, 6))) +
                     "  ea03000000000000"),
            std::string::npos)
      << out;
  const std::string bad = RunCommand(std::string(DETDB_CTL_BIN) + " --config=" + cluster.config_path() + " scan nope", &rc);
  EXPECT_NE(rc, 0) << bad;
  ASSERT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace detdb
