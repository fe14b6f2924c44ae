// The pieces of /metrics: the fixed-bucket histogram, the Prometheus text
// writer (checked with the real parser, promtool: a test fails without it),
// the libmicrohttpd server (real sockets on 127.0.0.1), and the address a
// node's server binds (127.0.0.1 unless the config or the flag says otherwise).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "deploy/http_server.h"
#include "deploy/node.h"
#include "deploy/test_cluster.h"
#include "storage/elided_latch.h"

namespace detdb {
namespace {

TEST(Histogram, CountsIntoCumulativeBuckets) {
  Histogram h({0.001, 0.01, 0.1});
  for (double v : {0.0005, 0.001, 0.005, 0.05, 0.5, 7.0}) h.Observe(v);
  const Histogram::Snapshot s = h.snapshot();
  ASSERT_EQ(s.cumulative.size(), 3u);
  EXPECT_EQ(s.cumulative[0], 2u);  // <= bound: 0.0005 and 0.001
  EXPECT_EQ(s.cumulative[1], 3u);
  EXPECT_EQ(s.cumulative[2], 4u);
  EXPECT_EQ(s.count, 6u);
  EXPECT_NEAR(s.sum, 7.5565, 1e-9);
  EXPECT_EQ(Histogram::Exponential(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
}

TEST(MetricsText, WritesTheExpositionFormat) {
  MetricsText m;
  m.Counter("x_total", "Things\\counted\nhere", 42);
  m.Family("y", "gauge", "A gauge");
  m.Sample("y", {{"reason", "a \"quoted\"\\value\n"}}, 0.25);
  Histogram h({0.5, 1});
  h.Observe(0.7);
  m.Family("z_seconds", "histogram", "A histogram");
  m.HistogramSamples("z_seconds", {{"p", "1"}}, h.snapshot());
  EXPECT_EQ(m.text(),
            "# HELP x_total Things\\\\counted\\nhere\n# TYPE x_total counter\nx_total 42\n"
            "# HELP y A gauge\n# TYPE y gauge\ny{reason=\"a \\\"quoted\\\"\\\\value\\n\"} 0.25\n"
            "# HELP z_seconds A histogram\n# TYPE z_seconds histogram\n"
            "z_seconds_bucket{p=\"1\",le=\"0.5\"} 0\nz_seconds_bucket{p=\"1\",le=\"1\"} 1\n"
            "z_seconds_bucket{p=\"1\",le=\"+Inf\"} 1\nz_seconds_sum{p=\"1\"} 0.7\n"
            "z_seconds_count{p=\"1\"} 1\n");
  EXPECT_EQ(MetricsText::FormatValue(1e20), "1e+20");
  EXPECT_EQ(MetricsText::FormatValue(-3), "-3");
  EXPECT_EQ(MetricsText::FormatValue(0.1 + 0.2), "0.30000000000000004");  // not 0.3: reads back exactly
  EXPECT_EQ(MetricsText::FormatValue(0.0001 * 2), "0.0002");
}

// promtool check metrics: exit 0 and no complaint, or what it said.
std::string PromtoolCheck(const std::string& text) {
  char path[] = "/tmp/detdb-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  close(fd);
  std::ofstream(path) << text;
  const std::string cmd = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int rc = p != nullptr ? pclose(p) : -1;
  unlink(path);
  return rc == 0 && out.empty() ? "" : "promtool (exit " + std::to_string(rc) + "): " + out;
}

// promtool is part of the build's dependencies (deploy/install-deps.sh):
// without it the page is not checked, which is a failure, not a skip.
bool HavePromtool() { return system("command -v promtool >/dev/null 2>&1") == 0; }
constexpr char kNoPromtool[] =
    "promtool is not installed: the /metrics page cannot be checked (Debian: apt-get install prometheus; "
    "deploy/install-deps.sh installs it)";

TEST(MetricsText, PromtoolAcceptsIt) {
  ASSERT_TRUE(HavePromtool()) << kNoPromtool;
  MetricsText m;
  m.Counter("detdb_things_total", "Things", 3);
  m.Family("detdb_refused_total", "counter", "Refused, by reason");
  m.Sample("detdb_refused_total", {{"reason", "bad \"frame\""}}, 1);
  Histogram h(Histogram::Exponential(0.001, 2, 5));
  h.Observe(0.003);
  m.Family("detdb_wait_seconds", "histogram", "Waits");
  m.HistogramSamples("detdb_wait_seconds", {}, h.snapshot());
  EXPECT_EQ(PromtoolCheck(m.text()), "");
  // And it does reject what is wrong (the check can fail).
  EXPECT_NE(PromtoolCheck("# TYPE x counter\nx{a=\"1\" 3\n"), "");
}

TEST(HttpServer, ServesGetThroughTheHandler) {
  std::string last_path;
  auto server = HttpServer::Start({"127.0.0.1", 0}, [&](std::string_view path) {
    last_path = std::string(path);
    HttpResponse r;
    if (path == "/hello") {
      r.body = "hi\n";
    } else {
      r.status = 404;
      r.body = "no\n";
    }
    return r;
  });
  ASSERT_TRUE(server.ok()) << server.status();
  const uint16_t port = (*server)->port();
  ASSERT_NE(port, 0);
  auto r = HttpGet("127.0.0.1", port, "/hello?x=1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hi\n");
  EXPECT_EQ(last_path, "/hello");
  r = HttpGet("127.0.0.1", port, "/other");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);

  // Another method: 405, the handler is not called.
  last_path.clear();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string req = "POST /hello HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc";
  ASSERT_EQ(send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[1024];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) resp.append(buf, n);
  close(fd);
  EXPECT_EQ(resp.compare(9, 3, "405"), 0) << resp;
  EXPECT_TRUE(last_path.empty());

  // The port is taken: a clear error.
  auto second = HttpServer::Start({"127.0.0.1", port}, [](std::string_view) { return HttpResponse{}; });
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  auto bad = HttpServer::Start({"no.such.host.invalid", 0}, [](std::string_view) { return HttpResponse{}; });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
}

// A node whose peer never comes: /healthz says 503 and why, /metrics
// still answers (detdb_ready 0) and parses.
TEST(NodeHttp, UnreadyNodeIsUnhealthy) {
  NodeOptions o;
  o.config.set_num_partitions(2);
  o.config.set_epoch_us(1000);
  for (uint32_t i = 0; i < 2; ++i) {
    pb::NodeConfig* n = o.config.add_nodes();
    n->set_id(i);
    n->set_host("127.0.0.1");
    n->set_peer_port(FreeLoopbackPort());
    n->set_client_port(FreeLoopbackPort());
    n->add_partitions(i);
  }
  o.node_id = 0;
  o.micro_records_per_partition = 100;
  const uint32_t port = FreeLoopbackPort();
  o.http_port = port;  // the flag's override: the config has none
  auto node = Node::Create(o);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)->http_port(), port);
  auto h = HttpGet("127.0.0.1", port, "/healthz");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->status, 503);
  EXPECT_NE(h->body.find("\"ready\":false"), std::string::npos) << h->body;
  EXPECT_NE(h->body.find("\"peers_connected\":0"), std::string::npos) << h->body;
  auto m = HttpGet("127.0.0.1", port, "/metrics");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("\ndetdb_ready 0\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("detdb_txns_committed_total{partition=\"0\"} 0\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find(absl::StrCat("\ndetdb_latch_elision_enabled ", ElidedLatch::ElisionEnabled() ? 1 : 0, "\n")),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("\ndetdb_latch_aborts_total{cause=\"capacity\"} "), std::string::npos) << m->body;
  ASSERT_TRUE(HavePromtool()) << kNoPromtool;
  EXPECT_EQ(PromtoolCheck(m->body), "");
  EXPECT_TRUE((*node)->Stop(std::chrono::milliseconds(0)).ok());
  // Stopped: the port is closed.
  EXPECT_FALSE(HttpGet("127.0.0.1", port, "/healthz").ok());

  node->reset();
  // http_port 0 overrides the config's: no server. (Fresh ports: the old
  // ones may linger a moment.)
  for (pb::NodeConfig& n : *o.config.mutable_nodes()) {
    n.set_peer_port(FreeLoopbackPort());
    n.set_client_port(FreeLoopbackPort());
  }
  o.config.mutable_nodes(0)->set_http_port(FreeLoopbackPort());
  o.http_port = 0;
  auto quiet = Node::Create(o);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_EQ((*quiet)->http_port(), 0);
}

// /metrics is plain HTTP: it binds 127.0.0.1 whatever the node's host,
// unless the config's http_host or NodeOptions::http_host (--http_host)
// names another address (review finding 9). The node's host here is
// 127.0.0.2, another loopback address, so that the bound one is told apart.
TEST(NodeHttp, BindsLoopbackUnlessTheConfigOrTheFlagSaysOtherwise) {
  auto options = [] {
    NodeOptions o;
    o.config.set_num_partitions(2);
    o.config.set_epoch_us(1000);
    for (uint32_t i = 0; i < 2; ++i) {
      pb::NodeConfig* n = o.config.add_nodes();
      n->set_id(i);
      n->set_host("127.0.0.2");
      n->set_peer_port(FreeLoopbackPort());
      n->set_client_port(FreeLoopbackPort());
      n->add_partitions(i);
    }
    o.node_id = 0;
    o.micro_records_per_partition = 100;
    o.config.mutable_nodes(0)->set_http_port(FreeLoopbackPort());
    return o;
  };
  auto serves = [](const std::string& host, uint32_t port) {
    auto h = HttpGet(host, port, "/healthz", std::chrono::seconds(5));
    return h.ok() && h->status == 503;  // answered (not ready: its peer never comes)
  };
  {
    const NodeOptions o = options();
    auto node = Node::Create(o);
    ASSERT_TRUE(node.ok()) << node.status();
    const uint32_t port = (*node)->http_port();
    EXPECT_TRUE(serves("127.0.0.1", port)) << "the default: loopback";
    EXPECT_FALSE(serves("127.0.0.2", port)) << "not the node's host";
  }
  {
    NodeOptions o = options();
    o.config.mutable_nodes(0)->set_http_host("127.0.0.3");
    auto node = Node::Create(o);
    ASSERT_TRUE(node.ok()) << node.status();
    const uint32_t port = (*node)->http_port();
    EXPECT_TRUE(serves("127.0.0.3", port)) << "the config's http_host";
    EXPECT_FALSE(serves("127.0.0.1", port));
  }
  {
    NodeOptions o = options();
    o.config.mutable_nodes(0)->set_http_host("127.0.0.3");
    o.http_host = "127.0.0.4";
    auto node = Node::Create(o);
    ASSERT_TRUE(node.ok()) << node.status();
    const uint32_t port = (*node)->http_port();
    EXPECT_TRUE(serves("127.0.0.4", port)) << "the flag overrides the config";
    EXPECT_FALSE(serves("127.0.0.3", port));
  }
}

}  // namespace
}  // namespace detdb
