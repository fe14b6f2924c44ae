// The microbenchmark of the DCLP paper (seed 002, section 4) as a detdb
// workload: its stored procedure and a generator of its txns, with every
// variant of the paper's evaluation as an option.
//
// Records: table kMicroTable, 8-byte values, rows partitioned by
// ModPartitioner (partition p holds rows p, p + n, ...). In each partition
// the first hot_records() rows (in partition order) are the hot set, the
// rest are cold.
//
// Thread-safety: MicroGenerator is not thread-safe (one per client thread);
// MicroProcedure is a pure function of its txn and reads.
#ifndef DETDB_WORKLOADS_MICRO_MICRO_H_
#define DETDB_WORKLOADS_MICRO_MICRO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "proto/detdb.pb.h"
#include "scheduler/procedure.h"

namespace detdb {

inline constexpr uint32_t kMicroTxnType = 1;

struct MicroOptions {
  uint32_t partitions = 1;
  uint64_t records_per_partition = 1000000;
  double contention = 0.0001;     // hot set of 1/contention records per partition
  uint32_t keys_per_txn = 10;
  double write_fraction = 1.0;    // per key; written keys are read-modify-write
  double compute_us = 0;          // long txns: computation after each record read
  uint32_t depth = 0;             // >0: single hot record, written every depth+1 txns
  double multipartition = 0;      // fraction of txns spread over 2 partitions
  uint64_t seed = 1;
};

// Registers the microbenchmark procedure under kMicroTxnType.
absl::Status RegisterMicroProcedures(ProcedureRegistry* registry);

// Reads every record of the read set (in the set's order), spinning
// args-given iterations after each read, and writes every key of the write
// set back as Mix64(old + txn id). Result: 8 bytes, a hash of the reads.
absl::Status MicroProcedure(TxnContext* ctx, std::string* result);

// The compute a micro txn may ask for (its args: 8 bytes of iterations per
// read): at most kMaxMicroItersPerRead per read and kMaxMicroItersPerTxn in
// all (a few seconds of one worker), so that a client cannot occupy a
// worker without end. Fixed constants, not this machine's rate: every node
// must accept the same txns. A node checks every micro txn with it
// (EngineOptions::txn_check), from clients and from peers.
inline constexpr uint64_t kMaxMicroItersPerRead = uint64_t{1} << 30;
inline constexpr uint64_t kMaxMicroItersPerTxn = uint64_t{1} << 32;
absl::Status ValidateMicroTxn(const pb::Txn& txn);

// Iterations of the procedure's compute loop per microsecond on this machine
// (measured once per process; the count goes into the txn, so execution
// stays deterministic wherever it runs).
double ComputeItersPerMicrosecond();

class MicroGenerator {
 public:
  // InvalidArgument for options out of range.
  static absl::Status Validate(const MicroOptions& options);
  // REQUIRES: Validate(options).ok().
  explicit MicroGenerator(const MicroOptions& options);

  // Fills *txn (cleared first) with the next txn of the stream.
  void Next(pb::Txn* txn);

  uint64_t hot_records() const { return hot_; }
  uint64_t generated() const { return count_; }

 private:
  uint64_t Rand();
  double Uniform() { return (Rand() >> 11) * (1.0 / 9007199254740992.0); }
  Key KeyOf(uint32_t partition, uint64_t index_in_partition) const;
  // Adds `n` distinct cold keys of `partition` to the txn.
  void AddCold(uint32_t partition, uint32_t n, pb::Txn* txn);
  void AddAccess(Key k, bool write, pb::Txn* txn);

  const MicroOptions o_;
  const uint64_t hot_;
  const uint64_t compute_iters_;
  uint64_t state_;
  uint64_t count_ = 0;
  std::string args_;
};

}  // namespace detdb

#endif  // DETDB_WORKLOADS_MICRO_MICRO_H_
