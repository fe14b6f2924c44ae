// DCLP variant F, fragmented storage only (LOCKING.md 5.2). See dclp.h.
//
// Each hash lock keeps its request list in the regular form `W? R*`: an
// optional writer head and the readers after it. The readers are an
// intrusive list threaded through the txns' own request entries, so neither
// acquire nor release allocates. A write acquire makes every current entry a
// predecessor and compresses the list to itself.
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "lockmgr/dclp.h"
#include "lockmgr/dclp_check.h"
#include "lockmgr/lock_manager_common.h"
#include "lockmgr/normalize.h"
#include "lockmgr/txn_lists.h"

namespace detdb {
namespace {

using lockmgr_internal::LockManagerCommon;
using lockmgr_internal::RequestStore;
using lockmgr_internal::SuccLists;

struct FragRequest {
  uint32_t slot;
  LockMode mode;
  bool linked;  // S only: still in its lock's reader list
  LockTxn* txn;
  FragRequest* prev;
  FragRequest* next;
};

struct FragLock {
  LockTxn* writer = nullptr;       // head W of the list, if any
  FragRequest* rhead = nullptr;    // the R* part
  FragRequest* rtail = nullptr;
};

class DclpFragLockManager final : public LockManagerCommon {
 public:
  explicit DclpFragLockManager(const LockManagerOptions& o)
      : LockManagerCommon("dclp_frag", o), mask_(o.table_size - 1), locks_(o.table_size) {}

  bool CanAdmit() const override { return ActiveBelowBound(); }

  bool Lock(LockTxn* t, ReadyList* ready) override {
    const uint32_t num_x = NormalizeRequests(t->reads, t->writes, [this](Key k) {
      const uint64_t s = Mix64(k) & mask_;
      __builtin_prefetch(&locks_[s], 1);
      return s;
    }, &scratch_);
    const uint32_t n = static_cast<uint32_t>(scratch_.size());
    FragRequest* req = requests_.Allocate(t, n);
    t->lm.succ_head = t->lm.succ_tail = nullptr;
    int32_t pred = 0;
    for (uint32_t i = 0; i < num_x; ++i) {  // Algorithm 2, writes
      const uint32_t s = static_cast<uint32_t>(scratch_[i].slot);
      req[i] = {s, LockMode::kExclusive, false, t, nullptr, nullptr};
      FragLock& L = locks_[s];
      if (L.writer == t) continue;
      if (L.writer != nullptr) {
        succ_.Append(L.writer, t);
        ++pred;
      }
      for (FragRequest* r = L.rhead; r != nullptr; r = r->next) {  // every reader
        succ_.Append(r->txn, t);
        ++pred;
        r->linked = false;
      }
      L.rhead = L.rtail = nullptr;  // the write compresses the list
      L.writer = t;
    }
    for (uint32_t i = num_x; i < n; ++i) {  // reads
      const uint32_t s = static_cast<uint32_t>(scratch_[i].slot);
      FragRequest* r = &req[i];
      *r = {s, LockMode::kShared, true, t, nullptr, nullptr};
      FragLock& L = locks_[s];
      if (L.writer == t) {
        r->linked = false;
        continue;
      }
      if (L.writer != nullptr) {
        succ_.Append(L.writer, t);
        ++pred;
      }
      r->prev = L.rtail;
      if (L.rtail != nullptr) {
        L.rtail->next = r;
      } else {
        L.rhead = r;
      }
      L.rtail = r;
    }
    t->lm.pending = pred;
    t->lm.prev = active_tail_;  // active list, for CheckInvariants
    t->lm.next = nullptr;
    (active_tail_ != nullptr ? active_tail_->lm.next : active_head_) = t;
    active_tail_ = t;
    return FinishLock(t, pred == 0, ready);
  }

