// Request normalisation (LOCKING.md 1.2), shared by every lock manager:
//   N2  map each key to its lock slot (the key itself, or a hash slot);
//   N3  one request per (txn, slot), exclusive if any key on it is written;
//   N4  exclusive requests first, then shared, each in ascending slot order.
// N1 (local keys only) is the caller's job; N5 (release mirrors acquire) is
// kept by storing the normalised list with the txn.
//
// NormalizeRequests gives (slot, mode) pairs for any slot function;
// NormalizePacked the same requests as one uint32 each, for slot tables of
// at most 2^31 slots.
//
// Thread-safety: pure functions over caller-owned buffers.
#ifndef DETDB_LOCKMGR_NORMALIZE_H_
#define DETDB_LOCKMGR_NORMALIZE_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "lockmgr/lock_manager.h"

namespace detdb {

struct NormRequest {
  uint64_t slot;
  LockMode mode;
};

namespace lockmgr_internal {
// Orders by slot, exclusive before shared on the same slot.
// (Function objects, not functions: a function pointer would not inline.)
struct SlotThenModeLess {
  bool operator()(const NormRequest& a, const NormRequest& b) const {
    return a.slot < b.slot || (a.slot == b.slot && a.mode > b.mode);
  }
};
// Orders exclusive before shared, then by slot (the N4 order).
struct ModeThenSlotLess {
  bool operator()(const NormRequest& a, const NormRequest& b) const {
    return a.mode > b.mode || (a.mode == b.mode && a.slot < b.slot);
  }
};
// Sorts without allocating: insertion sort for the usual small txn.
template <typename T, typename Less>
void SortSmall(T* a, size_t n, Less less) {
  if (n > 32) {
    std::sort(a, a + n, less);
    return;
  }
  for (size_t i = 1; i < n; ++i) {
    T v = a[i];
    size_t j = i;
    for (; j > 0 && less(v, a[j - 1]); --j) a[j] = a[j - 1];
    a[j] = v;
  }
}
}  // namespace lockmgr_internal

// Replaces *out with the normalised requests of (reads, writes), slot(key)
// giving each key's lock slot. Returns the number of exclusive requests,
// which come first in *out. `out` is a reusable scratch buffer: once it has
// grown to the largest txn, no call allocates.
template <typename SlotFn>
uint32_t NormalizeRequests(std::span<const Key> reads, std::span<const Key> writes, SlotFn slot,
                           std::vector<NormRequest>* out) {
  out->clear();
  for (Key k : writes) out->push_back({slot(k), LockMode::kExclusive});
  for (Key k : reads) out->push_back({slot(k), LockMode::kShared});
  NormRequest* a = out->data();
  const size_t n = out->size();
  lockmgr_internal::SortSmall(a, n, lockmgr_internal::SlotThenModeLess());
  // Dedupe by slot: the first of each run is exclusive if any is.
  size_t m = 0, num_x = 0;
  for (size_t i = 0; i < n; ++i) {
    if (m > 0 && a[m - 1].slot == a[i].slot) continue;
    a[m++] = a[i];
    num_x += a[i].mode == LockMode::kExclusive;
  }
  out->resize(m);
  // Exclusive first; (mode, slot) pairs are now unique, so no stable sort
  // (which would allocate a buffer) is needed.
  if (num_x != 0 && num_x != m) lockmgr_internal::SortSmall(a, m, lockmgr_internal::ModeThenSlotLess());
  return static_cast<uint32_t>(num_x);
}

// The same normalisation for slot tables of at most 2^31 slots, one uint32
// per request: the slot, with kPackedShared set for a shared request. Plain
// integer order on packed requests is already the N4 order (exclusive first,
// each mode ascending by slot), so sorting the exclusive and the shared
// requests apart (4-byte integers, each part about half the txn) and a
// linear pass replace the two sorts of 16-byte pairs above. Writes the requests to
// out[0, m) and returns m; *num_x is the number of exclusive requests, which
// come first. `out` may be the caller's final request array: nothing is copied.
// REQUIRES: out has room for reads.size() + writes.size() entries;
//           slot(k) < 2^31 for every key.
inline constexpr uint32_t kPackedShared = 0x80000000u;

template <typename SlotFn>
uint32_t NormalizePacked(std::span<const Key> reads, std::span<const Key> writes, SlotFn slot,
                         uint32_t* out, uint32_t* num_x) {
  uint32_t* a = out;
  size_t n = 0;
  for (Key k : writes) a[n++] = static_cast<uint32_t>(slot(k));
  const size_t nw = n;
  for (Key k : reads) a[n++] = static_cast<uint32_t>(slot(k)) | kPackedShared;
  // Every exclusive request is below every shared one, so sorting the two
  // parts apart sorts the whole: two insertion sorts of about n/2 shift
  // about half as much as one of n (New-Order + Payment: ~25 requests).
  lockmgr_internal::SortSmall(a, nw, std::less<uint32_t>());
  lockmgr_internal::SortSmall(a + nw, n - nw, std::less<uint32_t>());
  // Drop repeats within each mode, and shared requests on a slot that is
  // also written (both parts are sorted: merge-walk the exclusive part).
  size_t m = 0, i = 0;
  for (; i < n && (a[i] & kPackedShared) == 0; ++i)
    if (m == 0 || a[m - 1] != a[i]) a[m++] = a[i];
  const size_t x_end = m;
  size_t x = 0;
  for (; i < n; ++i) {
    if (m > x_end && a[m - 1] == a[i]) continue;
    const uint32_t s = a[i] & ~kPackedShared;
    while (x < x_end && a[x] < s) ++x;
    if (x < x_end && a[x] == s) continue;
    a[m++] = a[i];
  }
  *num_x = static_cast<uint32_t>(x_end);
  return static_cast<uint32_t>(m);
}

}  // namespace detdb

#endif  // DETDB_LOCKMGR_NORMALIZE_H_
