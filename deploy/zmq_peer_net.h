// ZmqPeerNet: the ZeroMQ implementation of PeerLink (and so of Transport)
// for one node of a cluster. Every node binds a PULL socket on its
// peer_port and connects one PUSH socket to every other node's; one frame
// carries one pb::PeerMessage (proto/cluster.proto).
//
// INPUT:  frames on the PULL socket, from the receive thread: Hello (kept for
//         the handshake), Batch -> PeerHandler::OnPeerBatch, RemoteReads ->
//         the local partition's RemoteReadsReceiver, TxnResult ->
//         PeerHandler::OnPeerResult. A frame that is too large, does not
//         parse, carries another config hash, names an unknown sender or
//         a partition not served here, or remote reads of a partition the
//         sender does not serve, is dropped and counted; the node keeps
//         running (the handler checks the txns inside a batch). A gap in a
//         sender's frame sequence (frames lost with a broken connection) is
//         logged and counted: the cluster then stalls until restarted.
//         The peer port is not authenticated: keep it on a trusted network.
// OUTPUT: Send/SendBatch/SendResult serialise on the caller's thread and
//         queue the frame on the peer's PUSH socket without blocking (no
//         high-water mark: a stalled peer costs memory, never a blocked
//         worker). Remote reads for a local partition skip the network.
//
// Ordering: ZeroMQ keeps frames in order per (PUSH, PULL) pair and delivers
// each at most once; while a peer is down its frames wait in the pipe.
//
// Threads: one receive thread (plus ZeroMQ's I/O thread). Thread-safety:
// PeerLink methods are thread-safe (one mutex per peer socket).
#ifndef DETDB_DEPLOY_ZMQ_PEER_NET_H_
#define DETDB_DEPLOY_ZMQ_PEER_NET_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/cluster.pb.h"
#include "scheduler/peer_link.h"
#include "zmq.hpp"

namespace detdb {

struct ZmqPeerNetOptions {
  pb::ClusterConfig config;           // valid (ValidateClusterConfig)
  uint32_t node_id = 0;
  uint64_t epoch_us = 1000;           // checked against every peer's in the handshake
  // So are these (name -> value): every setting that changes validation or
  // data. A peer with another value, or another set of names, is refused.
  std::map<std::string, std::string> settings;
  size_t max_frame_bytes = 256u << 20;
  // Added to the last node's boot time to get the agreed start time.
  std::chrono::milliseconds start_margin{200};
};

// A peer's Hello whose boot time is more than this ahead of our clock is
// refused (clocks must be synchronised: epochs follow the wall clock).
inline constexpr int64_t kMaxClockSkewUs = 10'000'000;

struct ZmqPeerNetStats {
  uint64_t received = 0;   // frames handled
  uint64_t dropped = 0;    // frames dropped (bad frame, config hash, unknown node/partition)
  uint64_t forged_reads = 0;  // of those: remote reads of a partition the sender does not serve
  uint64_t sent = 0;
  uint64_t lost = 0;       // frames missing from a peer's sequence (lost in transit)
};

class ZmqPeerNet final : public PeerLink {
 public:
  // Binds the peer port (Unavailable if it is taken) and connects to peers.
  static absl::StatusOr<std::unique_ptr<ZmqPeerNet>> Create(const ZmqPeerNetOptions& options);
  ~ZmqPeerNet() override;  // Stop()

  // Starts the receive thread and sends Hello to every peer.
  // REQUIRES: the handler and every local receiver registered.
  void Start();
  // Waits for a Hello from every other node; returns the start time all
  // nodes compute alike: max(every node's boot time) + start_margin, in
  // microseconds of the wall clock. DeadlineExceeded names the nodes still
  // missing; FailedPrecondition if a peer runs with another epoch length
  // or another value of a setting (the error names it and both values).
  absl::StatusOr<uint64_t> Handshake(std::chrono::milliseconds timeout);
  // Makes Handshake return Cancelled (now or when called). Thread-safe.
  void CancelHandshake();
  // Stops the receive thread and closes the sockets (pending frames to
  // unreachable peers are dropped).
  void Stop();

  ZmqPeerNetStats stats() const;
  uint64_t config_hash() const { return config_hash_; }

  // PeerLink / Transport.
  uint32_t node_id() const override { return options_.node_id; }
  uint32_t num_nodes() const override { return num_nodes_; }
  uint32_t NodeOf(PartitionId partition) const override { return node_of_.at(partition); }
  void SetHandler(PeerHandler* handler) override { handler_ = handler; }
  void RegisterReceiver(PartitionId partition, RemoteReadsReceiver* receiver) override;
  void Send(PartitionId to, pb::RemoteReads msg) override;
  void SendBatch(uint32_t node, const pb::Batch& batch) override;
  void SendResult(uint32_t node, const pb::TxnResult& result) override;

 private:
  struct Peer {
    std::mutex mu;
    std::unique_ptr<zmq::socket_t> push;  // guarded by mu
    uint64_t next_seq = 1;                 // guarded by mu: PeerMessage.seq of the next frame
  };

  explicit ZmqPeerNet(const ZmqPeerNetOptions& options);
  void SendTo(uint32_t node, pb::PeerMessage* msg);
  void ReceiveLoop();
  void Handle(const zmq::message_t& frame);
  // Empty if hello's settings equal ours; else every difference (name and
  // both values), for the handshake's error.
  std::string SettingsDiffer(uint32_t from, const pb::Hello& hello) const;
  uint32_t num_partitions() const { return static_cast<uint32_t>(node_of_.size()); }

  const ZmqPeerNetOptions options_;
  const uint64_t config_hash_;
  uint32_t num_nodes_ = 0;
  std::vector<uint32_t> node_of_;                  // by partition
  std::vector<RemoteReadsReceiver*> receivers_;    // by partition; local ones only
  PeerHandler* handler_ = nullptr;

  zmq::context_t ctx_{1};
  std::unique_ptr<zmq::socket_t> pull_;            // receive thread only (after Start)
  std::vector<std::unique_ptr<Peer>> peers_;       // by node id; nullptr for self

  std::mutex hello_mu_;
  std::condition_variable hello_cv_;
  std::vector<uint64_t> boot_us_;                  // guarded by hello_mu_; 0 = not heard yet
  std::string hello_error_;                        // guarded by hello_mu_
  bool hello_cancelled_ = false;                   // guarded by hello_mu_

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> received_{0}, dropped_{0}, sent_{0}, lost_{0}, forged_reads_{0};
  std::vector<uint64_t> expected_seq_;             // receive thread only: by sender
  std::thread thread_;
};

// Microseconds since the Unix epoch (system_clock).
uint64_t WallClockMicros();

}  // namespace detdb

#endif  // DETDB_DEPLOY_ZMQ_PEER_NET_H_
