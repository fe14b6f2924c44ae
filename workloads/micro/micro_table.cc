#include "workloads/micro/micro_table.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace detdb {

absl::Status LoadMicroTable(PartitionStore* store, const Partitioner& partitioner, PartitionId p,
                            uint64_t records_per_partition) {
  if (store == nullptr) return absl::InvalidArgumentError("LoadMicroTable: null store");
  const uint64_t n = partitioner.num_partitions();
  if (p >= n)
    return absl::InvalidArgumentError(
        absl::StrCat("LoadMicroTable: partition ", p, " out of range [0, ", n, ")"));
  if (records_per_partition > Table::kMaxExpectedRecords ||
      records_per_partition > (kRowMask + 1) / n)
    return absl::InvalidArgumentError(
        absl::StrCat("LoadMicroTable: ", records_per_partition, " records per partition times ", n,
                     " partitions is too many (at most ", Table::kMaxExpectedRecords,
                     " per partition and 2^56 rows in all)"));
  const uint64_t rows = records_per_partition * n;

  absl::StatusOr<Table*> created = store->CreateTable({.id = kMicroTable,
                                                       .name = "micro",
                                                       .value_size = kMicroValueSize,
                                                       .expected_records = records_per_partition});
  if (!created.ok()) return created.status();
  Table* table = *created;

  auto load_row = [table](uint64_t r) { SetMicroValue(table->Insert(MakeKey(kMicroTable, r)), r); };
  if (dynamic_cast<const ModPartitioner*>(&partitioner) != nullptr) {
    for (uint64_t r = p; r < rows; r += n) load_row(r);  // rows p, p + n, ...
  } else {
    for (uint64_t r = 0; r < rows; ++r)
      if (partitioner.PartitionOf(MakeKey(kMicroTable, r)) == p) load_row(r);
  }
  return absl::OkStatus();
}

}  // namespace detdb
