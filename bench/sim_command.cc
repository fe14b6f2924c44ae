// `detdb-bench calibrate --out FILE`: measures the simulation's costs on
// this host (bench/sim_costs.h) and writes them to FILE.
// `detdb-bench simulate [flags]`: the microbenchmark on the simulated runner
// (bench/sim.h) with --nodes nodes, --partitions partitions in all and
// --workers workers per partition; one lock manager or --compare.
// `detdb-bench simulate --validate`: simulated against real throughput per
// lock manager at 1 and 2 workers, 1 and 2 partitions (the setups this host
// runs for real), a mark where they differ by more than 20%.
// Compiled into detdb-bench (flags belong to binaries).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/micro_runner.h"
#include "bench/sim.h"
#include "bench/sim_command.h"
#include "gflags/gflags.h"
#include "lockmgr/lock_manager.h"

DECLARE_string(lock_manager);
DECLARE_string(intent_locks);
DECLARE_bool(compare);
DECLARE_uint32(partitions);
DECLARE_uint32(workers);
DECLARE_bool(release_on_workers);
DECLARE_uint64(records);
DECLARE_double(contention);
DECLARE_uint32(keys_per_txn);
DECLARE_double(write_fraction);
DECLARE_double(compute_us);
DECLARE_uint32(depth);
DECLARE_double(multipartition);
DECLARE_double(duration);
DECLARE_uint32(outstanding);
DECLARE_uint64(epoch_us);
DECLARE_uint32(max_active);
DECLARE_bool(adaptive_admission);
DECLARE_bool(staged_alloc);
DECLARE_uint32(table_size);
DECLARE_uint64(seed);
DECLARE_bool(json);
DECLARE_uint32(rounds);

DEFINE_string(calibration, "sim_costs.txt", "simulate, figure: the cost file that detdb-bench calibrate wrote");
DEFINE_string(out, "", "calibrate: the cost file to write; figure: the output directory");
DEFINE_uint32(nodes, 1, "simulate: nodes (machines); --partitions are spread over them");
DEFINE_double(sim_duration, 0.5, "simulate: virtual seconds measured (after --sim_warmup)");
DEFINE_double(sim_warmup, 0.1, "simulate: virtual seconds of warm-up before the measurement");
DEFINE_bool(validate, false, "simulate: simulated against real throughput at 1 and 2 workers, 1 and 2 partitions");
DEFINE_uint32(sim_cores, 0, "simulate, figure: cores the simulated threads share (0: a core per thread)");
DEFINE_bool(sim_front, true, "simulate: charge the client + sequencer their calibrated cost per txn (a thread per node)");
DEFINE_uint64(calibrate_txns, 200000, "calibrate: txns per lock-manager measurement");

