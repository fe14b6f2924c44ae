// Runs the microbenchmark against an in-process Engine: loads the tables,
// drives a closed-loop client (at most `outstanding` txns in flight), reports
// progress once a second, and returns throughput, latency percentiles
// (submission to commit), lock-manager statistics and the state digest.
//
// Thread-safety: RunMicro blocks the calling thread; progress callbacks run
// on it.
#ifndef DETDB_BENCH_MICRO_RUNNER_H_
#define DETDB_BENCH_MICRO_RUNNER_H_

#include <cstdint>
#include <functional>

#include <string>

#include "absl/status/statusor.h"
#include "workloads/micro/micro.h"
#include "lockmgr/lock_manager.h"
#include "scheduler/admission_trace.h"
#include "scheduler/log_stage.h"
#include "bench/histogram.h"

namespace detdb {

struct MicroRunOptions {
  MicroOptions workload;
  std::string lock_manager = "dclp";
  std::string intent_locks = "lil";  // EngineOptions::intent_locks
  uint32_t workers = 1;            // per partition
  bool release_on_workers = true;  // see SchedulerOptions
  bool adaptive_admission = true;  // see SchedulerOptions
  bool staged_alloc = false;       // see SchedulerOptions
  AdmissionTrace* admission_trace = nullptr;  // see SchedulerOptions; not owned
  uint64_t epoch_us = 1000;
  LockManagerOptions lock;
  uint64_t txns = 0;               // stop after this many txns (0: use duration)
  double duration_s = 3;
  uint32_t outstanding = 4000;     // closed loop: txns in flight at most
  // The input log (log.dir empty: none). The directory is emptied before
  // the run: every run starts from an empty log.
  LogStageOptions log;
  // After the run, time a restart of the engine on its log (replay).
  bool measure_replay = false;
  // Called about once a second (totals since the start: see ProgressSample).
  std::function<void(const ProgressSample&)> progress;
};

struct MicroRunResult {
  std::string lock_manager;
  uint64_t committed = 0, aborted = 0;
  double seconds = 0;
  double txns_per_sec = 0;
  uint64_t p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0;
  double blocked_at_admission = 0;  // share of admissions not granted at once
  double avg_active = 0;            // admitted, unreleased txns per partition
  double window = 0;                // admission window at the end, per partition
  // Summed over partitions: window grows and shrinks (of them, trials the
  // release rate undid), worker starvations (admission.h).
  uint64_t window_grows = 0, window_shrinks = 0, window_shrinks_undone = 0, window_grows_undone = 0;
  uint64_t window_steps_back_up = 0;  // SchedulerStats::window_steps_back_up, summed
  uint64_t starved = 0;
  uint64_t parked = 0;              // multi-partition txns that waited for reads
  uint64_t digest = 0;
  double client_busy = 0;           // share of the run the client spent generating + submitting
  // CPU time of the whole process (every thread: client, sequencer, lock
  // threads, workers) per committed txn over the measured run. Threads sleep
  // when idle, so this is the work a txn costs; unlike txns/s it hardly
  // moves when other processes share the cores (a noisy machine).
  double cpu_us_per_txn = 0;
  // The same for the partitions' lock threads alone (the lock manager, the
  // merge, admission and their wake-ups) and for their workers together.
  double lock_us_per_txn = 0;
  double worker_us_per_txn = 0;
  size_t peak_lock_bytes = 0;
  uint64_t replayed = 0;            // measure_replay: txns replayed
  double replay_seconds = 0;        // and how long Start() took with them
};

absl::StatusOr<MicroRunResult> RunMicro(const MicroRunOptions& options);

}  // namespace detdb

#endif  // DETDB_BENCH_MICRO_RUNNER_H_
