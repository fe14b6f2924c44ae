// Partitioner: which partition holds a key. Every node and every layer
// (sequencer, scheduler, workloads, serial executor) must use the same one
// for the same data, so it is part of the workload's definition.
//
// Thread-safety: implementations are immutable after construction and safe
// to call from any thread.
#ifndef DETDB_COMMON_PARTITIONER_H_
#define DETDB_COMMON_PARTITIONER_H_

#include <cstdint>

#include "common/types.h"

namespace detdb {

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  virtual uint32_t num_partitions() const = 0;
  // REQUIRES: the result is < num_partitions().
  virtual PartitionId PartitionOf(Key key) const = 0;
};

// Row modulo the partition count, whatever the table: partition p holds rows
// p, p + n, p + 2n, ... of every table. The microbenchmark's partitioning.
class ModPartitioner final : public Partitioner {
 public:
  explicit ModPartitioner(uint32_t num_partitions) : n_(num_partitions == 0 ? 1 : num_partitions) {}
  uint32_t num_partitions() const override { return n_; }
  PartitionId PartitionOf(Key key) const override { return static_cast<PartitionId>(KeyRow(key) % n_); }

 private:
  const uint32_t n_;
};

}  // namespace detdb

#endif  // DETDB_COMMON_PARTITIONER_H_
