// The seed-003 benchmark: allocating txn states (lock objects and the
// per-txn state around them) per epoch from slabs freed in bulk, against
// the general allocator. Each thread plays one partition: epochs of
// `txns_per_epoch` txns; each txn gets a PartitionTxn, made ready by the
// real TxnExecutor::Init (its LockTxn, key lists, executors), then filled
// as a worker would (a read per key, a buffered write per written key with
// its value), and released once `window` txns are active, in an order
// shuffled within the window (workers finish out of order). Three ways to
// get the states:
//   staged: StagedStates (scheduler/staged_states.h), a group per epoch;
//   pooled: detdb's default, a free list of reused states whose containers
//           keep their heap capacity;
//   heap:   the general allocator: new/delete per state, its containers'
//           memory malloc'ed and freed with it.
// The allocator behind "heap" and "pooled" is the binary's: detdb's programs
// link tcmalloc_minimal; detdb_staged_bench_glibc is the same program on
// glibc's malloc.
#ifndef DETDB_BENCH_STAGED_BENCH_H_
#define DETDB_BENCH_STAGED_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace detdb {

struct StagedBenchOptions {
  std::string mode = "staged";  // staged, pooled or heap
  uint32_t threads = 1;         // independent partitions, one thread each
  uint64_t txns = 2000000;      // per thread, after a warm-up of a tenth of it
  uint32_t txns_per_epoch = 1000;
  uint32_t window = 256;        // active txns per thread
  uint32_t keys = 10;           // per txn, each read and written
  uint32_t value_bytes = 8;     // of each buffered write
};

struct StagedBenchResult {
  StagedBenchOptions options;
  std::string allocator;        // "tcmalloc" or "glibc"
  double txns_per_sec = 0;      // all threads, wall time
  double cpu_ns_per_txn = 0;    // the threads' CPU time per txn
};

// InvalidArgument for an unknown mode or a zero size.
absl::StatusOr<StagedBenchResult> RunStagedBench(const StagedBenchOptions& options);

// Every mode at every thread count, `rounds` times interleaved (so that a
// drift of a shared machine hits all alike); each cell's median throughput
// and median CPU per txn, in the order threads x modes.
absl::StatusOr<std::vector<StagedBenchResult>> RunStagedSweep(const StagedBenchOptions& base,
                                                               const std::vector<std::string>& modes,
                                                               const std::vector<uint32_t>& threads, uint32_t rounds);

// Which malloc this process runs on.
std::string MallocName();

// "staged", "pooled", "heap".
const std::vector<std::string>& StagedBenchModes();

}  // namespace detdb

#endif  // DETDB_BENCH_STAGED_BENCH_H_
