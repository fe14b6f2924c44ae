// Scheduler: the per-partition stage that turns the global order into
// execution. One lock thread runs the partition's LockManager; a pool of
// workers executes the txns it grants.
//
// INPUT:  Enqueue(sub-batch): the txns of one (epoch, sequencer) touching
//         this partition, from any thread. Sub-batches are merged in
//         (epoch, sequencer id) order; a missing one is waited for, never
//         skipped. OnRemoteReads(msg): another participant's reads.
// OUTPUT: Transport::Send of this partition's local reads to the txn's other
//         active participants; ReplySink::OnTxnResult for the txns this
//         partition coordinates (the first active participant).
//
// A txn's way here: lock thread admits it (LockManager::Lock) -> granted ->
// worker reads its local keys, sends them to the other active participants;
// a passive participant (reads only) is done at once; an active one runs the
// stored procedure when every remote read is in. A txn missing remote reads
// is parked (state WAITING) and the worker takes other work; the message
// that completes it puts it back on the worker queue.
//
// Who releases a finished txn's locks (SchedulerOptions::release_on_workers):
// - true (default): the worker that finished it, under lm_mu_, and it runs
//   the first txn that became ready itself (the rest go to the queue). A
//   chain of conflicting txns (TPC-C's Payments of one warehouse) then costs
//   no thread hand-off per link (docs/TPCC.md, Measurements). This is done
//   only while the lock thread sleeps (waiting for input, as in TPC-C
//   between epochs); while it is awake, or lm_mu_ is taken, the worker
//   hands the txn back as below: a lock thread that is busy anyway (the
//   microbenchmark's) releases at no extra cost, and contending for lm_mu_
//   with it made the microbenchmark up to 3x slower.
// - false: Calvin's and the DCLP paper's layout: workers hand finished txns
//   back to the lock thread, the only thread that ever touches the lock
//   manager. Kept to reproduce the papers' setting.
// Either way one thread at a time runs the lock manager, and only the lock
// thread admits (LockManager::Lock, in id order).
//
// What is decided (merge, admit, dispatch, release, park) is the pure logic of
// scheduler_core.h and partition_txn.h; this class is its threaded runner:
// the threads, the queues between them, who sleeps and who wakes whom, and
// the mutex that guards each part of the core (in_mu_: the merger; lm_mu_:
// the lock side; remote_mu_: the parked txns). Lock order: lm_mu_ before
// in_mu_ (the core takes its input under lm_mu_); remote_mu_ and done_mu_
// are taken alone. Nothing is freed under in_mu_ or remote_mu_ (the
// merger and the parking table move what they keep; the rest is freed by
// the caller after it unlocks).
//
// Threads: 1 lock thread + `workers` worker threads, all of which sleep when
// idle. Thread-safety: Enqueue and OnRemoteReads are thread-safe.
#ifndef DETDB_SCHEDULER_SCHEDULER_H_
#define DETDB_SCHEDULER_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/notifier.h"
#include "common/partitioner.h"
#include "common/thread_cpu.h"
#include "common/work_queue.h"
#include "lockmgr/lock_manager.h"
#include "proto/detdb.pb.h"
#include "scheduler/admission.h"
#include "scheduler/partition_txn.h"
#include "scheduler/scheduler_core.h"
#include "scheduler/procedure.h"
#include "scheduler/transport.h"
#include "storage/partition_store.h"

