// Fast 64-bit mixing for lock slots and partitioning.
//
// Thread-safety: pure functions.
#ifndef DETDB_COMMON_HASH_H_
#define DETDB_COMMON_HASH_H_

#include <cstdint>

namespace detdb {

// The finaliser of MurmurHash3 (fmix64): a bijection on 64-bit values whose
// low bits depend on every input bit, so `Mix64(k) & (n - 1)` spreads keys
// that differ only in high bits (table ids) over a power-of-two table.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// True iff n is a non-zero power of two.
inline constexpr bool IsPowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace detdb

#endif  // DETDB_COMMON_HASH_H_
