// /metrics and /healthz of a real cluster: two `detdb` processes with CURVE,
// http ports in the config and an input log each run a seeded micro mix,
// while strangers knock at node 0's ports (an unknown key, raw TCP junk);
// then every node's /metrics parses with promtool (a test failure if it is
// not installed: deploy/install-deps.sh installs it), its counters agree
// with `detdb-ctl info` (txns, CURVE refusals by port and reason, peer
// refusals), the per-procedure outcomes and the latency histogram count
// every txn submitted at the node, the per-partition families (lock
// manager, workers, remote reads) are there for every local partition, the
// log's fsync histogram and bytes moved, and /healthz says ready with its
// peer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "client/curve.h"
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

// Sum of every sample of `name` whose labels contain `labels` (e.g.
// `port="peer"`; empty: any) in a text page; -1 if none.
double Sum(const std::string& page, const std::string& name, const std::string& labels = "") {
  double total = -1;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t end = line.find_first_of("{ ");
    if (end == absl::string_view::npos || line.substr(0, end) != name) continue;
    if (!labels.empty() && line.substr(0, line.rfind(' ')).find(labels) == absl::string_view::npos) continue;
    double v;
    if (!absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) continue;
    total = (total < 0 ? 0 : total) + v;
  }
  return total;
}

// How many samples of `name` the page has.
int Samples(const std::string& page, const std::string& name) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(page, '\n'))
    n += absl::StartsWith(line, name + "{") || absl::StartsWith(line, name + " ");
  return n;
}

