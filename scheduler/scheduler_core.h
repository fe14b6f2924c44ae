// The scheduler's decisions, without its threads: what a partition merges,
// admits, dispatches, releases and parks. Pure logic: no threads, no clock,
// no mutexes, no atomics. Two runners drive the same code: the threaded
// Scheduler (scheduler.h: a lock thread, a worker pool, their hand-offs and
// wake-ups) and the virtual-time simulation (bench/sim.h). As SLOG splits a
// module's Loop() from its ModuleRunner, and detdb's sequencer splits
// EpochBatcher from the Sequencer thread.
//
// Three parts, each used by one thread at a time; a runner that runs them on
// several threads guards each part with its own mutex:
// - SubBatchMerger: sub-batches in, merged in (epoch, sequencer) order.
//   INPUT: Add(sub-batch). OUTPUT: TakeNext() in merge order, waiting for a
//   missing one (never skipping it); HoldAt() stops it at an epoch boundary.
// - PartitionCore: the lock side (the LockManager, the txn states, the
//   admission window). INPUT: Admit() (one admission slice, taking txns from
//   a MergedInput), Release() of finished txns. OUTPUT: the txns that became
//   runnable (a ReadyList, in the order of LOCKING.md N4) to dispatch to
//   workers, and whether a stopped admission is worth resuming. A table
//   operation (pb::Txn::table_op) is admitted alone: once every txn before
//   it is released, and nothing after it until it is.
// - RemoteReadsTable: parking. INPUT: an executor missing remote reads
//   (Park), another partition's reads (OnRemoteReads). OUTPUT: the parked txn
//   that became complete, to dispatch again. Every read is checked by a
//   RemoteReadsGuard first (duplicates, forgeries, early ones held).
// The worker side (run a dispatched txn) is TxnExecutor (partition_txn.h).
#ifndef DETDB_SCHEDULER_SCHEDULER_CORE_H_
#define DETDB_SCHEDULER_SCHEDULER_CORE_H_

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lockmgr/lock_manager.h"
#include "proto/detdb.pb.h"
#include "scheduler/admission.h"
#include "scheduler/admission_trace.h"
#include "scheduler/partition_txn.h"
#include "scheduler/remote_reads_guard.h"
#include "scheduler/staged_states.h"

namespace detdb {

// The txns of one (epoch, sequencer) that touch one partition, in id order.
struct SubBatchRef {
  uint64_t epoch = 0;
  uint32_t sequencer_id = 0;
  std::shared_ptr<const void> owner;  // keeps the txns alive
  std::vector<const pb::Txn*> txns;
};

// Thread-safety: not thread-safe.
class SubBatchMerger {
 public:
  // REQUIRES: num_sequencers >= 1.
  SubBatchMerger(uint32_t num_sequencers, uint64_t first_epoch)
      : num_sequencers_(num_sequencers), next_(first_epoch, 0) {}

  // Takes sb (moves from it) unless its (epoch, sequencer) was merged or
  // added before: then false, and sb is left to the caller, who frees it
  // outside whatever lock guards the merger.
  bool Add(SubBatchRef&& sb);
  // Moves the next sub-batch in merge order into *out; false if it has not
  // arrived, or the merge is held at its epoch.
  bool TakeNext(SubBatchRef* out);
  // Whether TakeNext would give a sub-batch with txns now (a look).
  bool NextHasTxns() const;
  // Stops the merge before anything of `epoch` or later; false (no hold) if
  // part of `epoch` or later is merged already. Holds add up (several
  // callers may each wait for their own boundary): the merge stops at the
  // lowest; ReleaseHold(epoch) removes one hold of that epoch.
  bool HoldAt(uint64_t epoch);
  void ReleaseHold(uint64_t epoch);
  // Starts the merge at `epoch` instead (recovery from a checkpoint of
  // epoch - 1): drops sub-batches of earlier epochs and returns the number
  // of txns they held. REQUIRES: nothing merged yet, epoch >= merged_epoch().
  uint64_t SkipTo(uint64_t epoch);
  // Every sub-batch of every epoch below this one has been taken.
  uint64_t merged_epoch() const { return next_.first; }
  // Sub-batches added, not taken yet.
  size_t pending() const { return pending_.size(); }

 private:
  bool Held() const { return next_.second == 0 && !holds_.empty() && next_.first >= *holds_.begin(); }

