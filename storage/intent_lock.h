// Hierarchical intent locks for whole-table physical operations (seed 000,
// section 3; seed 004). docs/STORAGE.md, "Intent locks".
//
// One IntentLockTable per partition holds a two-level hierarchy: lock 0 is
// the partition, lock 1 + t is table t. A worker takes IS (it reads) or IX
// (it writes) on the partition and on every table a txn touches; a
// whole-table operation takes an absolute lock: a scan S on its table, a
// truncate or bulk load X on its table (with IX on the partition), a
// checkpoint capture S on the partition. Deterministic execution already
// orders txns by their record locks (lockmgr/); these locks only keep
// physical operations on a whole table (a scan, a truncate, a bulk load's
// rehash) apart from the workers that read and write its records.
//
//   auto locks = IntentLockTable::Create({.kind = IntentLockKind::kLil});
//   auto me = locks->NewAgent();              // one per thread
//   me->Acquire(IntentLockTable::kPartitionLock, IntentMode::kIX);
//   me->Acquire(IntentLockTable::TableLock(3), IntentMode::kIX);
//   ... write records of table 3 ...
//   me->EndTxn();                             // between txns: cheap
//   me->ReleaseAll();                         // before sleeping
//
// Three implementations behind one interface (IntentLockOptions::kind):
//  - kQueue: a lock head per lock with a mutex and a queue of requests; every
//    txn enqueues and dequeues (Gray's hierarchical locking, the baseline).
//  - kSli: the same queues with speculative lock inheritance (seed 004): at
//    the end of a txn an agent keeps its intent requests in the queue marked
//    inherited; its next txn reclaims one with a compare-and-swap, no mutex.
//    An absolute request invalidates inherited requests (CAS) and unlinks
//    them; their owner requests again through the mutex.
//  - kLil: lightweight intent locks (seed 000): per lock a few counters
//    (granted per mode, waiting absolute requests per mode, a version) under
//    a spin latch, no queues. Agents keep (cache) their intent locks across
//    txns, so the common case (the agent holds what it needs) reads and
//    writes only the agent's own memory. An absolute request that conflicts
//    only with cached intents posts itself (waiting counts and a revocation
//    signal); every agent looks at the signal (one load of a line that only
//    absolute requests write) at the end of each txn and then gives back
//    the cached intents that block it; an agent that goes to sleep gives
//    back everything (ReleaseAll).
//
// Policy (the same in all three; the differential test checks it): a
// request of mode m by agent a on lock L, held by a in mode h (or none),
// asks for want = sup(h, m) and is granted iff want is compatible with
// every mode granted to other agents on L and, if want is an intent mode
// (IS, IX), with every absolute request (S, SIX, X) of another agent
// waiting on L (absolute requests are not starved by a stream of intents).
// Intent locks cached by LIL agents and inherited by SLI agents count as
// granted until revoked or invalidated; ServeRevocations() makes an agent
// give back the ones not in use by its current txn (and downgrade one its
// txn reclaimed in a stronger mode than it asked for), which is what every
// agent does at its next txn boundary.
//
// Deadlocks. Intent modes are compatible with each other, so every wait
// involves an absolute request. The rules that keep waits finite:
//  - an agent that waits first gives back every lock it holds but does not
//    use in its current txn (cached or inherited ones);
//  - within a txn, an agent acquires the locks it may wait for in
//    increasing lock id (the partition first, then its tables by id):
//    workers take a step's locks at once at its start (IX where it writes
//    a declared key); IS taken later by covered or replicated reads waits
//    only for X, which table operations take with no txn of the partition
//    in flight; IX for covered keys' tables, known only once the procedure
//    ran, comes after (the one exception: with two scans of two tables at
//    once a cycle is possible, and a scan's deadline breaks it);
//  - absolute requests other than a sequenced table operation have
//    deadlines (AcquireUntil), as in the paper.
//
// Thread-safety: IntentLockTable is thread-safe. An IntentAgent belongs to
// one thread at a time. REQUIRES: every agent is destroyed before its table.
#ifndef DETDB_STORAGE_INTENT_LOCK_H_
#define DETDB_STORAGE_INTENT_LOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace detdb {

enum class IntentMode : uint8_t { kNone = 0, kIS, kIX, kS, kSIX, kX };
inline constexpr int kIntentModes = 6;

