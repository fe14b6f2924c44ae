// `detdb-bench tpcc`: TPC-C's full mix on an in-process detdb (one lock
// manager, or every one with --compare) or against a cluster (--cluster).
// Progress once a second on stderr; a summary per txn type, or with --json
// one object per run, on stdout. Compiled into detdb-bench (flags belong to
// binaries).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/timeseries.h"
#include "bench/tpcc_runner.h"
#include "client/cluster_config.h"
#include "common/prefault.h"
#include "gflags/gflags.h"
#include "lockmgr/lock_manager.h"
#include "storage/elided_latch.h"

DECLARE_string(lock_manager);
DECLARE_bool(compare);
DECLARE_uint32(partitions);
DECLARE_uint32(workers);
DECLARE_uint64(txns);
DECLARE_string(curve_key_file);
DECLARE_double(duration);
DECLARE_uint32(outstanding);
DECLARE_bool(release_on_workers);
DECLARE_bool(adaptive_admission);
DECLARE_bool(staged_alloc);
DECLARE_uint64(epoch_us);
DECLARE_uint32(max_active);
DECLARE_uint32(table_size);
DECLARE_uint64(seed);
DECLARE_bool(json);
DECLARE_string(cluster);

DEFINE_uint32(warehouses, 2, "tpcc: warehouses (spread over --partitions)");
DEFINE_bool(tpcc_small, false, "tpcc: shrunk scale for small machines: 10% of items, customers and orders");
DEFINE_string(mix, "full", "tpcc: full (45,43,4,4,4), no+payment (50,50,0,0,0) or five percentages NO,P,OS,D,SL");
DEFINE_double(remote_line, 0.01, "tpcc: share of New-Order lines supplied by another warehouse");
DEFINE_double(remote_payment, 0.15, "tpcc: share of Payments for a customer of another warehouse");
DEFINE_uint64(load_seed, 1, "tpcc: seed of the loaded data (in-process)");
DEFINE_bool(check, true, "tpcc: run the consistency checker after each run");
DEFINE_bool(elision, true,
            "tpcc, in one process: storage latches elide with RTM where the CPU has it; false: plain spin "
            "latches (to compare)");
DEFINE_uint64(prefault_mb, 0,
              "tpcc, in one process: fault in this many MiB of heap (in 64 MiB blocks) before loading, kept for the "
              "run's tables (common/prefault.h; 0: off). The loaded tables and ~550 bytes per New-Order + Payment "
              "txn come out of it");

