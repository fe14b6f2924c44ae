// The small vocabulary every layer shares: keys, txn ids, partitions.
//
// Thread-safety: plain values and pure functions.
#ifndef DETDB_COMMON_TYPES_H_
#define DETDB_COMMON_TYPES_H_

#include <cstdint>

namespace detdb {

// A record key. The table id lives in the top 8 bits, the row in the other
// 56; lock managers treat keys as opaque 64-bit values.
using Key = uint64_t;
// A globally unique transaction id, increasing in sequence order; never reused.
using TxnId = uint64_t;
using PartitionId = uint32_t;
// In a cluster (EpochBatcher::IdScheme::kEpochSequencer) a txn id carries
// its epoch in bits 24 and up: the epoch a client's result belongs to.
inline constexpr uint64_t EpochOfTxnId(TxnId id) { return id >> 24; }

inline constexpr uint64_t kRowMask = (uint64_t{1} << 56) - 1;
inline constexpr Key MakeKey(uint32_t table, uint64_t row) {
  return (static_cast<uint64_t>(table) << 56) | (row & kRowMask);
}
inline constexpr uint32_t KeyTable(Key k) { return static_cast<uint32_t>(k >> 56); }
inline constexpr uint64_t KeyRow(Key k) { return k & kRowMask; }

}  // namespace detdb

#endif  // DETDB_COMMON_TYPES_H_