namespace detdb {

struct SchedulerOptions {
  PartitionId partition = 0;
  uint32_t workers = 1;
  std::string lock_manager = "dclp";
  LockManagerOptions lock;
  uint32_t num_sequencers = 1;
  uint64_t first_epoch = 1;
  // Workers release their txns' locks themselves (see the file comment).
  bool release_on_workers = true;
  // The admission window adapts to the workers (admission.h); false: a
  // fixed window of lock.max_active. lock.max_active is the cap either way.
  bool adaptive_admission = true;
  // Txn states from per-sub-batch slabs freed in bulk (seed 003;
  // PartitionCoreOptions::staged_alloc, staged_states.h).
  bool staged_alloc = false;
  // Records every admission round (PartitionCoreOptions::admission_trace;
  // not owned, outlives the scheduler; null: none).
  AdmissionTrace* admission_trace = nullptr;
  // Remote reads (remote_reads_guard.h): txn ids carry their epoch (cluster
  // mode); how far ahead reads of a txn not taken yet are held; how many
  // bytes of them at most; which partitions are in this process (null: all).
  bool epoch_in_id = false;
  uint64_t window_epochs = 10000;
  uint64_t max_held_reads_bytes = 64u << 20;
  std::function<bool(PartitionId)> is_local;
  // Cluster mode: the epoch the wall clock is in (0: unknown), for the
  // guard's "too early" rule. Null: 0.
  std::function<uint64_t()> clock_epoch;
};

struct SchedulerStats {
  uint64_t admitted = 0;
  uint64_t blocked_at_admission = 0;
  uint64_t committed = 0;  // executed here with OK (coordinator or not)
  uint64_t aborted = 0;    // executed here, procedure returned an error
  uint64_t passive = 0;    // read-only participations finished after sending reads
  uint64_t parked = 0;     // times a txn waited for remote reads
  double avg_active = 0;   // admitted, unreleased txns, averaged over admissions
  uint64_t window = 0;     // the admission window now (admission.h)
  uint64_t window_grows = 0, window_shrinks = 0;
  // Of the shrinks, trials undone (the release rate fell, or a worker
  // starved in the trial); of the grows, those the release rate undid.
  uint64_t window_shrinks_undone = 0, window_grows_undone = 0;
  // Times a descent's best window fell 3% below its top and the window went
  // a step back up (AdmissionController::steps_back_up).
  uint64_t window_steps_back_up = 0;
  uint64_t starved = 0;    // times a worker found no runnable txn
  // Now (gauges for /metrics; read from what the threads publish anyway):
  uint64_t active_now = 0;    // admitted, unreleased txns
  uint64_t ready_queue = 0;   // runnable txns waiting for a worker
  uint64_t parked_now = 0;    // txns waiting for remote reads
  RemoteReadsStats remote_reads;       // accepted, held and refused remote reads by reason
  uint64_t duplicate_sub_batches = 0;  // sub-batches enqueued again (dropped)
  uint64_t pending_sub_batches = 0;    // enqueued, waiting for their turn to merge
  // CPU time (ns) the lock thread and the workers (together) have used so
  // far: what the lock side costs end to end (lock manager, merge,
  // admission, wake-ups) beside execution. Statistics only.
  uint64_t lock_thread_cpu_ns = 0;
  uint64_t workers_cpu_ns = 0;
};

class Scheduler final : public RemoteReadsReceiver, private CoreListener {
 public:
  // Everything passed must outlive the scheduler.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(const SchedulerOptions& options,
                                                           PartitionStore* store,
                                                           const Partitioner* partitioner,
                                                           const ProcedureRegistry* procedures,
                                                           Transport* transport, ReplySink* replies);
  ~Scheduler() override;

  void Start();
  // Stops the threads. Txns not finished are abandoned (the engine drains
  // first); IsQuiescent() tells whether any were.
  void Stop();

  void Enqueue(SubBatchRef sub_batch);
  void OnRemoteReads(pb::RemoteReads msg) override;

  SchedulerStats stats() const;
  // True iff every txn enqueued so far has been released here (nothing
  // admitted, parked or waiting for admission). Thread-safe.
  bool Drained() const {
    return released_.load(std::memory_order_acquire) == enqueued_.load(std::memory_order_acquire);
  }
  // Every sub-batch of every epoch below this one has been merged (its txns
  // count in Drained()). Thread-safe.
  uint64_t merged_epoch() const { return merged_epoch_.load(std::memory_order_acquire); }
  // True iff every txn merged so far has been released here (sub-batches
  // that arrived but wait for their turn do not count). Thread-safe.
  bool Idle() const {
    const uint64_t merged = merged_txns_.load(std::memory_order_acquire);
    return released_.load(std::memory_order_acquire) == merged;
  }
  // Makes the lock thread stop before merging anything of `epoch` or later,
  // so that once merged_epoch() == epoch and Idle(), the partition's state
  // is exactly that after every txn of the epochs below `epoch`. False (and
  // no hold) if the partition already merged part of `epoch` or later.
  // Thread-safe; holds add up (the merge stops at the lowest), and each
  // successful HoldAt(e) is undone by one ReleaseHold(e).
  bool HoldAt(uint64_t epoch);
  void ReleaseHold(uint64_t epoch);
  // Recovery from a checkpoint of epoch - 1: the merge starts at `epoch`
  // (sub-batches of earlier epochs are dropped). REQUIRES: nothing merged
  // yet (the engine calls it before it replays the log). Thread-safe.
  void SkipTo(uint64_t epoch);
  // Lock manager statistics; REQUIRES: stopped.
  LockStats lock_stats() const { return core_.lock_manager().stats(); }
  // REQUIRES: stopped. True iff no txn is admitted or parked.
  bool IsQuiescent() const;
  // The lowest id of a txn taken here that waits for (or has not used yet)
  // remote reads; 0 if none. Thread-safe.
  TxnId OldestAwaitingReads() const;

