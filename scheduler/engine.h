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
//         cluster mode: PeerHandler::OnPeerBatch/OnPeerResult/OnPeerDurable/
//         OnPeerCheckpoint from the network.
// OUTPUT: TxnClient::OnResult once per accepted txn, on a worker thread (or
//         the network thread, for a txn coordinated by another node; with
//         the input log, the thread that made its epoch durable everywhere);
//         cluster mode: PeerLink::SendBatch of every epoch to every other node.
//
// Durability (options.log.dir set; scheduler/log_stage.h): every batch the
// schedulers execute is appended to the input log; results leave only once
// their epoch is durable on every node; Start() first replays the log (the
// replayed txns' results go to the clients again: the client endpoint
// rebuilds its exactly-once table from them) and the sequencer continues
// after it. A cluster node restarted while the others kept running calls
// Rejoin() instead (engine_rejoin.cc): it replays its log and catches up
// from its peers, which keep what it may need (scheduler/peer_retention.h).
//
// Thread-safety: Submit* are thread-safe; the rest belongs to one owner thread.
#ifndef DETDB_SCHEDULER_ENGINE_H_
#define DETDB_SCHEDULER_ENGINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "common/partitioner.h"
#include "lockmgr/lock_manager.h"
#include "scheduler/checkpoint.h"
#include "scheduler/checkpoint_agreement.h"
#include "scheduler/engine_options.h"
#include "proto/detdb.pb.h"
#include "scheduler/log_stage.h"
#include "scheduler/peer_batch_window.h"
#include "scheduler/peer_link.h"
#include "scheduler/peer_outbox.h"
#include "scheduler/peer_retention.h"
#include "scheduler/procedure.h"
#include "scheduler/scheduler.h"
#include "scheduler/transport.h"
#include "sequencer/sequencer.h"
#include "storage/partition_store.h"

namespace detdb {

struct RejoinPlanInput;  // scheduler/rejoin_plan.h

// TxnClient, EngineOptions, EngineStats: scheduler/engine_options.h.

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
  // With the input log: recovers it (RecoverLog, if not called yet),
  // replays epochs 1 .. resume_epoch (default: the log's last complete
  // epoch; a cluster passes the smallest of all nodes', see
  // ZmqPeerNet::resume_epoch) and waits until their results are out, then
  // starts the sequencer at resume_epoch + 1.
  // With checkpoints: the state is first loaded from the checkpoint of
  // epoch `checkpoint_epoch` (a cluster passes the one every node has, see
  // ZmqPeerNet::checkpoint_epoch; 0: none, replay from epoch 1; default:
  // the newest valid one RecoverLog found at or before resume_epoch) and
  // only the log after it is replayed.
  absl::Status Start(uint64_t start_us = 0, std::optional<uint64_t> resume_epoch = std::nullopt,
                     std::optional<uint64_t> checkpoint_epoch = std::nullopt);
  // Instead of Start, in a cluster with the input log: this node restarted
  // while the other nodes kept running on `clock` (every peer said so in
  // its Hello: ZmqPeerNet::running_cluster). Asks every peer what it holds
  // of this node's batches, decides what this node sequences again
  // (scheduler/rejoin_plan.h), replays its log from its newest valid
  // checkpoint, resends the peers the batches they lack, takes theirs and
  // the remote reads and results of its txns since the checkpoint from
  // them (RejoinRequest), resumes its sequencer on the cluster's clock,
  // and returns once every replayed txn of its own is answered and every
  // txn up to the epochs it sequenced again is done here. Clients are
  // refused until then. FailedPrecondition (naming the cause) when the
  // rejoin is impossible: a log that lost durable epochs, a peer that no
  // longer keeps what the checkpoint needs (restart every node then);
  // DeadlineExceeded after rejoin_progress_timeout without progress;
  // Cancelled by CancelStart. docs/DURABILITY.md "Rejoining a running
  // cluster".
  absl::Status Rejoin(const ClusterClock& clock);
  // Makes a Start or Rejoin waiting for its peers return Cancelled.
  // Thread-safe.
  void CancelStart() { start_cancelled_.store(true, std::memory_order_release); }
  // The clock the sequencer runs on (cluster mode; zero before Start).
  // Thread-safe.
  ClusterClock clock() const {
    return {start_us_.load(std::memory_order_acquire), clock_origin_epoch_.load(std::memory_order_acquire)};
  }
  // Checks the input log and trims a torn tail; returns its last complete
  // epoch. DataLoss / FailedPrecondition (naming the file and offset) when
  // the node must refuse to start. REQUIRES: options.log.dir set, before Start.
  absl::StatusOr<uint64_t> RecoverLog();
  bool logging() const { return stage_ != nullptr; }
  // After RecoverLog: the epochs of the valid checkpoints recovery can start
  // from (newest first), and whether the log still starts at epoch 1 (a
  // start without a checkpoint is possible).
  const std::vector<uint64_t>& checkpoint_epochs() const { return checkpoint_epochs_; }
  bool log_from_start() const { return log_from_start_; }