// Connects to 127.0.0.1:port, writes bytes that are not ZMTP, closes.
void SendJunk(uint32_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string junk = "GET / HTTP/1.1\r\n\r\n" + std::string(64, '\x07');
  ASSERT_EQ(write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  std::this_thread::sleep_for(milliseconds(200));
  close(fd);
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
  o.curve = true;    // CURVE refusals are counted
  o.flags = {"--micro_records=200"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  ASSERT_EQ(system("command -v promtool >/dev/null 2>&1"), 0)
      << "promtool is not installed: the /metrics pages cannot be checked (Debian: apt-get install prometheus; "
         "deploy/install-deps.sh installs it)";

  // Strangers at node 0: an unknown key at the client port, raw TCP junk at
  // both ports (each refused and counted; the stranger keeps retrying while
  // its socket is open).
  const pb::NodeConfig& n0 = cluster.config().nodes(0);
  auto stranger_keys = GenerateCurveKeyPair();
  ASSERT_TRUE(stranger_keys.ok());
  {
    auto stranger = Client::Connect(absl::StrCat("tcp://127.0.0.1:", n0.client_port()),
                                     CurveClientKeys{*stranger_keys, n0.curve_public_key()});
    ASSERT_TRUE(stranger.ok());
    EXPECT_FALSE((*stranger)->Info(milliseconds(500)).ok());
  }
  SendJunk(n0.client_port());
  SendJunk(n0.peer_port());

  // A seeded mix from two clients, one per node, half multi-partition.
  auto cc = ClusterClient::Connect(cluster.config(), cluster.client_keys());
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

  // The refusals settle (a connection counts as a protocol refusal after
  // CurveAuth::kSettle); then nothing changes until the scrape.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  int rc = 0;
  const std::string info = RunCommand(std::string(DETDB_CTL_BIN) + " --config=" + cluster.config_path() + " info", &rc);
  ASSERT_EQ(rc, 0) << info;
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
    {
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
    // Per procedure: every txn submitted here, once, as its reply left.
    EXPECT_EQ(Sum(m, "detdb_procedure_txns_total"), kTxns) << m;
    EXPECT_EQ(Sum(m, "detdb_procedure_txns_total", "outcome=\"committed\"") +
                  Sum(m, "detdb_procedure_txns_total", "outcome=\"aborted\""),
              kTxns);
    EXPECT_EQ(Sum(m, "detdb_procedure_txns_total", "procedure=\"micro\""), kTxns) << "named by the registry";
    // Frames: a clean run refuses none between the nodes.
    EXPECT_GT(Sum(m, "detdb_client_frames_good_total"), 0);
    EXPECT_EQ(Sum(m, "detdb_client_frames_good_total"), Sum(m, "detdb_client_requests_total"));
    EXPECT_GT(Sum(m, "detdb_peer_frames_good_total"), 0);
    // The nodes exchange a frame every epoch, also while the page is
    // built: a frame taken off the port but not yet checked (or checked
    // after `received` was read) may sit between the two counters; no
    // frame is refused (below), so they differ by those in flight only.
    const double received = Sum(m, "detdb_peer_frames_received_total");
    const double good = Sum(m, "detdb_peer_frames_good_total");
    EXPECT_LE(std::abs(received - good), 2) << "received " << received << ", good " << good;
    EXPECT_EQ(Sum(m, "detdb_peer_refused_total"), 0) << m;
    EXPECT_EQ(Sum(m, "detdb_peer_refused_total"), i.at("peer_dropped"));
    EXPECT_EQ(Samples(m, "detdb_peer_refused_total"), 14) << "8 network reasons, 6 engine reasons";
    EXPECT_EQ(Sum(m, "detdb_remote_reads_dropped_expected_total"), 0);
    // CURVE refusals by port and reason, as detdb-ctl info counts them.
    EXPECT_EQ(Sum(m, "detdb_curve_enabled"), 1);
    for (const char* port : {"peer", "client"})
      for (const char* reason : {"key", "mechanism", "protocol"}) {
        const std::string field = absl::StrCat(port, "_refused_", reason);
        ASSERT_TRUE(i.count(field)) << info;
        EXPECT_EQ(Sum(m, "detdb_curve_refused_total", absl::StrCat("port=\"", port, "\",reason=\"", reason, "\"")),
                  i.at(field))
            << field;
      }
    if (n == 0) {
      EXPECT_GE(i.at("client_refused_key"), 1u) << "the stranger's key";
      EXPECT_GE(i.at("client_refused_mechanism") + i.at("client_refused_protocol"), 1u) << "the junk";
      EXPECT_GE(i.at("peer_refused_mechanism") + i.at("peer_refused_protocol"), 1u) << "the junk";
    }
    EXPECT_GE(Sum(m, "detdb_curve_allowed_total", "port=\"peer\""), 1) << "the other node";
    // Every per-partition family has a sample for each local partition.
    for (const char* f : {"detdb_txns_committed_total", "detdb_lock_active", "detdb_lock_ready_queue",
                          "detdb_lock_blocked_at_admission_total", "detdb_remote_read_waits_total",
                          "detdb_remote_read_waiting", "detdb_worker_busy_seconds_total",
                          "detdb_lock_thread_busy_seconds_total", "detdb_remote_reads_accepted_total",
                          "detdb_remote_reads_dropped_expected_total"})
      EXPECT_EQ(Samples(m, f), 2) << f;
    EXPECT_EQ(Samples(m, "detdb_remote_reads_refused_total"), 2 * 6);
    EXPECT_GT(Sum(m, "detdb_worker_busy_seconds_total"), 0) << "the workers ran txns";
    EXPECT_EQ(Sum(m, "detdb_lock_active"), 0) << "nothing runs now";
    EXPECT_EQ(Sum(m, "detdb_lock_ready_queue"), 0);
    EXPECT_GT(Sum(m, "detdb_remote_reads_accepted_total"), 0) << "multi-partition txns read remotely";
  }
  // A multi-partition txn commits on every partition it touches: at least
  // one commit per txn in the cluster.
  EXPECT_GE(committed_everywhere, 2 * kTxns);
  EXPECT_TRUE(cluster.Stop().ok());
}

}  // namespace
}  // namespace detdb
