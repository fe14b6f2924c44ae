// detdb_lockbench: acquire + release throughput of each lock manager on the
// DCLP paper's microbenchmark txns, one lock thread, simulated workers.
//
//   detdb_lockbench --lock_manager=all --contention=0.0001 --txns=2000000
//   detdb_lockbench --lock_manager=dclp,vll --contention=0.1 --json
//   detdb_lockbench --lock_manager=all --contention=0.1 --rounds=5
//
// Every lock manager runs the identical txn stream in one process, so the
// ratios between them are the figures to compare on a noisy machine. With
// --rounds=R the managers take turns R times (a fresh manager each turn) and
// the table reports each manager's median, so a burst of load from another
// process on the machine hits every manager alike.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench/lockbench.h"
#include "bench/micro_workload.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_string(lock_manager, "all", "Comma-separated lock managers (dclp,det2pl,vll,vll_sca,dclp_frag) or 'all'");
DEFINE_double(contention, 0.0001, "Contention index CI: one hot key per txn from a hot set of 1/CI records");
DEFINE_uint32(keys_per_txn, 10, "Records per txn (one hot, the rest cold)");
DEFINE_double(write_fraction, 1.0, "Probability that an access is a write (1 = write-only, 0 = read-only)");
DEFINE_uint64(txns, 2000000, "Txns per lock manager");
DEFINE_uint64(cold_records, 1000000, "Cold records per partition");
DEFINE_uint32(inflight, 4, "Txns the simulated workers run at once (completed FIFO)");
DEFINE_uint32(max_active, 2000, "Admission bound on active txns (0 = none)");
DEFINE_uint32(table_size, 1u << 20, "Hash locks / counter slots (power of two)");
DEFINE_uint32(vll_blocked_threshold, 20, "VLL: admission closes at this many blocked txns");
DEFINE_uint64(seed, 1, "Workload seed");
DEFINE_bool(prefetch_next, true, "Pass the next txn to LockManager::Prefetch before each Lock (a hint only dclp uses)");
DEFINE_uint32(rounds, 1, "Runs of every lock manager, interleaved; the table shows each one's median");
DEFINE_bool(json, false, "Print one JSON object per lock manager per line instead of a table");