  // Takes a checkpoint of the local partitions at the boundary after
  // `epoch` (every txn of epochs <= epoch applied, none later): pauses the
  // schedulers there only for a fork() (scheduler/checkpoint.h), lets them
  // run on while the child writes the file, publishes it once `epoch` is
  // durable on every node, keeps the newest options.checkpoint.keep and
  // drops the input log's segments behind the oldest kept one. Every node
  // asked for the same epoch captures the same cut. FailedPrecondition
  // without the input log and checkpoint dir, or if a partition already
  // merged past `epoch` or a checkpoint of `epoch` or later was captured
  // already (ask for a later one); DeadlineExceeded once `timeout` from
  // the call has passed, whichever wait it is in (the boundary, the
  // capture child, which is killed, the results, the durability);
  // Cancelled when *cancel turns true or Stop() runs (a capture child is
  // killed and reaped; Stop waits for every call to return; later calls
  // are refused). Thread-safe: several may wait for their boundaries at
  // once, captures (forks) one at a time, writes may overlap (each into a
  // temp file of its own).
  // In a cluster the checkpoints kept and the cut follow the agreement with
  // the peers (scheduler/checkpoint_agreement.h): every node keeps one that
  // every node holds.
  absl::StatusOr<CheckpointStats> Checkpoint(uint64_t epoch, std::chrono::milliseconds timeout,
                                             const std::atomic<bool>* cancel = nullptr);
  // Prunes checkpoints and cuts the log again if the peers' reports made a
  // newer checkpoint common since the last prune (a cluster learns that its
  // newest one is common only after publishing it); a no-op otherwise.
  // Returns the number of log segments dropped. Thread-safe.
  absl::StatusOr<size_t> ReclaimCheckpoints();
  // The newest checkpoint epoch every node is known to hold (0: none known).
  uint64_t common_checkpoint() const { return agreement_.anchor(); }
  // True while Start() replays the log (results then are the log's, again).
  bool replaying() const { return replaying_.load(std::memory_order_acquire); }
  bool log_failed() const { return stage_ != nullptr && stage_->failed(); }
  bool started() const { return accepting_.load(std::memory_order_acquire); }
  // Stops accepting, waits until every accepted txn has been answered (up to
  // drain_timeout), then stops every thread. Returns DeadlineExceeded if
  // txns were still running.
  absl::Status Stop(std::chrono::milliseconds drain_timeout = std::chrono::seconds(60));

  // What Submit checks before sequencing, without submitting. Thread-safe.
  absl::Status Check(const pb::Txn& txn) const { return Validate(txn); }
  // What OnPeerBatch checks of a peer's batch before use (and recomputes
  // its derived fields), without enqueueing it. Thread-safe (used by
  // fuzz/fuzz_peer_message.cc).
  absl::Status CheckPeerBatch(pb::Batch* batch) const;
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
  // true. With the input log, it also waits (after the hold) until every
  // epoch below `epoch` is durable on every node, like any reply;
  // Unavailable if the log failed. Thread-safe.
  absl::StatusOr<std::vector<std::pair<PartitionId, uint64_t>>> SnapshotDigests(
      uint64_t epoch, std::chrono::milliseconds timeout, const std::atomic<bool>* cancel = nullptr);
  // With the input log: waits until every epoch below `epoch` is durable on
  // every node (what a reply about the state at that boundary needs);
  // Unavailable if the log failed, DeadlineExceeded after timeout. OK at
  // once without a log. Thread-safe.
  absl::Status WaitDurable(uint64_t epoch, std::chrono::milliseconds timeout) const;
  // Runs fn with the local partitions paused at the boundary of `epoch`
  // (see SnapshotDigests): fn may read every local store; nothing writes
  // them until it returns. Same errors as SnapshotDigests.
  // Several calls may wait at once (for the same or other epochs); their
  // fns run one at a time.
  absl::Status AtEpochBoundary(uint64_t epoch, std::chrono::milliseconds timeout, const std::atomic<bool>* cancel,
                               const std::function<void()>& fn);

