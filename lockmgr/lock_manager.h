// The LockManager interface: what a partition's lock thread drives, and the
// per-transaction record (LockTxn) it drives it with. See docs/ARCHITECTURE.md
// and ../shared/design/LOCKING.md (section 1) for the model.
//
// Four implementations share this interface, selected by name at run time
// (NewLockManager): "det2pl" (Calvin's deterministic 2PL), "vll", "vll_sca"
// (VLL plus Selective Contention Analysis), "dclp" (dependence-cognizant
// locking) and the ablation "dclp_frag" (DCLP with fragmented storage only).
//
// Protocol (one partition, one lock thread):
//   while running:
//     for each txn the workers finished:  lm->Release(t, &ready)
//     lm->Poll(input_idle, &ready)          // VLL head rule, SCA; else no-op
//     while lm->CanAdmit() and a txn is available:
//       lm->Prefetch(the txn after next)    // optional hint
//       lm->Lock(next, &ready)
//     hand `ready` to the workers, in order
// Every txn handed out in `ready` holds all its local locks; it stays locked
// until Release. Locks are granted in the order of txn ids, so two conflicting
// txns run in id order (G1 of LOCKING.md).
//
// Thread-safety: a LockManager is NOT thread-safe. Exactly one thread (the
// partition's lock thread) calls it, and that thread alone touches the lock
// state, which is why no implementation needs a latch.
#ifndef DETDB_LOCKMGR_LOCK_MANAGER_H_
#define DETDB_LOCKMGR_LOCK_MANAGER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"

namespace detdb {

enum class LockMode : uint8_t { kShared = 0, kExclusive = 1 };

// Where a txn is in its life at one partition, as seen by the lock manager.
// The WAITING state of LOCKING.md 1.4 (waiting for remote reads) lives in the
// worker: to the lock manager a waiting txn is simply FREE until released.
enum class LockState : uint8_t { kIdle = 0, kBlocked, kFree };

struct LockTxn;

namespace lockmgr_internal {
struct SuccChunk;
// Lock-manager-private part of a LockTxn. Which fields a manager uses
// depends on the algorithm; all are reset by Lock().
struct TxnLockFields {
  void* requests = nullptr;        // normalised requests (manager's entry type)
  uint32_t num_requests = 0;
  int8_t size_class = 0;           // of `requests` in the manager's array pool
  LockState state = LockState::kIdle;
  int32_t pending = 0;             // det2pl: WaitCount; dclp: prednum
  uint32_t handle = 0;             // dclp: index in the manager's txn table
  LockTxn* prev = nullptr;         // vll: TxnQueue links
  LockTxn* next = nullptr;
  SuccChunk* succ_head = nullptr;  // dclp, dclp_frag: direct successors
  SuccChunk* succ_tail = nullptr;
};
}  // namespace lockmgr_internal

// One transaction as the lock manager of one partition sees it. The caller
// (the scheduler) owns the object; it must stay alive and unmoved from
// Lock() until Release() returns.
struct LockTxn {
  // Set by the caller before Lock().
  TxnId id = 0;
  // Local keys read and written (N1 of LOCKING.md: the caller filters out
  // keys of other partitions). Keys may repeat and a key may be in both
  // spans; the lock manager normalises (one request per lock slot, exclusive
  // if any key on the slot is written). Only read during Lock().
  std::span<const Key> reads;
  std::span<const Key> writes;
  // The caller's context; never touched by the lock manager.
  void* user = nullptr;