// Gray's compatibility matrix (seed 000, Table 4); kNone is compatible with
// everything.
bool Compatible(IntentMode a, IntentMode b);
// The weakest mode at least as strong as both (IX + S = SIX).
IntentMode Supremum(IntentMode a, IntentMode b);
inline bool IsAbsolute(IntentMode m) { return m == IntentMode::kS || m == IntentMode::kSIX || m == IntentMode::kX; }
const char* IntentModeName(IntentMode m);

namespace intent_internal {
// Covers(held, want): holding `held` grants `want` (sup(held, want) == held);
// kSup: Supremum. Tables, so that the agents' fast path is a few loads.
extern const bool kCovers[kIntentModes][kIntentModes];
extern const IntentMode kSup[kIntentModes][kIntentModes];
}  // namespace intent_internal
inline bool Covers(IntentMode held, IntentMode want) {
  return intent_internal::kCovers[static_cast<int>(held)][static_cast<int>(want)];
}

enum class IntentLockKind : uint8_t { kQueue, kSli, kLil };
// "queue", "sli", "lil".
absl::StatusOr<IntentLockKind> ParseIntentLockKind(std::string_view name);
const char* IntentLockKindName(IntentLockKind kind);

struct IntentLockOptions {
  IntentLockKind kind = IntentLockKind::kLil;
  // Lock ids are 0 .. locks - 1. The default holds a partition and its 256
  // possible tables.
  uint32_t locks = 257;
};

// What a lock table has done (slow paths only; the fast path counts nothing).
struct IntentLockStats {
  uint64_t slow_acquires = 0;  // requests that went to the shared state
  uint64_t absolute_grants = 0;
  uint64_t waits = 0;          // times a request waited (blocking calls)
  uint64_t revoked = 0;        // LIL: cached intents given back for an absolute request
  uint64_t invalidated = 0;    // SLI: inherited requests invalidated by an absolute request
  uint64_t reclaimed = 0;      // SLI: inherited requests taken over by the next txn
};

class IntentAgent;

class IntentLockTable {
 public:
  static constexpr uint32_t kPartitionLock = 0;
  static constexpr uint32_t TableLock(uint32_t table_id) { return 1 + table_id; }

  // REQUIRES: options.locks >= 1.
  static std::unique_ptr<IntentLockTable> Create(const IntentLockOptions& options);
  virtual ~IntentLockTable() = default;
  IntentLockTable(const IntentLockTable&) = delete;
  IntentLockTable& operator=(const IntentLockTable&) = delete;

  // A new agent (a thread's view of the table: what it holds and caches).
  virtual std::unique_ptr<IntentAgent> NewAgent() = 0;
  virtual IntentLockStats stats() const = 0;

  IntentLockKind kind() const { return options_.kind; }
  uint32_t locks() const { return options_.locks; }

 protected:
  explicit IntentLockTable(const IntentLockOptions& options) : options_(options) {}
  const IntentLockOptions options_;
};

// One thread's locks. Everything between two EndTxn() calls is one txn (for
// a worker: one step of a txn, which ends wherever the txn leaves the
// worker, e.g. parked for remote reads).
class IntentAgent {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~IntentAgent() = default;
  IntentAgent(const IntentAgent&) = delete;
  IntentAgent& operator=(const IntentAgent&) = delete;

  // Acquires `mode` on `lock` for the current txn, waiting as long as it
  // takes. For workers (intent modes) and sequenced table operations.
  void Acquire(uint32_t lock, IntentMode mode) {
    if (Hit(lock, mode)) [[likely]]
      return;
    (void)AcquireSlow(lock, mode, Clock::time_point::max());
  }
  // The same with a deadline: DeadlineExceeded (holding nothing more than
  // before) if it is not granted by then.
  absl::Status AcquireUntil(uint32_t lock, IntentMode mode, Clock::time_point deadline) {
    if (Hit(lock, mode)) return absl::OkStatus();
    return AcquireSlow(lock, mode, deadline);
  }
  // Never waits: true if granted. Otherwise the request stays posted as
  // waiting (an absolute one then holds intents back and asks for
  // revocations) until the agent calls TryAcquire again with the same lock
  // and mode, or Cancel(lock). One posted request per agent at a time.
  // For tests (the differential driver) and benchmarks.
  bool TryAcquire(uint32_t lock, IntentMode mode);
  void Cancel(uint32_t lock) { CancelImpl(lock); }

