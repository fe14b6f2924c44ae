// `detdb-bench figure elision --out DIR`: seed 001's latch benchmark
// (bench/latch_bench.h) as a figure: throughput of B+tree lookups against
// the share of inserts (0, 5, 20, 100%), one line per scheme (rw, spin,
// optimistic, and elided where the CPU has RTM) and thread count (1 to this
// host's cores). Prints the table (with CPU ns/op, retries, aborts by
// cause) and writes DIR/elision.csv and DIR/elision.png.
// Compiled into detdb-bench (flags belong to binaries).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/latch_bench.h"
#include "bench/sim_command.h"
#include "gflags/gflags.h"

DEFINE_string(elision_threads, "", "figure elision: comma-separated thread counts (default: 1 to this host's cores)");
DEFINE_uint64(elision_keys, 1000000, "figure elision: keys bulk-loaded into the B+tree");
DEFINE_uint64(elision_ops, 500000, "figure elision: operations per thread per run");
DEFINE_uint32(elision_rounds, 3, "figure elision: interleaved runs per cell (medians)");

namespace detdb {

int ElisionFigure(const std::string& out_dir) {
  LatchSweepOptions o;
  o.schemes = LatchSchemes();
  if (FLAGS_elision_threads.empty()) {
    for (uint32_t t = 1; t <= std::max(1u, std::thread::hardware_concurrency()); ++t) o.threads.push_back(t);
  } else {
    for (absl::string_view t : absl::StrSplit(FLAGS_elision_threads, ',', absl::SkipEmpty())) {
      uint32_t n = 0;
      if (!absl::SimpleAtoi(t, &n) || n == 0) {
        fprintf(stderr, "detdb-bench figure elision: bad --elision_threads\n");
        return 2;
      }
      o.threads.push_back(n);
    }
  }
  o.insert_shares = {0, 0.05, 0.2, 1};
  o.keys = FLAGS_elision_keys;
  o.ops_per_thread = FLAGS_elision_ops;
  o.rounds = FLAGS_elision_rounds;
  auto cells = RunLatchSweep(o, nullptr);
  if (!cells.ok()) {
    fprintf(stderr, "detdb-bench figure elision: %s\n", std::string(cells.status().message()).c_str());
    return 1;
  }
  printf("\n");
  PrintLatchTable(stdout, o, *cells);

  const std::string csv_path = out_dir + "/elision.csv";
  std::ofstream csv(csv_path);
  if (!csv) {
    fprintf(stderr, "detdb-bench figure elision: cannot write %s\n", csv_path.c_str());
    return 1;
  }
  csv << "figure,x,series,ops_per_sec,mode,cpu_ns_per_op,retries_per_lookup,aborts_per_op,fallbacks_per_op\n";
  std::string missing;
  for (const LatchCell& c : *cells) {
    if (!c.available) {
      if (missing.find(c.scheme) == std::string::npos) missing += (missing.empty() ? "" : ", ") + c.scheme;
      continue;
    }
    const LatchBenchResult& r = c.median;
    const double ops = r.ops > 0 ? static_cast<double>(r.ops) : 1;
    csv << "elision," << 100 * c.insert_share << "," << c.scheme << " " << c.threads << "t," << r.ops_per_sec
        << ",real," << r.cpu_ns_per_op << "," << (r.lookups > 0 ? double(r.lookup_retries) / r.lookups : 0) << ","
        << r.elision.aborts / ops << "," << r.elision.fallback / ops << "\n";
  }
  csv.close();
  std::string title = "Seed 001: B+tree lookups under one latch vs inserts";
  if (!missing.empty()) title += " (not run: " + missing + ", no RTM)";
  return PlotFigure(csv_path, out_dir + "/elision.png", title, "inserts (% of operations)", false);
}

}  // namespace detdb
