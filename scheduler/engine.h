// Engine: a detdb node. In one process (the single-machine multicore mode):
// one sequencer, `partitions` partitions each with its own store and
// scheduler (lock thread + workers), and an in-process transport between
// them. In cluster mode (options.peers set) the same engine is one node:
// its sequencer is sequencer node_id of num_nodes, it holds the stores and
// schedulers of its own partitions only, and the PeerLink carries batches,
// remote reads and results between nodes.
//
//   Engine::Create(options, partitioner, procedures) -> load data through
//   store(p) -> RegisterClient(c) -> Start() -> Submit()... -> Stop()
//
// INPUT:  Submit/SubmitMany from client threads (validated before sequencing);
//         cluster mode: PeerHandler::OnPeerBatch/OnPeerResult from the network.
// OUTPUT: TxnClient::OnResult once per accepted txn, on a worker thread (or
//         the network thread, for a txn coordinated by another node);
//         cluster mode: PeerLink::SendBatch of every epoch to every other node.
//
// Thread-safety: Submit* are thread-safe; the rest belongs to one owner thread.
#ifndef DETDB_SCHEDULER_ENGINE_H_
#define DETDB_SCHEDULER_ENGINE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/partitioner.h"
#include "lockmgr/lock_manager.h"
#include "proto/detdb.pb.h"
#include "scheduler/peer_batch_window.h"
#include "scheduler/peer_link.h"
#include "scheduler/procedure.h"
#include "scheduler/scheduler.h"
#include "scheduler/transport.h"
#include "sequencer/sequencer.h"
#include "storage/partition_store.h"

namespace detdb {

class TxnClient {
 public:
  virtual ~TxnClient() = default;
  // Called once per txn the client submitted, from a worker thread.
  virtual void OnResult(const pb::TxnResult& result) = 0;
};

struct EngineOptions {
  uint32_t workers = 1;               // per partition
  bool release_on_workers = true;     // see SchedulerOptions
  bool adaptive_admission = true;     // see SchedulerOptions (admission.h)
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
  // Cluster mode: how far ahead of the merged epoch a peer's batch, or the
  // remote reads of a txn a partition has not taken yet, may be, in wall
  // time: ceil(peer_window_us / epoch_us) epochs (at least 16). 10 s, the
  // clock skew the handshake accepts: a peer's sequencer closes epochs on
  // its own clock, so a real batch may be that far ahead of ours plus the
  // merge's lag. Beyond it: refused and counted (a stall, never a
  // divergence; a resend after the merge caught up is taken).
  uint64_t peer_window_us = 10'000'000;
  // Per partition: bytes of remote reads held for txns not taken yet.
  size_t max_held_reads_bytes = 64u << 20;
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
};

struct EngineStats {
  uint64_t submitted = 0, replied = 0, rejected = 0, epochs = 0;
  uint64_t bad_peer_batches = 0, bad_peer_results = 0;  // cluster mode: dropped peer input
  uint64_t duplicate_peer_batches = 0;  // a (sequencer, epoch) delivered already: dropped
  uint64_t far_peer_batches = 0;        // beyond the window ahead of max(merged, wall-clock epoch): refused
  uint64_t peer_window_epochs = 0;      // that window
  uint64_t pending_bytes = 0;           // TxnCharge of the txns accepted, not yet answered
  std::vector<SchedulerStats> partitions;
};

// What a txn counts against EngineOptions::max_pending_bytes: its
// arguments, 8 bytes per key and 64 for the rest.
inline uint64_t TxnCharge(const pb::Txn& txn) {
  return txn.args().size() + 8 * static_cast<uint64_t>(txn.read_set_size() + txn.write_set_size()) + 64;
}

class Engine final : public BatchSink, public ReplySink, public PeerHandler {
 public:
  // partitioner and procedures must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options,
                                                        const Partitioner* partitioner,
                                                        const ProcedureRegistry* procedures);
  ~Engine() override;

