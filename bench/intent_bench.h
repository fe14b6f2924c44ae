// The intent-lock benchmark of seed 000's Fig. 4: agents (threads) run
// txns that only take and release intent locks, on a volume (the
// partition lock) and 4 tables (TPC-B's branch, teller, account, history):
// half take IX on the volume and the tables, half IS. A share of the txns
// takes an absolute lock instead: X on one table (IX on the volume), and
// one in four of them X on the volume. Throughput per implementation
// (storage/intent_lock.h: the lock queue, SLI, LIL) as the absolute share
// and the number of agents vary. `detdb-bench lil` prints it,
// `detdb-bench figure lil --out DIR` writes its CSV and PNG.
//
// Thread-safety: RunIntentBench starts and joins its own threads; call it
// from one thread at a time.
#ifndef DETDB_BENCH_INTENT_BENCH_H_
#define DETDB_BENCH_INTENT_BENCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "storage/intent_lock.h"

namespace detdb {

struct IntentBenchOptions {
  IntentLockKind kind = IntentLockKind::kLil;
  uint32_t agents = 2;
  // Share of txns that take an absolute lock (X on a table; 1 in 4 of them
  // X on the volume).
  double absolute_share = 0;
  double duration_s = 1;
  uint32_t tables = 4;
  uint64_t seed = 1;
};

struct IntentBenchResult {
  uint64_t txns = 0;
  uint64_t absolute = 0;  // txns that took an absolute lock
  double seconds = 0;
  double txns_per_sec = 0;
  // CPU of the agents per txn (waits sleep, so this is the work a txn
  // costs, and hardly moves when other processes share the cores).
  double cpu_ns_per_txn = 0;
  uint64_t timeouts = 0;  // absolute requests not granted within 10 s (expected: 0)
  IntentLockStats stats;
};

absl::StatusOr<IntentBenchResult> RunIntentBench(const IntentBenchOptions& options);

}  // namespace detdb

#endif  // DETDB_BENCH_INTENT_BENCH_H_
