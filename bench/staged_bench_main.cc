// detdb_staged_bench: the seed-003 benchmark (bench/staged_bench.h). Txn
// states allocated per epoch from slabs freed in bulk (staged), from detdb's
// pool of reused states (pooled), and one by one from the general allocator
// (heap), on 1 and 2 threads; prints txns/s and CPU ns per txn, and the
// ratios of staged to the others (or, with --json, one object per cell).
// detdb_staged_bench links tcmalloc_minimal like detdb's programs;
// detdb_staged_bench_glibc is the same program on glibc's malloc.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/staged_bench.h"
#include "gflags/gflags.h"

DEFINE_string(modes, "staged,pooled,heap", "Ways to get txn states: staged, pooled, heap");
DEFINE_string(threads, "1,2", "Thread counts (each thread one partition)");
DEFINE_uint64(txns, 2000000, "Txns per thread per run");
DEFINE_uint32(txns_per_epoch, 1000, "Txns per epoch (one staged group each)");
DEFINE_uint32(window, 256, "Active txns per thread (released in shuffled order)");
DEFINE_uint32(keys, 10, "Keys per txn (each read and written)");
DEFINE_uint32(value_bytes, 8, "Bytes of each buffered write");
DEFINE_uint32(rounds, 3, "Runs per cell, interleaved; the median is reported");
DEFINE_bool(json, false, "One JSON object per (mode, threads)");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("detdb_staged_bench [flags]: staged vs pooled vs heap allocation of txn states");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::vector<std::string> modes = absl::StrSplit(FLAGS_modes, ',');
  std::vector<uint32_t> threads;
  for (absl::string_view t : absl::StrSplit(FLAGS_threads, ',')) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(t, &n) || n == 0) {
      fprintf(stderr, "detdb_staged_bench: bad --threads %s\n", FLAGS_threads.c_str());
      return 2;
    }
    threads.push_back(n);
  }
  detdb::StagedBenchOptions o;
  o.txns = FLAGS_txns;
  o.txns_per_epoch = FLAGS_txns_per_epoch;
  o.window = FLAGS_window;
  o.keys = FLAGS_keys;
  o.value_bytes = FLAGS_value_bytes;
  auto results = detdb::RunStagedSweep(o, modes, threads, FLAGS_rounds);
  if (!results.ok()) {
    fprintf(stderr, "detdb_staged_bench: %s\n", std::string(results.status().message()).c_str());
    return 2;
  }
  if (!FLAGS_json)
    printf("txn states per epoch (%u txns, %u keys, %u-byte values, window %u), %s; median of %u rounds\n"
           "%-8s %7s %9s %12s %10s %9s %9s\n",
           o.txns_per_epoch, o.keys, o.value_bytes, o.window, detdb::MallocName().c_str(), FLAGS_rounds, "mode",
           "threads", "malloc", "txns/s", "cpu_ns/tx", "vs heap", "vs pooled");
  for (const detdb::StagedBenchResult& r : *results) {
    // Ratios of throughput against the other modes at the same thread count.
    double heap = 0, pooled = 0;
    for (const detdb::StagedBenchResult& x : *results) {
      if (x.options.threads != r.options.threads) continue;
      if (x.options.mode == "heap") heap = x.txns_per_sec;
      if (x.options.mode == "pooled") pooled = x.txns_per_sec;
    }
    if (FLAGS_json) {
      printf("{\"mode\":\"%s\",\"threads\":%u,\"malloc\":\"%s\",\"txns_per_sec\":%.0f,\"cpu_ns_per_txn\":%.1f,"
             "\"vs_heap\":%.3f,\"vs_pooled\":%.3f,\"txns_per_epoch\":%u,\"keys\":%u,\"value_bytes\":%u,"
             "\"window\":%u}\n",
             r.options.mode.c_str(), r.options.threads, r.allocator.c_str(), r.txns_per_sec, r.cpu_ns_per_txn,
             heap > 0 ? r.txns_per_sec / heap : 0, pooled > 0 ? r.txns_per_sec / pooled : 0, o.txns_per_epoch,
             o.keys, o.value_bytes, o.window);
    } else {
      printf("%-8s %7u %9s %12.0f %10.1f %8.2fx %8.2fx\n", r.options.mode.c_str(), r.options.threads,
             r.allocator.c_str(), r.txns_per_sec, r.cpu_ns_per_txn, heap > 0 ? r.txns_per_sec / heap : 0,
             pooled > 0 ? r.txns_per_sec / pooled : 0);
    }
  }
  return 0;
}
