#include "deploy/test_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/time.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "glog/logging.h"
#include "google/protobuf/text_format.h"

#ifndef DETDB_SERVER_BIN
#error "DETDB_SERVER_BIN must name the detdb binary"
#endif

namespace detdb {

uint32_t FreeLoopbackPort() {
  static std::mutex mu;
  static std::set<uint32_t> given;
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    CHECK_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    CHECK_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    close(fd);
    std::lock_guard<std::mutex> l(mu);
    if (given.insert(ntohs(a.sin_port)).second) return ntohs(a.sin_port);
  }
}

TestCluster::TestCluster(const TestClusterOptions& options) : options_(options) {
  char tmpl[] = "/tmp/detdb-test-cluster-XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  dir_ = tmpl;
  config_.set_num_partitions(options.nodes * options.partitions_per_node);
  config_.set_epoch_us(options.epoch_us);
  std::vector<uint32_t> ports;
  const uint32_t per_node = options.http_ports ? 3 : 2;
  while (ports.size() < per_node * options.nodes) {
    const uint32_t p = FreeLoopbackPort();
    if (std::find(ports.begin(), ports.end(), p) == ports.end()) ports.push_back(p);
  }
  for (uint32_t i = 0; i < options.nodes; ++i) {
    pb::NodeConfig* n = config_.add_nodes();
    n->set_id(i);
    n->set_host("127.0.0.1");
    n->set_peer_port(ports[per_node * i]);
    n->set_client_port(ports[per_node * i + 1]);
    if (options.http_ports) n->set_http_port(ports[per_node * i + 2]);
    for (uint32_t k = 0; k < options.partitions_per_node; ++k) n->add_partitions(i * options.partitions_per_node + k);
  }
  if (options.curve) {
    CHECK(std::filesystem::create_directory(dir_ + "/keys"));
    for (uint32_t i = 0; i < options.nodes; ++i) {
      auto kp = WriteCurveKeyPair(KeyPrefix(absl::StrCat("node", i)));
      CHECK(kp.ok()) << kp.status();
      config_.mutable_nodes(static_cast<int>(i))->set_curve_public_key(kp->public_key);
    }
    auto kp = WriteCurveKeyPair(KeyPrefix("client"));
    CHECK(kp.ok()) << kp.status();
    client_keys_ = *kp;
    const int fd = open(KeyPrefix("allowlist").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK_GE(fd, 0);
    const std::string line = "# clients allowed\n" + kp->public_key + " test-client\n";
    CHECK_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    close(fd);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(config_, &text);
  config_path_ = dir_ + "/cluster.pbtxt";
  std::ofstream(config_path_) << text;
  pids_.assign(options.nodes, -1);
  exit_status_.assign(options.nodes, -1);
  killed_.assign(options.nodes, false);
  next_flags_.resize(options.nodes);
  next_fsize_.resize(options.nodes, 0);
}

std::string TestCluster::LogDir(uint32_t node) const { return absl::StrCat(dir_, "/data", node, "/log"); }

TestCluster::~TestCluster() {
  (void)Stop();
  if (std::getenv("DETDB_KEEP_TEST_LOGS") == nullptr) {
    for (uint32_t i = 0; i < options_.nodes; ++i) unlink(absl::StrCat(dir_, "/node", i, ".log").c_str());
    unlink(config_path_.c_str());
    if (options_.data_dirs || options_.curve) std::filesystem::remove_all(dir_);
    rmdir(dir_.c_str());
  }
}

absl::Status TestCluster::Start(std::chrono::milliseconds timeout) {
  for (uint32_t i = 0; i < options_.nodes; ++i) {
    if (Running(i)) continue;
    killed_[i] = false;
    std::vector<std::string> args = {DETDB_SERVER_BIN, "--config=" + config_path_, absl::StrCat("--node_id=", i)};
    if (options_.data_dirs) args.push_back(absl::StrCat("--data_dir=", dir_, "/data", i));
    if (options_.curve) {
      args.push_back(absl::StrCat("--curve_secret_key_file=", KeyPrefix(absl::StrCat("node", i)), ".key"));
      args.push_back("--curve_allowlist_file=" + KeyPrefix("allowlist"));
    }
    for (const std::string& f : options_.flags) args.push_back(f);
    for (const std::string& f : next_flags_[i]) args.push_back(f);
    next_flags_[i].clear();
    const uint64_t fsize = next_fsize_[i];
    next_fsize_[i] = 0;
    const std::string log = absl::StrCat(dir_, "/node", i, ".log");
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
      if (fsize > 0) {
        const struct rlimit limit = {fsize, fsize};
        setrlimit(RLIMIT_FSIZE, &limit);
      }
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    pids_[i] = pid;
  }
  auto client = ClusterClient::Connect(config_, client_keys_);
  if (!client.ok()) return client.status();
  absl::Status s = (*client)->WaitReady(timeout);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(s.message(), "\n", Logs()));
  return absl::OkStatus();
}

bool TestCluster::Running(uint32_t node) {
  if (pids_[node] <= 0) return false;
  int status;
  const pid_t r = waitpid(pids_[node], &status, WNOHANG);
  if (r == 0) return true;
  exit_status_[node] = status;
  pids_[node] = -1;
  return false;
}

void TestCluster::Kill(uint32_t node, int signal) {
  if (signal == SIGKILL) killed_[node] = true;
  if (pids_[node] > 0) kill(pids_[node], signal);
}

absl::Status TestCluster::Stop() {
  for (uint32_t i = 0; i < options_.nodes; ++i)
    if (pids_[i] > 0) kill(pids_[i], SIGTERM);
  // Generous: a node drains for up to its --drain_timeout_s, and the
  // sanitizers slow everything down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    bool any = false;
    for (uint32_t i = 0; i < options_.nodes; ++i) any |= Running(i);
    if (!any) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (uint32_t i = 0; i < options_.nodes; ++i)
        if (pids_[i] > 0) kill(pids_[i], SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string bad;
  for (uint32_t i = 0; i < options_.nodes; ++i) {
    const int st = exit_status_[i];
    if (st == -1 || killed_[i]) continue;
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
      absl::StrAppend(&bad, " node ", i,
                      WIFSIGNALED(st) ? absl::StrCat(" killed by signal ", WTERMSIG(st))
                                      : absl::StrCat(" exited with ", WEXITSTATUS(st)));
    exit_status_[i] = -1;
  }
  if (!bad.empty()) return absl::InternalError(absl::StrCat("unclean stop:", bad, "\n", Logs()));
  return absl::OkStatus();
}

std::string TestCluster::NodeLog(uint32_t node) const {
  std::ifstream f(absl::StrCat(dir_, "/node", node, ".log"));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string TestCluster::Logs() const {
  std::string out;
  for (uint32_t i = 0; i < options_.nodes; ++i) {
    std::ifstream f(absl::StrCat(dir_, "/node", i, ".log"));
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    if (s.size() > 4000) s = "..." + s.substr(s.size() - 4000);
    absl::StrAppend(&out, "---- node ", i, " log ----\n", s);
  }
  return out;
}

absl::StatusOr<HttpGetResult> HttpGet(const std::string& host, uint32_t port, const std::string& path,
                                      std::chrono::milliseconds timeout) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket failed");
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: ", host));
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host, ":", port));
  }
  const std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, "\r\n\r\n");
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return absl::UnavailableError("send failed");
  }
  std::string resp;
  char buf[8192];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      close(fd);
      return absl::UnavailableError(absl::StrCat("reading from ", host, ":", port, " failed or timed out"));
    }
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  // "HTTP/1.x NNN reason\r\n headers \r\n\r\n body"
  const size_t end = resp.find("\r\n\r\n");
  if (resp.compare(0, 5, "HTTP/") != 0 || resp.size() < 12 || end == std::string::npos)
    return absl::UnavailableError(absl::StrCat("not an HTTP response: ", resp.substr(0, 80)));
  HttpGetResult r;
  r.status = atoi(resp.c_str() + resp.find(' ') + 1);
  r.body = resp.substr(end + 4);
  return r;
}

}  // namespace detdb
