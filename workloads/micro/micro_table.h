// The microbenchmark's table (the DCLP paper's microbenchmark, micro.h):
// table kMicroTable, one record per row, each value an
// 8-byte little-endian uint64 counter. Row r has key MakeKey(kMicroTable, r)
// and lives on partitioner.PartitionOf(that key); its initial value is r.
//
// Thread-safety: LoadMicroTable is a set-up step (see PartitionStore::
// CreateTable); MicroValue/SetMicroValue touch only the given record.
#ifndef DETDB_WORKLOADS_MICRO_MICRO_TABLE_H_
#define DETDB_WORKLOADS_MICRO_MICRO_TABLE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "common/partitioner.h"
#include "common/types.h"
#include "storage/partition_store.h"
#include "storage/table.h"

namespace detdb {

inline constexpr uint32_t kMicroTable = 1;
inline constexpr uint32_t kMicroValueSize = 8;

// Creates table kMicroTable ("micro") in *store and inserts every row r in
// [0, records_per_partition * partitioner.num_partitions()) with
// partitioner.PartitionOf(MakeKey(kMicroTable, r)) == p, value r. With a
// ModPartitioner partition p gets exactly rows p, p + n, p + 2n, ...
// Errors (store unchanged): InvalidArgument for a null store, p out of
// range or too many rows (> 2^56 in all, or > Table::kMaxExpectedRecords
// per partition); AlreadyExists if the store has table kMicroTable.
absl::Status LoadMicroTable(PartitionStore* store, const Partitioner& partitioner, PartitionId p,
                            uint64_t records_per_partition);

// The counter of a micro record.
inline uint64_t MicroValue(const Record& r) {
  const auto* b = reinterpret_cast<const unsigned char*>(r.value());
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return v;
}

inline void SetMicroValue(Record* r, uint64_t v) {
  auto* b = reinterpret_cast<unsigned char*>(r->value());
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace detdb

#endif  // DETDB_WORKLOADS_MICRO_MICRO_TABLE_H_
