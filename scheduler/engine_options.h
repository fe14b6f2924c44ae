// What an Engine (scheduler/engine.h) is configured with and reports: the
// results sink its clients implement (TxnClient), EngineOptions,
// EngineStats, and the budgets derived from them (PeerWindowEpochs,
// TxnCharge). Split from engine.h to keep it readable; include engine.h.
//
// Thread-safety: plain structs and pure functions.
#ifndef DETDB_SCHEDULER_ENGINE_OPTIONS_H_
#define DETDB_SCHEDULER_ENGINE_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/types.h"
#include "lockmgr/lock_manager.h"
#include "proto/detdb.pb.h"
#include "scheduler/checkpoint.h"
#include "scheduler/log_stage.h"
#include "scheduler/peer_link.h"
#include "scheduler/scheduler.h"

namespace detdb {

class TxnClient {
 public:
  virtual ~TxnClient() = default;
  // Called once per txn the client submitted, from a worker thread. The
  // result is the client's (moved in: no copy on a single node's path; a
  // result from a peer is copied once).
  virtual void OnResult(pb::TxnResult&& result) = 0;
};

struct EngineOptions {
  uint32_t workers = 1;               // per partition
  bool release_on_workers = true;     // see SchedulerOptions
  bool adaptive_admission = true;     // see SchedulerOptions (admission.h)
  bool staged_alloc = false;          // see SchedulerOptions (staged_states.h)
  AdmissionTrace* admission_trace = nullptr;  // see SchedulerOptions (admission_trace.h); not owned
  std::string lock_manager = "dclp";
  LockManagerOptions lock;
  uint64_t epoch_us = 1000;
  size_t max_pending = 1u << 20;      // accepted, not yet answered; more is refused (Unavailable)
  // The same txns' bytes (TxnCharge): a txn may carry max_args_bytes of
  // arguments, so a count alone lets a stalled merge hold max_pending MiB.
  // >= TxnCharge of the largest txn accepted (checked by Create).
  size_t max_pending_bytes = 256u << 20;
  size_t max_keys_per_txn = 10000;    // larger txns are rejected
  size_t max_args_bytes = 1u << 20;   // so are larger procedure arguments
  bool record_history = false;        // keep every batch (for replay by tests)
  // Cluster mode: how far ahead of max(merged epoch, the epoch the wall
  // clock is in) a peer's batch, or the remote reads of a txn a partition
  // has not taken yet, may be, in wall time: ceil(peer_window_us /
  // epoch_us) epochs (at least 16). 10 s, the clock skew the handshake
  // accepts: a peer's sequencer closes epochs on its own clock, so an honest
  // batch is never further ahead than that, however far our merge lags (a
  // held merge never refuses an honest peer). Beyond it: refused and
  // counted. Memory is bounded by the window in wall time, not by dropping.
  uint64_t peer_window_us = 10'000'000;
  // Per partition: bytes of remote reads held for txns not taken yet.
  size_t max_held_reads_bytes = 64u << 20;
  // Cluster mode: per other node, at most this many bytes of the remote
  // reads and results sent to it since the newest checkpoint every node
  // holds are kept for its rejoin (scheduler/peer_retention.h); beyond,
  // the oldest are dropped and that node can no longer rejoin alone from
  // an older checkpoint. 0: rejoin off. Nothing is kept, and reads and
  // results for other nodes leave at once instead of waiting for their
  // epoch's fsync here (scheduler/peer_outbox.h: the price of a rejoin,
  // paid by multi-partition txns); this node can then neither rejoin a
  // running cluster nor serve a peer's rejoin: a node restarted after a
  // crash needs a restart of every node (each recovers from its log).
  uint64_t rejoin_retention_bytes = 64u << 20;
  // Cluster mode: a Rejoin that makes no progress this long (no peer
  // answers; or no epoch merged, no txn of ours answered, no partition
  // moved) fails with DeadlineExceeded naming the peer or the epoch,
  // rather than waiting forever.
  std::chrono::milliseconds rejoin_progress_timeout{60000};
  // Cluster mode: a peer's answer to a rejoining node's STATE request
  // carries about this many bytes of its batches (at least one; a batch is
  // at most EpochBatcher::kMaxBatchBytes plus one txn), and the node asks
  // again for the rest: below the link's frame limit (ZmqPeerNetOptions::
  // max_frame_bytes, 256 MiB), however many bulk loads the node missed.
  uint64_t rejoin_reply_bytes = 32u << 20;
  // Cluster mode: the link to the other nodes (must outlive the engine).
  // Only partitions with peers->NodeOf(p) == peers->node_id() are served
  // here; txn ids follow EpochBatcher::IdScheme::kEpochSequencer.
  PeerLink* peers = nullptr;
  // If set, every result of a txn submitted here goes to this sink, and
  // client ids are the clients' own (any nonzero value; RegisterClient is
  // not used). A cluster node's client endpoint is such a sink.
  TxnClient* results = nullptr;
  // Optional extra check of every key before sequencing (e.g. that a row
  // exists in the workload's key space); its error is the client's.
  std::function<absl::Status(Key)> key_check;
  // Optional check of every txn (the workload's: arguments, key sets), run
  // last by Validate: on client, in-process, peer and replayed peer input.
  std::function<absl::Status(const pb::Txn&)> txn_check;
  // Which intent locks keep whole-table operations (scans, truncates, bulk
  // loads, checkpoint captures) apart from the workers: "lil", "sli" or
  // "queue" (storage/intent_lock.h).
  std::string intent_locks = "lil";
  // Whether clients may submit table operations (pb::Txn::table_op:
  // truncate, bulk load) here. Off, they are refused before sequencing
  // (those of a peer's batch run anyway: its node accepted them).
  bool allow_table_ops = false;
  // The input log (log.dir empty: none; replies as soon as executed).
  LogStageOptions log;
  // Called once (on the thread that saw it) when the log fails: the engine
  // stops accepting and never replies again; the node must stop.
  std::function<void(const absl::Status&)> on_log_failure;
  // Checkpoints (checkpoint.dir empty: none; needs the input log): see
  // Checkpoint() and scheduler/checkpoint.h. checkpoint.fs: log.fs if null.
  // checkpoint.client_state(E) is called once every result of epochs <= E
  // has been handed to the clients (or the results sink);
  // checkpoint.restore_client_state at Start, before the replay.
  CheckpointOptions checkpoint;
};

// The peer window in epochs: ceil(peer_window_us / epoch_us), at least 16
// (see EngineOptions::peer_window_us). Peers' batches, early remote reads
// and a scan's scan_after_epoch are accepted at most this far ahead.
inline uint64_t PeerWindowEpochs(const EngineOptions& o) {
  const uint64_t epoch_us = o.epoch_us == 0 ? 1 : o.epoch_us;
  const uint64_t epochs = (o.peer_window_us + epoch_us - 1) / epoch_us;
  return epochs < 16 ? 16 : epochs;
}

struct EngineStats {
  uint64_t submitted = 0, replied = 0, rejected = 0, epochs = 0;
  uint64_t bad_peer_batches = 0, bad_peer_results = 0;  // cluster mode: dropped peer input (results: not awaited)
  // A result for an awaited txn from a node that is not its coordinator, or
  // with another client id or seq than the txn's: refused (the txn waits on).
  uint64_t forged_peer_results = 0;
  uint64_t durable_epoch = 0, durable_watermark = 0;     // input log: here, on every node
  uint64_t held_replies = 0;                             // results waiting for durability
  uint64_t replayed_txns = 0;                            // from the log at Start
  uint64_t restored_checkpoint = 0;                      // epoch of the checkpoint Start loaded (0: none)
  uint64_t checkpoints = 0, last_checkpoint_epoch = 0;   // taken since start
  uint64_t capture_children = 0;                         // checkpoint capture children alive
  uint64_t duplicate_peer_batches = 0;  // a (sequencer, epoch) delivered already: dropped
  uint64_t far_peer_batches = 0;        // beyond the window ahead of max(merged, wall-clock epoch): refused
  uint64_t conflicting_peer_batches = 0;  // a (sequencer, epoch) delivered before with other txns: refused, ERROR
  uint64_t peer_window_epochs = 0;      // that window
  uint64_t pending_bytes = 0;           // TxnCharge of the txns accepted, not yet answered
  uint64_t late_peer_results = 0;       // a result for an epoch merged here and not awaited (resent): dropped
  uint64_t rejoin_requests = 0;         // peers' RejoinRequests answered
  uint64_t retained_bytes = 0;          // reads and results kept for peers' rejoins (PeerRetention)
  uint64_t retained_batches = 0;        // batch parts kept for peers' rejoins (0 without the input log)
  uint64_t retained_batch_bytes = 0;    // their serialized bytes
  uint64_t held_peer_messages = 0;      // reads and results for other nodes that waited for durability here (total)
  uint64_t rejoined_at = 0;             // Rejoin: the last epoch sequenced before (0: no rejoin)
  LogStage::WriterStats log;                             // input log writer (metrics)
  std::vector<SchedulerStats> partitions;
};

// What a txn counts against EngineOptions::max_pending_bytes: its
// arguments, 8 bytes per key and 64 for the rest (and a table operation's
// encoded rows).
inline uint64_t TxnCharge(const pb::Txn& txn) {
  return txn.args().size() + 8 * static_cast<uint64_t>(txn.read_set_size() + txn.write_set_size()) + 64 +
         (txn.has_table_op() ? txn.table_op().ByteSizeLong() : 0);
}

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ENGINE_OPTIONS_H_
