// `detdb-bench figure staged --out DIR`: the seed-003 benchmark
// (bench/staged_bench.h) as a figure. Txn states per second for staged,
// pooled and heap allocation on 1 and 2 threads, on this process's malloc
// (tcmalloc_minimal) and, when detdb_staged_bench_glibc was built beside
// detdb-bench, on glibc's (that program's --json output). Writes
// DIR/staged.csv (figure_command.cc's columns: x = threads, series =
// "MODE (MALLOC)") and DIR/staged.png; prints the table. --rounds (3 unless
// given): interleaved runs per cell, the median reported.
// Compiled into detdb-bench (flags belong to binaries).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/sim_command.h"
#include "bench/staged_bench.h"
#include "gflags/gflags.h"

DECLARE_string(out);
DECLARE_uint32(rounds);

namespace detdb {
namespace {

struct Row {
  std::string mode, malloc_name;
  uint32_t threads = 0;
  double txns_per_sec = 0, cpu_ns_per_txn = 0;
};

// The value of "key" in one line of the program's --json output.
std::string Field(const std::string& line, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  size_t b = line.find(k);
  if (b == std::string::npos) return "";
  b += k.size();
  if (line[b] == '"') {
    const size_t e = line.find('"', b + 1);
    return line.substr(b + 1, e - b - 1);
  }
  const size_t e = line.find_first_of(",}", b);
  return line.substr(b, e - b);
}

// detdb_staged_bench_glibc beside this binary, or "".
std::string GlibcTwin() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string exe(buf, n);
  const std::string path = exe.substr(0, exe.rfind('/')) + "/detdb_staged_bench_glibc";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

}  // namespace

int StagedFigure() {
  const uint32_t rounds = gflags::GetCommandLineFlagInfoOrDie("rounds").is_default ? 3 : FLAGS_rounds;
  const StagedBenchOptions base;
  std::vector<Row> rows;
  fprintf(stderr, "detdb-bench figure staged: %u rounds of 3 modes x 2 thread counts on %s\n", rounds,
          MallocName().c_str());
  auto here = RunStagedSweep(base, StagedBenchModes(), {1, 2}, rounds);
  if (!here.ok()) {
    fprintf(stderr, "detdb-bench figure staged: %s\n", std::string(here.status().message()).c_str());
    return 1;
  }
  for (const StagedBenchResult& r : *here)
    rows.push_back({r.options.mode, r.allocator, r.options.threads, r.txns_per_sec, r.cpu_ns_per_txn});
  const std::string twin = GlibcTwin();
  if (twin.empty()) {
    fprintf(stderr, "detdb-bench figure staged: no detdb_staged_bench_glibc beside detdb-bench: tcmalloc only\n");
  } else {
    fprintf(stderr, "detdb-bench figure staged: the same on glibc's malloc (%s)\n", twin.c_str());
    FILE* p = popen(absl::StrCat("'", twin, "' --json --rounds=", rounds).c_str(), "r");
    if (p == nullptr) {
      fprintf(stderr, "detdb-bench figure staged: cannot run %s\n", twin.c_str());
      return 1;
    }
    char line[1024];
    while (fgets(line, sizeof(line), p) != nullptr) {
      const std::string l(line);
      Row r;
      r.mode = Field(l, "mode");
      r.malloc_name = Field(l, "malloc");
      if (r.mode.empty() || !absl::SimpleAtoi(Field(l, "threads"), &r.threads) ||
          !absl::SimpleAtod(Field(l, "txns_per_sec"), &r.txns_per_sec) ||
          !absl::SimpleAtod(Field(l, "cpu_ns_per_txn"), &r.cpu_ns_per_txn)) {
        fprintf(stderr, "detdb-bench figure staged: cannot parse %s", line);
        pclose(p);
        return 1;
      }
      rows.push_back(r);
    }
    if (pclose(p) != 0) {
      fprintf(stderr, "detdb-bench figure staged: %s failed\n", twin.c_str());
      return 1;
    }
  }
  const std::string csv_path = FLAGS_out + "/staged.csv";
  std::ofstream csv(csv_path);
  if (!csv) {
    fprintf(stderr, "detdb-bench figure: cannot write %s\n", csv_path.c_str());
    return 1;
  }
  csv << "figure,x,series,txns_per_sec,mode,cpu_ns_per_txn\n";
  printf("\nSeed 003: txn states per epoch, staged vs pooled vs the general allocator "
         "(%u txns per epoch, %u keys, window %u)\n%-8s %8s %7s %12s %10s %9s\n",
         base.txns_per_epoch, base.keys, base.window, "mode", "malloc", "threads", "txns/s", "cpu_ns/tx", "vs heap");
  for (const Row& r : rows) {
    double heap = 0;
    for (const Row& x : rows)
      if (x.mode == "heap" && x.threads == r.threads && x.malloc_name == r.malloc_name) heap = x.txns_per_sec;
    printf("%-8s %8s %7u %12.0f %10.1f %8.2fx\n", r.mode.c_str(), r.malloc_name.c_str(), r.threads, r.txns_per_sec,
           r.cpu_ns_per_txn, heap > 0 ? r.txns_per_sec / heap : 0);
    csv << "staged," << r.threads << "," << r.mode << " (" << r.malloc_name << ")," << r.txns_per_sec << ",real,"
        << r.cpu_ns_per_txn << "\n";
  }
  csv.close();
  return PlotFigure(csv_path, FLAGS_out + "/staged.png",
                       "Seed 003: txn states per epoch, staged vs pooled vs general allocator", "threads", false);
}

}  // namespace detdb
