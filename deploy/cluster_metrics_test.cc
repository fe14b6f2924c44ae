// /metrics and /healthz of a real cluster: two `detdb` processes with http
// ports in the config and an input log each run a seeded micro mix; then
// every node's /metrics parses with promtool (skipped only if promtool is
// not installed), its counters agree with `detdb-ctl info`, the latency
// histogram counts every txn submitted at the node, the log's fsync
// histogram and bytes moved, and /healthz says ready with its peer.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "deploy/test_cluster.h"
#include "workloads/micro/micro.h"

#ifndef DETDB_CTL_BIN
#error "DETDB_CTL_BIN must name the detdb-ctl binary"
#endif

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string RunCommand(const std::string& cmd, int* rc) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[1024];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  *rc = p != nullptr ? pclose(p) : -1;
  return out;
}

// Sum of every sample of `name` (any labels) in a text page; -1 if none.
double Sum(const std::string& page, const std::string& name) {
  double total = -1;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t end = line.find_first_of("{ ");
    if (end == absl::string_view::npos || line.substr(0, end) != name) continue;
    double v;
    if (!absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) continue;
    total = (total < 0 ? 0 : total) + v;
  }
  return total;
}

// "key N" pairs of a `detdb-ctl info` line of node `node`.
std::map<std::string, uint64_t> InfoOf(const std::string& info, uint32_t node) {
  std::map<std::string, uint64_t> out;
  for (absl::string_view line : absl::StrSplit(info, '\n')) {
    if (!absl::StartsWith(line, "node " + std::to_string(node) + " ")) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      uint64_t v;
      if (absl::SimpleAtoi(words[i + 1], &v)) out[words[i]] = v;
    }
  }
  return out;
}

TEST(ClusterMetrics, ScrapedCountersParseAndAgreeWithInfo) {
  TestClusterOptions o;
  o.nodes = 2;
  o.partitions_per_node = 2;
  o.http_ports = true;
  o.data_dirs = true;  // the input log: fsync latencies and bytes
  o.flags = {"--micro_records=200"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();

  // A seeded mix from two clients, one per node, half multi-partition.
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok()) << cc.status();
  constexpr int kTxns = 300;
  for (uint32_t c = 0; c < 2; ++c) {
    MicroOptions w;
    w.partitions = cluster.config().num_partitions();
    w.records_per_partition = 200;
    w.contention = 0.05;
    w.keys_per_txn = 4;
    w.write_fraction = 0.6;
    w.multipartition = 0.5;
    w.seed = 7 + c;
    MicroGenerator gen(w);
    std::vector<pb::Txn> txns;
    for (int i = 0; i < kTxns; ++i) {
      pb::Txn t;
      gen.Next(&t);
      t.set_client_id(500 + c);
      t.set_client_seq(i + 1);
      txns.push_back(std::move(t));
    }
    ASSERT_TRUE((*cc)->node(c)->SubmitTxns(txns).ok());
  }
  int got = 0;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (got < 2 * kTxns && std::chrono::steady_clock::now() < deadline) {
    auto r = (*cc)->Receive(milliseconds(100));
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->has_value()) got += (*r)->second.results_size();
  }
  ASSERT_EQ(got, 2 * kTxns) << cluster.Logs();

  int rc = 0;
  const std::string info = RunCommand(std::string(DETDB_CTL_BIN) + " --config=" + cluster.config_path() + " info", &rc);
  ASSERT_EQ(rc, 0) << info;
  const bool promtool = system("command -v promtool >/dev/null 2>&1") == 0;
  double committed_everywhere = 0;
  for (uint32_t n = 0; n < 2; ++n) {
    SCOPED_TRACE("node " + std::to_string(n));
    const uint32_t port = cluster.config().nodes(n).http_port();
    auto health = HttpGet("127.0.0.1", port, "/healthz");
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(health->status, 200) << health->body;
    EXPECT_NE(health->body.find("\"ready\":true"), std::string::npos) << health->body;
    EXPECT_NE(health->body.find("\"peers_connected\":1"), std::string::npos) << health->body;
    auto missing = HttpGet("127.0.0.1", port, "/nothing");
    ASSERT_TRUE(missing.ok()) << missing.status();
    EXPECT_EQ(missing->status, 404);

    auto page = HttpGet("127.0.0.1", port, "/metrics");
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->status, 200);
    const std::string& m = page->body;
    if (promtool) {
      char path[] = "/tmp/detdb-scrape-XXXXXX";
      const int fd = mkstemp(path);
      ASSERT_GE(fd, 0);
      close(fd);
      std::ofstream(path) << m;
      const std::string out = RunCommand(std::string("promtool check metrics < ") + path, &rc);
      unlink(path);
      EXPECT_EQ(rc, 0) << out << "\n" << m;
      EXPECT_EQ(out, "") << m;
    }
    // Nothing runs now: the page and detdb-ctl info see the same counters.
    const std::map<std::string, uint64_t> i = InfoOf(info, n);
    ASSERT_TRUE(i.count("committed")) << info;
    EXPECT_EQ(Sum(m, "detdb_txns_committed_total"), i.at("committed")) << m;
    EXPECT_EQ(Sum(m, "detdb_txns_aborted_total"), i.at("aborted"));
    EXPECT_EQ(Sum(m, "detdb_txns_submitted_total"), i.at("submitted"));
    EXPECT_EQ(Sum(m, "detdb_txns_replied_total"), i.at("replied"));
    EXPECT_EQ(Sum(m, "detdb_txns_rejected_total"), i.at("rejected"));
    EXPECT_EQ(i.at("submitted"), static_cast<uint64_t>(kTxns));
    committed_everywhere += Sum(m, "detdb_txns_committed_total");
    // Every txn submitted here was answered from here: one latency each.
    EXPECT_EQ(Sum(m, "detdb_txn_latency_seconds_count"), kTxns);
    EXPECT_GT(Sum(m, "detdb_txn_latency_seconds_sum"), 0);
    EXPECT_GT(Sum(m, "detdb_log_fsync_seconds_count"), 0);
    EXPECT_GT(Sum(m, "detdb_log_bytes_total"), 0);
    EXPECT_GT(Sum(m, "detdb_epochs_sequenced_total"), 0);
    EXPECT_GT(Sum(m, "detdb_peer_frames_received_total"), 0);
    EXPECT_EQ(Sum(m, "detdb_ready"), 1);
    EXPECT_EQ(Sum(m, "detdb_peers_connected"), 1);
    EXPECT_GE(Sum(m, "detdb_epoch_open"), Sum(m, "detdb_epoch_merged"));
    EXPECT_EQ(Sum(m, "detdb_client_refused_total"), 0);
  }
  // A multi-partition txn commits on every partition it touches: at least
  // one commit per txn in the cluster.
  EXPECT_GE(committed_everywhere, 2 * kTxns);
  EXPECT_TRUE(cluster.Stop().ok());
  if (!promtool) GTEST_SKIP() << "promtool not installed (Debian: prometheus; deploy/install-deps.sh): "
                                 "the counters were checked, the pages were not parsed";
}

}  // namespace
}  // namespace detdb
