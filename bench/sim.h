// The simulated runner: detdb's scheduler logic (scheduler/scheduler_core.h)
// and its real LockManagers, run in virtual time by a deterministic
// discrete-event loop, for setups this host has not the cores or machines
// for (the DCLP paper's 4 workers and 1 lock thread per partition, 8 nodes).
//
// What runs for real: per partition a SubBatchMerger (merge in (epoch,
// sequencer) order), a PartitionCore (admission slices with the adaptive
// window, LockManager::Lock/Release/Poll, the ready list, releases), a
// RemoteReadsTable (parking of executors that wait for remote reads, reads
// that arrive early); TxnExecutor::Init (each txn's local keys, executors,
// expected remote reads); the microbenchmark's own generator (workloads/micro).
//
// What is modelled, from a calibration file (sim_costs.h), and how:
// - every thread has a core of its own, or with `cores` set, the threads
//   share that many cores (processor sharing, see SimOptions::cores);
// - the lock thread: one server per partition. An iteration takes the txns
//   handed back, releases them, runs one Admit() slice and dispatches what
//   became ready; it costs the lock manager's calibrated per-txn and per-key
//   cost for every Lock and every Release it made, plus the lock side's
//   calibrated overhead per txn (merge, admission, queues). With nothing to do it
//   sleeps until a hand-back, a sub-batch or a starving worker wakes it.
// - workers: N servers per partition with one FIFO queue. A txn costs the
//   calibrated execution per txn and per key, plus --compute_us per key read,
//   plus the worker's calibrated overhead per txn;
//   a passive participant (reads only) costs its reads. An executor still
//   missing remote reads is parked (the real RemoteReadsTable) and the
//   worker moves on. A finished txn goes back to the lock thread (one
//   hand-off) or, as Scheduler does with release_on_workers, is released by
//   the worker itself when the lock thread sleeps and the lock side is free.
// - hand-offs: a dispatch to a sleeping worker and a hand-back to a sleeping
//   lock thread cost one calibrated hand-off; to a busy one, nothing.
// - nodes: each of M nodes has a sequencer closing an epoch every epoch_us
//   and a closed-loop client of outstanding/M txns: one thread that spends
//   the calibrated front-end cost per txn (generating and submitting it,
//   the sequencer's share, taking the result) before it resubmits, one
//   result at a time. A batch reaches another
//   node's partitions after the network delay, and so do remote reads.
//   Partitions of one node exchange reads and batches at no cost.
// - TPC-C (SimOptions::tpcc, fig. 10): New-Order and Payment drawn by the
//   real TPC-C generator (workloads/tpcc: key sets, remote warehouses),
//   warehouses on partitions as WarehousePartitioner places them, each
//   node's client drawing home warehouses of its own partitions. Their
//   execution costs the same calibrated per-txn and per-key cost as the
//   microbenchmark's (TPC-C's procedures do more per key: index rows,
//   string fields), so the absolute figures are optimistic; the lock side
//   (the key sets, the conflicts, the remote reads) is TPC-C's own.
// What is NOT modelled: cache misses beyond what the calibration averaged
// (hot lock state, cold records), memory bandwidth, contention for lm_mu_
// and the queues' mutexes, the OS scheduler, NIC bandwidth and batching of
// network messages, the sequencer as a thread of its own (its CPU is in the
// front end's per-txn cost), TPC-C's
// Delivery, Order-Status and Stock-Level (a reconnaissance needs the data).
//
// Checks: with check_g1, every txn's start and end are checked against
// every other running txn on the same key (no two conflicting txns run at
// once; conflicting txns start in id order: G1 of LOCKING.md). A violation
// fails RunSim with Internal naming the txns and the key.
//
// Thread-safety: RunSim runs on the calling thread; it is deterministic: the
// same options and costs give the same result, bit for bit.
#ifndef DETDB_BENCH_SIM_H_
#define DETDB_BENCH_SIM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/sim_costs.h"
#include "lockmgr/lock_manager.h"
#include "workloads/micro/micro.h"

namespace detdb {

// TPC-C in place of the microbenchmark (see the file comment).
struct SimTpccOptions {
  uint32_t warehouses = 0;         // 0: the microbenchmark runs; else >= workload.partitions
  // Share of New-Orders that order from another warehouse (each of an
  // order's ~10 lines is remote with the probability that gives this share).
  double remote_order = 0;
  double remote_payment = 0.15;    // Payment: share of customers of another warehouse
  double payment_share = 0.5;      // the rest are New-Orders
};

struct SimOptions {
  MicroOptions workload;           // workload.partitions: every partition of every node
  SimTpccOptions tpcc;             // tpcc.warehouses > 0: TPC-C instead of workload's txns
  uint32_t nodes = 1;              // partitions are spread round-robin over the nodes
  std::string lock_manager = "dclp";
  uint32_t workers = 1;            // per partition
  bool release_on_workers = true;  // see SchedulerOptions
  bool adaptive_admission = true;  // see SchedulerOptions
  LockManagerOptions lock;
  uint64_t epoch_us = 1000;
  uint32_t outstanding = 4000;     // closed loop, over all nodes
  double duration_s = 0.5;         // virtual seconds measured
  double warmup_s = 0.1;           // virtual seconds before the measurement
  // Cores the threads share; 0: every thread has a core of its own (the
  // paper's machines). With cores > 0 a step (a lock pass, a txn's run)
  // that starts while R > cores threads run (lock threads awake, workers
  // busy) takes R / cores times its calibrated cost: processor sharing,
  // frozen at the step's start. A busy client thread counts; the
  // sequencer's CPU is in the client's (the front end's) cost.
  uint32_t cores = 0;
  // Charge the front end (client + sequencer) its calibrated cost per txn
  // (SimCosts::front_txn_ns, one thread per node). Off: a txn is
  // resubmitted the moment its result is produced, as if the front end had
  // cores of its own to spare (the figures of the paper's setup: its clients
  // and sequencer were not what it measured).
  bool model_front = true;
  bool check_g1 = true;
  // Makes the lock manager of every partition (tests: a broken one). Null:
  // NewLockManager(lock_manager, lock).
  std::function<std::unique_ptr<LockManager>()> make_lock_manager;
};

struct SimResult {
  uint64_t committed = 0;       // txns whose coordinator finished in the measured span
  double txns_per_sec = 0;      // committed / duration_s
  double p50_us = 0, p99_us = 0;  // submission to result (virtual)
  double blocked_at_admission = 0;
  double lock_thread_busy = 0;  // share of the measured span, averaged over partitions
  double worker_busy = 0;       // per worker, averaged
  double client_busy = 0;       // per node's client thread (front end), averaged
  uint64_t parked = 0;
  double multipartition = 0;    // share of the committed txns with more than one participant
  uint64_t events = 0;
  double wall_s = 0;            // real time the simulation took
};

absl::StatusOr<SimResult> RunSim(const SimOptions& options, const SimCosts& costs);

}  // namespace detdb

#endif  // DETDB_BENCH_SIM_H_
