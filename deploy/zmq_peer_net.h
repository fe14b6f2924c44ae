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
//         logged and counted: the cluster then stalls until restarted. A
//         frame numbered below the expected one (resent or replayed) is
//         dropped and counted (stale); the expectation never moves back.
//         RejoinRequest / RejoinReply -> PeerHandler::OnRejoinRequest /
//         OnRejoinReply.
// Incarnations: every frame carries the sender's incarnation (its start
//         time, above the last one the node persisted: options.
//         min_incarnation) and the receiver's as the sender knows it. A Hello of a
//         newer incarnation of a peer (it restarted) is taken: its frames
//         are numbered from 1 again, our frames to it too, and we answer
//         with our own Hello (saying whether we run, and the cluster's
//         clock: a restarted node then rejoins, Engine::Rejoin). A first
//         Hello sent before its sender heard us (to_incarnation 0) is
//         answered alike: ours may have reached only an earlier process of
//         it. Only the first Hello of an incarnation may say so: its later
//         ones (answers) name ours, and a repeated one that has not heard
//         us (a replay) is stale. Frames of
//         an older incarnation of the sender, or for an older incarnation
//         of this node (queued while it was down), are stale: dropped.
//         With options.curve the peer port is a CURVE server that admits
//         only the nodes' keys of the config (CurveAuth: ZAP handler
//         installed before the bind) and connects to peers with this node's
//         key pair; a frame whose from_node is not the node whose key
//         authenticated its connection (the ZAP User-Id) is dropped and
//         counted (sender_mismatch) before it touches any per-sender state.
//         Without CURVE the port is not authenticated and from_node is taken
//         on trust: keep it on a trusted network (docs/SECURITY.md).
// OUTPUT: Send/SendBatch/SendResult serialise on the caller's thread and
//         queue the frame on the peer's PUSH socket without blocking (no
//         high-water mark: a stalled peer costs memory, never a blocked
//         worker). Remote reads for a local partition skip the network.
//         A frame (other than our Hello) for a peer whose Hello we have
//         not heard waits, unnumbered, until we hear it: sent at once it
//         would be stale there and leave a gap in our numbering.
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
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/curve_auth.h"
#include "io/file_system.h"
#include "proto/cluster.pb.h"
#include "scheduler/peer_link.h"
#include "zmq.hpp"