  // Owned by the lock manager between Lock() and Release(). Do not touch.
  lockmgr_internal::TxnLockFields lm;
};

// The most keys (reads + writes) one txn may bring to one lock manager.
inline constexpr size_t kMaxKeysPerTxn = size_t{1} << 20;

// Txns that became runnable, in the deterministic order of LOCKING.md N4.
using ReadyList = std::vector<LockTxn*>;

struct LockManagerOptions {
  // Number of hash locks (dclp, dclp_frag) or counter slots (vll, vll_sca).
  // Must be a power of two. Ignored by det2pl, which locks exact keys.
  uint32_t table_size = 1u << 20;
  // Admission bound on admitted, unreleased txns (Calvin's window; the
  // memory bound DCLP advises). 0 means unbounded.
  uint32_t max_active = 2000;
  // VLL: admission closes while this many txns are BLOCKED (Calvin's 20).
  uint32_t vll_blocked_threshold = 20;
  // SCA: bits in each of the DX/DS arrays (power of two). 1M as in Calvin.
  uint32_t sca_bits = 1u << 20;
  // SCA: stop at the first blocked txn that passes (the paper's variant)
  // instead of unblocking every passing txn in one pass.
  bool sca_first_hit = false;
  // SCA: also run when the input is idle and txns are blocked (LOCKING.md
  // 6.3c), not only when the blocked threshold is reached.
  bool sca_when_idle = false;
  // Run CheckInvariants() after every operation and CHECK-fail on a
  // violation. On by default in debug builds; costs O(active requests) per op.
#ifdef NDEBUG
  bool check_invariants = false;
#else
  bool check_invariants = true;
#endif
};

// Counters a lock manager keeps about itself.
struct LockStats {
  uint64_t admitted = 0;
  uint64_t released = 0;
  uint64_t blocked_at_admission = 0;  // admitted but not granted at once
  uint64_t active = 0;                // admitted, not yet released
  uint64_t peak_active = 0;
  uint64_t blocked = 0;               // currently blocked (VLL: blocked_count)
  uint64_t head_rule_grants = 0;      // VLL
  uint64_t sca_runs = 0;              // VLL+SCA
  uint64_t sca_grants = 0;
  uint64_t vt_scan_steps = 0;         // DCLP: ids looked at in VT successor lists
  size_t memory_bytes = 0;            // heap held by the lock state now
  size_t peak_memory_bytes = 0;
};

class LockManager {
 public:
  virtual ~LockManager() = default;

  // The name it was created with ("dclp", "det2pl", ...).
  virtual std::string_view name() const = 0;

  // Whether the next txn may be admitted (admission bounds, VLL threshold).
  virtual bool CanAdmit() const = 0;

  // Admits t: requests every local lock of t in one step. Appends t to
  // *ready iff every lock was granted at once; returns that.
  // REQUIRES: CanAdmit(); t->id greater than every id admitted before;
  //           t not admitted before; at most kMaxKeysPerTxn keys in all
  //           (callers reject larger txns before sequencing).
  virtual bool Lock(LockTxn* t, ReadyList* ready) = 0;

  // Optional hint, strictly a performance aid: t (its id and keys set) is
  // likely the next txn the caller passes to Lock. A manager may start
  // loading t's lock slots into the cache, so that those misses overlap the
  // caller's work on earlier txns instead of stalling the next Lock. Changes
  // no lock state; may be skipped, repeated, or followed by a different txn.
  // The default does nothing.
  virtual void Prefetch(const LockTxn& t) const { (void)t; }

  // Releases every lock of t (t finished at this partition, or is a passive
  // participant whose reads were sent) and appends the txns that became
  // runnable. After it returns the manager holds no reference to t.
  // REQUIRES: t was handed out as ready and not released since.
  virtual void Release(LockTxn* t, ReadyList* ready) = 0;

  // Work that is not triggered by a single Lock/Release: VLL's head rule and
  // SCA. Call it after releases and whenever the lock thread would idle.
  // input_idle: the caller has no txn to admit right now.
  virtual void Poll(bool input_idle, ReadyList* ready) = 0;

  // True iff nothing is admitted and every lock structure is empty (G5).
  virtual bool IsQuiescent() const = 0;

  // Verifies the algorithm's invariants of LOCKING.md (A1-A4, V1-V6, D1-D6)
  // against the admitted txns. Costs O(active requests).
  virtual absl::Status CheckInvariants() const = 0;

  virtual LockStats stats() const = 0;
};

// The lock managers NewLockManager accepts, in the order benchmarks list them.
const std::vector<std::string>& LockManagerNames();

// Creates the lock manager called `name`. Returns InvalidArgument for an
// unknown name or bad options.
absl::StatusOr<std::unique_ptr<LockManager>> NewLockManager(std::string_view name,
                                                            const LockManagerOptions& options);

// Parses "a,b,c" or "all" into lock manager names, each checked.
absl::StatusOr<std::vector<std::string>> ParseLockManagerList(std::string_view list);

}  // namespace detdb

#endif  // DETDB_LOCKMGR_LOCK_MANAGER_H_