  // Ends the current txn. Absolute locks are released by all three. LIL
  // keeps its intent locks (cached) and gives back the ones an absolute
  // request waits for; SLI keeps them (inherited) unless someone waits for
  // them; the queue releases everything.
  void EndTxn() {
    ++txn_;
    if (revoke_signal_ != nullptr && !holds_absolute_ && revoke_signal_->load(std::memory_order_acquire) == 0)
        [[likely]]
      return;
    EndTxnSlow();
  }
  // Gives back every lock, cached and inherited ones too (before the thread
  // sleeps: nobody waits for an idle agent). REQUIRES: between txns.
  virtual void ReleaseAll() = 0;
  // Gives back the locks this agent holds but does not use in its current
  // txn that an absolute request waits for. Agents do it at every EndTxn and
  // before they wait; tests call it to play an agent reaching a boundary.
  virtual void ServeRevocations() = 0;

  // The mode this agent holds on lock (in use or cached; inherited SLI
  // requests do not count), and the mode its current txn asked for there
  // (the supremum of its requests; kNone if it asked for none).
  IntentMode held(uint32_t lock) const { return entries_[lock].mode; }
  IntentMode used(uint32_t lock) const {
    const Entry& e = entries_[lock];
    return e.mode != IntentMode::kNone && e.txn == txn_ ? e.used : IntentMode::kNone;
  }

 protected:
  struct Entry {
    uint64_t txn = 0;                // the txn that last used the lock (== txn_: in use)
    IntentMode mode = IntentMode::kNone;  // held
    IntentMode used = IntentMode::kNone;  // asked for by txn `txn` (<= mode; less only for a LIL cache hit)
  };
  // The fast path: the agent holds what is asked for, for this txn (or, if
  // it keeps locks across txns, from an earlier one).
  bool Hit(uint32_t lock, IntentMode mode) {
    Entry& e = entries_[lock];
    if (!Covers(e.mode, mode) || (!keeps_ && e.txn != txn_)) return false;
    e.used = e.txn == txn_ ? intent_internal::kSup[static_cast<int>(e.used)][static_cast<int>(mode)] : mode;
    e.txn = txn_;
    return true;
  }
  // keeps: locks held stay usable by later txns without a slow call (LIL).
  // revoke_signal: LIL's revocation signal (nonzero while an absolute
  // request waits), read at EndTxn; null: EndTxn always calls EndTxnSlow.
  IntentAgent(uint32_t locks, bool keeps, const std::atomic<uint32_t>* revoke_signal)
      : keeps_(keeps), revoke_signal_(revoke_signal), entries_(locks) {}

  // One attempt: grants and returns true, or posts the request as waiting.
  virtual bool TryAcquireImpl(uint32_t lock, IntentMode mode) = 0;
  virtual void CancelImpl(uint32_t lock) = 0;
  // Sleeps until something on lock changed or `until` (at most ~1 ms: the
  // paper's periodic recheck, so a missed wake-up costs no more).
  virtual void WaitForChange(uint32_t lock, uint64_t seen_version, Clock::time_point until) = 0;
  virtual uint64_t Version(uint32_t lock) const = 0;
  virtual void EndTxnSlow() = 0;
  // Before waiting: gives back what this agent holds but its txn does not
  // use (the deadlock rule in the file comment).
  virtual void DropUnused() = 0;
  virtual void CountWait() = 0;

  const bool keeps_;
  const std::atomic<uint32_t>* const revoke_signal_;
  bool holds_absolute_ = false;  // an absolute lock was granted since the last EndTxnSlow (never cached)
  uint64_t txn_ = 1;
  std::vector<Entry> entries_;

 private:
  absl::Status AcquireSlow(uint32_t lock, IntentMode mode, Clock::time_point deadline);
};

namespace intent_internal {
// The queue implementations (intent_lock_queue.cc); inherit: SLI.
std::unique_ptr<IntentLockTable> NewQueueIntentLocks(const IntentLockOptions& options, bool inherit);
}  // namespace intent_internal

}  // namespace detdb

#endif  // DETDB_STORAGE_INTENT_LOCK_H_