namespace detdb {

MicroOptions MicroFromFlags() {
  MicroOptions w;
  w.partitions = FLAGS_partitions;
  w.records_per_partition = FLAGS_records;
  w.contention = FLAGS_contention;
  w.keys_per_txn = FLAGS_keys_per_txn;
  w.write_fraction = FLAGS_write_fraction;
  w.compute_us = FLAGS_compute_us;
  w.depth = FLAGS_depth;
  w.multipartition = FLAGS_multipartition;
  w.seed = FLAGS_seed;
  return w;
}

SimOptions SimFromFlags() {
  SimOptions o;
  o.workload = MicroFromFlags();
  o.nodes = FLAGS_nodes;
  o.lock_manager = FLAGS_lock_manager;
  o.workers = FLAGS_workers;
  o.release_on_workers = FLAGS_release_on_workers;
  o.adaptive_admission = FLAGS_adaptive_admission;
  o.lock.max_active = FLAGS_max_active;
  o.lock.table_size = FLAGS_table_size;
  o.lock.check_invariants = false;  // O(active) per operation; sim checks G1 itself
  o.epoch_us = FLAGS_epoch_us;
  o.outstanding = FLAGS_outstanding;
  o.duration_s = FLAGS_sim_duration;
  o.warmup_s = FLAGS_sim_warmup;
  o.cores = FLAGS_sim_cores;
  o.model_front = FLAGS_sim_front;
  return o;
}

MicroRunOptions RealFromFlags() {
  MicroRunOptions o;
  o.workload = MicroFromFlags();
  o.lock_manager = FLAGS_lock_manager;
  o.intent_locks = FLAGS_intent_locks;
  o.workers = FLAGS_workers;
  o.release_on_workers = FLAGS_release_on_workers;
  o.adaptive_admission = FLAGS_adaptive_admission;
  o.staged_alloc = FLAGS_staged_alloc;
  o.epoch_us = FLAGS_epoch_us;
  o.lock.max_active = FLAGS_max_active;
  o.lock.table_size = FLAGS_table_size;
  o.lock.check_invariants = false;  // a benchmark: O(active) per operation in debug builds
  o.duration_s = FLAGS_duration;
  o.outstanding = FLAGS_outstanding;
  return o;
}

int CalibrateCommand() {
  if (FLAGS_out.empty()) {
    fprintf(stderr, "detdb-bench calibrate: give --out=FILE\n");
    return 2;
  }
  fprintf(stderr, "calibrating (lock managers, execution, hand-off, network): about a minute\n");
  auto c = Calibrate({.txns = FLAGS_calibrate_txns});
  if (!c.ok()) {
    fprintf(stderr, "detdb-bench calibrate: %s\n", std::string(c.status().message()).c_str());
    return 1;
  }
  absl::Status s = c->Save(FLAGS_out);
  if (!s.ok()) {
    fprintf(stderr, "detdb-bench calibrate: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  printf("%s", c->ToText().c_str());
  printf("written to %s\n", FLAGS_out.c_str());
  return 0;
}

namespace {

// The 1-minute load average (other processes compete for the cores too).
double LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

int Validate(const SimCosts& costs, const std::vector<std::string>& names) {
  printf("simulated against real throughput (txns/s); real: the median of %u runs of %.1f s on this host; sim: "
         "%.2f virtual s; 2 partitions: %.0f%% multi-partition txns\n",
         std::max(1u, FLAGS_rounds), FLAGS_duration, FLAGS_sim_duration, 100 * FLAGS_multipartition);
  if (costs.front_txn_ns > 0)
    printf("the calibration's real run (its overheads per txn) was dclp, 1 worker, 1 partition, contention 0.0001, "
           "10 keys: that row agrees by construction where its flags are the same; the others test the model\n");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  printf("sim: every thread a core of its own; sim%u: the threads share this host's %u cores (SimOptions::cores)\n",
         cores, cores);
  printf("%-10s %7s %10s %10s %10s %8s %10s %8s\n", "lock_mgr", "workers", "partitions", "real", "sim", "sim/real",
         absl::StrCat("sim", cores).c_str(), "ratio");
  int off = 0, total = 0;
  const double load_before = LoadAverage();
  for (uint32_t parts : {1u, 2u}) {
    for (uint32_t workers : {1u, 2u}) {
      for (const std::string& name : names) {
        MicroRunOptions ro = RealFromFlags();
        ro.workload.partitions = parts;
        if (parts == 1) ro.workload.multipartition = 0;
        ro.workers = workers;
        ro.lock_manager = name;
        SimOptions so = SimFromFlags();
        so.workload.partitions = parts;
        if (parts == 1) so.workload.multipartition = 0;
        so.nodes = 1;
        so.workers = workers;
        so.lock_manager = name;
        so.cores = 0;
        // Real: the median of --rounds runs (this host's throughput moves
        // from run to run; the simulation's does not).
        std::vector<MicroRunResult> reals;
        absl::StatusOr<MicroRunResult> real = absl::UnknownError("no run");
        for (uint32_t r = 0; r < std::max(1u, FLAGS_rounds); ++r) {
          real = RunMicro(ro);
          if (!real.ok()) break;
          reals.push_back(*real);
        }
        if (real.ok()) {
          std::sort(reals.begin(), reals.end(), [](const MicroRunResult& a, const MicroRunResult& b) {
            return a.txns_per_sec < b.txns_per_sec;
          });
          real = reals[reals.size() / 2];
        }
        auto sim = RunSim(so, costs);
        so.cores = cores;
        auto shared = RunSim(so, costs);
        if (!real.ok() || !sim.ok() || !shared.ok()) {
          fprintf(stderr, "detdb-bench simulate: %s\n",
                  std::string((!real.ok() ? real.status() : !sim.ok() ? sim.status() : shared.status()).message())
                      .c_str());
          return 1;
        }
        const double ratio = sim->txns_per_sec / real->txns_per_sec;
        const double ratio_shared = shared->txns_per_sec / real->txns_per_sec;
        const bool far = std::fabs(ratio_shared - 1) > 0.2;
        off += far;
        ++total;
        printf("%-10s %7u %10u %10.0f %10.0f %8.2f %10.0f %8.2f%s\n", name.c_str(), workers, parts,
               real->txns_per_sec, sim->txns_per_sec, ratio, shared->txns_per_sec, ratio_shared,
               far ? "  >20%" : "");
        fflush(stdout);
      }
    }
  }
  printf("load average (1 min) of this host before and after: %.1f, %.1f; with %u cores, a load above the real "
         "runs' own threads means other processes took cores from them\n",
         load_before, LoadAverage(), cores);
  printf("%d of %d setups: sim%u differs from real by more than 20%% (docs/PAPER.md, Validation, says why).\n",
         off, total, cores);
  return 0;
}

}  // namespace

int SimulateCommand() {
  auto costs = SimCosts::Load(FLAGS_calibration);
  if (!costs.ok()) {
    fprintf(stderr, "detdb-bench simulate: %s\n", std::string(costs.status().message()).c_str());
    return 1;
  }
  std::vector<std::string> names = {FLAGS_lock_manager};
  if (FLAGS_compare) names = LockManagerNames();
  if (FLAGS_validate) return Validate(*costs, names);
  for (const std::string& name : names) {
    SimOptions o = SimFromFlags();
    o.lock_manager = name;
    auto r = RunSim(o, *costs);
    if (!r.ok()) {
      fprintf(stderr, "detdb-bench simulate: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    if (FLAGS_json) {
      printf("{\"lock_manager\":\"%s\",\"simulated\":true,\"txns_per_sec\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
             "\"blocked_at_admission\":%.4f,\"lock_thread_busy\":%.3f,\"worker_busy\":%.3f,\"nodes\":%u,"
             "\"partitions\":%u,\"workers\":%u}\n",
             name.c_str(), r->txns_per_sec, r->p50_us, r->p99_us, r->blocked_at_admission, r->lock_thread_busy,
             r->worker_busy, o.nodes, o.workload.partitions, o.workers);
    } else {
      printf("%-10s simulated %u node(s), %u partition(s), %u worker(s) each: %.0f txns/s, latency p50 %.0f us "
             "p99 %.0f us, %.1f%% blocked at admission, lock thread busy %.0f%%, workers busy %.0f%% "
             "(%lu events, %.2f s)\n",
             name.c_str(), o.nodes, o.workload.partitions, o.workers, r->txns_per_sec, r->p50_us, r->p99_us,
             100 * r->blocked_at_admission, 100 * r->lock_thread_busy, 100 * r->worker_busy,
             static_cast<unsigned long>(r->events), r->wall_s);
    }
    fflush(stdout);
  }
  return 0;
}

}  // namespace detdb