  uint32_t num_partitions() const { return static_cast<uint32_t>(stores_.size()); }
  // The partitions served here: all of them in one process.
  const std::vector<PartitionId>& local_partitions() const { return local_; }
  bool is_local(PartitionId p) const { return p < stores_.size() && stores_[p] != nullptr; }
  // For loading before Start() and for digests after Stop(). nullptr for a
  // partition of another node.
  PartitionStore* store(PartitionId p) { return stores_[p].get(); }

  // REQUIRES: before Start(). Returns the client id to put in its txns.
  uint64_t RegisterClient(TxnClient* client);

  // FailedPrecondition unless every partition has the same tables (ids and
  // value sizes): executors validate writes against their own schema, so a
  // difference could make them disagree on a txn.
  // start_us: cluster mode, the wall-clock time the sequencers agreed on
  // (see SequencerOptions::start_us); 0 in one process.
  absl::Status Start(uint64_t start_us = 0);
  bool started() const { return accepting_.load(std::memory_order_acquire); }
  // Stops accepting, waits until every accepted txn has been answered (up to
  // drain_timeout), then stops every thread. Returns DeadlineExceeded if
  // txns were still running.
  absl::Status Stop(std::chrono::milliseconds drain_timeout = std::chrono::seconds(60));

  // What Submit checks before sequencing, without submitting. Thread-safe.
  absl::Status Check(const pb::Txn& txn) const { return Validate(txn); }
  // Validates and queues txn. InvalidArgument (unknown type, unknown table,
  // unregistered client, too many keys) or Unavailable (stopped, overloaded).
  absl::Status Submit(pb::Txn txn);
  // All or nothing; clears *txns on success.
  absl::Status SubmitMany(std::vector<pb::Txn>* txns);
  // SubmitMany for txns that each passed Check() (skips validating again).
  absl::Status SubmitChecked(std::vector<pb::Txn>* txns);

  // XXH3 over every local partition's digest, in partition order.
  // REQUIRES: stopped, or no txn running (see WaitIdle).
  uint64_t Digest() const;
  // (partition, digest) of every local partition. Same REQUIRES.
  std::vector<std::pair<PartitionId, uint64_t>> PartitionDigests() const;
  // Waits until every local scheduler has merged every epoch below
  // min_epoch and has released every txn it merged. DeadlineExceeded after
  // timeout. Thread-safe.
  absl::Status WaitIdle(uint64_t min_epoch, std::chrono::milliseconds timeout) const;
  // The digest of every local partition at the boundary of `epoch`: after
  // every txn of the epochs below it and none of the others, even while
  // clients keep writing (the schedulers pause at the boundary until the
  // digests are taken). Equal on every node and every replica for the same
  // epoch. FailedPrecondition if a partition already merged part of
  // `epoch`; DeadlineExceeded after timeout; Cancelled when *cancel turns
  // true. Thread-safe; one call at a time.
  absl::StatusOr<std::vector<std::pair<PartitionId, uint64_t>>> SnapshotDigests(
      uint64_t epoch, std::chrono::milliseconds timeout, const std::atomic<bool>* cancel = nullptr);
  // Runs fn with the local partitions paused at the boundary of `epoch`
  // (see SnapshotDigests): fn may read every local store; nothing writes
  // them until it returns. Same errors as SnapshotDigests.
  absl::Status AtEpochBoundary(uint64_t epoch, std::chrono::milliseconds timeout, const std::atomic<bool>* cancel,
                               const std::function<void()>& fn);

  // One process only, instead of Start(): runs the given batches (a
  // history() of another engine: epochs 1, 2, ... in order) through this
  // engine's schedulers, without the sequencer, and returns once every txn
  // is released; results go to the registered clients as usual. The same
  // batches give the same digest under every lock manager and worker count.
  absl::Status Replay(const std::vector<std::shared_ptr<const pb::Batch>>& batches,
                      std::chrono::milliseconds timeout = std::chrono::seconds(120));
  // Every local scheduler has merged all epochs below this one.
  uint64_t merged_epoch() const;
  // The epoch the sequencer has open.
  uint64_t open_epoch() const { return sequencer_->open_epoch(); }
  EngineStats stats() const;
  // Lock statistics per partition. REQUIRES: stopped.
  std::vector<LockStats> lock_stats() const;
  // Every batch in order; empty unless options.record_history.
  std::vector<std::shared_ptr<const pb::Batch>> history() const;

