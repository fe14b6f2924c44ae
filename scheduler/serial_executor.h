// SerialExecutor: applies txns one at a time, in the order given, to a set
// of partition stores, with the same stored procedures the engine runs. It
// is the oracle of determinism tests (same input order => same results and
// same state digests as the engine under any lock manager and any number of
// workers) and a single-threaded baseline for users.
//
// Thread-safety: not thread-safe.
#ifndef DETDB_SCHEDULER_SERIAL_EXECUTOR_H_
#define DETDB_SCHEDULER_SERIAL_EXECUTOR_H_

#include <vector>

#include "common/partitioner.h"
#include "proto/detdb.pb.h"
#include "scheduler/procedure.h"
#include "storage/partition_store.h"

namespace detdb {

class SerialExecutor {
 public:
  // stores[p] is partition p; all arguments must outlive the executor.
  SerialExecutor(const Partitioner* partitioner, const ProcedureRegistry* procedures,
                 std::vector<PartitionStore*> stores);

  // Runs txn to completion and returns what its client would receive.
  pb::TxnResult Execute(const pb::Txn& txn);

 private:
  const Partitioner* const partitioner_;
  const ProcedureRegistry* const procedures_;
  const std::vector<PartitionStore*> stores_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_SERIAL_EXECUTOR_H_