  // A scan of a table while txns run (docs/STORAGE.md, "Intent locks"):
  // on every local partition, IS on the partition and S on the table, which
  // waits for the txns writing the table to end and holds new writers back
  // meanwhile (they wait for it); so no record is seen half written, and
  // every txn's writes to the table on that partition are wholly in or
  // wholly out. Partitions are scanned one after the other: no common cut
  // across them (SnapshotDigests gives one, by pausing at a boundary).
  // Returns the first `limit` records with row >= from_row in key order
  // over the local partitions; more: there were others.
  // table: a table's name or id. NotFound for an unknown table;
  // DeadlineExceeded if a partition's S was not granted within timeout.
  // after_epoch > 0: each partition is scanned only once every txn of
  // epochs <= after_epoch has run on it (a client reads its own writes:
  // a result it holds came from a txn of an epoch it names here), by a
  // brief hold at the next boundary (the partition pauses while its
  // running txns drain). DeadlineExceeded if that takes beyond timeout.
  // Thread-safety: thread-safe; waits (never while holding an engine lock).
  struct ScanRow {
    PartitionId partition;
    Key key;
    std::string value;
  };
  struct TableScan {
    uint32_t table = 0;
    std::string name;
    uint32_t value_size = 0;
    std::vector<ScanRow> rows;
    bool more = false;
  };
  absl::StatusOr<TableScan> ScanTable(std::string_view table, uint64_t from_row, size_t limit,
                                      std::chrono::milliseconds timeout, uint64_t after_epoch = 0);
  // Waits until every txn of epochs <= epoch has run on local partition p
  // (see ScanTable's after_epoch). Thread-safe.
  absl::Status WaitApplied(PartitionId p, uint64_t epoch, std::chrono::steady_clock::time_point deadline);

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
  void OnTxnResult(const pb::Txn& txn, pb::TxnResult&& result) override;
  // PeerHandler (network thread, cluster mode).
  void OnPeerBatch(std::shared_ptr<pb::Batch> batch) override;
  void OnPeerResult(uint32_t from, const pb::TxnResult& result) override;
  void OnPeerDurable(uint32_t node, uint64_t epoch) override;
  void OnPeerCheckpoint(uint32_t node, uint64_t epoch) override;
  void OnRejoinRequest(uint32_t node, const pb::RejoinRequest& request) override;
  void OnRejoinReply(uint32_t node, const pb::RejoinReply& reply) override;

