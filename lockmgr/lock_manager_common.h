// Pieces every lock manager implementation shares: the pooled store of
// normalised per-txn requests and the bookkeeping behind LockStats.
//
// Thread-safety: none; owned by one lock manager.
#ifndef DETDB_LOCKMGR_LOCK_MANAGER_COMMON_H_
#define DETDB_LOCKMGR_LOCK_MANAGER_COMMON_H_

#include <algorithm>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "common/staged_pool.h"
#include "glog/logging.h"
#include "lockmgr/lock_manager.h"

namespace detdb {
namespace lockmgr_internal {

// Per-txn arrays of a manager's request entry type, kept in LockTxn::lm.
template <typename Request>
class RequestStore {
 public:
  Request* Allocate(LockTxn* t, uint32_t n) {
    int size_class;
    Request* r = pool_.Allocate(n, &size_class);
    t->lm.requests = r;
    t->lm.num_requests = n;
    t->lm.size_class = static_cast<int8_t>(size_class);
    return r;
  }
  // Keeps the first n of t's requests (an array allocated for an upper
  // bound, then filled). REQUIRES: n <= the size passed to Allocate.
  static void Truncate(LockTxn* t, uint32_t n) {
    DCHECK_LE(n, t->lm.num_requests);
    t->lm.num_requests = n;
  }
  void Free(LockTxn* t) {
    pool_.Free(static_cast<Request*>(t->lm.requests), t->lm.size_class);
    t->lm.requests = nullptr;
    t->lm.num_requests = 0;
  }
  static std::span<Request> Of(const LockTxn* t) {
    return {static_cast<Request*>(t->lm.requests), t->lm.num_requests};
  }
  size_t bytes_reserved() const { return pool_.bytes_reserved(); }
  // Bytes of arrays handed out and not freed: 0 when no txn is admitted.
  size_t bytes_live() const { return pool_.bytes_live(); }

 private:
  StagedArrayPool<Request> pool_;
};

// CheckInvariants() scans a whole slot table for stray state (a busy slot no
// admitted txn requests) when it has at most this many slots; larger tables
// are checked on the slots of admitted txns, and by IsQuiescent() at the end.
inline constexpr size_t kFullScanSlots = size_t{1} << 16;

// Stats bookkeeping and the debug invariant hook.
class LockManagerCommon : public LockManager {
 public:
  LockManagerCommon(std::string name, const LockManagerOptions& options)
      : name_(std::move(name)), options_(options) {}

  std::string_view name() const override { return name_; }
  LockStats stats() const override {
    LockStats s = stats_;
    s.memory_bytes = MemoryBytes();
    s.peak_memory_bytes = std::max(peak_memory_, s.memory_bytes);
    return s;
  }

 protected:
  // Heap bytes held by the lock state (tables, pools, maps).
  virtual size_t MemoryBytes() const = 0;

  // The part of IsQuiescent() every manager shares.
  bool StatsQuiescent() const { return stats_.active == 0 && stats_.blocked == 0; }

  bool ActiveBelowBound() const {
    return options_.max_active == 0 || stats_.active < options_.max_active;
  }
  void NoteAdmitted(bool granted) {
    ++stats_.admitted;
    ++stats_.active;
    if (!granted) ++stats_.blocked_at_admission;
    if (stats_.active > stats_.peak_active) {
      stats_.peak_active = stats_.active;
      // Memory only grows with the number of active txns; sample it there.
      peak_memory_ = std::max(peak_memory_, MemoryBytes());
    }
  }
  void NoteReleased() {
    ++stats_.released;
    --stats_.active;
  }
  // Ends Lock(): records t's state, hands it out if every lock was granted,
  // and returns `granted`.
  bool FinishLock(LockTxn* t, bool granted, ReadyList* ready) {
    t->lm.state = granted ? LockState::kFree : LockState::kBlocked;
    if (granted) {
      ready->push_back(t);
    } else {
      ++stats_.blocked;
    }
    NoteAdmitted(granted);
    MaybeCheckInvariants("Lock");
    return granted;
  }
  // One predecessor unit (wait count) of u is released; u runs when none is left.
  void ReleaseUnit(LockTxn* u, ReadyList* ready) {
    DCHECK_GT(u->lm.pending, 0);
    if (--u->lm.pending == 0) {
      u->lm.state = LockState::kFree;
      --stats_.blocked;
      ready->push_back(u);
    }
  }
  // Ends Release(): t holds nothing any more.
  template <typename Store>
  void FinishRelease(LockTxn* t, Store* requests) {
    requests->Free(t);
    t->lm.state = LockState::kIdle;
    NoteReleased();
    MaybeCheckInvariants("Release");
  }

  // Called at the end of every public operation.
  void MaybeCheckInvariants(const char* op) const {
    if (!options_.check_invariants) return;
    absl::Status s = CheckInvariants();
    CHECK(s.ok()) << name_ << " after " << op << ": " << s;
  }

  const std::string name_;
  const LockManagerOptions options_;
  LockStats stats_;
  size_t peak_memory_ = 0;
};

}  // namespace lockmgr_internal
}  // namespace detdb

#endif  // DETDB_LOCKMGR_LOCK_MANAGER_COMMON_H_
