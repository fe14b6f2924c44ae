// Internals of OrderedIndex (ordered_index.h) shared by its source files:
// ordered_index.cc (nodes, descents, latching, reads) and
// ordered_index_write.cc (inserts, splits, erases). Not for other users.
// Thread-safety: stateless helpers; see ordered_index.h for the protocol.
#ifndef DETDB_STORAGE_ORDERED_INDEX_INTERNAL_H_
#define DETDB_STORAGE_ORDERED_INDEX_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "storage/ordered_index.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DETDB_ORDERED_INDEX_X86 1
#endif

namespace detdb {

// A descent's record: the nodes from the root to a leaf, the versions they
// had when the descent passed them, the child slot taken at every inner
// node, and the key range (fences) of the leaf.
struct OrderedIndex::Path {
  int depth = 0;  // node[depth - 1] is the leaf
  Node* node[kMaxHeight];
  uint64_t version[kMaxHeight];
  uint32_t slot[kMaxHeight];
  bool has_lower = false, has_upper = false;
  Key lower = 0, upper = 0;  // the leaf's keys are in [lower, upper)
};

namespace ordered_index_internal {

inline void CpuRelax() {
#ifdef DETDB_ORDERED_INDEX_X86
  _mm_pause();
#endif
}

// Between two attempts of an operation: pause at first, then give the CPU
// away (a latch holder may be waiting for it).
inline void Backoff(int attempt) {
  if (attempt < 4) {
    CpuRelax();
  } else {
    std::this_thread::yield();
  }
}

// ---------------------------------------------------------------- versions

// Spins briefly while a writer is in n; false if it stays there (the caller
// starts again). *v: the stable version, read with acquire.
template <typename N>
inline bool StableVersion(const N* n, uint64_t* v) {
  for (int i = 0; i < 128; ++i) {
    const uint64_t x = n->version.load(std::memory_order_acquire);
    if ((x & 1) == 0) {
      *v = x;
      return true;
    }
    CpuRelax();
  }
  return false;
}

// Whether n still has version v: every field read (acquire) since v was
// read belongs to that version. A writer makes the version odd before its
// first store and its stores are releases, so a reader that read any of
// them sees the odd (or a later) version here.
template <typename N>
inline bool Unchanged(const N* n, uint64_t v) {
  return n->version.load(std::memory_order_acquire) == v;
}

// ---------------------------------------------------------------- in-node helpers

// The first slot of leaf entries [0, c) whose key is >= k.
template <typename L>
inline uint32_t LowerBound(const L* leaf, uint32_t c, Key k) {
  uint32_t lo = 0, hi = c;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (leaf->keys[mid].load(std::memory_order_acquire) < k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The child of an inner node with c keys that holds k: the number of keys
// <= k.
template <typename I>
inline uint32_t ChildFor(const I* in, uint32_t c, Key k) {
  uint32_t lo = 0, hi = c;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (in->keys[mid].load(std::memory_order_acquire) <= k) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Writers' stores: the node is latched and its version odd; the stores are
// releases so that a reader who reads one also sees the odd version.
template <typename T, typename V>
inline void Put(std::atomic<T>& slot, V v) {
  slot.store(v, std::memory_order_release);
}
template <typename T>
inline T Get(const std::atomic<T>& slot) {
  return slot.load(std::memory_order_relaxed);
}

}  // namespace ordered_index_internal
}  // namespace detdb

#endif  // DETDB_STORAGE_ORDERED_INDEX_INTERNAL_H_