 private:
  // Start's part with the input log (engine_recovery.cc): load the
  // checkpoint, then start the schedulers, replay, wait.
  absl::Status ReplayLog(uint64_t start_us, std::optional<uint64_t> resume_epoch,
                         std::optional<uint64_t> checkpoint_epoch);
  // What LoadAndReplay replayed.
  struct Replayed {
    uint64_t from = 0;   // the checkpoint loaded (0: none)
    uint64_t own = 0;    // txns of our sequencer (answered here)
    uint64_t total = 0;  // txns in all
    TxnId last_id = 0;
    std::map<uint64_t, std::shared_ptr<const pb::Batch>> own_batches;  // by epoch (cluster mode)
  };
  // Loads the checkpoint (at or before resume), starts the schedulers,
  // opens the log after resume and hands the epochs after the checkpoint
  // to the schedulers, noting the results awaited (engine_recovery.cc).
  absl::StatusOr<Replayed> LoadAndReplay(uint64_t resume, std::optional<uint64_t> checkpoint_epoch,
                                         bool every_node_holds);
  // A rejoin's replay: the logged batches kept for the peers whose logs
  // lag ours (engine_recovery.cc). REQUIRES: retention_ set.
  void KeepReplayedBatches(const std::vector<std::shared_ptr<pb::Batch>>& batches);
  // Ends the buffering of peer results that came before replay noted what
  // it awaits, and hands the buffered ones on.
  void CloseEarlyResults();
  // Same schema on every partition (FailedPrecondition otherwise).
  absl::Status CheckSchemas() const;
  // Rejoin's parts (engine_rejoin.cc).
  absl::Status RejoinSteps(const ClusterClock& clock);
  // Sends request to every peer (AskPeers: each node its own) and waits
  // for all answers (resending now and then); an answer's error fails it.
  absl::StatusOr<std::map<uint32_t, pb::RejoinReply>> AskEveryPeer(const pb::RejoinRequest& request);
  absl::StatusOr<std::map<uint32_t, pb::RejoinReply>> AskPeers(const std::map<uint32_t, pb::RejoinRequest>& requests);
  // Rejoin step 1: every peer's STATE, page by page (our batches it holds
  // after own_floor, checked; its next_expected and our durable epoch),
  // into pin->peers. REQUIRES: pin->max_epoch set.
  absl::Status AskPeersState(uint64_t own_floor, RejoinPlanInput* pin);
  uint64_t SendRejoinRequest(uint32_t node, pb::RejoinRequest request);  // returns its id
  void ResendRejoinRequest(uint64_t id);
  // The answer to request id once it came (the call is then forgotten).
  std::optional<pb::RejoinReply> TakeRejoinReply(uint64_t id);
  void ForgetRejoinRequest(uint64_t id);
  // What CheckPeerBatch checks of the txns of a batch of sequencer seq
  // (ids in place, Validate), recomputing their derived fields; a rejoin
  // checks its own batches rebuilt from the peers' parts with it.
  absl::Status CheckBatchTxns(pb::Batch* batch, uint32_t seq) const;
  // A part of our own batch as a peer returned it for our rejoin: what
  // CheckPeerBatch checks (sequencer, epoch 1..max_epoch, size, txns).
  absl::Status CheckOwnPart(pb::Batch* part, uint64_t max_epoch) const;
  // The parts of batch for every other node (whole txns touching its
  // partitions; empty parts too); null for self.
  std::vector<std::shared_ptr<pb::Batch>> Parts(const pb::Batch& batch) const;
  // Rejoin: asks every peer for the reads and results of txns from
  // first_epoch on, in chunks paced by the merge, until *stop; again from
  // the merged epoch when the merge makes no progress for a while. Sets
  // *error if a peer cannot serve it.
  void PumpMessages(uint64_t first_epoch, const std::atomic<bool>* stop, absl::Status* error, std::mutex* error_mu);
  // The lowest id of a txn waiting for remote reads on a local partition
  // (0: none).
  TxnId OldestAwaitingReads() const;
  bool StartCancelled() const { return start_cancelled_.load(std::memory_order_acquire); }
  // engine_checkpoint.cc: finds the valid checkpoints (RecoverLog); loads
  // the one to start from into the stores, returns its epoch (0: none).
  absl::Status FindCheckpoints(uint64_t log_epoch);
  absl::StatusOr<uint64_t> RestoreCheckpoint(uint64_t resume, std::optional<uint64_t> checkpoint_epoch,
                                             TxnId* last_id);
  CheckpointOptions checkpoint_options() const;
  // Prunes and cuts as agreement_ plans; *dropped: log segments removed.
  // REQUIRES: publish_mu_ held.
  absl::StatusOr<std::vector<uint64_t>> PruneAndCutLocked(const CheckpointOptions& co, size_t* dropped);
  // One process: the largest txn id of the epochs <= epoch (for a
  // checkpoint's header); NoteBatchIds keeps what it needs (sequencer thread).
  TxnId LastIdThrough(uint64_t epoch);
  void NoteBatchIds(const pb::Batch& batch);
  // With checkpoint.client_state: the txns of our sequencer's batch wait for
  // their results (sequencer thread); a result was handed over (DeliverNow);
  // waits until every result of epochs <= epoch was (Unavailable if the log
  // failed, DeadlineExceeded, Cancelled).
  void NoteUnanswered(const pb::Batch& batch);
  void NoteAnswered(TxnId id);
  absl::Status WaitAnswered(uint64_t epoch, std::chrono::steady_clock::time_point deadline,
                            const std::function<bool()>& cancelled);
  // AtEpochBoundary with an absolute deadline and a cancel predicate.
  absl::Status AtEpochBoundaryUntil(uint64_t epoch, std::chrono::steady_clock::time_point deadline,
                                    const std::function<bool()>& cancelled, const std::function<void()>& fn);
  // Cluster with checkpoints: a thread that prunes and cuts again
  // (ReclaimCheckpoints) when a peer's report may have made a newer
  // checkpoint common (finding 17), and retries after an I/O error.
  void StartReclaimer();
  void StopReclaimer();
  void ReclaimLoop();
  void OnLogFailure(const absl::Status& s);
  // Why Submit refuses: the log's error once it failed, else Unavailable.
  absl::Status NotAccepting() const;
  // Cluster mode: note the results of batch's txns another node coordinates.
  void ExpectResults(const pb::Batch& batch);
  void DeliverNow(pb::TxnResult&& result);
  Engine(const EngineOptions& options, const Partitioner* partitioner, const ProcedureRegistry* procedures);
  // from_peer: a peer's batch (its node accepted the txn from its client:
  // allow_table_ops is that node's to apply, every node runs what it took).
  absl::Status Validate(const pb::Txn& txn, bool from_peer = false) const;
  absl::Status ValidateTableOp(const pb::Txn& txn, bool from_peer) const;
  absl::Status Admit(size_t n, uint64_t bytes);
  absl::Status SubmitGroup(std::vector<pb::Txn>* txns, bool validate);
  // Hands each local scheduler its part of batch (empty parts too).
  void EnqueueLocal(const std::shared_ptr<const pb::Batch>& batch);
  // charge: the txn's TxnCharge, counted at Admit.
  void Deliver(pb::TxnResult&& result, uint64_t charge);
  const PartitionStore* schema() const { return stores_[local_[0]].get(); }