namespace detdb {
namespace {
// Set once --prefault_mb ran. Linux splits a process's CPU time into user
// and kernel by the ticks of its whole life (cputime_adjust), so a later
// window's split leans toward what came before it. Loading (mostly user
// time) moves a run's figure a little; seconds of nothing but page faults
// move it a lot (1.4-3.7 us of kernel per txn, where a profile of the
// window, `perf record -D`, had no page-fault work), so the run's kernel
// time is then not reported.
uint64_t prefaulted_bytes = 0;  // what PrefaultHeap faulted in (0: none)
}  // namespace
// --timeseries (bench/detdb_bench_main.cc).
bool OpenTimeseries(std::unique_ptr<TimeseriesWriter>* out);
bool CloseTimeseries(std::unique_ptr<TimeseriesWriter>* ts);

namespace tpcc {
namespace {

// What to say of --prefault_mb after an in-process run (common/prefault.h).
PrefaultAdvice Advice(const TpccRunResult& r) {
  if (!r.in_process) return {};
  uint64_t table_bytes = 0;
  for (const TpccRunResult::TableMemory& m : r.tables) table_bytes += m.bytes;
  const auto faults = static_cast<uint64_t>(std::llround(r.page_faults_per_txn * static_cast<double>(r.committed)));
  return AdvisePrefault(table_bytes, faults, r.committed, r.seconds, prefaulted_bytes);
}

void PrintJson(const TpccRunResult& r, const TpccRunOptions& o) {
  printf("{\"workload\":\"tpcc\",\"lock_manager\":\"%s\",\"warehouses\":%u,\"partitions\":%u,\"nodes\":%u,"
         "\"mix\":\"%s\",\"outstanding\":%u,\"epoch_us\":%lu,\"seconds\":%.3f,\"committed\":%lu,\"txns_per_sec\":%.0f,\"new_orders_per_min\":%.0f,"
         "\"restart_rate\":%.5f,\"consistency_ok\":%s",
         r.lock_manager.c_str(), r.warehouses, r.partitions, r.nodes, FLAGS_mix.c_str(), o.outstanding,
         static_cast<unsigned long>(o.cluster ? o.cluster->epoch_us() : o.epoch_us), r.seconds,
         static_cast<unsigned long>(r.committed), r.txns_per_sec, r.new_orders_per_min, r.restart_rate,
         r.consistency_checked ? (r.consistency_ok ? "true" : "false") : "null");
  for (int k = 0; k < kNumKinds; ++k) {
    const KindResult& kr = r.kinds[k];
    printf(",\"%s\":{\"committed\":%lu,\"rolled_back\":%lu,\"restarts\":%lu,\"refused\":%lu,\"p50_us\":%lu,"
           "\"p90_us\":%lu,\"p99_us\":%lu}",
           KindName(static_cast<TxnKind>(k)), static_cast<unsigned long>(kr.committed),
           static_cast<unsigned long>(kr.rolled_back), static_cast<unsigned long>(kr.restarts),
           static_cast<unsigned long>(kr.refused), static_cast<unsigned long>(kr.p50_us),
           static_cast<unsigned long>(kr.p90_us), static_cast<unsigned long>(kr.p99_us));
  }
  if (r.in_process) {
    printf(",\"digest\":\"%016lx\",\"cpu_us_per_txn\":%.3f,\"worker_us_per_txn\":%.3f,\"lock_us_per_txn\":%.3f,"
           "\"client_us_per_txn\":%.3f,\"kernel_us_per_txn\":%s,"
           "\"page_faults_per_txn\":%.4f,\"prefault_mb\":%lu,\"prefault_suggest_mb\":%lu,\"staged_alloc\":%s",
           static_cast<unsigned long>(r.digest), r.cpu_us_per_txn, r.worker_us_per_txn, r.lock_us_per_txn,
           r.client_us_per_txn,
           prefaulted_bytes != 0 ? "null" : absl::StrFormat("%.3f", r.kernel_us_per_txn).c_str(), r.page_faults_per_txn,
           static_cast<unsigned long>(prefaulted_bytes != 0 ? FLAGS_prefault_mb : 0),
           static_cast<unsigned long>(Advice(r).mb), FLAGS_staged_alloc ? "true" : "false");
    printf(",\"elision\":%s,\"latch_elided\":%lu,\"latch_fallback\":%lu,\"latch_aborts\":{", r.elision ? "true" : "false",
           static_cast<unsigned long>(r.latches.elided), static_cast<unsigned long>(r.latches.fallback));
    for (int i = 0; i < ElidedLatch::kNumAbortCauses; ++i)
      printf("%s\"%s\":%lu", i ? "," : "", ElidedLatch::AbortCauseName(ElidedLatch::AbortCause(i)),
             static_cast<unsigned long>(r.latches.aborts_by_cause[i]));
    printf("}");
  }
  printf("}\n");
  fflush(stdout);
}

// Storage latches (seed 001): whether they elided, and what it gave.
// REQUIRES: r.in_process.
void PrintLatches(const TpccRunResult& r) {
  const ElidedLatch::Stats& l = r.latches;
  const double txns = r.committed > 0 ? static_cast<double>(r.committed) : 1;
  if (!r.elision) {
    printf("  storage latches: not elided (%s)\n", ElidedLatch::ElisionStatus().c_str());
    return;
  }
  const double sections = static_cast<double>(l.elided + l.fallback);
  printf("  storage latches: elided (RTM), %.2f sections per txn, %.3f%% took the latch; aborts per 1000 sections:",
         sections / txns, sections > 0 ? 100 * l.fallback / sections : 0.0);
  for (int i = 0; i < ElidedLatch::kNumAbortCauses; ++i)
    printf("%s %s %.2f", i ? "," : "", ElidedLatch::AbortCauseName(ElidedLatch::AbortCause(i)),
           sections > 0 ? 1000 * l.aborts_by_cause[i] / sections : 0.0);
  printf("\n");
}

void PrintSummary(const TpccRunResult& r) {
  printf("\n%s: %lu txns in %.2f s = %.0f txns/s, %.0f New-Orders/min (%u warehouses, %u partition(s)%s)\n",
         r.lock_manager.c_str(), static_cast<unsigned long>(r.committed), r.seconds, r.txns_per_sec,
         r.new_orders_per_min, r.warehouses, r.partitions,
         r.nodes > 1 ? (", " + std::to_string(r.nodes) + " nodes").c_str() : "");
  printf("  %-13s %10s %9s %9s %9s %9s %9s\n", "txn", "committed", "rollback", "restarts", "p50_us", "p90_us",
         "p99_us");
  for (int k = 0; k < kNumKinds; ++k) {
    const KindResult& kr = r.kinds[k];
    printf("  %-13s %10lu %9lu %9lu %9lu %9lu %9lu\n", KindName(static_cast<TxnKind>(k)),
           static_cast<unsigned long>(kr.committed), static_cast<unsigned long>(kr.rolled_back),
           static_cast<unsigned long>(kr.restarts), static_cast<unsigned long>(kr.p50_us),
           static_cast<unsigned long>(kr.p90_us), static_cast<unsigned long>(kr.p99_us));
  }
  printf("  reconnaissance restarts: %.2f%% of Delivery + Stock-Level\n", 100 * r.restart_rate);
  for (const TpccRunResult::TableMemory& m : r.tables)
    printf("  table %-26s %10lu rows %9.1f MiB, %lu erased rows reclaimed, %.1f MiB of old index arrays held\n",
           m.name.c_str(), static_cast<unsigned long>(m.records), m.bytes / 1048576.0,
           static_cast<unsigned long>(m.reclaimed_records), m.retired_index_bytes / 1048576.0);
  if (r.consistency_checked) {
    printf("  consistency (clause 3.3.2): %s\n", r.consistency_ok ? "OK" : "FAILED");
    for (const std::string& f : r.consistency_failures) printf("    %s\n", f.c_str());
  }
  if (r.in_process) {
    printf("  admission: %.1f%% blocked, %.1f active on average, window %.0f at the end "
           "(%lu grows, %lu undone; %lu shrinks, %lu undone; %lu steps back up; %lu worker starvations)\n",
           100 * r.blocked_at_admission, r.avg_active, r.window,
           static_cast<unsigned long>(r.window_grows), static_cast<unsigned long>(r.window_grows_undone),
           static_cast<unsigned long>(r.window_shrinks), static_cast<unsigned long>(r.window_shrinks_undone),
           static_cast<unsigned long>(r.window_steps_back_up), static_cast<unsigned long>(r.starved));
    // The threads' shares are disjoint; the kernel's time is within them.
    const double rest = std::max(0.0, r.cpu_us_per_txn - r.worker_us_per_txn - r.lock_us_per_txn - r.client_us_per_txn);
    printf("  process CPU %.2f us per txn: workers %.2f, lock threads %.2f, client %.2f, the rest (sequencer, other "
           "threads) %.2f; in the kernel %s%s; %.3f page faults per txn\n",
           r.cpu_us_per_txn, r.worker_us_per_txn, r.lock_us_per_txn, r.client_us_per_txn, rest,
           prefaulted_bytes != 0 ? "n/a after --prefault_mb" : absl::StrFormat("%.2f us", r.kernel_us_per_txn).c_str(),
           FLAGS_staged_alloc ? " (staged allocation)" : "", r.page_faults_per_txn);
    PrintLatches(r);
    printf("  state digest %016lx\n", static_cast<unsigned long>(r.digest));
    // New rows that page-faulted: on a VM these first touches can cost
    // several times more once the host has to back the memory, and a long
    // run slows in steps (docs/STORAGE.md, "Memory faulted in ahead").
    switch (const PrefaultAdvice a = Advice(r); a.kind) {
      case PrefaultAdvice::kNone:
        break;
      case PrefaultAdvice::kSuggest:
        printf("  note: new rows took %.3f page faults per txn; on a VM they can slow a long run in steps. "
               "--prefault_mb=%lu maps this run's memory before it starts (docs/STORAGE.md, \"Memory faulted in "
               "ahead\")\n",
               r.page_faults_per_txn, static_cast<unsigned long>(a.mb));
        break;
      case PrefaultAdvice::kTooSmall:
        printf("  note: the %lu MiB faulted in ahead were too few: new rows still took %.3f page faults per txn; "
               "--prefault_mb=%lu covers this run's tables\n",
               static_cast<unsigned long>(prefaulted_bytes >> 20), r.page_faults_per_txn,
               static_cast<unsigned long>(a.mb));
        break;
      case PrefaultAdvice::kFaultsElsewhere:
        printf("  note: the tables fit in the %lu MiB faulted in ahead, yet the run took %.3f page faults per "
               "txn: allocations the kept memory could not serve (common/prefault.h, Limits)\n",
               static_cast<unsigned long>(prefaulted_bytes >> 20), r.page_faults_per_txn);
        break;
    }
  }
  fflush(stdout);
}

}  // namespace

int TpccCommand() {
  // Before any latch is used (REQUIRES of SetElisionForTesting).
  if (!FLAGS_elision) ElidedLatch::SetElisionForTesting(false);
  TpccRunOptions o;
  o.scale = FLAGS_tpcc_small ? Scale::Small(FLAGS_warehouses) : Scale::Spec(FLAGS_warehouses);
  o.load_seed = FLAGS_load_seed;
  o.seed = FLAGS_seed;
  auto mix = Mix::Parse(FLAGS_mix);
  if (!mix.ok()) {
    fprintf(stderr, "detdb-bench: --mix: %s\n", std::string(mix.status().message()).c_str());
    return 2;
  }
  o.mix = *mix;
  o.remote_line = FLAGS_remote_line;
  o.remote_payment = FLAGS_remote_payment;
  o.partitions = FLAGS_partitions;
  o.workers = FLAGS_workers;
  o.release_on_workers = FLAGS_release_on_workers;
  o.staged_alloc = FLAGS_staged_alloc;
  // TPC-C keeps the fixed window unless asked: the adaptive one measured
  // ~18% lower New-Order + Payment and full-mix throughput (docs/ENGINE.md,
  // a known limitation of the controller with TPC-C's serial chains).
  o.adaptive_admission =
      gflags::GetCommandLineFlagInfoOrDie("adaptive_admission").is_default ? false : FLAGS_adaptive_admission;
  // TPC-C's txns are short, so the epoch wait dominates their latency and,
  // closed-loop, the throughput: with 200 in flight 500 us epochs measured
  // 167K txns/s New-Order + Payment against 132K with 1 ms (docs/TPCC.md);
  // with 400 in flight (New-Order + Payment's default since) 500 and 250 us
  // measured the same.
  o.epoch_us = gflags::GetCommandLineFlagInfoOrDie("epoch_us").is_default ? 500 : FLAGS_epoch_us;
  o.lock.max_active = FLAGS_max_active;
  o.lock.table_size = FLAGS_table_size;
  o.lock.check_invariants = false;
  o.outstanding =
      gflags::GetCommandLineFlagInfoOrDie("outstanding").is_default ? DefaultOutstanding(o.mix) : FLAGS_outstanding;
  o.txns = FLAGS_txns;
  o.duration_s = FLAGS_duration;
  o.check = FLAGS_check;
  std::vector<std::string> names;
  if (!FLAGS_cluster.empty()) {
    if (FLAGS_compare) {
      fprintf(stderr, "detdb-bench: --compare runs in one process; a cluster's lock manager is chosen at start\n");
      return 2;
    }
    if (!FLAGS_elision) {
      fprintf(stderr, "detdb-bench: --elision=false applies to a run in one process; a cluster's latches are in its "
                      "servers\n");
      return 2;
    }
    if (FLAGS_prefault_mb > 0) {
      fprintf(stderr, "detdb-bench: --prefault_mb applies to a run in one process; start the servers with it\n");
      return 2;
    }
    auto config = LoadClusterConfig(FLAGS_cluster);
    if (!config.ok()) {
      fprintf(stderr, "detdb-bench: %s: %s\n", FLAGS_cluster.c_str(), std::string(config.status().message()).c_str());
      return 2;
    }
    o.cluster = *config;
    auto keys = LoadClientKeys(FLAGS_curve_key_file, FLAGS_cluster, *config);
    if (!keys.ok()) {
      fprintf(stderr, "detdb-bench: %s\n", std::string(keys.status().message()).c_str());
      return 2;
    }
    o.cluster_curve = *keys;
    names = {"(cluster)"};
  } else {
    auto parsed = ParseLockManagerList(FLAGS_compare ? "all" : FLAGS_lock_manager);
    if (!parsed.ok()) {
      fprintf(stderr, "detdb-bench: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    names = *parsed;
  }
  if (!FLAGS_json) {
    printf("detdb-bench tpcc: %s, mix %s, %u txns outstanding; %s\n",
           o.cluster ? ("cluster " + FLAGS_cluster).c_str()
                     : (std::to_string(FLAGS_warehouses) + " warehouse(s) on " + std::to_string(FLAGS_partitions) +
                        " partition(s), " + std::to_string(FLAGS_workers) + " worker(s) each, " +
                        std::to_string(o.epoch_us) + " us epochs" + (FLAGS_tpcc_small ? ", small scale" : ""))
                           .c_str(),
           FLAGS_mix.c_str(), o.outstanding,
           FLAGS_txns > 0 ? (std::to_string(FLAGS_txns) + " txns each").c_str()
                          : (std::to_string(FLAGS_duration) + " s each").c_str());
    fflush(stdout);
  }
  bool all_consistent = true;
  std::unique_ptr<TimeseriesWriter> ts;
  if (!OpenTimeseries(&ts)) return 2;
  if (FLAGS_prefault_mb > 0) {
    auto pf = PrefaultHeap(MiBToBytes(FLAGS_prefault_mb));
    if (!pf.ok()) {
      fprintf(stderr, "detdb-bench: --prefault_mb: %s\n", std::string(pf.status().message()).c_str());
      return PrefaultExitCode(pf.status());
    }
    prefaulted_bytes = pf->bytes;
    if (!FLAGS_json)
      fprintf(stderr, "detdb-bench: %lu MiB of heap faulted in ahead, in %.1f s\n",
              static_cast<unsigned long>(pf->bytes >> 20), pf->seconds);
  }
  std::vector<TpccRunResult> results;
  for (const std::string& name : names) {
    o.lock_manager = name;
    if (ts) ts->StartRun(name, 1);
    o.progress = [&](const ProgressSample& s) {
      fprintf(stderr, "  [%-9s] %5.1f s  %9lu txns  %8.0f txns/s  %9.0f New-Orders/min\n", name.c_str(), s.t,
              static_cast<unsigned long>(s.committed), s.committed / s.t, 60 * s.new_orders / s.t);
      if (ts) ts->Add(s);
    };
    if (!FLAGS_json) fprintf(stderr, "  [%-9s] loading and starting...\n", name.c_str());
    auto r = RunTpcc(o);
    if (!r.ok()) {
      fprintf(stderr, "detdb-bench: %s: %s\n", name.c_str(), std::string(r.status().message()).c_str());
      return 1;
    }
    if (FLAGS_json) {
      PrintJson(*r, o);
    } else {
      PrintSummary(*r);
    }
    all_consistent &= !r->consistency_checked || r->consistency_ok;
    results.push_back(*r);
  }
  if (!CloseTimeseries(&ts)) return 1;
  if (results.size() > 1 && !FLAGS_json) {
    // CPU per txn (in one process): the whole process's and the lock
    // threads', the lock manager's own cost, as `micro --compare` shows.
    printf("\n%-10s %10s %8s %14s %9s %10s %10s  %s\n", "lock_mgr", "txns/s", "vs dclp", "New-Orders/min",
           "restarts", "cpu_us/tx", "lock_us/tx", "consistency");
    for (const TpccRunResult& r : results) {
      const std::string cpu = r.in_process ? absl::StrFormat("%.2f", r.cpu_us_per_txn) : "-";
      const std::string lock = r.in_process ? absl::StrFormat("%.2f", r.lock_us_per_txn) : "-";
      printf("%-10s %10.0f %7.2fx %14.0f %8.2f%% %10s %10s  %s\n", r.lock_manager.c_str(), r.txns_per_sec,
             r.txns_per_sec / results[0].txns_per_sec, r.new_orders_per_min, 100 * r.restart_rate, cpu.c_str(),
             lock.c_str(), r.consistency_checked ? (r.consistency_ok ? "OK" : "FAILED") : "-");
    }
  }
  return all_consistent ? 0 : 1;
}

}  // namespace tpcc
}  // namespace detdb