namespace detdb {

struct ZmqPeerNetOptions {
  pb::ClusterConfig config;           // valid (ValidateClusterConfig)
  uint32_t node_id = 0;
  uint64_t epoch_us = 1000;           // checked against every peer's in the handshake
  // So are these (name -> value): every setting that changes validation or
  // data, and the build id (Node::HandshakeSettings). A peer with another
  // value, or another set of names, is refused naming it; the peer
  // protocol's version (kPeerProtocolVersion) is added here.
  std::map<std::string, std::string> settings;
  size_t max_frame_bytes = 256u << 20;
  // Added to the last node's boot time to get the agreed start time.
  std::chrono::milliseconds start_margin{200};
  // CURVE (docs/SECURITY.md): this node's key pair (and the ZAP domain).
  // Create sets `allowed` and `user_ids` from the config: every node's
  // public key, each with its node id. Unset: insecure (NULL mechanism).
  std::optional<CurveServerOptions> curve;
  // This process's incarnation is above this one: a node passes the last
  // incarnation it persisted (LoadIncarnation), so that a restart after its
  // clock stepped back still comes as a newer incarnation (review finding
  // 12). 0: the wall clock alone.
  uint64_t min_incarnation = 0;
};

// A node's last incarnation, persisted in its data dir (the file
// `incarnation`): 0 if none was saved; DataLoss if the file does not hold
// a number. SaveIncarnation replaces it atomically (a temporary file,
// synced, renamed, the directory synced); dir must exist.
absl::StatusOr<uint64_t> LoadIncarnation(FileSystem* fs, const std::string& dir);
absl::Status SaveIncarnation(FileSystem* fs, const std::string& dir, uint64_t incarnation);

// A peer's Hello whose boot time is more than this ahead of our clock is
// refused (clocks must be synchronised: epochs follow the wall clock).
inline constexpr int64_t kMaxClockSkewUs = 10'000'000;
// The peer wire protocol's version: compared at the handshake (as the
// setting "protocol_version"); raise it whenever PeerMessage's meaning changes.
// 3: frames carry incarnation and to_incarnation (a frame of another
// incarnation is stale), RejoinRequest/RejoinReply, Hello.running.
inline constexpr uint32_t kPeerProtocolVersion = 3;

// Why a received peer frame was dropped (ZmqPeerNetStats::by_reason).
enum class PeerDrop : int {
  kMalformed,       // too large, does not parse, several parts, unknown body
  kConfigHash,      // another cluster config
  kUnknownSender,   // from_node not another node of the config
  kSenderMismatch,  // CURVE: from_node is not the node whose key sent it
  kStale,           // below the expected sequence number (resent or replayed), or of another incarnation
  kOtherSequencer,  // a batch of another node's sequencer
  kNotHere,         // remote reads for a partition not served here
  kForgedReads,     // remote reads of a partition the sender does not serve
  kCount,
};
inline constexpr int kPeerDropReasons = static_cast<int>(PeerDrop::kCount);
// The reason's name in /metrics (snake case).
const char* PeerDropName(PeerDrop reason);

struct ZmqPeerNetStats {
  uint64_t received = 0;   // frames taken off the peer port (good or not)
  uint64_t good = 0;       // of those: passed every check here and handed on
  uint64_t dropped = 0;    // of those: dropped, for any reason of by_reason
  uint64_t by_reason[kPeerDropReasons] = {};
  uint64_t forged_reads = 0;     // by_reason[kForgedReads]
  uint64_t stale = 0;            // by_reason[kStale]: resent or replayed, or of another incarnation
                                 // of the sender or of this node
  uint64_t sender_mismatch = 0;  // by_reason[kSenderMismatch]
  uint64_t restarts = 0;         // Hellos of a newer incarnation of a peer (it restarted)
  uint64_t sent = 0;
  uint64_t send_failed = 0;   // frames this node could not queue to a peer
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
  // This node runs with an input log whose last complete epoch is `epoch`;
  // sent in its Hello (has_log, recovered_epoch). REQUIRES: before Start.
  void SetRecoveredEpoch(uint64_t epoch) {
    recovered_epoch_ = epoch;
    has_log_ = true;
  }
  // This node's valid checkpoint epochs (newest first) and whether its log
  // still starts at epoch 1; sent in its Hello. REQUIRES: before Start.
  void SetCheckpoints(std::vector<uint64_t> epochs, bool log_from_start) {
    checkpoint_epochs_ = std::move(epochs);
    log_from_start_ = log_from_start;
  }
  // After Handshake: the checkpoint every node starts from, the same on
  // every node: the newest epoch <= resume that every node holds; 0 (replay
  // from epoch 1) if there is none, which needs every node's log from epoch
  // 1 (FailedPrecondition naming the nodes otherwise).
  absl::StatusOr<uint64_t> checkpoint_epoch(uint64_t resume);
  // After Handshake returned OK: the smallest recovered epoch of all nodes,
  // where every node resumes. FailedPrecondition (naming the node) rather
  // than an epoch that would truncate a log wrongly: a node not heard, a node
  // without an input log, or a node reporting an empty log while this one
  // holds epochs (a lost disk would drop acknowledged txns everywhere).
  absl::StatusOr<uint64_t> resume_epoch();
  // After Handshake returned OK: the running cluster's clock when every
  // other node said in its Hello that it runs (this node restarted while
  // they kept running: it must rejoin, Engine::Rejoin); nullopt when none
  // did (a cluster start). FailedPrecondition when some run and some start,
  // or when a node is still rejoining (more than one node restarted:
  // restart every node).
  absl::StatusOr<std::optional<ClusterClock>> running_cluster();
  // From now on our Hellos say that this node runs on `clock`: set once the
  // nodes agreed where to resume (a node that restarts later rejoins), or
  // once this node's rejoin is done. Thread-safe.
  void SetRunning(const ClusterClock& clock);
  // From now on (until SetRunning) our Hellos say that this node rejoins
  // the cluster running on `clock`: a node that restarts meanwhile is
  // refused (running_cluster). Thread-safe.
  void SetRejoining(const ClusterClock& clock);
  // Makes Handshake return Cancelled (now or when called). Thread-safe.
  void CancelHandshake();
  // Stops the receive thread and closes the sockets (pending frames to
  // unreachable peers are dropped).
  void Stop();

