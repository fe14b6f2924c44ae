// A small workload of the scheduler's own for its tests, so that the engine
// is tested without any workload of workloads/ (which sits above it): a
// table of 8-byte counters and a read-modify-write procedure.
//
// Table kCounterTable: row r has key MakeKey(kCounterTable, r), lives on
// partitioner.PartitionOf(that key) and starts with value r. Procedure
// kRmwTxnType reads every key of the read set and writes every key of the
// write set as Mix64(old + txn id); its result is a hash of the reads.
//
// Thread-safety: LoadCounterTable is a set-up step (PartitionStore::
// CreateTable); RmwProcedure is a pure function of its txn and reads.
#ifndef DETDB_SCHEDULER_TEST_WORKLOAD_H_
#define DETDB_SCHEDULER_TEST_WORKLOAD_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/hash.h"
#include "common/partitioner.h"
#include "common/types.h"
#include "scheduler/procedure.h"
#include "storage/partition_store.h"

namespace detdb {
namespace testing_util {

inline constexpr uint32_t kCounterTable = 1;
inline constexpr uint32_t kRmwTxnType = 1;

// Creates kCounterTable in *store with the rows [0, rows_per_partition * n)
// that `partitioner` places on partition p.
inline absl::Status LoadCounterTable(PartitionStore* store, const Partitioner& partitioner, PartitionId p,
                                     uint64_t rows_per_partition) {
  absl::StatusOr<Table*> t = store->CreateTable(
      {.id = kCounterTable, .name = "counter", .value_size = 8, .expected_records = rows_per_partition});
  if (!t.ok()) return t.status();
  const uint64_t rows = rows_per_partition * partitioner.num_partitions();
  for (uint64_t r = 0; r < rows; ++r) {
    const Key k = MakeKey(kCounterTable, r);
    if (partitioner.PartitionOf(k) != p) continue;
    Record* rec = (*t)->Insert(k);
    if (rec == nullptr) return absl::ResourceExhaustedError("counter table full");
    std::memcpy(rec->value(), &r, 8);
  }
  return absl::OkStatus();
}

inline uint64_t LoadCounter(std::string_view v) {
  uint64_t x = 0;
  std::memcpy(&x, v.data(), v.size() < 8 ? v.size() : 8);
  return x;
}

inline absl::Status RmwProcedure(TxnContext* ctx, std::string* result) {
  const pb::Txn& txn = ctx->txn();
  uint64_t acc = txn.id();
  for (Key k : txn.read_set()) {
    auto v = ctx->Read(k);
    if (!v.ok()) return v.status();
    acc = Mix64(acc ^ LoadCounter(*v));
  }
  for (Key k : txn.write_set()) {
    auto v = ctx->Read(k);
    const uint64_t nv = Mix64((v.ok() ? LoadCounter(*v) : 0) + txn.id());
    absl::Status s = ctx->Write(k, std::string_view(reinterpret_cast<const char*>(&nv), 8));
    if (!s.ok()) return s;
  }
  result->assign(reinterpret_cast<const char*>(&acc), 8);
  return absl::OkStatus();
}

// Registers RmwProcedure under kRmwTxnType.
inline absl::Status RegisterTestProcedures(ProcedureRegistry* registry) {
  return registry->Register(kRmwTxnType, "rmw", &RmwProcedure);
}

}  // namespace testing_util
}  // namespace detdb

#endif  // DETDB_SCHEDULER_TEST_WORKLOAD_H_
