// Pooled lists used by the DCLP lock managers: a txn's direct-successor list
// (pointers) and a virtual transaction's successor list (TxnRefs). Both live in
// 64-byte chunks from a StagedPool, so appending never calls the heap in the
// steady state (seed 003's staged allocation).
//
// Thread-safety: none; owned by one lock manager (one lock thread).
#ifndef DETDB_LOCKMGR_TXN_LISTS_H_
#define DETDB_LOCKMGR_TXN_LISTS_H_

#include <cstdint>

#include "common/staged_pool.h"
#include "glog/logging.h"
#include "lockmgr/lock_manager.h"

namespace detdb {
namespace lockmgr_internal {

struct SuccChunk {
  static constexpr uint32_t kCap = 6;
  LockTxn* items[kCap];
  uint32_t n = 0;
  SuccChunk* next = nullptr;
};

// Successor lists stored in LockTxn::lm.succ_head/succ_tail.
class SuccLists {
 public:
  void Append(LockTxn* owner, LockTxn* succ) {
    auto& f = owner->lm;
    if (f.succ_tail == nullptr || f.succ_tail->n == SuccChunk::kCap) {
      SuccChunk* c = pool_.New();
      if (f.succ_tail == nullptr) {
        f.succ_head = c;
      } else {
        f.succ_tail->next = c;
      }
      f.succ_tail = c;
    }
    f.succ_tail->items[f.succ_tail->n++] = succ;
  }

  // Calls fn(successor) for each successor of owner in append order, then
  // frees the list.
  template <typename Fn>
  void Drain(LockTxn* owner, Fn&& fn) {
    SuccChunk* c = owner->lm.succ_head;
    while (c != nullptr) {
      for (uint32_t i = 0; i < c->n; ++i) fn(c->items[i]);
      SuccChunk* next = c->next;
      pool_.Delete(c);
      c = next;
    }
    owner->lm.succ_head = owner->lm.succ_tail = nullptr;
  }

  template <typename Fn>
  static void ForEach(const LockTxn* owner, Fn&& fn) {
    for (const SuccChunk* c = owner->lm.succ_head; c != nullptr; c = c->next)
      for (uint32_t i = 0; i < c->n; ++i) fn(c->items[i]);
  }

  size_t bytes_reserved() const { return pool_.bytes_reserved(); }
  size_t live_chunks() const { return pool_.live(); }

 private:
  StagedPool<SuccChunk> pool_{1024};
};

// A reference to an admitted txn that outlives it safely: the txn's id and
// the handle (index in the manager's txn table) it was admitted under. The
// txn is still active iff the table entry at `handle` still holds `id`.
struct TxnRef {
  TxnId id;
  uint32_t handle;
};

struct RefChunk {
  static constexpr uint32_t kCap = 4;  // 64 bytes in all
  TxnId ids[kCap];
  uint32_t handles[kCap];
  uint32_t begin = 0, end = 0;
  RefChunk* next = nullptr;
};

// A FIFO of TxnRefs in pooled chunks. The pool is shared by every queue of
// one lock manager and passed to each call.
class RefQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  // REQUIRES: !empty()
  TxnRef front() const { return {head_->ids[head_->begin], head_->handles[head_->begin]}; }

  void push_back(TxnRef r, StagedPool<RefChunk>* pool) {
    if (tail_ == nullptr || tail_->end == RefChunk::kCap) {
      RefChunk* c = pool->New();
      if (tail_ == nullptr) {
        head_ = c;
      } else {
        tail_->next = c;
      }
      tail_ = c;
    }
    tail_->ids[tail_->end] = r.id;
    tail_->handles[tail_->end++] = r.handle;
  }

  // REQUIRES: !empty()
  void pop_front(StagedPool<RefChunk>* pool) {
    if (++head_->begin == head_->end) {
      RefChunk* next = head_->next;
      pool->Delete(head_);
      head_ = next;
      if (head_ == nullptr) tail_ = nullptr;
    }
  }

  void clear(StagedPool<RefChunk>* pool) {
    while (head_ != nullptr) {
      RefChunk* next = head_->next;
      pool->Delete(head_);
      head_ = next;
    }
    tail_ = nullptr;
  }

  // Calls fn(TxnRef) for each entry from the front; stops early when fn
  // returns false.
  template <typename Fn>
  void ForEachUntil(Fn&& fn) const {
    for (const RefChunk* c = head_; c != nullptr; c = c->next)
      for (uint32_t i = c->begin; i < c->end; ++i)
        if (!fn(TxnRef{c->ids[i], c->handles[i]})) return;
  }

 private:
  RefChunk* head_ = nullptr;
  RefChunk* tail_ = nullptr;
};

}  // namespace lockmgr_internal
}  // namespace detdb

#endif  // DETDB_LOCKMGR_TXN_LISTS_H_
