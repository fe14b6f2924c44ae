// detdb_latchbench: the seed-001 latch benchmark (bench/latch_bench.h):
// B+tree lookups with 0, 5, 20 and 100% inserts, 1 to N threads, under a
// reader-writer latch, a spin latch, optimistic validation and lock elision
// (where the CPU has RTM; else the table says it was not run, and why).
//
//   detdb_latchbench                                  # the paper's sweep, 1..cores threads
//   detdb_latchbench --threads=1,2 --rounds=5 --json  # one JSON object per cell per line
//   detdb_latchbench --schemes=rw,optimistic --insert_shares=0.05 --keys=4000000
//
// Each (threads, insert share) point runs the schemes in turn, --rounds
// times, and reports each one's median round: on a shared machine compare
// the vs_rw ratios and CPU ns/op rather than absolute throughput.
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/latch_bench.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_string(schemes, "rw,spin,optimistic,elided", "Comma-separated: rw, spin, optimistic, elided");
DEFINE_string(threads, "", "Comma-separated thread counts (default: 1 to this host's cores)");
DEFINE_string(insert_shares, "0,0.05,0.2,1", "Comma-separated shares of operations that insert");
DEFINE_uint64(keys, 1000000, "Keys bulk-loaded into the B+tree before each run");
DEFINE_uint64(ops, 500000, "Operations per thread per run");
DEFINE_uint32(rounds, 3, "Runs of every cell, interleaved; each cell reports its median");
DEFINE_uint64(seed, 1, "Workload seed");
DEFINE_bool(json, false, "Print one JSON object per cell per line instead of a table");

namespace detdb {
namespace {

int Main() {
  LatchSweepOptions o;
  o.schemes = absl::StrSplit(FLAGS_schemes, ',', absl::SkipEmpty());
  for (const std::string& s : o.schemes) {
    std::string why;
    if (!LatchSchemeAvailable(s, &why) && s != "elided") {
      fprintf(stderr, "detdb_latchbench: %s: %s\n", s.c_str(), why.c_str());
      return 2;
    }
  }
  if (FLAGS_threads.empty()) {
    for (uint32_t t = 1; t <= std::max(1u, std::thread::hardware_concurrency()); ++t) o.threads.push_back(t);
  } else {
    for (absl::string_view t : absl::StrSplit(FLAGS_threads, ',', absl::SkipEmpty())) {
      uint32_t n = 0;
      if (!absl::SimpleAtoi(t, &n) || n == 0) {
        fprintf(stderr, "detdb_latchbench: bad --threads\n");
        return 2;
      }
      o.threads.push_back(n);
    }
  }
  for (absl::string_view s : absl::StrSplit(FLAGS_insert_shares, ',', absl::SkipEmpty())) {
    double share = 0;
    if (!absl::SimpleAtod(s, &share) || share < 0 || share > 1) {
      fprintf(stderr, "detdb_latchbench: bad --insert_shares (each in [0, 1])\n");
      return 2;
    }
    o.insert_shares.push_back(share);
  }
  o.keys = FLAGS_keys;
  o.ops_per_thread = FLAGS_ops;
  o.rounds = FLAGS_rounds;
  o.seed = FLAGS_seed;
  auto cells = RunLatchSweep(o, [](const LatchBenchResult& r) {
    fprintf(stderr, "  %s %ut %.0f%%: %.3f Mops/s\n", r.scheme.c_str(), r.threads, 100 * r.insert_share,
            r.ops_per_sec / 1e6);
  });
  if (!cells.ok()) {
    fprintf(stderr, "detdb_latchbench: %s\n", std::string(cells.status().message()).c_str());
    return 1;
  }
  if (FLAGS_json) {
    for (const LatchCell& c : *cells) printf("%s\n", LatchCellJson(o, c).c_str());
  } else {
    PrintLatchTable(stdout, o, *cells);
  }
  return 0;
}

}  // namespace
}  // namespace detdb

int main(int argc, char** argv) {
  gflags::SetUsageMessage("detdb_latchbench [flags]: seed 001's index latch benchmark (rw, spin, optimistic, elided)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return detdb::Main();
}
