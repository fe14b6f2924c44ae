// detdb-bench: benchmarks of a real detdb engine, in one process or against
// a running cluster.
//
//   detdb-bench micro [flags]             one lock manager (--lock_manager)
//   detdb-bench micro --compare [flags]   every lock manager, same txn stream
//   detdb-bench micro --cluster=<config>  the cluster's nodes (network clients)
//
// Progress goes to stderr once a second; the summary (or, with --json, one
// JSON object per lock manager per line) to stdout.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/timeseries.h"
#include "bench/micro_cluster.h"
#include "bench/micro_runner.h"
#include "bench/crash_command.h"
#include "bench/sim_command.h"
#include "client/cluster_config.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_string(lock_manager, "dclp", "dclp, det2pl, vll, vll_sca or dclp_frag (--compare runs all)");
DEFINE_string(intent_locks, "lil", "Intent locks of the workers: lil, sli or queue (storage/intent_lock.h)");
DEFINE_bool(compare, false, "Run every lock manager on the identical txn stream and compare");
DEFINE_uint32(partitions, 1, "Partitions in this process (each: 1 lock thread + --workers workers)");
DEFINE_uint32(workers, 1, "Worker threads per partition");
DEFINE_bool(release_on_workers, true, "Workers release their txns' locks (false: only the lock thread touches the lock manager, as in Calvin and the DCLP paper)");
DEFINE_uint64(records, 1000000, "Records per partition");
DEFINE_double(contention, 0.0001, "Contention index: one hot record per txn from a hot set of 1/CI");
DEFINE_uint32(keys_per_txn, 10, "Records per txn");
DEFINE_double(write_fraction, 1.0, "Share of accesses that write (1: write-only; 0.05: 95% reads)");
DEFINE_double(compute_us, 0, "Long txns: microseconds of computation after each record read");
DEFINE_uint32(depth, 0, "Dependency depth workload: reads between two writes of one hot record (0: off)");
DEFINE_double(multipartition, 0, "Share of txns spread over 2 partitions (needs --partitions >= 2)");
DEFINE_uint64(txns, 0, "Run exactly this many txns (then --compare also checks equal digests)");
DEFINE_double(duration, 3, "Seconds per lock manager when --txns is 0");
DEFINE_uint32(outstanding, 4000, "Closed-loop client: txns in flight at most (tpcc: 200, or 400 for a mix without Delivery and Stock-Level, unless given)");
DEFINE_uint64(epoch_us, 1000, "Sequencer epoch length in microseconds (tpcc in one process: 500 unless given)");
DEFINE_uint32(max_active, 2000, "Admission cap: active txns per partition at most");
DEFINE_bool(staged_alloc, false,
            "Txn states and their buffers from per-sub-batch slabs freed in bulk (seed 003; docs/STORAGE.md); "
            "false: pooled states with heap buffers");
DEFINE_bool(adaptive_admission, true, "The admission window adapts to the workers (up to --max_active); false: a fixed window of --max_active");
DEFINE_uint32(table_size, 1u << 20, "Hash locks / VLL counters per partition (power of two)");
DEFINE_uint64(seed, 1, "Workload seed");
DEFINE_bool(json, false, "Print one JSON object per lock manager per line");
DEFINE_string(timeseries, "",
              "micro and tpcc: also write one CSV row per second per run to FILE (txns/s, p50 and p99 latency of "
              "that second); bench/plot_timeseries.py FILE OUT.png plots it");
DEFINE_uint32(rounds, 1, "Run the lock managers this many times, interleaved; report each one's median run");
DEFINE_string(admission_trace, "",
              "micro, one lock manager, one round: record every admission round (its signals and window) in this "
              "file; replay it with `detdb-bench admission-replay FILE` (docs/ENGINE.md)");
DEFINE_string(cluster, "", "Run against the detdb cluster of this config (deploy/local_cluster.sh up prints it)");
DEFINE_string(curve_key_file, "",
              "--cluster with CURVE: this client's secret-key file (mode 0600; its public key in the nodes' "
              "allowlist; default: keys/client.key beside the config if there; docs/SECURITY.md)");