  const uint32_t num_sequencers_;
  std::map<std::pair<uint64_t, uint32_t>, SubBatchRef> pending_;
  std::pair<uint64_t, uint32_t> next_;  // next (epoch, sequencer) to take
  std::multiset<uint64_t> holds_;  // the epochs held at
};

// Where PartitionCore takes its sub-batches from: a SubBatchMerger, behind
// whatever lock the runner needs.
class MergedInput {
 public:
  virtual ~MergedInput() = default;
  virtual bool TakeNext(SubBatchRef* out) = 0;
  virtual bool NextHasTxns() = 0;
};

struct PartitionCoreOptions {
  uint32_t workers = 1;         // workers of the partition (the admission window's unit)
  uint32_t max_active = 2000;   // LockManagerOptions::max_active
  bool adaptive_admission = true;
  // AdmissionOptions::warmup_us (the simulation, whose cost model has no
  // first touches of memory, passes 0).
  uint64_t admission_warmup_us = kAdmissionWarmupUs;
  // Txn states from per-sub-batch slabs freed in bulk (staged_states.h)
  // instead of a pool of reused states with their own heap memory.
  bool staged_alloc = false;
  // Each admission round's signals and window are recorded here (not
  // owned; null: none), as partition `trace_partition` (admission_trace.h).
  AdmissionTrace* admission_trace = nullptr;
  uint32_t trace_partition = 0;
};

// What one Admit() call did (the runner's statistics).
struct AdmitResult {
  uint64_t admitted = 0;
  uint64_t blocked = 0;      // admitted but not granted at once
  uint64_t active_sum = 0;   // sum over admissions of the active txns then
  bool progress = false;     // admitted something, or the window grew
};

// What the runner tells an admission slice about its side (admission.h).
struct RunnerState {
  uint64_t starved_total = 0;  // workers that found no runnable txn while the window was binding, ever
  uint64_t parked = 0;         // txns now parked for other partitions' reads
  uint64_t now_us = 0;         // the runner's clock (virtual in the simulation)
};

// What a runner hears from PartitionCore as it happens, on the thread that
// called the core: the threaded runner mirrors the active count into the
// hint its starving workers read (admission.h), admission by admission.
class CoreListener {
 public:
  virtual ~CoreListener() = default;
  virtual void OnActiveChanged(uint64_t active) = 0;
  // st was just taken from the input (in id order) and given its state:
  // the runner registers an executor missing remote reads with its
  // RemoteReadsTable (Expect), so that their reads are checked.
  virtual void OnTaken(const PartitionTxn& st) { (void)st; }
};

// Thread-safety: not thread-safe (see the file comment).
class PartitionCore {
 public:
  // exec, input and listener (may be null) must outlive the core.
  PartitionCore(const PartitionCoreOptions& options, std::unique_ptr<LockManager> lm, const TxnExecutor* exec,
                MergedInput* input, CoreListener* listener = nullptr);

  // One admission slice: admits up to `slice` txns in merge order while the
  // lock manager and the window allow, then feeds the window what it saw
  // (with the runner's `state` and the releases since the last slice) and
  // polls the lock manager. Appends the txns that became runnable to *ready.
  AdmitResult Admit(int slice, const RunnerState& state, ReadyList* ready);
  // Releases a finished txn's locks and frees its state; appends txns that
  // became runnable. REQUIRES: st->owner already taken (the runner drops it
  // where it wants: it may free a batch).
  void Release(PartitionTxn* st, ReadyList* ready);
  // LockManager::Poll as the lock side would: after releases outside Admit.
  void Poll(ReadyList* ready) { lm_->Poll(input_idle_ || admission_blocked_, ready); }
  // Admission stopped (by the lock manager or the window) and is worth
  // resuming now.
  bool AdmissionWorthResuming() const {
    if (!admission_blocked_) return false;
    if (table_op_waiting_) return active_ == 0;  // the table operation may start
    return !table_op_running_ && lm_->CanAdmit() && admission_.WorthResuming(active_);
  }

  uint64_t active() const { return active_; }
  // The window, not the input or the lock manager, stops admission now.
  bool window_bound() const { return window_bound_; }
  const AdmissionController& admission() const { return admission_; }
  const LockManager& lock_manager() const { return *lm_; }
  // The staged allocator (null unless staged_alloc).
  const StagedStates* staged() const { return staged_.get(); }
  // True iff no txn is admitted and the lock manager is quiescent.
  bool IsQuiescent() const { return active_ == 0 && lm_->IsQuiescent(); }