  const EngineOptions options_;
  const Partitioner* const partitioner_;
  const ProcedureRegistry* const procedures_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;  // by partition; nullptr if not local
  std::vector<PartitionId> local_;
  std::unique_ptr<InProcessTransport> transport_;         // one process only
  // Cluster mode: what peers may need to rejoin, and the way reads and
  // results go to them (kept; with the log, once their epoch is durable).
  std::unique_ptr<PeerRetention> retention_;
  std::unique_ptr<PeerOutbox> outbox_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;    // by partition; nullptr if not local
  std::unique_ptr<Sequencer> sequencer_;
  std::unique_ptr<LogStage> stage_;                       // null without the input log
  bool log_recovered_ = false;
  uint64_t log_epoch_ = 0;  // RecoverLog's result
  std::atomic<uint64_t> replayed_{0};
  std::atomic<bool> replaying_{false};
  std::vector<TxnClient*> clients_;
  bool started_ = false, stopped_ = false;
  std::atomic<bool> accepting_{false};
  std::atomic<bool> start_cancelled_{false};
  // Everything up to this epoch is in our log (the replay's end): a peer's
  // batches of such epochs count as received (RejoinReply.next_expected).
  std::atomic<uint64_t> replay_floor_{0};
  // Rejoin requests this node sent, by id: to whom, and the answer once it
  // came.
  struct RejoinCall {
    uint32_t node = 0;
    pb::RejoinRequest request;
    std::optional<pb::RejoinReply> reply;
  };
  std::mutex rejoin_mu_;
  std::condition_variable rejoin_cv_;
  uint64_t next_rejoin_id_ = 1;                 // guarded by rejoin_mu_
  std::map<uint64_t, RejoinCall> rejoin_calls_;  // guarded by rejoin_mu_
  std::atomic<uint64_t> rejoin_requests_{0}, rejoined_at_{0}, late_peer_results_{0};