DEFINE_uint32(clients, 1, "--cluster: client threads (each its own connections and client id)");
DEFINE_string(data_dir, "", "micro in one process: log the input to DIR/bench-log (emptied before each run); empty: no log");
DEFINE_string(log_sync, "fsync", "With --data_dir: fsync (one fdatasync per group of epochs) or none");
DEFINE_bool(log_then_execute, false, "With --data_dir: execution waits for the fsync too (default: only replies wait)");
DEFINE_bool(measure_replay, false, "With --data_dir: after each run, time a restart that replays its log");
DEFINE_double(warmup, 1, "Seconds of an unreported warm-up run before the measured runs (0: none)");

namespace detdb {
namespace {

void PrintJson(const MicroRunResult& r) {
  printf("{\"lock_manager\":\"%s\",\"txns_per_sec\":%.0f,\"committed\":%lu,\"aborted\":%lu,"
         "\"seconds\":%.3f,\"p50_us\":%lu,\"p90_us\":%lu,\"p99_us\":%lu,\"p999_us\":%lu,"
         "\"blocked_at_admission\":%.4f,\"avg_active\":%.1f,\"window\":%.0f,\"parked\":%lu,\"client_busy\":%.3f,"
         "\"cpu_us_per_txn\":%.3f,\"lock_us_per_txn\":%.3f,\"worker_us_per_txn\":%.3f,\"peak_lock_bytes\":%zu,\"digest\":\"%016lx\",\"contention\":%g,\"keys_per_txn\":%u,"
         "\"write_fraction\":%g,\"compute_us\":%g,\"depth\":%u,\"multipartition\":%g,"
         "\"partitions\":%u,\"workers\":%u,\"staged_alloc\":%s}\n",
         r.lock_manager.c_str(), r.txns_per_sec, static_cast<unsigned long>(r.committed),
         static_cast<unsigned long>(r.aborted), r.seconds, static_cast<unsigned long>(r.p50_us),
         static_cast<unsigned long>(r.p90_us), static_cast<unsigned long>(r.p99_us),
         static_cast<unsigned long>(r.p999_us), r.blocked_at_admission, r.avg_active, r.window,
         static_cast<unsigned long>(r.parked), r.client_busy, r.cpu_us_per_txn, r.lock_us_per_txn,
         r.worker_us_per_txn, r.peak_lock_bytes,
         static_cast<unsigned long>(r.digest), FLAGS_contention, FLAGS_keys_per_txn, FLAGS_write_fraction,
         FLAGS_compute_us, FLAGS_depth, FLAGS_multipartition, FLAGS_partitions, FLAGS_workers,
         FLAGS_staged_alloc ? "true" : "false");
  fflush(stdout);
}

void PrintSummary(const MicroRunResult& r) {
  printf("\n%s: %lu txns committed in %.2f s = %.0f txns/s (%lu aborted)\n", r.lock_manager.c_str(),
         static_cast<unsigned long>(r.committed), r.seconds, r.txns_per_sec,
         static_cast<unsigned long>(r.aborted));
  printf("  latency submit->commit: p50 %lu us, p90 %lu us, p99 %lu us, p99.9 %lu us\n",
         static_cast<unsigned long>(r.p50_us), static_cast<unsigned long>(r.p90_us),
         static_cast<unsigned long>(r.p99_us), static_cast<unsigned long>(r.p999_us));
  printf("  lock manager: %.1f%% of txns blocked at admission, %.1f active txns on average "
         "(admission window %.0f at the end), peak lock state %.1f MiB\n",
         100 * r.blocked_at_admission, r.avg_active, r.window, r.peak_lock_bytes / 1048576.0);
  printf("  admission: window grew %lu times (%lu of them undone), shrank %lu (%lu of them undone), "
         "stepped back up %lu, workers starved %lu times\n",
         static_cast<unsigned long>(r.window_grows), static_cast<unsigned long>(r.window_grows_undone),
         static_cast<unsigned long>(r.window_shrinks), static_cast<unsigned long>(r.window_shrinks_undone),
         static_cast<unsigned long>(r.window_steps_back_up), static_cast<unsigned long>(r.starved));
  if (r.parked != 0) printf("  %lu txns waited for remote reads\n", static_cast<unsigned long>(r.parked));
  if (r.replayed != 0)
    printf("  replay of the log: %lu txns in %.2f s (%.2f s per million txns)\n",
           static_cast<unsigned long>(r.replayed), r.replay_seconds, r.replay_seconds * 1e6 / r.replayed);
  printf("  client busy %.0f%% of the run (txn generation + submission); process CPU %.2f us per txn, "
         "of it lock threads %.2f us and workers %.2f us\n",
         100 * r.client_busy, r.cpu_us_per_txn, r.lock_us_per_txn, r.worker_us_per_txn);
  printf("  state digest %016lx\n", static_cast<unsigned long>(r.digest));
  fflush(stdout);
}

void PrintClusterJson(const MicroClusterResult& r) {
  printf("{\"mode\":\"cluster\",\"lock_manager\":\"%s\",\"nodes\":%u,\"partitions\":%u,\"txns_per_sec\":%.0f,"
         "\"committed\":%lu,\"aborted\":%lu,\"refused\":%lu,\"duplicates\":%lu,\"seconds\":%.3f,"
         "\"p50_us\":%lu,\"p90_us\":%lu,\"p99_us\":%lu,\"p999_us\":%lu,"
         "\"single_count\":%lu,\"single_p50_us\":%lu,\"single_p99_us\":%lu,"
         "\"multi_count\":%lu,\"multi_p50_us\":%lu,\"multi_p99_us\":%lu,"
         "\"contention\":%g,\"keys_per_txn\":%u,\"write_fraction\":%g,\"compute_us\":%g,\"depth\":%u,"
         "\"multipartition\":%g,\"outstanding\":%u,\"clients\":%u}\n",
         r.lock_manager.c_str(), r.nodes, r.partitions, r.txns_per_sec, static_cast<unsigned long>(r.committed),
         static_cast<unsigned long>(r.aborted), static_cast<unsigned long>(r.refused),
         static_cast<unsigned long>(r.duplicates), r.seconds, static_cast<unsigned long>(r.p50_us),
         static_cast<unsigned long>(r.p90_us), static_cast<unsigned long>(r.p99_us),
         static_cast<unsigned long>(r.p999_us), static_cast<unsigned long>(r.single_count),
         static_cast<unsigned long>(r.single_p50_us), static_cast<unsigned long>(r.single_p99_us),
         static_cast<unsigned long>(r.multi_count), static_cast<unsigned long>(r.multi_p50_us),
         static_cast<unsigned long>(r.multi_p99_us), FLAGS_contention, FLAGS_keys_per_txn, FLAGS_write_fraction,
         FLAGS_compute_us, FLAGS_depth, FLAGS_multipartition, FLAGS_outstanding, FLAGS_clients);
  fflush(stdout);
}

}  // namespace

// --timeseries: opens the writer into *out (null when not asked); false
// after printing the error.
bool OpenTimeseries(std::unique_ptr<TimeseriesWriter>* out) {
  out->reset();
  if (FLAGS_timeseries.empty()) return true;
  auto w = TimeseriesWriter::Open(FLAGS_timeseries);
  if (!w.ok()) {
    fprintf(stderr, "detdb-bench: %s\n", std::string(w.status().message()).c_str());
    return false;
  }
  *out = std::move(*w);
  return true;
}

// Closes the writer (if any); false after printing the error.
bool CloseTimeseries(std::unique_ptr<TimeseriesWriter>* ts) {
  if (*ts == nullptr) return true;
  absl::Status s = (*ts)->Close();
  if (!s.ok()) fprintf(stderr, "detdb-bench: %s\n", std::string(s.message()).c_str());
  else fprintf(stderr, "time series written to %s (plot: bench/plot_timeseries.py %s OUT.png)\n",
               FLAGS_timeseries.c_str(), FLAGS_timeseries.c_str());
  return s.ok();
}

namespace {

int MicroCluster() {
  if (FLAGS_compare) {
    fprintf(stderr, "detdb-bench: --compare runs in one process; a cluster's lock manager is chosen when its "
                    "nodes start (deploy/local_cluster.sh up N -- --lock_manager=NAME)\n");
    return 2;
  }
  auto config = LoadClusterConfig(FLAGS_cluster);
  if (!config.ok()) {
    fprintf(stderr, "detdb-bench: %s: %s\n", FLAGS_cluster.c_str(), std::string(config.status().message()).c_str());
    return 2;
  }
  MicroClusterOptions o;
  o.config = *config;
  auto keys = LoadClientKeys(FLAGS_curve_key_file, FLAGS_cluster, *config);
  if (!keys.ok()) {
    fprintf(stderr, "detdb-bench: %s\n", std::string(keys.status().message()).c_str());
    return 2;
  }
  o.curve = *keys;
  o.workload = MicroFromFlags();  // partitions and records: the nodes'
  o.clients = FLAGS_clients;
  o.outstanding = FLAGS_outstanding;
  o.txns = FLAGS_txns;
  o.duration_s = FLAGS_duration;
  std::unique_ptr<TimeseriesWriter> ts;
  if (!OpenTimeseries(&ts)) return 2;
  if (ts) ts->StartRun("cluster", 1);
  o.progress = [&](const ProgressSample& s) {
    fprintf(stderr, "  [cluster] %5.1f s  %10lu committed  %9.0f txns/s\n", s.t, static_cast<unsigned long>(s.committed),
            s.committed / s.t);
    if (ts) ts->Add(s);
  };
  if (!FLAGS_json)
    printf("detdb-bench micro --cluster=%s: %d node(s), %u partition(s); %u keys/txn, contention %g, "
           "write fraction %g, %g multi-partition; %u client(s), %u txns outstanding\n",
           FLAGS_cluster.c_str(), config->nodes_size(), config->num_partitions(), FLAGS_keys_per_txn,
           FLAGS_contention, FLAGS_write_fraction, FLAGS_multipartition, FLAGS_clients, FLAGS_outstanding);
  auto r = RunMicroCluster(o);
  if (!r.ok()) {
    fprintf(stderr, "detdb-bench: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  if (FLAGS_json) {
    PrintClusterJson(*r);
  } else {
    printf("\n%s on %u node(s): %lu txns committed in %.2f s = %.0f txns/s (%lu aborted, %lu refused)\n",
           r->lock_manager.c_str(), r->nodes, static_cast<unsigned long>(r->committed), r->seconds, r->txns_per_sec,
           static_cast<unsigned long>(r->aborted), static_cast<unsigned long>(r->refused));
    printf("  latency submit->reply: p50 %lu us, p90 %lu us, p99 %lu us, p99.9 %lu us\n",
           static_cast<unsigned long>(r->p50_us), static_cast<unsigned long>(r->p90_us),
           static_cast<unsigned long>(r->p99_us), static_cast<unsigned long>(r->p999_us));
    printf("  single-partition: %lu txns, p50 %lu us, p99 %lu us\n", static_cast<unsigned long>(r->single_count),
           static_cast<unsigned long>(r->single_p50_us), static_cast<unsigned long>(r->single_p99_us));
    if (r->multi_count > 0)
      printf("  multi-partition:  %lu txns, p50 %lu us, p99 %lu us\n", static_cast<unsigned long>(r->multi_count),
             static_cast<unsigned long>(r->multi_p50_us), static_cast<unsigned long>(r->multi_p99_us));
    if (r->duplicates > 0) printf("  WARNING: %lu unexpected replies\n", static_cast<unsigned long>(r->duplicates));
  }
  if (!CloseTimeseries(&ts)) return 1;
  return r->duplicates == 0 ? 0 : 1;
}

int Micro() {
  if (!FLAGS_cluster.empty() && !FLAGS_admission_trace.empty()) {
    fprintf(stderr, "detdb-bench: --admission_trace records an in-process run, not --cluster\n");
    return 2;
  }
  if (!FLAGS_cluster.empty()) return MicroCluster();
  MicroRunOptions o = RealFromFlags();
  o.txns = FLAGS_txns;
  if (!FLAGS_data_dir.empty()) {
    if (FLAGS_log_sync != "fsync" && FLAGS_log_sync != "none") {
      fprintf(stderr, "detdb-bench: --log_sync must be fsync or none\n");
      return 2;
    }
    o.log.dir = FLAGS_data_dir + "/bench-log";
    o.log.sync_mode = FLAGS_log_sync == "none" ? LogSyncMode::kNone : LogSyncMode::kFsync;
    o.log.log_then_execute = FLAGS_log_then_execute;
    o.measure_replay = FLAGS_measure_replay;
  }

  auto parsed = ParseLockManagerList(FLAGS_compare ? "all" : FLAGS_lock_manager);
  if (!parsed.ok()) {
    fprintf(stderr, "detdb-bench: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  const std::vector<std::string> names = *parsed;
  if (!FLAGS_json) {
    printf("detdb-bench micro: %u partition(s) x %lu records, 1 lock thread + %u worker(s) each; "
           "%u keys/txn, contention %g, write fraction %g",
           FLAGS_partitions, static_cast<unsigned long>(FLAGS_records), FLAGS_workers, FLAGS_keys_per_txn,
           FLAGS_contention, FLAGS_write_fraction);
    if (FLAGS_compute_us > 0) printf(", %g us compute per read", FLAGS_compute_us);
    if (FLAGS_depth > 0) printf(", depth %u", FLAGS_depth);
    if (FLAGS_multipartition > 0) printf(", %g multi-partition", FLAGS_multipartition);
    if (FLAGS_staged_alloc) printf(", staged allocation");
    if (FLAGS_txns > 0) {
      printf("; %lu txns each\n", static_cast<unsigned long>(FLAGS_txns));
    } else {
      printf("; %g s each\n", FLAGS_duration);
    }
    fflush(stdout);
  }
  // The measured run only (set after the warm-up copied the options).
  std::unique_ptr<AdmissionTrace> trace;
  if (!FLAGS_admission_trace.empty()) {
    if (names.size() != 1 || FLAGS_rounds > 1) {
      fprintf(stderr, "detdb-bench: --admission_trace records one run: one --lock_manager, no --compare or --rounds\n");
      return 2;
    }
    auto t = AdmissionTrace::Create(FLAGS_admission_trace,
                                    EngineAdmissionOptions(o.workers, o.lock.max_active, o.adaptive_admission));
    if (!t.ok()) {
      fprintf(stderr, "detdb-bench: %s\n", std::string(t.status().message()).c_str());
      return 2;
    }
    trace = std::move(*t);
  }
  // Runs must not depend on their position in the sequence: keep freed memory
  // in the process (no mmap for big blocks, no trimming), so every run reuses
  // pages the warm-up run already faulted in, instead of the first run
  // paying for page faults the later ones skip.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, -1);
  if (FLAGS_warmup > 0) {
    MicroRunOptions w = o;
    w.lock_manager = names[0];
    w.txns = 0;
    w.duration_s = FLAGS_warmup;
    if (!FLAGS_json) fprintf(stderr, "  warm-up: %g s of %s (not reported)\n", FLAGS_warmup, names[0].c_str());
    auto r = RunMicro(w);
    if (!r.ok()) {
      fprintf(stderr, "detdb-bench: warm-up: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
  }
  o.admission_trace = trace.get();  // null without --admission_trace
  // Rounds interleave the lock managers, so slow drifts of a shared machine
  // hit all of them alike; each one's median run is reported.
  std::map<std::string, std::vector<MicroRunResult>> runs;
  std::unique_ptr<TimeseriesWriter> ts;
  if (!OpenTimeseries(&ts)) return 2;
  const uint32_t rounds = std::max(1u, FLAGS_rounds);
  for (uint32_t round = 0; round < rounds; ++round) {
    for (const std::string& name : names) {
      o.lock_manager = name;
      if (ts) ts->StartRun(name, round + 1);
      o.progress = [&](const ProgressSample& s) {
        fprintf(stderr, "  [%-9s] %5.1f s  %10lu committed  %9.0f txns/s\n", name.c_str(), s.t,
                static_cast<unsigned long>(s.committed), s.committed / s.t);
        if (ts) ts->Add(s);
      };
      auto r = RunMicro(o);
      if (!r.ok()) {
        fprintf(stderr, "detdb-bench: %s: %s\n", name.c_str(), std::string(r.status().message()).c_str());
        return 1;
      }
      if (rounds > 1 && !FLAGS_json)
        fprintf(stderr, "  [%-9s] round %u: %.0f txns/s\n", name.c_str(), round + 1, r->txns_per_sec);
      if (rounds == 1 && !FLAGS_json) PrintSummary(*r);  // at once, after its progress lines
      runs[name].push_back(*r);
    }
  }
  if (!CloseTimeseries(&ts)) return 1;
  if (trace != nullptr) {
    if (absl::Status s = trace->Close(); !s.ok()) {
      fprintf(stderr, "detdb-bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    if (!FLAGS_json) fprintf(stderr, "  admission trace: %s\n", FLAGS_admission_trace.c_str());
  }
  std::vector<MicroRunResult> results;
  for (const std::string& name : names) {
    std::vector<MicroRunResult>& v = runs[name];
    std::sort(v.begin(), v.end(),
              [](const MicroRunResult& a, const MicroRunResult& b) { return a.txns_per_sec < b.txns_per_sec; });
    MicroRunResult median = v[v.size() / 2];
    // CPU figures: each one's own median over the rounds (steadier than the
    // median-throughput run's).
    const auto median_of = [&v](double MicroRunResult::*f) {
      std::vector<double> x;
      for (const MicroRunResult& r : v) x.push_back(r.*f);
      std::sort(x.begin(), x.end());
      return x[x.size() / 2];
    };
    median.cpu_us_per_txn = median_of(&MicroRunResult::cpu_us_per_txn);
    median.lock_us_per_txn = median_of(&MicroRunResult::lock_us_per_txn);
    median.worker_us_per_txn = median_of(&MicroRunResult::worker_us_per_txn);
    if (FLAGS_json) {
      PrintJson(median);
    } else if (rounds > 1) {
      PrintSummary(median);
    }
    results.push_back(median);
  }
  bool equal = true;
  for (const MicroRunResult& r : results) equal &= r.digest == results[0].digest;
  if (results.size() > 1 && !FLAGS_json) {
    const double base = results[0].txns_per_sec;
    const double base_cpu = results[0].cpu_us_per_txn;
    const double base_lock = results[0].lock_us_per_txn;
    printf("\n%-10s %12s %8s %9s %8s %9s %8s %8s %8s %10s %10s %7s  %s\n", "lock_mgr", "txns/s", "vs dclp",
           "cpu_us/tx", "vs dclp", "lock_us/tx", "vs dclp", "p50_us", "p99_us", "blocked", "avg_active", "window",
           "digest");
    for (const MicroRunResult& r : results)
      printf("%-10s %12.0f %7.2fx %9.2f %7.2fx %9.2f %7.2fx %8lu %8lu %9.1f%% %10.1f %7.0f  %016lx\n",
             r.lock_manager.c_str(), r.txns_per_sec, r.txns_per_sec / base, r.cpu_us_per_txn,
             base_cpu > 0 ? r.cpu_us_per_txn / base_cpu : 0, r.lock_us_per_txn,
             base_lock > 0 ? r.lock_us_per_txn / base_lock : 0, static_cast<unsigned long>(r.p50_us),
             static_cast<unsigned long>(r.p99_us), 100 * r.blocked_at_admission, r.avg_active, r.window,
             static_cast<unsigned long>(r.digest));
    if (FLAGS_txns > 0) {
      printf("digests: %s\n", equal ? "all equal (every lock manager reached the same state)"
                                    : "DIFFER: lock managers disagree on the final state");
    } else {
      printf("(each --duration run commits a different number of txns, so digests differ; "
             "with --txns=N every lock manager must reach the same digest)\n");
    }
    if (FLAGS_contention <= 0.001 && FLAGS_depth == 0 && FLAGS_compute_us == 0) {
      // What a first-time reader of quickstart.sh's table needs to know.
      printf("How to read this: at contention %g hardly two txns share a record, so there is almost nothing\n"
             "to schedule and the lock managers tie: the ratios here are the machine's noise, which on a\n"
             "shared VM moves them by 10-20%% from run to run (compare the rounds above). The managers part\n"
             "where txns conflict: --workers=2 --contention=0.1, or --workers=2 --depth=9 (README.md).\n",
             FLAGS_contention);
    }
  }
  // With a fixed txn count, unequal digests are a determinism failure in any output mode.
  if (results.size() > 1 && FLAGS_txns > 0 && !equal) {
    fprintf(stderr, "detdb-bench: lock managers reached different states (digests differ)\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace detdb

namespace detdb::tpcc {
int TpccCommand();  // bench/tpcc_command.cc
}  // namespace detdb::tpcc


int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "detdb-bench micro|tpcc [--compare] [flags]: the DCLP paper's microbenchmark or TPC-C on detdb");
  const std::string cmd = argc >= 2 ? argv[1] : "";
  const bool tpcc = cmd == "tpcc";
  const bool figure = cmd == "figure" && argc >= 3 && argv[2][0] != '-';
  const bool replay = cmd == "admission-replay" && argc >= 3 && argv[2][0] != '-';
  if (cmd != "micro" && cmd != "tpcc" && cmd != "calibrate" && cmd != "simulate" && cmd != "crash" && cmd != "lil" &&
      !figure && !replay) {
    fprintf(stderr, "usage: detdb-bench micro [--compare] [--lock_manager=NAME] [--cluster=CONFIG] [flags]\n"
                    "       detdb-bench tpcc [--compare] [--warehouses=N] [--mix=full] [--cluster=CONFIG] [flags]\n"
                    "       detdb-bench calibrate --out=FILE       (the simulation's costs on this host)\n"
                    "       detdb-bench simulate [--nodes=M] [--partitions=P] [--workers=N] [--compare] [--validate]\n"
                    "       detdb-bench figure NAME --out=DIR [--real]  (NAME: fig2..fig9, table2, all; staged, lil)\n"
                    "       detdb-bench figure elision --out=DIR   (seed 001: index latches, lock elision)\n"
                    "       detdb-bench crash --nodes=3 --kills=K --seed=S [--crash_mode=one|all|mixed]\n"
                    "       detdb-bench lil [--lil_agents=1,2,4] [--lil_absolute=...] [--rounds=N] [--json]  (seed 000 Fig. 4)\n"
                    "       detdb-bench admission-replay FILE [--changes]  (a trace of micro --admission_trace=FILE)\n"
                    "       detdb-bench micro --helpshort   (all flags)\n");
    return 2;
  }
  // Drop the subcommand (and a figure's name or a trace file), then parse flags.
  const std::string figure_name = figure || replay ? argv[2] : "";  // the name or the file
  const int drop = figure || replay ? 2 : 1;
  argv[drop] = argv[0];
  argv += drop;
  argc -= drop;
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (cmd == "calibrate") return detdb::CalibrateCommand();
  if (figure) return detdb::FigureCommand(figure_name);
  if (cmd == "simulate") return detdb::SimulateCommand();
  if (cmd == "crash") return detdb::CrashCommand();
  if (!FLAGS_admission_trace.empty() && cmd != "micro") {
    fprintf(stderr, "detdb-bench: --admission_trace is a flag of micro\n");
    return 2;
  }
  if (cmd == "lil") return detdb::IntentLockCommand();
  if (replay) return detdb::AdmissionReplayCommand(figure_name);
  return tpcc ? detdb::tpcc::TpccCommand() : detdb::Micro();
}