 private:
  // The core's input, taken from merger_ under in_mu_.
  class LockedInput final : public MergedInput {
   public:
    explicit LockedInput(Scheduler* s) : s_(s) {}
    bool TakeNext(SubBatchRef* out) override;
    bool NextHasTxns() override;

   private:
    Scheduler* const s_;
  };

  Scheduler(const SchedulerOptions& options, const Partitioner* partitioner, std::unique_ptr<LockManager> lm,
            PartitionStore* store, const ProcedureRegistry* procedures, Transport* transport, ReplySink* replies);

  void LockThread();
  void WorkerThread();
  // Publishes the core's admission state to the workers' hints and stats().
  // REQUIRES: lm_mu_ held.
  void PublishLocked(const AdmitResult& r);
  // CoreListener: the core's active count, for the workers' hint.
  void OnActiveChanged(uint64_t active) override { active_now_.store(active, std::memory_order_relaxed); }
  // CoreListener: registers st's expected remote reads. REQUIRES: lm_mu_ held.
  void OnTaken(const PartitionTxn& st) override;
  // Worker side: one step of st, its intent locks taken through `intents`,
  // its buffered values on the worker's `values` (TxnExecutor::Run).
  // Returns true if st finished here (release it).
  bool Process(PartitionTxn* st, IntentAgent* intents, ByteArena* values);

  const SchedulerOptions options_;
  // Txns a worker runs between two rounds of reclamation (ReclaimSafe).
  static constexpr uint32_t kReclaimEveryTxns = 128;

  const TxnExecutor exec_;  // immutable: workers use it without a lock
  PartitionStore* const store_;  // workers reclaim its erased memory
  LockedInput input_{this};
  // The lock side: used by one thread at a time, the lock thread, and with
  // release_on_workers the workers too.
  std::mutex lm_mu_;
  PartitionCore core_;  // guarded by lm_mu_
  // The window is what stops admission (a hint for starving workers: wake
  // the lock thread so that the window can grow).
  std::atomic<bool> window_bound_{false};
  std::atomic<uint64_t> active_now_{0};  // core_.active(), for workers' starvation check (a hint)
  std::atomic<uint64_t> starved_{0};  // workers that found no runnable txn, window binding
  std::atomic<uint64_t> window_{0}, window_grows_{0}, window_shrinks_{0}, window_shrinks_undone_{0},
      window_grows_undone_{0}, window_steps_back_up_{0};  // for stats()
  // False while the lock thread sleeps: then a worker releases its txn
  // itself rather than wake it (a hint; any value is safe).
  std::atomic<bool> lock_thread_awake_{true};

  std::atomic<bool> stop_{false};
  Notifier lock_notifier_;  // wakes the lock thread: new input or finished txns

  // Input: sub-batches waiting to be merged, by (epoch, sequencer).
  mutable std::mutex in_mu_;
  SubBatchMerger merger_;  // guarded by in_mu_

  WorkQueue<PartitionTxn*> ready_q_;  // lock thread -> workers (fresh and resumed txns)
  std::mutex done_mu_;
  std::vector<PartitionTxn*> done_;   // workers -> lock thread; guarded by done_mu_

  // Remote reads: parked txns and the guard (reads that arrived before their
  // txn). Lock order: lm_mu_ before remote_mu_ (OnTaken).
  mutable std::mutex remote_mu_;
  RemoteReadsTable remote_;  // guarded by remote_mu_

  std::atomic<uint64_t> admitted_{0}, blocked_at_admission_{0}, committed_{0}, aborted_{0},
      passive_{0}, parked_count_{0}, active_sum_{0}, duplicate_sub_batches_{0};
  std::atomic<uint64_t> parked_now_{0};  // txns parked now (the admission window's signal)
  std::atomic<uint64_t> enqueued_{0}, released_{0};  // txns given to / released by this partition
  std::atomic<uint64_t> merged_epoch_{0};
  std::atomic<uint64_t> merged_txns_{0};                // txns of the sub-batches merged so far

  std::thread lock_thread_;
  std::vector<std::thread> workers_;
  ThreadCpuSlot lock_cpu_;
  std::deque<ThreadCpuSlot> worker_cpu_;  // one per worker; created before they start
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_SCHEDULER_H_