  std::atomic<uint64_t> submitted_{0}, replied_{0}, rejected_{0}, bad_peer_batches_{0}, bad_peer_results_{0};
  std::atomic<uint64_t> duplicate_peer_batches_{0}, far_peer_batches_{0}, conflicting_peer_batches_{0};
  std::atomic<uint64_t> forged_peer_results_{0};
  std::atomic<uint64_t> pending_bytes_{0};  // TxnCharge of accepted, unanswered txns
  // Cluster mode: the epoch the wall clock is in (0 before Start or without
  // a start_us): a peer's sequencer closes epoch origin + k at start_us +
  // k * epoch_us (origin: the epoch the cluster resumed after, or 0),
  // so an honest peer sends no epoch at or beyond max(merged, clock epoch) +
  // window, however far behind our merge is (engine_peers.cc).
  uint64_t ClockEpoch() const;
  // The largest TxnCharge a txn may have (Create checks budgets against it).
  uint64_t LargestTxnBytes() const;
  std::atomic<uint64_t> start_us_{0};            // Start's start_us (cluster mode; 0 until the sequencer starts)
  std::atomic<uint64_t> clock_origin_epoch_{0};  // the epoch the sequencer resumed after (0 without recovery)
  std::mutex window_mu_;
  std::unique_ptr<PeerBatchWindow> window_;  // guarded by window_mu_: the peer batches taken so far
  mutable std::mutex log_error_mu_;
  absl::Status log_error_;  // guarded by log_error_mu_: the input log's failure
  // Cluster mode: txns submitted here whose coordinator is on another node,
  // by id; a peer's result is taken only for one of them, only from its
  // coordinator and only with its client id and seq (engine_peers.cc).
  struct Awaited {
    uint64_t charge;      // its TxnCharge
    uint64_t client_id, client_seq;
    uint32_t coordinator;  // the node of its first executor
  };
  std::mutex awaiting_mu_;
  absl::flat_hash_map<TxnId, Awaited> awaiting_;  // guarded by awaiting_mu_
  // With the input log, until replay noted the results it awaits: peer
  // results not (yet) awaited are kept with their sender, at most
  // kMaxEarlyResults.
  static constexpr size_t kMaxEarlyResults = 1u << 20;
  bool early_results_open_ = false;                                // guarded by awaiting_mu_
  std::vector<std::pair<uint32_t, pb::TxnResult>> early_results_;  // guarded by awaiting_mu_
  // Checkpoints.
  std::vector<uint64_t> checkpoint_epochs_;          // owner thread, from RecoverLog
  bool log_from_start_ = true;                       // owner thread
  std::optional<LoadedCheckpoint> newest_checkpoint_;  // owner thread: read by RecoverLog, freed by Start
  std::atomic<uint64_t> restored_checkpoint_{0}, checkpoints_{0}, last_checkpoint_epoch_{0};
  std::mutex checkpoint_mu_;  // one capture (fork) at a time; held only for it
  std::mutex publish_mu_;     // one publish (rename, prune, log cut) at a time
  // Which checkpoints every node holds (the peers' reports); keeps and cuts.
  CheckpointAgreement agreement_{options_.peers != nullptr ? options_.peers->num_nodes() : 1u,
                                 options_.peers != nullptr ? options_.peers->node_id() : 0u};
  uint64_t planned_anchor_ = 0;  // guarded by publish_mu_: agreement_.anchor() at the last prune
  std::mutex boundary_mu_;    // one AtEpochBoundary fn at a time (the waits run in parallel)
  uint64_t last_capture_epoch_ = 0;  // guarded by checkpoint_mu_: the newest epoch captured (or tried)
  // Captures after the fork: their temp file names (kept by the prune) and
  // the children alive (Stop kills them: checkpoint_stop_, and waits).
  mutable std::mutex inflight_mu_;
  std::condition_variable inflight_cv_;
  absl::flat_hash_set<std::string> inflight_tmp_;  // guarded by inflight_mu_
  uint64_t live_children_ = 0;                     // guarded by inflight_mu_
  uint64_t active_checkpoints_ = 0;                // guarded by inflight_mu_: Checkpoint calls running
  std::atomic<bool> checkpoint_stop_{false};       // set under inflight_mu_
  std::mutex reclaim_mu_;
  std::condition_variable reclaim_cv_;
  bool reclaim_due_ = false, reclaim_stop_ = false;  // guarded by reclaim_mu_
  std::thread reclaimer_;
  std::mutex ids_mu_;
  std::deque<std::pair<uint64_t, TxnId>> epoch_last_ids_;  // guarded by ids_mu_: (epoch, its last id)
  TxnId ids_floor_ = 0;                                     // guarded by ids_mu_: the id of earlier epochs
  // With checkpoint.client_state: per batch of our sequencer with results
  // not all handed over, keyed by its last txn id: (first id, epoch, left).
  struct Unanswered {
    TxnId first;
    uint64_t epoch, left;
  };
  const bool track_answers_;
  std::mutex unanswered_mu_;
  std::condition_variable unanswered_cv_;
  std::map<TxnId, Unanswered> unanswered_;  // guarded by unanswered_mu_
  mutable std::mutex history_mu_;
  std::vector<std::shared_ptr<const pb::Batch>> history_;  // guarded by history_mu_
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ENGINE_H_