  ZmqPeerNetStats stats() const;
  // Connections refused at the peer port (all zero without CURVE).
  CurveAuthStats curve_stats() const { return auth_ == nullptr ? CurveAuthStats{} : auth_->stats(); }
  // Other nodes whose Hello arrived (num_nodes() - 1 once the handshake is
  // done). Thread-safe.
  uint32_t peers_heard();
  uint64_t config_hash() const { return config_hash_; }
  uint64_t incarnation() const { return incarnation_; }

  // One received frame, as the receive thread handles it (INPUT above).
  // authenticated: with CURVE, the node whose key the frame's connection
  // authenticated with (kUnknownNode if its User-Id names none); the frame
  // is dropped unless its from_node is that node. nullopt: without CURVE.
  // Public for fuzz/fuzz_peer_message.cc, which calls it without Start().
  // REQUIRES: the receive thread not running, or called from it.
  void Handle(const zmq::message_t& frame, std::optional<uint32_t> authenticated = std::nullopt);
  static constexpr uint32_t kUnknownNode = UINT32_MAX;

  // PeerLink / Transport.
  uint32_t node_id() const override { return options_.node_id; }
  uint32_t num_nodes() const override { return num_nodes_; }
  uint32_t NodeOf(PartitionId partition) const override { return node_of_.at(partition); }
  void SetHandler(PeerHandler* handler) override { handler_ = handler; }
  void RegisterReceiver(PartitionId partition, RemoteReadsReceiver* receiver) override;
  void Send(PartitionId to, pb::RemoteReads msg) override;
  void SendBatch(uint32_t node, const pb::Batch& batch) override;
  void SendResult(uint32_t node, const pb::TxnResult& result) override;
  // Stamped on every message sent from now on (PeerMessage.durable_epoch);
  // sent on its own (a message with no body) when no other message carried
  // it within an epoch, and once more at Stop.
  void SetDurableEpoch(uint64_t epoch) override { durable_epoch_.store(epoch, std::memory_order_relaxed); }
  // Stamped beside it (PeerMessage.checkpoint_epoch) and sent alike; the
  // receiver hands it on after the durable epoch of the same message.
  void SetCheckpointEpoch(uint64_t epoch) override { checkpoint_epoch_.store(epoch, std::memory_order_release); }
  void SendRejoinRequest(uint32_t node, const pb::RejoinRequest& request) override;
  void SendRejoinReply(uint32_t node, const pb::RejoinReply& reply) override;

 private:
  struct Peer {
    std::mutex mu;
    std::unique_ptr<zmq::socket_t> push;  // guarded by mu
    uint64_t next_seq = 1;                 // guarded by mu: PeerMessage.seq of the next frame
    uint64_t to_incarnation = 0;           // guarded by mu: the peer's incarnation (0: not heard yet)
    uint64_t stamped = 0;                  // guarded by mu: the durable epoch last sent to it
    uint64_t checkpoint_stamped = 0;       // guarded by mu: the checkpoint epoch last sent to it
    std::chrono::steady_clock::time_point last_send;  // guarded by mu
    // Guarded by mu: frames other than our Hello sent while to_incarnation
    // is 0, not numbered yet; they leave when its first Hello is heard.
    std::vector<pb::PeerMessage> waiting;
  };
  // Sends a message with no body, only the durable (and checkpoint) epoch,
  // to every peer that has not been told the current one and (unless force)
  // heard nothing from us for an epoch: the stamp must travel when no other
  // traffic does (the last epochs, Stop).
  void SendDurableStamps(bool force);

