// ClientEndpoint: a node's door for clients. A ZeroMQ ROUTER socket bound on
// the node's client_port; clients (client/client.h, a DEALER) send one
// pb::ClientRequest per frame and get pb::ClientReply frames back.
//
// INPUT:  request frames (endpoint thread); TxnClient::OnResult from the
//         engine (worker or network threads) for every txn submitted here;
//         SaveOutcomes / RestoreOutcomes from the engine's checkpoint and
//         recovery (the exactly-once table in the checkpoint).
// OUTPUT: ClientReply frames: the results of txns (batched per client
//         connection), immediate errors for txns refused before sequencing,
//         NodeInfo, partition digests, the node's sequencer history,
//         checkpoints taken on request (Engine::Checkpoint), table scans
//         (Engine::ScanTable, bounded: kMaxScanRows, kMaxScanBytes).
//
// Validation before anything is sequenced: a frame larger than
// max_request_bytes is refused before parsing, one that does not parse or
// is not a two-part [identity, payload] message is refused and counted
// (bad_frames); every txn must have a nonzero client id and a client_seq
// above the last one accepted from that client id (else it is a duplicate,
// refused and counted), and must pass Engine::Check (known type and tables,
// size, and the workload's EngineOptions::txn_check). Replies never block
// the node: a client that went away or stopped reading loses its replies
// (counted), the node goes on.
//
// Threads: one endpoint thread, one admin thread that serves digest, check
// and scan requests and one that serves checkpoint requests (Engine::
// SnapshotDigests, Engine::Checkpoint: they wait for the schedulers to reach
// an epoch boundary; at most kMaxQueuedDigests queue, more are refused). Thread-safety: OnResult is thread-safe; Start/Stop from one
// owner thread.
#ifndef DETDB_DEPLOY_CLIENT_ENDPOINT_H_
#define DETDB_DEPLOY_CLIENT_ENDPOINT_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "deploy/curve_auth.h"
#include "common/metrics.h"
#include "proto/client.pb.h"
#include "scheduler/engine.h"
#include "zmq.hpp"

namespace detdb {

struct ClientEndpointOptions {
  std::string bind;                       // e.g. "tcp://127.0.0.1:41001"
  size_t max_request_bytes = 16u << 20;   // larger frames are refused unparsed
  size_t max_clients = 1u << 20;          // distinct client ids remembered
  std::chrono::seconds client_idle{600};  // when full, ids idle this long are forgotten
  std::chrono::milliseconds digest_timeout{30000};
  // A txn result waits up to this long for others to share its reply frame
  // (fewer frames and wake-ups on both ends; poll granularity is 1 ms).
  std::chrono::microseconds reply_batch{1000};
  // Results remembered per client id for retries (exactly once).
  size_t outcomes_per_client = 4096;
  // CURVE (docs/SECURITY.md): the node's key pair and the client keys
  // allowed (CurveAuth, installed before the bind). Unset: insecure.
  std::optional<CurveServerOptions> curve;
};

struct ClientEndpointStats {
  // requests: request frames that reached decoding; good: of those, the
  // ones that decoded; bad_frames: frames refused (did not decode, or not
  // one payload frame).
  uint64_t requests = 0, good = 0, bad_frames = 0, duplicates = 0, refused = 0, lost_replies = 0;
};

// The outcomes of the txns accepted here since start, for one procedure
// type: committed (STATUS_OK), aborted (the procedure's error), failed
// (any other status, e.g. the node stopping).
struct ProcedureOutcomes {
  uint64_t committed = 0, aborted = 0, failed = 0;
};

class ClientEndpoint final : public TxnClient {
 public:
  // Binds the socket; Unavailable if the port is taken.
  static absl::StatusOr<std::unique_ptr<ClientEndpoint>> Create(const ClientEndpointOptions& options);
  ~ClientEndpoint() override;  // Stop()

  // Starts serving. info() fills the node's part of NodeInfo (called on the
  // endpoint thread). check(reply), if set, runs the workload's consistency
  // checker on the local stores and fills reply's consistency_* fields; it
  // is called with the partitions paused at an epoch boundary. REQUIRES:
  // engine (whose results sink is this endpoint) outlives Stop().
  void Start(Engine* engine, std::function<pb::NodeInfo()> info,
             std::function<void(pb::ClientReply*)> check = nullptr);
  void Stop();

  // TxnClient: a txn submitted here is finished.
  void OnResult(pb::TxnResult&& result) override;

  // The exactly-once table for a checkpoint (CheckpointOptions::
  // client_state): per client id its highest seq with a result and its
  // remembered results, a serialized pb::EndpointState. Each client's part
  // is copied under the table's lock (workers' OnResult waits at most that
  // long). Thread-safe.
  absl::StatusOr<std::string> SaveOutcomes();
  // At recovery, before the log replay (CheckpointOptions::
  // restore_client_state): merges a SaveOutcomes() into the table, so that
  // the outcomes of txns before the checkpoint are answered, their retries
  // are not run again, and seqs up to each client's restored max_seq that
  // are no longer remembered answer UNAVAILABLE, never NOT_FOUND. Empty
  // bytes: nothing. InvalidArgument if they do not parse. Thread-safe.
  absl::Status RestoreOutcomes(std::string_view bytes);

  ClientEndpointStats stats() const;
  // Connections refused at the client port (all zero without CURVE).
  CurveAuthStats curve_stats() const { return auth_ == nullptr ? CurveAuthStats{} : auth_->stats(); }

