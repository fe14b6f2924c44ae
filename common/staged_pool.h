// Staged (bulk) allocation of fixed-size objects, after seed 003: memory is
// taken from the heap in large slabs and recycled through a free list, so the
// steady state of a hot path performs no heap allocation at all.
//
//   StagedPool<Node> pool;
//   Node* n = pool.New();   // default-constructs a Node
//   pool.Delete(n);         // destroys it; the memory is reused by New()
//
// Slabs are only returned to the heap when the pool is destroyed; the pool
// must outlive every object it handed out.
//
// Thread-safety: none. One pool belongs to one thread (e.g. a lock thread).
#ifndef DETDB_COMMON_STAGED_POOL_H_
#define DETDB_COMMON_STAGED_POOL_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "glog/logging.h"

namespace detdb {

template <typename T>
class StagedPool {
 public:
  // objects_per_slab: how many objects one heap allocation provides.
  explicit StagedPool(size_t objects_per_slab = 1024) : per_slab_(objects_per_slab) {}
  StagedPool(const StagedPool&) = delete;
  StagedPool& operator=(const StagedPool&) = delete;
  ~StagedPool() {
    for (auto& s : slabs_) ::operator delete(s, std::align_val_t(alignof(Slot)));
  }

  template <typename... Args>
  T* New(Args&&... args) {
    if (free_ == nullptr) Grow();
    Slot* s = free_;
    free_ = s->next;
    ++live_;
    return new (s->storage) T(std::forward<Args>(args)...);
  }

  // REQUIRES: p was returned by New() of this pool and not deleted since.
  void Delete(T* p) {
    p->~T();
    Slot* s = reinterpret_cast<Slot*>(p);
    s->next = free_;
    free_ = s;
    --live_;
  }

  // Objects handed out and not yet deleted.
  size_t live() const { return live_; }
  // Bytes taken from the heap (slabs), whether in use or free.
  size_t bytes_reserved() const { return slabs_.size() * per_slab_ * sizeof(Slot); }

 private:
  union Slot {
    Slot* next;
    alignas(T) unsigned char storage[sizeof(T)];
  };

  void Grow() {
    void* mem = ::operator new(per_slab_ * sizeof(Slot), std::align_val_t(alignof(Slot)));
    slabs_.push_back(mem);
    Slot* slots = static_cast<Slot*>(mem);
    for (size_t i = per_slab_; i-- > 0;) {
      slots[i].next = free_;
      free_ = &slots[i];
    }
  }

  const size_t per_slab_;
  Slot* free_ = nullptr;
  size_t live_ = 0;
  std::vector<void*> slabs_;
};

// Variable-length arrays of T in power-of-two size classes, each class a
// StagedPool-like free list. Used for per-transaction request arrays.
//
// Thread-safety: none.
template <typename T>
class StagedArrayPool {
 public:
  static constexpr int kMinClass = 2;   // 4 elements
  static constexpr int kMaxClass = 20;  // 1M elements

  StagedArrayPool() = default;
  StagedArrayPool(const StagedArrayPool&) = delete;
  StagedArrayPool& operator=(const StagedArrayPool&) = delete;
  ~StagedArrayPool() {
    for (auto& s : slabs_) ::operator delete(s.first, std::align_val_t(kAlign));
  }

  static constexpr size_t kMaxElements = size_t{1} << kMaxClass;

  // Returns an array of at least n elements (uninitialised: whatever the
  // last user left) and its size class, which must be passed back to Free.
  // REQUIRES: n <= kMaxElements.
  T* Allocate(size_t n, int* size_class) {
    CHECK_LE(n, kMaxElements) << "StagedArrayPool: array of " << n << " elements is too large";
    int c = kMinClass;
    while ((size_t{1} << c) < n) ++c;
    *size_class = c;
    Block*& head = free_[c];
    if (head == nullptr) Grow(c);
    Block* b = head;
    head = b->next;
    live_bytes_ += ElemBytes(c);
    return reinterpret_cast<T*>(b);
  }

  void Free(T* p, int size_class) {
    Block* b = ::new (static_cast<void*>(p)) Block;
    b->next = free_[size_class];
    free_[size_class] = b;
    live_bytes_ -= ElemBytes(size_class);
  }

  size_t bytes_reserved() const { return reserved_; }
  size_t bytes_live() const { return live_bytes_; }

 private:
  struct Block {
    Block* next;
  };
  static constexpr size_t kAlign = alignof(T) > alignof(Block) ? alignof(T) : alignof(Block);
  static_assert(std::is_trivially_destructible_v<T> && std::is_trivially_copyable_v<T>,
                "StagedArrayPool holds plain data");

  // Bytes of one array of class c, a multiple of kAlign so that every array
  // in a slab is aligned for both T and the free-list link.
  static size_t ElemBytes(int c) {
    size_t bytes = std::max(sizeof(T) << c, sizeof(Block));
    return (bytes + kAlign - 1) / kAlign * kAlign;
  }

  void Grow(int c) {
    const size_t block = ElemBytes(c);
    const size_t count = block >= (size_t{64} << 10) ? 1 : (size_t{64} << 10) / block;
    void* mem = ::operator new(block * count, std::align_val_t(kAlign));
    slabs_.emplace_back(mem, block * count);
    reserved_ += block * count;
    auto* base = static_cast<unsigned char*>(mem);
    for (size_t i = count; i-- > 0;) {
      Block* b = ::new (base + i * block) Block;
      b->next = free_[c];
      free_[c] = b;
    }
  }

  Block* free_[kMaxClass + 1] = {};
  std::vector<std::pair<void*, size_t>> slabs_;
  size_t reserved_ = 0;
  size_t live_bytes_ = 0;
};

}  // namespace detdb

#endif  // DETDB_COMMON_STAGED_POOL_H_