 private:
  const pb::Txn* NextInput();
  bool InputAvailable();
  PartitionTxn* NewState(const pb::Txn* txn);

  const TxnExecutor* const exec_;
  MergedInput* const input_;
  CoreListener* const listener_;
  const std::unique_ptr<LockManager> lm_;
  std::vector<std::unique_ptr<PartitionTxn>> all_states_;  // pooled
  std::vector<PartitionTxn*> free_states_;
  std::unique_ptr<StagedStates> staged_;                   // staged_alloc
  uint64_t active_ = 0;
  AdmissionController admission_;
  AdmissionTrace* const trace_;  // may be null
  const uint32_t trace_partition_;
  bool input_idle_ = false;         // the last admission found no input
  // A table operation (PartitionTxn::table_op) is admitted alone: it waits
  // (in lookahead_) until every earlier txn is released, and nothing is
  // admitted while it runs.
  bool table_op_waiting_ = false;
  bool table_op_running_ = false;
  bool admission_blocked_ = false;  // admission waits for CanAdmit() or the window
  bool window_bound_ = false;
  uint64_t starved_seen_ = 0;       // starved_total at the last Adjust
  uint64_t released_ = 0;           // releases since the last Adjust
  SubBatchRef current_;             // the sub-batch being admitted
  size_t cursor_ = 0;
  // The next txn, taken from the input and given its state but not yet
  // admitted, so that its lock state loads while the one before it locks.
  PartitionTxn* lookahead_ = nullptr;
};

// Parked txns, and every remote read checked by a RemoteReadsGuard
// (remote_reads_guard.h: accepted once per reader, against the txn's read
// set; early ones held within the window and budget).
// Thread-safety: not thread-safe.
class RemoteReadsTable {
 public:
  explicit RemoteReadsTable(const RemoteReadsGuardOptions& guard) : guard_(std::in_place, guard) {}
  // Unchecked: every message counts for its txn (the simulation, whose
  // reads carry no keys; bench/sim.h). Never for input from peers.
  RemoteReadsTable() = default;
  // The lock side took st (OnTaken): if it executes here with remote reads,
  // they are checked against it from now on.
  void Expect(const PartitionTxn& st, uint64_t merged_epoch) {
    if (guard_ && st.executor && st.remote_expected > 0) guard_->Expect(*st.txn, merged_epoch);
  }
  // st, an executor just dispatched and missing remote reads, takes those
  // that arrived (and were accepted) before it. True if it now has them
  // all; else it is parked (WAITING) until OnRemoteReads completes it.
  // The messages taken are left in *spent, for the caller to free after it
  // unlocks.
  bool TakeEarlyOrPark(PartitionTxn* st, std::vector<pb::RemoteReads>* spent);
  // Another participant's reads, checked by the guard: added to their
  // parked txn, which is returned (marked resumed) if it is now complete;
  // kept by the guard if the txn is not parked yet. nullptr otherwise;
  // *verdict says why (a refusal is the caller's to log), *why the reason.
  // merged_epoch, clock_epoch: see RemoteReadsGuard::OnReads. Copies the
  // reads out of msg (TxnExecutor::AddRemote) or keeps msg; what is left is
  // the caller's to free (outside its lock).
  PartitionTxn* OnRemoteReads(pb::RemoteReads&& msg, uint64_t merged_epoch, uint64_t clock_epoch,
                              RemoteReadsGuard::Verdict* verdict, std::string* why);
  // Unchecked table only.
  PartitionTxn* OnRemoteReads(pb::RemoteReads&& msg) {
    RemoteReadsGuard::Verdict v;
    std::string why;
    return OnRemoteReads(std::move(msg), 0, 0, &v, &why);
  }
  size_t parked() const { return parked_.size(); }
  RemoteReadsStats stats() const { return guard_ ? guard_->stats() : RemoteReadsStats{}; }
  TxnId oldest_expected() const { return guard_ ? guard_->oldest_expected() : 0; }

 private:
  absl::flat_hash_map<TxnId, PartitionTxn*> parked_;
  std::optional<RemoteReadsGuard> guard_;                           // null: unchecked
  absl::flat_hash_map<TxnId, std::vector<pb::RemoteReads>> early_;  // unchecked only
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_SCHEDULER_CORE_H_
