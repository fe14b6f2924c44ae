// Node: one detdb server of a cluster (what the `detdb` binary runs). It
// loads its partitions' data, joins the other nodes (ZmqPeerNet handshake),
// then runs its sequencer and its partitions' schedulers (Engine in cluster
// mode) and serves clients (ClientEndpoint).
//
//   Node::Create(options)  binds both ports, creates the engine, loads data
//   Start()                serves clients (not ready yet), handshakes, starts
//                          the engine at the agreed time: ready
//   Stop()                 stops serving, drains what it can, stops threads
//
// With an http port (NodeOptions::http_port or the config's), Create also
// serves /metrics and /healthz there until Stop (docs/OPERATING.md), on
// 127.0.0.1 unless NodeOptions::http_host or the config's http_host say
// otherwise.
//
// Thread-safety: Create/Start/Stop from one owner thread; info() is
// thread-safe.
#ifndef DETDB_DEPLOY_NODE_H_
#define DETDB_DEPLOY_NODE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "workloads/tpcc/random.h"
#include "common/partitioner.h"
#include "deploy/client_endpoint.h"
#include "deploy/http_server.h"
#include "deploy/zmq_peer_net.h"
#include "proto/client.pb.h"
#include "proto/cluster.pb.h"
#include "scheduler/engine.h"
#include "scheduler/procedure.h"

namespace detdb {

struct NodeOptions {
  pb::ClusterConfig config;          // the whole cluster (validated here)
  uint32_t node_id = 0;
  EngineOptions engine;              // peers, results and epoch_us are set by the node
  std::string workload = "micro";    // the data loaded: "micro", "tpcc" or "kv" (an empty kv table)
  uint64_t micro_records_per_partition = 1000000;
  tpcc::Scale tpcc_scale;            // workload "tpcc": warehouses spread over the partitions
  uint64_t tpcc_load_seed = 1;
  size_t max_request_bytes = 16u << 20;
  std::chrono::milliseconds handshake_timeout{std::chrono::minutes(10)};
  // The input log goes to data_dir/log (empty: no log; replies leave as
  // soon as executed, a restart starts empty). engine.log carries the sync
  // mode, log_then_execute and the crash hook; its dir and config hash are
  // set here. At start the node recovers its log (refusing damage), agrees
  // with the others on the epoch to resume at (the smallest recovered) and
  // replays up to it before it takes txns.
  std::string data_dir;
  // With data_dir: checkpoints go to data_dir/ckpt (on request, detdb-ctl
  // checkpoint) and, if nonzero, every checkpoint_interval of epochs: at
  // every epoch that is a multiple of checkpoint_interval / epoch_us, so
  // every node with the same interval takes them at the same epochs.
  std::chrono::seconds checkpoint_interval{0};
  // CURVE (docs/SECURITY.md) is on when the config gives the nodes'
  // curve_public_key: then curve_secret_key_file (mode 0600) is required
  // and curve_allowlist_file (mode 0600; optional) lists the client public
  // keys allowed besides the nodes' own. Without CURVE the node refuses a
  // host beyond loopback unless allow_insecure_nonloopback.
  std::string curve_secret_key_file;
  std::string curve_allowlist_file;
  bool allow_insecure_nonloopback = false;
  // Called once if the input log fails (the node must stop; it replies no more).
  std::function<void(const absl::Status&)> on_log_failure;
  // /metrics and /healthz (docs/OPERATING.md): this port if set (0: none),
  // else the config's http_port (0 there: none), bound on http_host if set,
  // else the config's http_host, else 127.0.0.1 (plain HTTP: loopback unless
  // the operator chooses otherwise; docs/SECURITY.md).
  std::optional<uint32_t> http_port;
  std::optional<std::string> http_host;
};

// The workload's checks of every txn before it is sequenced, as a node sets
// them on its engine: "kv" its txn_check (arguments, key sets), "micro" a
// key_check (rows 0 .. micro_rows - 1 of the micro table), "tpcc" none.
// Also used by fuzz/fuzz_client_request.cc.
void SetWorkloadChecks(const std::string& workload, uint64_t micro_rows, EngineOptions* options);
// What the handshake compares with every peer (ZmqPeerNetOptions::settings),
// besides the config and epoch_us: every setting that changes how txns are
// validated or what data is loaded.
std::map<std::string, std::string> HandshakeSettings(const NodeOptions& options);

class Node {
 public:
  static absl::StatusOr<std::unique_ptr<Node>> Create(const NodeOptions& options);
  ~Node();

  // Blocks until every node said hello (or the timeout: the node then stays
  // unready and the error is returned). If every other node runs already
  // (this node restarted while they kept running), it rejoins them instead
  // of starting the cluster (Engine::Rejoin; needs data_dir).
  absl::Status Start();
  // Makes a Start() blocked in the handshake or a rejoin return Cancelled.
  // Thread-safe.
  void CancelStart() {
    net_->CancelHandshake();
    engine_->CancelStart();
  }
  // drain: how long to wait for txns in flight (a dead peer keeps them).
  absl::Status Stop(std::chrono::milliseconds drain = std::chrono::seconds(5));

  pb::NodeInfo info() const;
  // The Prometheus text page of /metrics and /healthz's JSON (200 when
  // ready, 503 otherwise); deploy/node_metrics.cc. Thread-safe.
  std::string MetricsText() const;
  HttpResponse Healthz() const;
  // The port /metrics is served on (0: none).
  uint16_t http_port() const { return http_ != nullptr ? http_->port() : 0; }
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  bool log_failed() const { return engine_ != nullptr && engine_->log_failed(); }

 private:
  explicit Node(const NodeOptions& options);
  // Start's end once the engine runs: ready, the checkpoint thread.
  absl::Status Ready();
  // The --checkpoint_interval_s thread.
  void CheckpointLoop(uint64_t every_epochs);

  NodeOptions options_;
  uint64_t epoch_us_ = 0;
  std::unique_ptr<Partitioner> partitioner_;
  ProcedureRegistry procedures_;
  std::unique_ptr<ZmqPeerNet> net_;
  std::unique_ptr<ClientEndpoint> endpoint_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> http_;  // last: stopped first
  std::atomic<bool> ready_{false};
  bool stopped_ = false;
  std::thread checkpointer_;
  std::mutex checkpointer_mu_;
  std::condition_variable checkpointer_cv_;
  bool checkpointer_stop_ = false;            // guarded by checkpointer_mu_
  std::atomic<bool> checkpointer_cancel_{false};
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_NODE_H_
