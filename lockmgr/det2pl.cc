// Calvin deterministic 2PL (LOCKING.md 2.1-2.7). See det2pl.h.
#include "lockmgr/det2pl.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "lockmgr/lock_manager_common.h"
#include "lockmgr/normalize.h"

namespace detdb {
namespace {

using lockmgr_internal::LockManagerCommon;
using lockmgr_internal::RequestStore;

struct KeyQueue;

// A txn's request on one key; also the node of that key's queue.
struct KeyRequest {
  Key key;
  LockMode mode;
  LockTxn* txn;
  KeyRequest* prev;
  KeyRequest* next;
  KeyQueue* queue;  // null: skipped by the duplicate guard
};

struct KeyQueue {
  KeyRequest* head = nullptr;
  KeyRequest* tail = nullptr;
  uint32_t x_count = 0;  // exclusive requests in the queue
};

class Det2plLockManager final : public LockManagerCommon {
 public:
  explicit Det2plLockManager(const LockManagerOptions& o) : LockManagerCommon("det2pl", o) {
    queues_.reserve(o.max_active != 0 ? size_t{o.max_active} * 8 : 4096);
  }

  bool CanAdmit() const override { return ActiveBelowBound(); }

  bool Lock(LockTxn* t, ReadyList* ready) override {
    const uint32_t num_x =
        NormalizeRequests(t->reads, t->writes, [](Key k) { return k; }, &scratch_);
    (void)num_x;
    const uint32_t n = static_cast<uint32_t>(scratch_.size());
    KeyRequest* req = requests_.Allocate(t, n);
    int32_t miss = 0;
    for (uint32_t i = 0; i < n; ++i) {  // 2.2: X requests first, then S
      KeyRequest* r = &req[i];
      *r = {scratch_[i].slot, scratch_[i].mode, t, nullptr, nullptr, nullptr};
      auto [it, inserted] = queues_.try_emplace(r->key, nullptr);
      if (inserted) it->second = queue_pool_.New();
      KeyQueue* q = it->second;
      if (q->tail != nullptr && q->tail->txn == t) continue;  // duplicate guard (2.7)
      const bool had_x = q->x_count > 0;
      const bool nonempty = q->head != nullptr;
      r->queue = q;
      r->prev = q->tail;
      (q->tail != nullptr ? q->tail->next : q->head) = r;
      q->tail = r;
      if (r->mode == LockMode::kExclusive) {
        ++q->x_count;
        miss += nonempty;
      } else {
        miss += had_x;
      }
    }
    t->lm.pending = miss;
    return FinishLock(t, miss == 0, ready);
  }

  // Also valid as the cancellation of a txn still blocked (2.3).
  void Release(LockTxn* t, ReadyList* ready) override {
    if (t->lm.state == LockState::kBlocked) --stats_.blocked;
    for (KeyRequest& r : RequestStore<KeyRequest>::Of(t)) {
      KeyQueue* q = r.queue;
      if (q == nullptr) continue;
      KeyRequest* nxt = r.next;
      KeyRequest* grant_from = nullptr;  // newly = Granted(Q - T) - Granted(Q)
      bool grant_run = false;
      if (nxt != nullptr) {
        if (&r == q->head && (r.mode == LockMode::kExclusive || nxt->mode == LockMode::kExclusive)) {
          grant_from = nxt;
          grant_run = nxt->mode == LockMode::kShared;
        } else if (r.mode == LockMode::kExclusive && nxt->mode == LockMode::kShared &&
                   !HasExclusiveBefore(&r)) {
          grant_from = nxt;  // cancelling an ungranted X that waited behind readers
          grant_run = true;
        }
      }
      (r.prev != nullptr ? r.prev->next : q->head) = r.next;
      (r.next != nullptr ? r.next->prev : q->tail) = r.prev;
      if (r.mode == LockMode::kExclusive) --q->x_count;
      if (q->head == nullptr) {
        queues_.erase(r.key);
        queue_pool_.Delete(q);
      }
      if (grant_from != nullptr && !grant_run) {
        ReleaseUnit(grant_from->txn, ready);
      } else if (grant_run) {
        for (KeyRequest* x = grant_from; x != nullptr && x->mode == LockMode::kShared; x = x->next)
          ReleaseUnit(x->txn, ready);
      }
    }
    FinishRelease(t, &requests_);
  }

  void Poll(bool, ReadyList*) override {}

  bool IsQuiescent() const override {
    return queues_.empty() && StatsQuiescent() && queue_pool_.live() == 0 && requests_.bytes_live() == 0;
  }

  absl::Status CheckInvariants() const override {
    absl::flat_hash_map<const LockTxn*, int32_t> ungranted;
    absl::flat_hash_set<const LockTxn*> seen;
    uint64_t requests = 0;
    for (const auto& [key, q] : queues_) {
      if (q->head == nullptr) return absl::InternalError(absl::StrCat("A4: empty queue for key ", key));
      uint32_t x = 0;
      bool x_before = false;
      const KeyRequest* prev = nullptr;
      for (const KeyRequest* r = q->head; r != nullptr; prev = r, r = r->next) {
        if (r->key != key || r->queue != q || r->prev != prev)
          return absl::InternalError(absl::StrCat("queue links broken at key ", key));
        if (prev != nullptr && prev->txn->id >= r->txn->id)
          return absl::InternalError(absl::StrCat("A1: queue of key ", key, " not in id order"));
        // Grant rule: a writer at the head; a reader with no writer before it.
        const bool granted = r->mode == LockMode::kExclusive ? r == q->head : !x_before;
        if (!granted) ++ungranted[r->txn];
        if (r->mode == LockMode::kExclusive) {
          ++x;
          x_before = true;
        }
        seen.insert(r->txn);
        ++requests;
      }
      if (x != q->x_count) return absl::InternalError(absl::StrCat("queue of key ", key, " X count"));
    }
    uint64_t blocked = 0;
    for (const LockTxn* t : seen) {
      const int32_t want = ungranted.contains(t) ? ungranted.at(t) : 0;
      if (t->lm.pending != want)
        return absl::InternalError(absl::StrCat("A2: txn ", t->id, " WaitCount ", t->lm.pending,
                                                " expected ", want));
      if ((t->lm.state == LockState::kFree) != (want == 0))
        return absl::InternalError(absl::StrCat("A3: txn ", t->id, " ready state is wrong"));
      blocked += want != 0;
    }
    if (blocked != stats_.blocked)
      return absl::InternalError(absl::StrCat("blocked count ", stats_.blocked, " expected ", blocked));
    if (seen.size() > stats_.active)
      return absl::InternalError("more txns in queues than admitted");
    return absl::OkStatus();
  }

 protected:
  size_t MemoryBytes() const override {
    return queue_pool_.bytes_reserved() + requests_.bytes_reserved() +
           queues_.capacity() * (sizeof(std::pair<Key, KeyQueue*>) + 1) +
           scratch_.capacity() * sizeof(NormRequest);
  }

 private:
  static bool HasExclusiveBefore(const KeyRequest* r) {
    for (const KeyRequest* p = r->prev; p != nullptr; p = p->prev)
      if (p->mode == LockMode::kExclusive) return true;
    return false;
  }

  absl::flat_hash_map<Key, KeyQueue*> queues_;  // created on first use, erased when empty
  StagedPool<KeyQueue> queue_pool_{4096};
  RequestStore<KeyRequest> requests_;
  std::vector<NormRequest> scratch_;
};

}  // namespace

std::unique_ptr<LockManager> NewDet2plLockManager(const LockManagerOptions& options) {
  return std::make_unique<Det2plLockManager>(options);
}

}  // namespace detdb
