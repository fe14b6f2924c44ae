// Request normalisation (LOCKING.md 1.2), shared by every lock manager:
//   N2  map each key to its lock slot (the key itself, or a hash slot);
//   N3  one request per (txn, slot), exclusive if any key on it is written;
//   N4  exclusive requests first, then shared, each in ascending slot order.
// N1 (local keys only) is the caller's job; N5 (release mirrors acquire) is
// kept by storing the normalised list with the txn.
//
// Thread-safety: pure functions over caller-owned buffers.
#ifndef DETDB_LOCKMGR_NORMALIZE_H_
#define DETDB_LOCKMGR_NORMALIZE_H_

#include <algorithm>
#include <cstdint>
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
inline bool NormLess(const NormRequest& a, const NormRequest& b) {
  return a.slot < b.slot || (a.slot == b.slot && a.mode > b.mode);
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
  if (n <= 32) {  // insertion sort: the usual txn has ~10 keys
    for (size_t i = 1; i < n; ++i) {
      NormRequest v = a[i];
      size_t j = i;
      for (; j > 0 && lockmgr_internal::NormLess(v, a[j - 1]); --j) a[j] = a[j - 1];
      a[j] = v;
    }
  } else {
    std::sort(a, a + n, lockmgr_internal::NormLess);
  }
  // Dedupe by slot (the first of each run is exclusive if any is), then move
  // the exclusive requests to the front, keeping slot order in both groups.
  size_t m = 0, num_x = 0;
  for (size_t i = 0; i < n; ++i) {
    if (m > 0 && a[m - 1].slot == a[i].slot) continue;
    a[m++] = a[i];
    num_x += a[i].mode == LockMode::kExclusive;
  }
  out->resize(m);
  std::stable_partition(out->begin(), out->end(),
                        [](const NormRequest& r) { return r.mode == LockMode::kExclusive; });
  return static_cast<uint32_t>(num_x);
}

}  // namespace detdb

#endif  // DETDB_LOCKMGR_NORMALIZE_H_
