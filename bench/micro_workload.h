// The DCLP paper's microbenchmark workload (seed 002, section 4), generated
// ahead of time: every txn touches keys_per_txn records of one table, one of
// them from a hot set of 1/contention records, the others from
// cold_records cold ones; each access is a write with probability
// write_fraction (else a read). Keys within one txn are distinct.
//
// Thread-safety: a MicroTxnSet is immutable after Generate.
#ifndef DETDB_BENCH_MICRO_WORKLOAD_H_
#define DETDB_BENCH_MICRO_WORKLOAD_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "lockmgr/lock_manager.h"

namespace detdb {

struct MicroWorkloadOptions {
  double contention = 0.0001;        // contention index CI: hot set of 1/CI records
  uint32_t keys_per_txn = 10;
  double write_fraction = 1.0;       // 1.0: write-only; 0: read-only
  uint64_t cold_records = 1000000;   // per partition
  uint32_t table = 0;                // table id in the keys
  uint64_t seed = 1;
};

// Txns stored flat: txn i's writes, then its reads, in one key array.
class MicroTxnSet {
 public:
  // Returns InvalidArgument for options out of range.
  static absl::StatusOr<MicroTxnSet> Generate(const MicroWorkloadOptions& options, uint64_t num_txns);

  uint64_t size() const { return offsets_.size() - 1; }
  std::span<const Key> writes(uint64_t i) const {
    return {keys_.data() + offsets_[i], num_writes_[i]};
  }
  std::span<const Key> reads(uint64_t i) const {
    return {keys_.data() + offsets_[i] + num_writes_[i], offsets_[i + 1] - offsets_[i] - num_writes_[i]};
  }
  uint64_t hot_records() const { return hot_records_; }

 private:
  std::vector<Key> keys_;
  std::vector<uint64_t> offsets_;
  std::vector<uint32_t> num_writes_;
  uint64_t hot_records_ = 0;
};

}  // namespace detdb

#endif  // DETDB_BENCH_MICRO_WORKLOAD_H_
