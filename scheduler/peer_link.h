// PeerLink: what a node of a cluster needs from the network, beside the
// remote reads of Transport: sending its sequencer's batches to the other
// nodes, and a txn's result back to the node its client submitted to.
// Engine works the same over any PeerLink; deploy/zmq_peer_net.h is the
// ZeroMQ implementation, InProcessPeerHub (below) connects engines living in
// one process (tests, sanitizers).
//
// Delivery: at most once and in order per (sender, receiver) pair.
// Thread-safety: every method is thread-safe; handlers and receivers must be
// registered before the first message can arrive.
#ifndef DETDB_SCHEDULER_PEER_LINK_H_
#define DETDB_SCHEDULER_PEER_LINK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/types.h"
#include "proto/detdb.pb.h"
#include "scheduler/transport.h"

namespace detdb {

// A cluster's clock: epoch origin_epoch + k closes at start_us + k *
// epoch_us (microseconds of the wall clock; origin_epoch: the epoch the
// cluster last resumed after, 0 for a fresh one).
struct ClusterClock {
  uint64_t start_us = 0;
  uint64_t origin_epoch = 0;
};

class PeerHandler {
 public:
  virtual ~PeerHandler() = default;
  // INPUT: the txns of another node's batch (one epoch of its sequencer)
  // that touch this node's partitions; one per (node, epoch), empty too.
  // Straight from the wire: the handler checks it (and may fix derived
  // fields) before use.
  virtual void OnPeerBatch(std::shared_ptr<pb::Batch> batch) = 0;
  // INPUT: the result of a txn that one of this node's clients submitted,
  // from node `from` as the link knows the sender (ZmqPeerNet: the frame's
  // from_node, which with CURVE must be the node whose key authenticated the
  // connection). Untrusted: the handler checks that `from` is the txn's
  // coordinator and that the client id and seq match the txn's.
  virtual void OnPeerResult(uint32_t from, const pb::TxnResult& result) = 0;
  // INPUT: node's durable epoch (its input log holds every epoch up to it),
  // carried on its messages; never decreasing per node.
  virtual void OnPeerDurable(uint32_t node, uint64_t epoch) = 0;
  // INPUT: node's newest published checkpoint epoch, carried on its
  // messages beside its durable epoch (and delivered after it); untrusted:
  // the handler checks it against that durable epoch.
  virtual void OnPeerCheckpoint(uint32_t node, uint64_t epoch) = 0;
  // INPUT: a node that restarted while this one ran asks for what it needs
  // to catch up (docs/DURABILITY.md, "Rejoining a running cluster"); the
  // handler answers with PeerLink::SendRejoinReply. Untrusted: the handler
  // only resends what it sent or received from that node.
  virtual void OnRejoinRequest(uint32_t node, const pb::RejoinRequest& request) = 0;
  // INPUT: a peer's answer to this node's RejoinRequest.
  virtual void OnRejoinReply(uint32_t node, const pb::RejoinReply& reply) = 0;
};

// Transport::Send delivers to a local partition's receiver directly and to a
// remote one over the network.
class PeerLink : public Transport {
 public:
  virtual uint32_t node_id() const = 0;
  virtual uint32_t num_nodes() const = 0;  // node ids are 0 .. num_nodes - 1
  virtual uint32_t NodeOf(PartitionId partition) const = 0;
  virtual void SetHandler(PeerHandler* handler) = 0;
  // REQUIRES: node != node_id().
  virtual void SendBatch(uint32_t node, const pb::Batch& batch) = 0;
  virtual void SendResult(uint32_t node, const pb::TxnResult& result) = 0;
  // This node's durable epoch, for every peer (PeerHandler::OnPeerDurable
  // there); the ZeroMQ link carries it on every message it sends.
  virtual void SetDurableEpoch(uint64_t epoch) = 0;
  // This node's newest published checkpoint epoch, for every peer
  // (PeerHandler::OnPeerCheckpoint there); carried like the durable epoch.
  virtual void SetCheckpointEpoch(uint64_t epoch) = 0;
  // A restarted node's requests and their answers. REQUIRES: node != node_id().
  virtual void SendRejoinRequest(uint32_t node, const pb::RejoinRequest& request) = 0;
  virtual void SendRejoinReply(uint32_t node, const pb::RejoinReply& reply) = 0;
};

// Connects the engines of several nodes inside one process: every message is
// delivered on the sender's thread. As ZmqPeerNet, it refuses (and counts)
// remote reads that claim a partition the sending node does not serve.
// A node can die and come back (tests of a rejoin): Detach(n) drops every
// message to or from n from then on, as with a killed process (its engine
// may still run until it is destroyed); a new engine for n registers its
// handler and receivers through link(n), then Attach(n) connects it and
// hands it every attached node's last durable epoch (the ZeroMQ link
// carries it on every frame, so a peer whose log stalls still tells it).
class InProcessPeerHub {
 public:
  // node_of[p] is the node serving partition p.
  explicit InProcessPeerHub(std::vector<uint32_t> node_of);
  ~InProcessPeerHub();
  PeerLink* link(uint32_t node);
  // Remote reads refused because of their sender (CheckReadsSender).
  uint64_t refused_reads() const { return refused_reads_.load(std::memory_order_relaxed); }
  // Returns once no delivery to or from node is in progress; nothing
  // reaches it or comes from it until Attach(node). REQUIRES: not called
  // from a handler (a delivery in progress).
  void Detach(uint32_t node);
  void Attach(uint32_t node);
  // As ZmqPeerNetOptions::max_frame_bytes: a message (batch, remote reads,
  // result, rejoin request or reply) larger than this when serialized is
  // dropped and counted (ZeroMQ drops the connection); 0: no limit. Set
  // before any message flows.
  void set_max_message_bytes(uint64_t bytes) { max_message_bytes_.store(bytes); }
  uint64_t oversized() const { return oversized_.load(std::memory_order_relaxed); }

 private:
  class Link;
  // Runs deliver() unless from or to is detached, counting it as in
  // progress for both (Detach waits for it).
  template <typename F>
  void Deliver(uint32_t from, uint32_t to, F&& deliver);
  const std::vector<uint32_t> node_of_;
  std::vector<std::unique_ptr<Link>> links_;
  // By partition: written only while its node is detached (or before any
  // message flows); read in deliveries.
  std::vector<RemoteReadsReceiver*> receivers_;
  std::atomic<uint64_t> refused_reads_{0};
  std::atomic<uint64_t> max_message_bytes_{0}, oversized_{0};
  std::unique_ptr<std::atomic<bool>[]> up_;        // by node
  std::unique_ptr<std::atomic<int64_t>[]> busy_;   // by node: deliveries in progress to or from it
  std::unique_ptr<std::atomic<uint64_t>[]> durable_;  // by node: its last SetDurableEpoch
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PEER_LINK_H_
