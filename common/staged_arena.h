// Staged allocation of variable-sized per-transaction memory, after seed 003
// (a lock manager whose lock objects come from pools allocated in bulk and
// are freed in bulk once no transaction can refer to them, so that acquiring
// and releasing touch no general allocator). StagedPool (staged_pool.h)
// recycles fixed-size objects one by one; this file frees a whole group's
// memory at once.
//
// - SlabPool: fixed-size slabs, recycled through a free list. The only part
//   that calls the heap and the only one with a latch (a mutex taken once
//   per slab, not per object). Thread-safe.
// - SlabGroup: the memory of one group of txns (the scheduler: one
//   sub-batch at one partition). Bump allocation from slabs of the pool;
//   Release() gives every slab back in one step. One thread at a time.
// - TxnArena: a std::pmr::memory_resource for one txn's containers and
//   buffers. Bump allocation from a first chunk (carved from its group by
//   whoever creates the txn), then from slabs of its own taken from the
//   pool; deallocate() is a no-op. TakeSlabs() hands its slabs to its group
//   when the txn is done, and they go back with the group's.
//
// Nothing is freed object by object: memory handed out stays valid until its
// group is released (its owner must know that no pointer into it is left).
// A block larger than a quarter of a slab that does not fit in the current
// slab gets a heap block of its own, which goes back to the heap with the
// group (a new slab for it would waste most of the current one).
//
// Under AddressSanitizer, slabs in the pool's free list are poisoned: a use
// after the bulk release is reported.
#ifndef DETDB_COMMON_STAGED_ARENA_H_
#define DETDB_COMMON_STAGED_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <mutex>
#include <new>

#include "glog/logging.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define DETDB_ASAN_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define DETDB_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define DETDB_ASAN_POISON(p, n) ((void)(p), (void)(n))
#define DETDB_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace detdb {

// The header of every slab and large block: blocks chain through it.
struct SlabHeader {
  static constexpr size_t kAlign = 64;  // slabs start on a cache line
  SlabHeader* next = nullptr;
  size_t bytes = 0;  // the whole block, header included
  char* data() { return reinterpret_cast<char*>(this) + kDataOffset; }
  static constexpr size_t kDataOffset = kAlign;  // the usable bytes start on the next line
};

// A list of blocks, spliced in O(1).
struct SlabChain {
  SlabHeader* head = nullptr;
  SlabHeader* tail = nullptr;
  bool empty() const { return head == nullptr; }
  void Push(SlabHeader* h) {
    h->next = head;
    head = h;
    if (tail == nullptr) tail = h;
  }
  // Moves every block of `other` into this chain.
  void Splice(SlabChain* other) {
    if (other->empty()) return;
    other->tail->next = head;
    head = other->head;
    if (tail == nullptr) tail = other->tail;
    other->head = other->tail = nullptr;
  }
};

// Thread-safe.
class SlabPool {
 public:
  static constexpr size_t kDefaultSlabBytes = 16 << 10;

  // slab_bytes: each slab, header included (>= 1 KiB, a multiple of 64);
  // max_free: free slabs kept for reuse (more go back to the heap).
  explicit SlabPool(size_t slab_bytes = kDefaultSlabBytes, size_t max_free = 4096)
      : slab_bytes_(slab_bytes), max_free_(max_free) {
    CHECK_GE(slab_bytes, size_t{1024});
    CHECK_EQ(slab_bytes % SlabHeader::kAlign, 0u);
  }
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;
  // REQUIRES: every slab given back (a slab still out is leaked, not freed
  // under its user).
  ~SlabPool() {
    while (free_ != nullptr) {
      SlabHeader* h = free_;
      DETDB_ASAN_UNPOISON(h, slab_bytes_);
      free_ = h->next;
      HeapFree(h);
    }
  }

  size_t slab_bytes() const { return slab_bytes_; }
  // The usable bytes of a slab.
  size_t slab_capacity() const { return slab_bytes_ - SlabHeader::kDataOffset; }
  // Requests above this get a large block of their own.
  size_t large_threshold() const { return slab_capacity() / 4; }

  // A slab, from the free list or else the heap.
  SlabHeader* Take() {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++out_;
      if (free_ != nullptr) {
        SlabHeader* h = free_;
        DETDB_ASAN_UNPOISON(h, slab_bytes_);
        free_ = h->next;
        --free_count_;
        h->next = nullptr;
        return h;
      }
      ++heap_slabs_;
    }
    return HeapAlloc(slab_bytes_);
  }

  // A block of its own for `bytes` usable bytes (not from the free list).
  SlabHeader* TakeLarge(size_t bytes) {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++large_blocks_;
    }
    return HeapAlloc(SlabHeader::kDataOffset + bytes);
  }

  // Every block of `chain` back: slabs to the free list, large blocks (and
  // slabs beyond max_free) to the heap.
  void Give(SlabChain* chain) {
    SlabChain keep, drop;
    size_t slabs = 0;
    for (SlabHeader* h = chain->head; h != nullptr;) {
      SlabHeader* next = h->next;
      if (h->bytes == slab_bytes_) {
        ++slabs;
        keep.Push(h);
      } else {
        drop.Push(h);
      }
      h = next;
    }
    chain->head = chain->tail = nullptr;
    {
      std::lock_guard<std::mutex> l(mu_);
      out_ -= slabs;
      while (keep.head != nullptr && free_count_ < max_free_) {
        SlabHeader* h = keep.head;
        keep.head = h->next;
        h->next = free_;
        free_ = h;
        ++free_count_;
        DETDB_ASAN_POISON(h, slab_bytes_);
      }
    }
    for (SlabHeader* h = keep.head; h != nullptr;) {
      SlabHeader* next = h->next;
      HeapFree(h);
      h = next;
    }
    for (SlabHeader* h = drop.head; h != nullptr;) {
      SlabHeader* next = h->next;
      HeapFree(h);
      h = next;
    }
  }

  struct Stats {
    uint64_t slabs_out = 0;     // taken, not given back
    uint64_t slabs_free = 0;    // in the free list
    uint64_t heap_slabs = 0;    // slabs ever allocated from the heap
    uint64_t large_blocks = 0;  // large blocks ever allocated
  };
  Stats stats() const {
    std::lock_guard<std::mutex> l(mu_);
    return {out_, free_count_, heap_slabs_, large_blocks_};
  }

 private:
  static SlabHeader* HeapAlloc(size_t bytes) {
    void* mem = ::operator new(bytes, std::align_val_t(SlabHeader::kAlign));
    SlabHeader* h = new (mem) SlabHeader;
    h->bytes = bytes;
    return h;
  }
  static void HeapFree(SlabHeader* h) { ::operator delete(h, std::align_val_t(SlabHeader::kAlign)); }

  const size_t slab_bytes_, max_free_;
  mutable std::mutex mu_;
  SlabHeader* free_ = nullptr;  // guarded by mu_
  uint64_t free_count_ = 0, out_ = 0, heap_slabs_ = 0, large_blocks_ = 0;  // guarded by mu_
};