  // The first step of every request frame: InvalidArgument (the client's
  // error) for a payload larger than max_bytes, refused unparsed, or one
  // that does not parse as a pb::ClientRequest. Then each txn must pass
  // Engine::Check. Thread-safe (fuzz/fuzz_client_request.cc drives it).
  static absl::Status DecodeRequest(std::string_view payload, size_t max_bytes, pb::ClientRequest* request);
  // Seconds from a txn's arrival here to its reply leaving, for txns
  // accepted here (not those refused at once). Thread-safe.
  Histogram::Snapshot latency() const { return latency_.snapshot(); }
  // Outcomes of the txns accepted here, by procedure type (counted when the
  // reply leaves, once per reply frame). Thread-safe.
  std::map<uint32_t, ProcedureOutcomes> outcomes_by_type() const {
    std::lock_guard<std::mutex> l(by_type_mu_);
    return by_type_;
  }

  static constexpr size_t kMaxQueuedDigests = 16;
  // A scan's reply holds at most this many records and about this many
  // bytes of values (the rest: `more`).
  static constexpr uint32_t kMaxScanRows = 10000;
  static constexpr size_t kMaxScanBytes = 4u << 20;
  static constexpr size_t kReplyBatch = 512;  // results that make a frame worth sending at once

 private:
  struct ClientState {
    std::string identity;  // the connection that last submitted for this client id
    uint64_t last_seq = 0;
    bool seen = false;
    std::chrono::steady_clock::time_point last_used;
  };
  struct Outcomes {
    uint64_t max_seq = 0;                           // of any result seen
    std::deque<pb::TxnResult> recent;               // ascending arrival, bounded
    absl::flat_hash_map<uint64_t, size_t> by_seq;   // seq -> arrival number
    size_t dropped = 0;                             // arrivals evicted from recent
  };
  struct Outgoing {
    std::string identity;
    pb::ClientReply reply;
  };
  struct DigestRequest {  // digest, check or checkpoint (all wait for an epoch boundary), or a scan
    std::string identity;
    uint64_t request_id, min_epoch;
    bool check;
    bool checkpoint = false;
    bool scan = false;  // table, min_epoch (the first row) and limit
    std::string table = {};
    uint32_t limit = 0;
    uint64_t after_epoch = 0;  // a scan: see pb::ClientRequest::scan_after_epoch
  };

  explicit ClientEndpoint(const ClientEndpointOptions& options);
  void Loop();
  void HandleFrame(const std::string& identity, const zmq::message_t& payload);
  void HandleTxns(const std::string& identity, pb::ClientRequest* request);
  void HandleOutcomes(const std::string& identity, const pb::ClientRequest& request);
  void Remember(const pb::TxnResult& result);
  // Adds result to o unless its seq is remembered already (replay of a
  // result the checkpoint holds). REQUIRES: outcomes_mu_ held.
  void RememberLocked(Outcomes* o, const pb::TxnResult& result);
  // The remembered result of (client, seq), if any; *max_seq the client's
  // highest seq with a result (0 if none).
  bool Recall(uint64_t client, uint64_t seq, pb::TxnResult* out, uint64_t* max_seq);
  void Reply(const std::string& identity, const pb::ClientReply& reply);
  void BadFrame(const std::string& identity, const std::string& why);
  void Flush();
  void FlushIfDue();
  void EvictIdleClients();
  void Wake();
  // Serves digests_ (checkpoints = false) or checkpoints_ (true): a
  // checkpoint writes for seconds, digests must not queue behind it.
  void AdminLoop(bool checkpoints);

  const ClientEndpointOptions options_;
  Engine* engine_ = nullptr;
  std::function<pb::NodeInfo()> info_;
  std::function<void(pb::ClientReply*)> check_;
  zmq::context_t ctx_{1};
  std::unique_ptr<CurveAuth> auth_;        // with options.curve; stopped after router_ closes
  std::unique_ptr<zmq::socket_t> router_;  // endpoint thread only (after Start)
  int wake_fd_ = -1;                       // eventfd: results or replies queued

  absl::flat_hash_map<uint64_t, ClientState> clients_;  // endpoint thread only
  // (client id, seq) -> arrival and procedure type of each txn accepted and
  // not answered yet.
  struct Arrival {
    std::chrono::steady_clock::time_point at;
    uint32_t type;
  };
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, Arrival> arrived_;  // endpoint thread only
  Histogram latency_{Histogram::Exponential(0.0005, 2, 16)};  // 0.5 ms .. 16 s; written by the endpoint thread
  mutable std::mutex by_type_mu_;
  std::map<uint32_t, ProcedureOutcomes> by_type_;  // guarded by by_type_mu_; written by the endpoint thread

  std::mutex outcomes_mu_;
  absl::flat_hash_map<uint64_t, Outcomes> outcomes_;     // guarded by outcomes_mu_

  std::mutex out_mu_;
  std::vector<pb::TxnResult> results_;     // guarded by out_mu_
  std::chrono::steady_clock::time_point first_result_;  // guarded by out_mu_: when results_ became nonempty
  std::vector<Outgoing> replies_;          // guarded by out_mu_

  std::mutex admin_mu_;
  std::condition_variable admin_cv_;
  std::deque<DigestRequest> digests_;      // guarded by admin_mu_
  std::deque<DigestRequest> checkpoints_;  // guarded by admin_mu_
  bool admin_stop_ = false;                // guarded by admin_mu_
  std::atomic<bool> admin_cancel_{false};  // makes a digest request give up at Stop()
  std::thread admin_thread_;
  std::thread checkpoint_thread_;

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> requests_{0}, good_frames_{0}, bad_frames_{0}, duplicates_{0}, refused_{0}, lost_replies_{0};
  std::thread thread_;
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_CLIENT_ENDPOINT_H_
