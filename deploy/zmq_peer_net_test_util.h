// Shared by the ZmqPeerNet tests (zmq_peer_net_test.cc,
// zmq_peer_hello_test.cc): an n-node config on free loopback ports, a
// PeerHandler that records what reaches it, a pair of started nets (and
// Pair::Connect, the pair after both handshakes), a single started node
// (StartNode, also a restarted one), and a raw frame sent to a node's peer
// port.
//
// Thread-safety: Recorder is thread-safe (its mutex); the rest belongs to
// the test's thread.
#ifndef DETDB_DEPLOY_ZMQ_PEER_NET_TEST_UTIL_H_
#define DETDB_DEPLOY_ZMQ_PEER_NET_TEST_UTIL_H_

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/cluster_config.h"
#include "deploy/test_cluster.h"
#include "deploy/zmq_peer_net.h"
#include "zmq.hpp"

namespace detdb {
namespace zmq_peer_testing {

// `count` nodes on free loopback ports, node i serving partition i.
inline pb::ClusterConfig Nodes(uint32_t count, uint64_t epoch_us) {
  pb::ClusterConfig c;
  c.set_num_partitions(count);
  c.set_epoch_us(epoch_us);
  for (uint32_t i = 0; i < count; ++i) {
    pb::NodeConfig* n = c.add_nodes();
    n->set_id(i);
    n->set_host("127.0.0.1");
    n->set_peer_port(FreeLoopbackPort());
    n->set_client_port(FreeLoopbackPort());
    n->add_partitions(i);
  }
  return c;
}

inline pb::ClusterConfig TwoNodes(uint64_t epoch_us) { return Nodes(2, epoch_us); }

class Recorder : public PeerHandler, public RemoteReadsReceiver {
 public:
  void OnPeerBatch(std::shared_ptr<pb::Batch> b) override {
    std::lock_guard<std::mutex> l(mu);
    epochs.push_back(b->epoch());
  }
  void OnPeerResult(uint32_t, const pb::TxnResult& r) override {
    std::lock_guard<std::mutex> l(mu);
    results.push_back(r.txn_id());
  }
  void OnPeerDurable(uint32_t node, uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu);
    durable.emplace_back(node, epoch);
  }
  void OnPeerCheckpoint(uint32_t node, uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu);
    checkpoint.emplace_back(node, epoch);
    durable_when_checkpoint.push_back(durable.empty() ? 0 : durable.back().second);
  }
  void OnRejoinRequest(uint32_t node, const pb::RejoinRequest& r) override {
    std::lock_guard<std::mutex> l(mu);
    rejoin_requests.emplace_back(node, r.id());
  }
  void OnRejoinReply(uint32_t node, const pb::RejoinReply& r) override {
    std::lock_guard<std::mutex> l(mu);
    rejoin_replies.emplace_back(node, r.id());
  }
  void OnRemoteReads(pb::RemoteReads m) override {
    std::lock_guard<std::mutex> l(mu);
    reads.push_back(m.txn_id());
  }
  size_t total() {
    std::lock_guard<std::mutex> l(mu);
    return epochs.size() + results.size() + reads.size();
  }
  std::mutex mu;
  std::vector<uint64_t> epochs, results, reads;
  std::vector<std::pair<uint32_t, uint64_t>> durable, checkpoint, rejoin_requests, rejoin_replies;
  std::vector<uint64_t> durable_when_checkpoint;  // the durable epoch heard before each checkpoint epoch
};

struct Pair {
  std::unique_ptr<ZmqPeerNet> net[2];
  Recorder rec[2];
  // Checkpoint epochs and "log from epoch 1" per node (before Start).
  std::vector<uint64_t> checkpoints[2];
  bool from_start[2] = {true, true};
  absl::Status Create(const pb::ClusterConfig& c0, const pb::ClusterConfig& c1, uint64_t e0, uint64_t e1,
                      uint64_t recovered0 = 0, uint64_t recovered1 = 0, bool log1 = true) {
    const uint64_t recovered[2] = {recovered0, recovered1};
    const pb::ClusterConfig* cs[2] = {&c0, &c1};
    const uint64_t es[2] = {e0, e1};
    for (uint32_t i = 0; i < 2; ++i) {
      ZmqPeerNetOptions o;
      o.config = *cs[i];
      o.node_id = i;
      o.epoch_us = es[i];
      auto n = ZmqPeerNet::Create(o);
      if (!n.ok()) return n.status();
      net[i] = std::move(*n);
      net[i]->SetHandler(&rec[i]);
      net[i]->RegisterReceiver(i, &rec[i]);
      if (i == 0 || log1) net[i]->SetRecoveredEpoch(recovered[i]);
      net[i]->SetCheckpoints(checkpoints[i], from_start[i]);
    }
    for (auto& n : net) n->Start();
    return absl::OkStatus();
  }
  // Both nodes on config c with 1 ms epochs, started, and both handshakes
  // done: the setup most tests begin with.
  absl::Status Connect(const pb::ClusterConfig& c) {
    if (absl::Status s = Create(c, c, 1000, 1000); !s.ok()) return s;
    for (auto& n : net)
      if (auto h = n->Handshake(std::chrono::milliseconds(10000)); !h.ok()) return h.status();
    return absl::OkStatus();
  }
};

// A net of node `self` in config c (1 ms epochs), recording into rec and
// started; with `recovered`, its log is recovered up to that epoch (a
// restarted process), else it has none.
inline absl::StatusOr<std::unique_ptr<ZmqPeerNet>> StartNode(const pb::ClusterConfig& c, uint32_t self, Recorder* rec,
                                                             std::optional<uint64_t> recovered = std::nullopt) {
  ZmqPeerNetOptions o;
  o.config = c;
  o.node_id = self;
  o.epoch_us = 1000;
  auto n = ZmqPeerNet::Create(o);
  if (!n.ok()) return n.status();
  (*n)->SetHandler(rec);
  (*n)->RegisterReceiver(self, rec);
  if (recovered.has_value()) (*n)->SetRecoveredEpoch(*recovered);
  (*n)->Start();
  return std::move(*n);
}

inline void SendRaw(const pb::ClusterConfig& c, uint32_t to, pb::PeerMessage m) {
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 5000);
  push.connect("tcp://127.0.0.1:" + std::to_string(c.nodes(to).peer_port()));
  m.set_config_hash(ClusterConfigHash(c));
  const std::string bytes = m.SerializeAsString();
  push.send(zmq::buffer(bytes), zmq::send_flags::none);
}

}  // namespace zmq_peer_testing
}  // namespace detdb

#endif  // DETDB_DEPLOY_ZMQ_PEER_NET_TEST_UTIL_H_