namespace staged_internal {
inline char* AlignUp(char* p, size_t align) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<char*>((v + align - 1) & ~(uintptr_t{align} - 1));
}
}  // namespace staged_internal

// Thread-safety: none (one thread at a time).
class SlabGroup {
 public:
  explicit SlabGroup(SlabPool* pool) : pool_(pool) {}
  SlabGroup(const SlabGroup&) = delete;
  SlabGroup& operator=(const SlabGroup&) = delete;
  ~SlabGroup() { Release(); }

  // `bytes` aligned to `align` (a power of two <= 64), valid until Release.
  void* Allocate(size_t bytes, size_t align) {
    char* p = staged_internal::AlignUp(cur_, align);
    if (p == nullptr || p + bytes > end_) {
      if (bytes > pool_->large_threshold()) {
        SlabHeader* h = pool_->TakeLarge(bytes);
        chain_.Push(h);
        return h->data();
      }
      SlabHeader* h = pool_->Take();
      chain_.Push(h);
      cur_ = h->data();
      end_ = cur_ + pool_->slab_capacity();
      p = staged_internal::AlignUp(cur_, align);
    }
    cur_ = p + bytes;
    return p;
  }
  // Blocks that go back with this group's (a done txn's arena's).
  void Adopt(SlabChain* chain) { chain_.Splice(chain); }
  // Gives every block back to the pool: everything allocated from the
  // group (or adopted) is invalid from now on. The group is empty and may
  // be used again.
  void Release() {
    pool_->Give(&chain_);
    cur_ = end_ = nullptr;
  }
  bool empty() const { return chain_.empty(); }

 private:
  SlabPool* const pool_;
  SlabChain chain_;
  char* cur_ = nullptr;
  char* end_ = nullptr;
};

// Thread-safety: one thread at a time (the pool it takes from is shared).
class TxnArena final : public std::pmr::memory_resource {
 public:
  // first: a chunk of first_bytes (may be null and 0) to allocate from
  // before taking slabs; it belongs to the caller (e.g. its group).
  TxnArena(SlabPool* pool, void* first, size_t first_bytes)
      : pool_(pool), cur_(static_cast<char*>(first)), end_(cur_ + first_bytes) {}
  TxnArena(const TxnArena&) = delete;
  TxnArena& operator=(const TxnArena&) = delete;
  // REQUIRES: TakeSlabs() called if it took any (they would leak).
  ~TxnArena() override { DCHECK(slabs_.empty()) << "TxnArena destroyed with slabs not handed back"; }

  // The slabs and large blocks it took beyond its first chunk (the caller
  // gives them to the group, or back to the pool). What it handed out is
  // invalid once they go back.
  SlabChain TakeSlabs() {
    SlabChain out = slabs_;
    slabs_ = {};
    return out;
  }
  // Bytes handed out so far (alignment padding included).
  size_t used() const { return used_; }

  // allocate() without the virtual call. REQUIRES: align a power of two <= 64.
  void* Allocate(size_t bytes, size_t align) {
    char* p = staged_internal::AlignUp(cur_, align);
    if (p != nullptr && p + bytes <= end_) [[likely]] {
      used_ += static_cast<size_t>(p + bytes - cur_);
      cur_ = p + bytes;
      return p;
    }
    return Refill(bytes, align);
  }

 private:
  void* do_allocate(size_t bytes, size_t align) override {
    if (align > SlabHeader::kAlign) throw std::bad_alloc();  // never asked for by detdb's containers
    return Allocate(bytes, align);
  }
  // Allocate's slow path: a new slab, or a large block.
  void* Refill(size_t bytes, size_t align) {
    if (bytes > pool_->large_threshold()) {
      SlabHeader* h = pool_->TakeLarge(bytes);
      slabs_.Push(h);
      used_ += bytes;
      return h->data();
    }
    SlabHeader* h = pool_->Take();
    slabs_.Push(h);
    cur_ = h->data();
    end_ = cur_ + pool_->slab_capacity();
    char* p = staged_internal::AlignUp(cur_, align);
    used_ += static_cast<size_t>(p + bytes - cur_);
    cur_ = p + bytes;
    return p;
  }
  void do_deallocate(void*, size_t, size_t) override {}  // freed in bulk
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  SlabPool* const pool_;
  char* cur_;
  char* end_;
  size_t used_ = 0;
  SlabChain slabs_;
};

}  // namespace detdb

#endif  // DETDB_COMMON_STAGED_ARENA_H_
