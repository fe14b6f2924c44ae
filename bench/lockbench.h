// The lock-manager benchmark loop: one lock thread driving a LockManager
// with pre-generated txns, and simulated workers that finish dispatched
// txns in FIFO order as soon as `inflight` of them are running (or nothing
// else can happen). Measures acquire + release throughput of the lock
// manager alone: no storage, no threads, no sequencer.
//
// Thread-safety: RunLockBench runs on the calling thread only.
#ifndef DETDB_BENCH_LOCKBENCH_H_
#define DETDB_BENCH_LOCKBENCH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "bench/micro_workload.h"
#include "lockmgr/lock_manager.h"

namespace detdb {

struct LockBenchOptions {
  uint32_t inflight = 4;  // txns the simulated workers hold at once
  // Before each Lock, pass the txn after it to LockManager::Prefetch, as a
  // lock thread with a queue of sequenced txns can.
  bool prefetch_next = true;
};

struct LockBenchResult {
  uint64_t txns = 0;
  double seconds = 0;
  double txns_per_sec = 0;
  double ns_per_txn = 0;
  LockStats stats;  // of the lock manager at the end (peaks included)
};

// Runs every txn of `txns` through `lm`. Returns Internal if the manager
// stalls (nothing running, nothing admissible) or is not quiescent at the end.
absl::StatusOr<LockBenchResult> RunLockBench(LockManager* lm, const MicroTxnSet& txns,
                                             const LockBenchOptions& options);

}  // namespace detdb

#endif  // DETDB_BENCH_LOCKBENCH_H_
