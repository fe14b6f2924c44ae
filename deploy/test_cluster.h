// TestCluster: a real detdb cluster for tests. Starts N `detdb` processes
// (the binary CMake built) on 127.0.0.1 with ports the kernel picked as
// free, waits until all are ready, and stops them at destruction. Each
// node's output goes to a log file in a temporary folder; Logs() returns
// them for failure messages.
//
// Thread-safety: one test thread.
#ifndef DETDB_DEPLOY_TEST_CLUSTER_H_
#define DETDB_DEPLOY_TEST_CLUSTER_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/curve.h"
#include "absl/status/statusor.h"
#include "proto/cluster.pb.h"

namespace detdb {

// A loopback TCP port the kernel considers free now (bind to 0, read it,
// close), never one this process was given before. Thread-safe.
uint32_t FreeLoopbackPort();

struct TestClusterOptions {
  uint32_t nodes = 3;
  uint32_t partitions_per_node = 1;
  uint64_t epoch_us = 1000;
  std::vector<std::string> flags;  // for every node, e.g. "--lock_manager=vll"
  // Every node logs its input to <dir>/data<i> (--data_dir), kept across
  // Start() calls: kill every node and Start() again to recover.
  bool data_dirs = false;
  // CURVE (docs/SECURITY.md): a key pair per node and one for clients in
  // <dir>/keys, the nodes' public keys in the config, every node started
  // with its secret key and the allowlist (the client's public key).
  bool curve = false;
  // Every node gets an http_port in the config (/metrics, /healthz).
  bool http_ports = false;
};

// A plain HTTP/1.0 GET of http://host:port/path (tests of /metrics): the
// status code and the body. Unavailable if it cannot connect or read.
struct HttpGetResult {
  int status = 0;
  std::string body;
};
absl::StatusOr<HttpGetResult> HttpGet(const std::string& host, uint32_t port, const std::string& path,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

class TestCluster {
 public:
  explicit TestCluster(const TestClusterOptions& options);
  ~TestCluster();  // Stop()

  // Starts every node that does not run and waits until all are ready
  // (again after Kill: a restart, with the same data dirs).
  absl::Status Start(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // SIGTERM to every node still running, SIGKILL after 30 s. Returns an
  // error naming any node that did not exit with status 0.
  absl::Status Stop();
  // Sends signal to node; a node sent SIGKILL is not reported by Stop().
  void Kill(uint32_t node, int signal);
  // True while node's process runs.
  bool Running(uint32_t node);
  // node's process id (-1 when it is not running, as far as this knows).
  pid_t pid(uint32_t node) const { return pids_[node]; }
  // Flags for node's next Start() only (e.g. a crash point).
  void SetNextStartFlags(uint32_t node, std::vector<std::string> flags) { next_flags_[node] = std::move(flags); }
  // A file-size limit (RLIMIT_FSIZE, bytes) for node's next Start() only:
  // its writes beyond it fail with EFBIG, as on a full disk.
  void SetNextStartFileSizeLimit(uint32_t node, uint64_t bytes) { next_fsize_[node] = bytes; }
  // Where node's input log is (data_dirs).
  std::string LogDir(uint32_t node) const;

  const pb::ClusterConfig& config() const { return config_; }
  const std::string& config_path() const { return config_path_; }
  std::string Logs() const;
  // Node's whole log (stdout and stderr of every start).
  std::string NodeLog(uint32_t node) const;
  // With curve: the client key pair of the allowlist, and where node's (or
  // any named) key pair files are: KeyPrefix("node0") + ".key" / ".pub".
  const CurveKeyPair& client_keys() const { return client_keys_; }
  std::string KeyPrefix(const std::string& name) const { return dir_ + "/keys/" + name; }

 private:
  TestClusterOptions options_;
  std::string dir_, config_path_;
  pb::ClusterConfig config_;
  CurveKeyPair client_keys_;
  std::vector<pid_t> pids_;
  std::vector<int> exit_status_;
  std::vector<bool> killed_;
  std::vector<std::vector<std::string>> next_flags_;
  std::vector<uint64_t> next_fsize_;  // 0: no limit
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_TEST_CLUSTER_H_