  explicit ZmqPeerNet(const ZmqPeerNetOptions& options);
  void SendTo(uint32_t node, pb::PeerMessage* msg);
  // Stamps, numbers and queues msg (moved from); a frame other than a
  // Hello for a peer not heard yet waits in peer->waiting instead.
  // REQUIRES: peer->mu held, peer->push set.
  void SendLocked(uint32_t node, Peer* peer, pb::PeerMessage* msg);
  // Our Hello (with the running cluster's clock once SetRunning was called).
  pb::PeerMessage MakeHello();
  // A peer's Hello named an incarnation: the first we hear of it or a
  // newer one. Our frames to it carry it from now on; answer (the peer
  // restarted, or had not heard us: review 2 finding 7): they are numbered
  // from 1 again and begin with our Hello. Then the frames that waited for
  // its first Hello (Peer::waiting) leave.
  void OnPeerIncarnation(uint32_t node, uint64_t incarnation, bool answer);
  // A Hello that passed Handle's checks (receive thread): heard, the first
  // of the sender's incarnation; restarted, of a newer one than before.
  // Takes its settings, log, checkpoints and clock (zmq_peer_hello.cc).
  void TakeHello(const pb::PeerMessage& m, bool heard, bool restarted);
  void ReceiveLoop();
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
  std::unique_ptr<CurveAuth> auth_;                // with options.curve; closed after pull_
  std::unique_ptr<zmq::socket_t> pull_;            // receive thread only (after Start)
  std::vector<std::unique_ptr<Peer>> peers_;       // by node id; nullptr for self

  std::mutex hello_mu_;
  std::condition_variable hello_cv_;
  std::vector<uint64_t> boot_us_;                  // guarded by hello_mu_; 0 = not heard yet
  std::vector<uint64_t> recovered_;                // guarded by hello_mu_: each node's recovered epoch
  std::vector<bool> has_log_of_;                   // guarded by hello_mu_: each node's Hello.has_log
  uint64_t recovered_epoch_ = 0;                   // ours (set before Start)
  bool has_log_ = false;                           // ours (set before Start)
  std::vector<uint64_t> checkpoint_epochs_;        // ours (set before Start)
  bool log_from_start_ = true;                     // ours (set before Start)
  std::vector<std::vector<uint64_t>> checkpoints_of_;  // guarded by hello_mu_: each node's Hello.checkpoint_epochs
  std::vector<bool> from_start_of_;                // guarded by hello_mu_: each node's !Hello.log_starts_later
  std::atomic<uint64_t> durable_epoch_{0};         // ours, stamped on every message
  std::vector<uint64_t> peer_durable_;             // receive thread only: last seen per sender
  std::atomic<uint64_t> checkpoint_epoch_{0};      // ours, stamped on every message
  std::vector<uint64_t> peer_checkpoint_;          // receive thread only: last seen per sender
  std::vector<bool> running_of_;                   // guarded by hello_mu_: each node's Hello.running
  std::vector<bool> rejoining_of_;                 // guarded by hello_mu_: each node's Hello.rejoining
  std::vector<ClusterClock> clock_of_;             // guarded by hello_mu_: each node's Hello clock
  std::optional<ClusterClock> running_;            // guarded by hello_mu_: ours (SetRunning)
  std::optional<ClusterClock> rejoining_;          // guarded by hello_mu_: ours (SetRejoining, until SetRunning)
  std::string hello_error_;                        // guarded by hello_mu_
  bool hello_cancelled_ = false;                   // guarded by hello_mu_

  std::atomic<bool> stop_{false};
  // Counts a dropped frame and (at most one line per 100 drops) logs why.
  void Drop(PeerDrop reason, size_t bytes, const std::string& why);
  std::atomic<uint64_t> received_{0}, good_{0}, dropped_{0}, sent_{0}, send_failed_{0}, lost_{0};
  std::atomic<uint64_t> drops_[kPeerDropReasons] = {};
  std::atomic<uint64_t> restarts_{0};
  std::vector<uint64_t> expected_seq_;             // receive thread only: by sender
  std::vector<uint64_t> incarnation_of_;           // receive thread only: by sender (0: not heard)
  const uint64_t incarnation_;                     // ours
  std::thread thread_;
};

// Microseconds since the Unix epoch (system_clock).
uint64_t WallClockMicros();

}  // namespace detdb

#endif  // DETDB_DEPLOY_ZMQ_PEER_NET_H_