  void Release(LockTxn* t, ReadyList* ready) override {
    for (FragRequest& r : RequestStore<FragRequest>::Of(t)) {  // Algorithm 1
      FragLock& L = locks_[r.slot];
      if (r.mode == LockMode::kExclusive) {
        if (L.writer == t) L.writer = nullptr;  // remaining readers now hold it
      } else if (r.linked) {  // else a later writer compressed the list
        (r.prev != nullptr ? r.prev->next : L.rhead) = r.next;
        (r.next != nullptr ? r.next->prev : L.rtail) = r.prev;
        r.linked = false;
      }
    }
    succ_.Drain(t, [&](LockTxn* u) { ReleaseUnit(u, ready); });
    (t->lm.prev != nullptr ? t->lm.prev->lm.next : active_head_) = t->lm.next;
    (t->lm.next != nullptr ? t->lm.next->lm.prev : active_tail_) = t->lm.prev;
    t->lm.prev = t->lm.next = nullptr;
    FinishRelease(t, &requests_);
  }

  void Poll(bool, ReadyList*) override {}

  bool IsQuiescent() const override {
    if (!StatsQuiescent() || requests_.bytes_live() != 0 || succ_.live_chunks() != 0) return false;
    for (const FragLock& L : locks_)
      if (L.writer != nullptr || L.rhead != nullptr || L.rtail != nullptr) return false;
    return true;
  }

  absl::Status CheckInvariants() const override {
    std::vector<const LockTxn*> active;
    for (const LockTxn* t = active_head_; t != nullptr; t = t->lm.next) active.push_back(t);
    if (active.size() != stats_.active) return absl::InternalError("active list length != active txns");
    lockmgr_internal::DependencyCheck check(std::move(active));
    for (const LockTxn* t : check.txns())
      for (const FragRequest& r : RequestStore<FragRequest>::Of(t)) check.AddRequest(t, r.slot, r.mode);
    uint64_t blocked = 0;
    absl::Status s = check.Run(
        /*vt_folds_reads=*/false,
        [&](const lockmgr_internal::SlotExpectation& e) -> absl::Status {
          const FragLock& L = locks_[e.slot];
          if (L.writer != e.last_x)
            return absl::InternalError(absl::StrCat("frag: slot ", e.slot, " writer head is wrong"));
          size_t i = 0;
          for (const FragRequest* r = L.rhead; r != nullptr; r = r->next, ++i)
            if (i >= e.reads_after.size() || r->txn != e.reads_after[i] || !r->linked)
              return absl::InternalError(absl::StrCat("frag: slot ", e.slot, " reader list is wrong"));
          if (i != e.reads_after.size())
            return absl::InternalError(absl::StrCat("frag: slot ", e.slot, " reader list is short"));
          return absl::OkStatus();
        },
        &blocked);
    if (!s.ok()) return s;
    if (blocked != stats_.blocked)
      return absl::InternalError(absl::StrCat("blocked count ", stats_.blocked, " expected ", blocked));
    if (locks_.size() <= lockmgr_internal::kFullScanSlots) {
      for (size_t slot = 0; slot < locks_.size(); ++slot) {
        const FragLock& L = locks_[slot];
        if ((L.writer != nullptr || L.rhead != nullptr) && !check.HasSlot(slot))
          return absl::InternalError(absl::StrCat("frag: slot ", slot, " busy without requests"));
      }
    }
    return absl::OkStatus();
  }

 protected:
  size_t MemoryBytes() const override {
    return locks_.size() * sizeof(FragLock) + requests_.bytes_reserved() + succ_.bytes_reserved() +
           scratch_.capacity() * sizeof(NormRequest);
  }

 private:
  const uint64_t mask_;
  std::vector<FragLock> locks_;
  SuccLists succ_;
  RequestStore<FragRequest> requests_;
  std::vector<NormRequest> scratch_;
  // Admitted, unreleased txns in id order, linked through LockTxn::lm.prev/
  // next; only CheckInvariants reads it (fragmented storage needs no map).
  LockTxn* active_head_ = nullptr;
  LockTxn* active_tail_ = nullptr;
};

}  // namespace

std::unique_ptr<LockManager> NewDclpFragLockManager(const LockManagerOptions& options) {
  return std::make_unique<DclpFragLockManager>(options);
}

}  // namespace detdb