  // BatchSink (sequencer thread) and ReplySink (workers).
  void OnBatch(std::shared_ptr<const pb::Batch> batch) override;
  void OnTxnResult(const pb::Txn& txn, pb::TxnResult result) override;
  // PeerHandler (network thread, cluster mode).
  void OnPeerBatch(std::shared_ptr<pb::Batch> batch) override;
  void OnPeerResult(const pb::TxnResult& result) override;

 private:
  Engine(const EngineOptions& options, const Partitioner* partitioner, const ProcedureRegistry* procedures);
  absl::Status Validate(const pb::Txn& txn) const;
  absl::Status Admit(size_t n, uint64_t bytes);
  absl::Status SubmitGroup(std::vector<pb::Txn>* txns, bool validate);
  // Hands each local scheduler its part of batch (empty parts too).
  void EnqueueLocal(const std::shared_ptr<const pb::Batch>& batch);
  // charge: the txn's TxnCharge, counted at Admit.
  void Deliver(const pb::TxnResult& result, uint64_t charge);
  // Checks a peer's batch and recomputes its derived fields.
  absl::Status CheckPeerBatch(pb::Batch* batch) const;
  const PartitionStore* schema() const { return stores_[local_[0]].get(); }

  const EngineOptions options_;
  const Partitioner* const partitioner_;
  const ProcedureRegistry* const procedures_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;  // by partition; nullptr if not local
  std::vector<PartitionId> local_;
  std::unique_ptr<InProcessTransport> transport_;         // one process only
  std::vector<std::unique_ptr<Scheduler>> schedulers_;    // by partition; nullptr if not local
  std::unique_ptr<Sequencer> sequencer_;
  std::vector<TxnClient*> clients_;
  bool started_ = false, stopped_ = false;
  std::atomic<bool> accepting_{false};
  // Cluster mode, sequencer thread only: per other node, the part of the
  // batch it gets.
  std::vector<pb::Batch> outgoing_;

  std::atomic<uint64_t> submitted_{0}, replied_{0}, rejected_{0}, bad_peer_batches_{0}, bad_peer_results_{0};
  std::atomic<uint64_t> duplicate_peer_batches_{0}, far_peer_batches_{0};
  std::atomic<uint64_t> pending_bytes_{0};  // TxnCharge of accepted, unanswered txns
  // Cluster mode: the peer batches taken so far (duplicates, window).
  // Cluster mode: the epoch the wall clock is in (0 before Start or without
  // a start_us): a peer's sequencer closes epoch e at start_us + e * epoch_us.
  uint64_t ClockEpoch() const;
  // The base of the peer window: an honest peer sends no epoch at or
  // beyond max(merged, clock epoch) + window, however far behind the merge is.
  uint64_t WindowBase() const { return std::max(merged_epoch(), ClockEpoch()); }
  // The largest TxnCharge a txn may have (Create checks budgets against it).
  uint64_t LargestTxnBytes() const;
  std::atomic<uint64_t> start_us_{0};  // Start's start_us (cluster mode)
  std::mutex window_mu_;
  std::unique_ptr<PeerBatchWindow> window_;  // guarded by window_mu_
  // Cluster mode: ids of txns submitted here whose coordinator is on another
  // node, with their TxnCharge; a peer's result for any other id is dropped.
  std::mutex awaiting_mu_;
  absl::flat_hash_map<TxnId, uint64_t> awaiting_;  // guarded by awaiting_mu_
  mutable std::mutex history_mu_;
  std::vector<std::shared_ptr<const pb::Batch>> history_;  // guarded by history_mu_
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ENGINE_H_
