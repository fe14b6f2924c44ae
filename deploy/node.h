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
// Thread-safety: Create/Start/Stop from one owner thread; info() is
// thread-safe.
#ifndef DETDB_DEPLOY_NODE_H_
#define DETDB_DEPLOY_NODE_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "workloads/tpcc/random.h"
#include "common/partitioner.h"
#include "deploy/client_endpoint.h"
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
  std::string workload = "micro";    // the data loaded: "micro" or "tpcc"
  uint64_t micro_records_per_partition = 1000000;
  tpcc::Scale tpcc_scale;            // workload "tpcc": warehouses spread over the partitions
  uint64_t tpcc_load_seed = 1;
  size_t max_request_bytes = 16u << 20;
  std::chrono::milliseconds handshake_timeout{std::chrono::minutes(10)};
};

// What the handshake compares with every peer (ZmqPeerNetOptions::settings),
// besides the config and epoch_us: every setting that changes how txns are
// validated or what data is loaded.
std::map<std::string, std::string> HandshakeSettings(const NodeOptions& options);

class Node {
 public:
  static absl::StatusOr<std::unique_ptr<Node>> Create(const NodeOptions& options);
  ~Node();

  // Blocks until every node said hello (or the timeout: the node then stays
  // unready and the error is returned).
  absl::Status Start();
  // Makes a Start() blocked in the handshake return Cancelled. Thread-safe.
  void CancelStart() { net_->CancelHandshake(); }
  // drain: how long to wait for txns in flight (a dead peer keeps them).
  absl::Status Stop(std::chrono::milliseconds drain = std::chrono::seconds(5));

  pb::NodeInfo info() const;
  bool ready() const { return ready_.load(std::memory_order_acquire); }

 private:
  explicit Node(const NodeOptions& options);

  NodeOptions options_;
  uint64_t epoch_us_ = 0;
  std::unique_ptr<Partitioner> partitioner_;
  ProcedureRegistry procedures_;
  std::unique_ptr<ZmqPeerNet> net_;
  std::unique_ptr<ClientEndpoint> endpoint_;
  std::unique_ptr<Engine> engine_;
  std::atomic<bool> ready_{false};
  bool stopped_ = false;
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_NODE_H_
