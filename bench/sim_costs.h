// SimCosts: what the simulation (sim.h) charges, in virtual nanoseconds, for
// each step of the scheduler, and the calibration that measures them on this
// host (`detdb-bench calibrate --out FILE`).
//
// Each cost is measured by running detdb's own code on one thread, as that
// thread's CPU time (so other processes on the host do not inflate it), but
// the hand-off and the network, which are latencies (wall clock):
// - lock thread, per lock manager: the lock manager's Lock + Release, per txn
//   and per key: detdb_lockbench's loop (bench/lockbench.h) over
//   microbenchmark txns of 2 and of 10 keys, a straight line through both.
// - execution: a worker's run of a microbenchmark txn (read the records, the
//   stored procedure, apply the writes, the reply), per txn and per key:
//   TxnExecutor on a loaded table, 2 and 10 keys. --compute_us is charged
//   as given (the procedure spins that long after each read).
// - hand-off: one item through the WorkQueue between two threads, the
//   consumer asleep (the wake-up a dispatch to an idle worker pays).
// - network: one message one way between two ZeroMQ sockets over TCP on
//   127.0.0.1 (remote reads and batches between nodes).
// - what the parts above leave out, from a real run: the in-process engine
//   (bench/micro_runner.h) runs dclp on 1 partition with 1 worker at
//   contention 0.0001, 10 keys per txn, and each thread's CPU time per txn is
//   read (SchedulerStats::lock_thread_cpu_ns, workers_cpu_ns). The lock
//   thread's CPU beyond dclp's calibrated Lock + Release is its per-txn
//   overhead (merge, admission, queue pushes, wake-ups), charged to every
//   lock manager alike; the worker's beyond the calibrated execution is the
//   worker's (queue pops, reclamation, hand-backs); the rest of the process
//   (the client generating and submitting, the sequencer, the results) is
//   the front end's, charged per txn to a per-node client thread.
//   Calibrated at that one setup; `simulate --validate` checks the others.
//
// The file is text, one "name value" per line; lock costs are named
// "lock_txn_ns.<manager>" and "lock_key_ns.<manager>".
//
// Thread-safety: SimCosts is a value; Calibrate runs threads of its own and
// must not run beside other measurements.
#ifndef DETDB_BENCH_SIM_COSTS_H_
#define DETDB_BENCH_SIM_COSTS_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace detdb {

struct SimCosts {
  struct Lock {
    double txn_ns = 0;  // Lock + Release of one txn, besides its keys
    double key_ns = 0;  // per key
  };
  std::map<std::string, Lock> lock;  // by lock manager name
  double exec_txn_ns = 0;            // a worker's run of one txn, besides its keys
  double exec_key_ns = 0;            // per key
  double handoff_ns = 0;             // one hand-off to a sleeping thread
  double net_ns = 0;                 // one message between nodes, one way
  // From a real run (see above); 0 in files of older calibrations.
  double lock_txn_extra_ns = 0;      // the lock thread, per txn, beyond the lock manager
  double worker_txn_extra_ns = 0;    // a worker, per txn, beyond the execution
  double front_txn_ns = 0;           // client + sequencer, per txn

  // The lock costs of `name`; NotFound if the file has none for it.
  absl::StatusOr<Lock> LockCosts(const std::string& name) const;
  std::string ToText() const;
  static absl::StatusOr<SimCosts> FromText(const std::string& text);
  absl::Status Save(const std::string& path) const;
  static absl::StatusOr<SimCosts> Load(const std::string& path);
};

struct CalibrateOptions {
  uint64_t txns = 200000;  // per lock-bench run
  uint32_t rounds = 3;     // each cost is the median of this many runs
  double real_run_s = 1.5; // seconds of each real engine run (the overheads)
};

// Measures every cost on this host (a few seconds per lock manager).
absl::StatusOr<SimCosts> Calibrate(const CalibrateOptions& options);

}  // namespace detdb

#endif  // DETDB_BENCH_SIM_COSTS_H_
