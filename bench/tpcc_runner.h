// Runs TPC-C against detdb: in one process (an Engine with --partitions
// partitions, warehouses spread over them, loaded here) or against a
// running cluster whose nodes loaded TPC-C (`detdb --workload=tpcc`).
// One closed-loop client keeps `outstanding` txns in flight; dependent txns
// (Delivery, Stock-Level) run their reconnaissance first, and one whose
// reconnaissance no longer holds is restarted (counted). After the run the
// consistency checker runs on the database (in a cluster: every node checks
// its partitions at one epoch boundary).
//
// Thread-safety: RunTpcc blocks the calling thread; progress callbacks run
// on it.
#ifndef DETDB_BENCH_TPCC_RUNNER_H_
#define DETDB_BENCH_TPCC_RUNNER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/histogram.h"
#include "workloads/tpcc/generator.h"
#include "workloads/tpcc/random.h"
#include "lockmgr/lock_manager.h"
#include "client/curve.h"
#include "proto/cluster.pb.h"
#include "proto/detdb.pb.h"
#include "storage/elided_latch.h"

namespace detdb {
namespace tpcc {

struct TpccRunOptions {
  Scale scale;                     // in a cluster: taken from the nodes
  uint64_t load_seed = 1;          // in a cluster: taken from the nodes
  uint64_t seed = 1;               // the client's input stream
  Mix mix;
  double remote_line = 0.01, remote_payment = 0.15;
  // One process:
  std::string lock_manager = "dclp";
  uint32_t partitions = 1;
  uint32_t workers = 1;
  bool release_on_workers = true;  // see SchedulerOptions
  bool adaptive_admission = true;  // see SchedulerOptions
  bool staged_alloc = false;       // see SchedulerOptions
  uint64_t epoch_us = 1000;
  LockManagerOptions lock;
  bool record_history = false;     // keep the batches (tests replay them)
  // A cluster instead:
  std::optional<pb::ClusterConfig> cluster;
  CurveKeyPair cluster_curve;      // the client's keys for a CURVE cluster (docs/SECURITY.md)
  // The client:
  uint32_t outstanding = 200;      // detdb-bench tpcc sets DefaultOutstanding(mix) instead
  uint64_t txns = 0;               // stop after this many committed or rolled back txns (0: duration)
  double duration_s = 5;
  bool check = true;               // run the consistency checker afterwards
  // About once a second (totals since the start; new_orders set).
  std::function<void(const ProgressSample&)> progress;
};

struct KindResult {
  uint64_t committed = 0;          // committed
  uint64_t rolled_back = 0;        // New-Order's 1% rollback (an expected, deterministic abort)
  uint64_t restarts = 0;           // reconnaissance no longer held: run again
  uint64_t refused = 0;            // refused before sequencing (should stay 0)
  // First submission (recon included) to commit, as the client sees them:
  // stamped when its round of submissions starts and when the poll that
  // brought the result returned (one clock reading each), so a few tens
  // of us above the exact figure at most.
  uint64_t p50_us = 0, p90_us = 0, p99_us = 0;
};

struct TpccRunResult {
  std::string lock_manager;
  uint32_t warehouses = 0, partitions = 0, nodes = 0;
  bool in_process = false;  // ran an engine in this process (not against a cluster)
  double seconds = 0;
  uint64_t committed = 0;          // all kinds, rollbacks included (they complete)
  double txns_per_sec = 0;
  double new_orders_per_min = 0;   // committed New-Orders per minute (tpmC-like)
  double restart_rate = 0;         // restarts / (committed + restarts) of the dependent txns
  std::array<KindResult, kNumKinds> kinds;
  bool consistency_checked = false, consistency_ok = false;
  std::vector<std::string> consistency_failures;
  uint64_t digest = 0;             // one process only
  // One process only: the schedulers' admission, averaged over partitions
  // (SchedulerStats): share of admissions blocked, active txns per
  // admission, the window at the end, its changes, worker starvations.
  double blocked_at_admission = 0, avg_active = 0, window = 0;
  uint64_t window_grows = 0, window_shrinks = 0, starved = 0;
  uint64_t window_grows_undone = 0, window_shrinks_undone = 0;  // of the grows, shrinks
  uint64_t window_steps_back_up = 0;  // SchedulerStats::window_steps_back_up, summed
  // One process only: CPU time per committed txn over the measured run, of
  // the whole process (client and loader's idle threads included) and of
  // the partitions' workers.
  double cpu_us_per_txn = 0, worker_us_per_txn = 0;
  // Of cpu_us_per_txn, the partitions' lock threads and the client (the
  // thread that generates, submits and checks the txns: the bench's own).
  // The rest is the sequencer's and the idle threads' (and the kernel's
  // work outside these threads).
  double lock_us_per_txn = 0, client_us_per_txn = 0;
  // One process only: of cpu_us_per_txn, the kernel's part (getrusage's
  // system time: page faults, futex waits and wake-ups, yields), and the
  // minor page faults per committed txn: mostly first touches of the
  // memory the new rows take, which a VM whose memory the host backs
  // lazily makes expensive (docs/TPCC.md, "First touches of memory").
  double kernel_us_per_txn = 0, page_faults_per_txn = 0;
  // In-process runs only (against a cluster the latches are in the
  // servers): storage's ElidedLatches over the measured run (every
  // thread's counters: elided sections, fallbacks, aborts by cause), and
  // whether Lock() tried elision (RTM found and not turned off).
  ElidedLatch::Stats latches;
  bool elision = false;
  std::vector<std::shared_ptr<const pb::Batch>> history;  // one process, record_history
  // One process only: each table at the end, summed over partitions
  // (Table::memory_bytes, Table::reclaim_stats; docs/STORAGE.md).
  struct TableMemory {
    std::string name;
    uint64_t records = 0, bytes = 0, reclaimed_records = 0, retired_index_bytes = 0;
  };
  std::vector<TableMemory> tables;
};

absl::StatusOr<TpccRunResult> RunTpcc(const TpccRunOptions& options);

// Txns in flight that `detdb-bench tpcc` keeps unless told: 200 when the
// mix has Delivery or Stock-Level (their reconnaissance restarts grow with
// the overlap: 2% at 200, 19% at 300, 55% at 400 in flight), else 400
// (New-Order + Payment keep two cores busy only from about 400: 196K
// txns/s at 200, 228K at 400, 225K at 800). docs/TPCC.md, "Issue 14's
// 330K aim, eleventh session".
uint32_t DefaultOutstanding(const Mix& mix);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_BENCH_TPCC_RUNNER_H_