namespace detdb {
namespace {

int Main() {
  auto names = ParseLockManagerList(FLAGS_lock_manager);
  if (!names.ok()) {
    fprintf(stderr, "detdb_lockbench: %s\n", std::string(names.status().message()).c_str());
    return 2;
  }
  MicroWorkloadOptions wo;
  wo.contention = FLAGS_contention;
  wo.keys_per_txn = FLAGS_keys_per_txn;
  wo.write_fraction = FLAGS_write_fraction;
  wo.cold_records = FLAGS_cold_records;
  wo.seed = FLAGS_seed;
  auto txns = MicroTxnSet::Generate(wo, FLAGS_txns);
  if (!txns.ok()) {
    fprintf(stderr, "detdb_lockbench: %s\n", std::string(txns.status().message()).c_str());
    return 2;
  }
  LockManagerOptions lo;
  lo.max_active = FLAGS_max_active;
  lo.table_size = FLAGS_table_size;
  lo.vll_blocked_threshold = FLAGS_vll_blocked_threshold;
  lo.check_invariants = false;  // a benchmark measures the release build's hot path
  LockBenchOptions bo;
  bo.inflight = FLAGS_inflight;
  bo.prefetch_next = FLAGS_prefetch_next;

  if (!FLAGS_json) {
    printf("detdb_lockbench: %lu txns, %u keys/txn (1 hot of %lu, %u cold of %lu), write fraction %.2f, "
           "inflight %u, max_active %u, prefetch_next %d, rounds %u (medians)\n",
           static_cast<unsigned long>(FLAGS_txns), FLAGS_keys_per_txn,
           static_cast<unsigned long>(txns->hot_records()), FLAGS_keys_per_txn - 1,
           static_cast<unsigned long>(FLAGS_cold_records), FLAGS_write_fraction, FLAGS_inflight,
           FLAGS_max_active, FLAGS_prefetch_next ? 1 : 0, std::max<uint32_t>(1, FLAGS_rounds));
    printf("%-10s %14s %10s %10s %12s %12s %14s\n", "lock_mgr", "txns/s", "ns/txn", "vs dclp",
           "blocked@adm", "peak_active", "peak_lock_MiB");
  }
  // One result per manager per round; the median (by ns/txn) is reported.
  std::map<std::string, std::vector<LockBenchResult>> results;
  const uint32_t rounds = std::max<uint32_t>(1, FLAGS_rounds);
  int rc = 0;
  for (uint32_t round = 0; round < rounds; ++round) {
    for (const std::string& name : *names) {
      auto lm = NewLockManager(name, lo);
      if (!lm.ok()) {
        fprintf(stderr, "detdb_lockbench: %s\n", std::string(lm.status().message()).c_str());
        return 2;
      }
      auto r = RunLockBench(lm->get(), *txns, bo);
      if (!r.ok()) {
        fprintf(stderr, "detdb_lockbench: %s\n", std::string(r.status().message()).c_str());
        rc = 1;
        continue;
      }
      results[name].push_back(*r);
    }
  }
  auto median = [](std::vector<LockBenchResult> v) {
    std::sort(v.begin(), v.end(),
              [](const LockBenchResult& a, const LockBenchResult& b) { return a.ns_per_txn < b.ns_per_txn; });
    return v[v.size() / 2];
  };
  double dclp_tps = 0;
  if (results.count("dclp") != 0) dclp_tps = median(results["dclp"]).txns_per_sec;
  for (const std::string& name : *names) {
    if (results.count(name) == 0) continue;
    const std::vector<LockBenchResult>& all = results[name];
    const LockBenchResult m = median(all);
    const LockBenchResult* r = &m;
    const double blocked = static_cast<double>(r->stats.blocked_at_admission) / r->txns;
    const double mib = r->stats.peak_memory_bytes / 1048576.0;
    if (FLAGS_json) {
      printf("{\"lock_manager\":\"%s\",\"txns\":%lu,\"txns_per_sec\":%.0f,\"ns_per_txn\":%.1f,"
             "\"contention\":%g,\"keys_per_txn\":%u,\"write_fraction\":%g,\"inflight\":%u,"
             "\"blocked_at_admission\":%.4f,\"peak_active\":%lu,\"peak_lock_bytes\":%zu,"
             "\"head_rule_grants\":%lu,\"sca_runs\":%lu,\"sca_grants\":%lu,\"vt_scan_steps\":%lu,"
             "\"rounds\":%zu}\n",
             name.c_str(), static_cast<unsigned long>(r->txns), r->txns_per_sec, r->ns_per_txn,
             FLAGS_contention, FLAGS_keys_per_txn, FLAGS_write_fraction, FLAGS_inflight, blocked,
             static_cast<unsigned long>(r->stats.peak_active), r->stats.peak_memory_bytes,
             static_cast<unsigned long>(r->stats.head_rule_grants),
             static_cast<unsigned long>(r->stats.sca_runs), static_cast<unsigned long>(r->stats.sca_grants),
             static_cast<unsigned long>(r->stats.vt_scan_steps), all.size());
    } else {
      char ratio[32] = "-";
      if (dclp_tps > 0) snprintf(ratio, sizeof(ratio), "%.2fx", r->txns_per_sec / dclp_tps);
      printf("%-10s %14.0f %10.1f %10s %11.1f%% %12lu %14.1f", name.c_str(), r->txns_per_sec,
             r->ns_per_txn, ratio, 100 * blocked, static_cast<unsigned long>(r->stats.peak_active), mib);
      if (all.size() > 1) {  // every round's ns/txn, in run order
        printf("   rounds:");
        for (const LockBenchResult& x : all) printf(" %.0f", x.ns_per_txn);
      }
      printf("\n");
    }
    fflush(stdout);
  }
  if (!FLAGS_json) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("process peak RSS %.1f MiB (includes the pre-generated workload)\n", ru.ru_maxrss / 1024.0);
  }
  return rc;
}

}  // namespace
}  // namespace detdb

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Lock manager throughput on the DCLP microbenchmark (see bench/lockbench.h)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return detdb::Main();
}
