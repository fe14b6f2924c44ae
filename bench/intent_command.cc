// `detdb-bench lil`: seed 000's Fig. 4 (bench/intent_bench.h): throughput of
// the lock-queue intent locks, SLI and LIL as the share of absolute locks
// and the number of agents vary; the ratios to the lock queue; --json: one
// object per cell. `detdb-bench figure lil --out DIR` writes DIR/lil.csv and
// DIR/lil.png (bench/plot_figure.py). Cells run interleaved --rounds times
// (the median is reported): a noisy machine moves every implementation
// alike. Compiled into detdb-bench (flags belong to binaries).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/intent_bench.h"
#include "gflags/gflags.h"

DECLARE_bool(json);
DECLARE_string(out);
DECLARE_uint32(rounds);
DECLARE_uint64(seed);
DEFINE_string(lil_agents, "1,2,4", "lil: agent (thread) counts");
DEFINE_string(lil_absolute, "0,0.0001,0.001,0.01", "lil: shares of txns that take an absolute lock");
DEFINE_string(lil_kinds, "queue,sli,lil", "lil: intent lock implementations (the first is the ratios' base)");
DEFINE_double(lil_duration, 1, "lil: seconds per cell and round");

namespace detdb {
namespace {

struct Cell {
  uint32_t agents;
  double share;
  std::string kind;
  IntentBenchResult median;
};

template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const std::string& s) {
  std::vector<T> out;
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    const std::string p(part);
    char* end = nullptr;
    const double v = std::strtod(p.c_str(), &end);
    if (p.empty() || *end != '\0') return absl::InvalidArgumentError(absl::StrCat("not a number: '", p, "'"));
    out.push_back(static_cast<T>(v));
  }
  return out;
}

// Runs every cell --rounds times, interleaved; the median (by throughput).
absl::StatusOr<std::vector<Cell>> Sweep() {
  auto agents = ParseList<uint32_t>(FLAGS_lil_agents);
  if (!agents.ok()) return agents.status();
  auto shares = ParseList<double>(FLAGS_lil_absolute);
  if (!shares.ok()) return shares.status();
  std::vector<IntentLockKind> kinds;
  for (absl::string_view k : absl::StrSplit(FLAGS_lil_kinds, ',')) {
    auto kind = ParseIntentLockKind(std::string(k));
    if (!kind.ok()) return kind.status();
    kinds.push_back(*kind);
  }
  std::vector<Cell> cells;
  for (uint32_t a : *agents)
    for (double s : *shares)
      for (IntentLockKind k : kinds) cells.push_back({a, s, IntentLockKindName(k), {}});
  std::vector<std::vector<IntentBenchResult>> runs(cells.size());
  for (uint32_t round = 0; round < std::max(1u, FLAGS_rounds); ++round) {
    for (size_t i = 0; i < cells.size(); ++i) {
      IntentBenchOptions o;
      o.kind = *ParseIntentLockKind(cells[i].kind);
      o.agents = cells[i].agents;
      o.absolute_share = cells[i].share;
      o.duration_s = FLAGS_lil_duration;
      o.seed = FLAGS_seed + round;
      auto r = RunIntentBench(o);
      if (!r.ok()) return r.status();
      runs[i].push_back(*r);
    }
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    std::sort(runs[i].begin(), runs[i].end(),
              [](const IntentBenchResult& a, const IntentBenchResult& b) { return a.txns_per_sec < b.txns_per_sec; });
    cells[i].median = runs[i][runs[i].size() / 2];
  }
  return cells;
}

void PrintTable(const std::vector<Cell>& cells, size_t kinds) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  printf("seed 000, Fig. 4: txns taking only intent locks on a volume and 4 tables (half IX, half IS); a share of\n"
         "them X on a table instead (1 in 4: X on the volume). Median of %u interleaved run(s) of %.1f s per cell;\n"
         "this host has %u cores: more agents than that share them (oversubscribed).\n\n",
         std::max(1u, FLAGS_rounds), FLAGS_lil_duration, cores);
  printf("%6s %9s", "agents", "absolute");
  for (size_t k = 0; k < kinds; ++k) printf(" %11s/s", cells[k].kind.c_str());
  for (size_t k = 1; k < kinds; ++k) printf(" %6s/%s", cells[k].kind.c_str(), cells[0].kind.c_str());
  printf("   CPU ns/txn");
  for (size_t k = 0; k < kinds; ++k) printf(" %7s", cells[k].kind.c_str());
  printf("\n");
  for (size_t i = 0; i < cells.size(); i += kinds) {
    printf("%6u %9g", cells[i].agents, cells[i].share);
    for (size_t k = 0; k < kinds; ++k) printf(" %13.0f", cells[i + k].median.txns_per_sec);
    const double base = cells[i].median.txns_per_sec;
    for (size_t k = 1; k < kinds; ++k)
      printf(" %*.2fx", static_cast<int>(cells[k].kind.size() + cells[0].kind.size()),
             base > 0 ? cells[i + k].median.txns_per_sec / base : 0);
    printf("   %10s", "");
    for (size_t k = 0; k < kinds; ++k) printf(" %7.0f", cells[i + k].median.cpu_ns_per_txn);
    printf("%s\n", cells[i].agents > cores ? "   (oversubscribed)" : "");
  }
  uint64_t timeouts = 0;
  for (const Cell& c : cells) timeouts += c.median.timeouts;
  if (timeouts > 0) printf("WARNING: %lu absolute requests timed out\n", static_cast<unsigned long>(timeouts));
}

void PrintJson(const std::vector<Cell>& cells) {
  for (const Cell& c : cells) {
    const IntentBenchResult& r = c.median;
    printf("{\"bench\":\"lil\",\"kind\":\"%s\",\"agents\":%u,\"absolute_share\":%g,\"txns_per_sec\":%.0f,"
           "\"cpu_ns_per_txn\":%.1f,\"txns\":%lu,\"absolute\":%lu,\"timeouts\":%lu,\"slow_acquires\":%lu,"
           "\"waits\":%lu,\"revoked\":%lu,\"invalidated\":%lu,\"reclaimed\":%lu}\n",
           c.kind.c_str(), c.agents, c.share, r.txns_per_sec, r.cpu_ns_per_txn, static_cast<unsigned long>(r.txns),
           static_cast<unsigned long>(r.absolute), static_cast<unsigned long>(r.timeouts),
           static_cast<unsigned long>(r.stats.slow_acquires), static_cast<unsigned long>(r.stats.waits),
           static_cast<unsigned long>(r.stats.revoked), static_cast<unsigned long>(r.stats.invalidated),
           static_cast<unsigned long>(r.stats.reclaimed));
  }
}

size_t KindCount() { return std::vector<std::string>(absl::StrSplit(FLAGS_lil_kinds, ',')).size(); }

}  // namespace

int IntentLockCommand() {
  auto cells = Sweep();
  if (!cells.ok()) {
    fprintf(stderr, "detdb-bench lil: %s\n", std::string(cells.status().message()).c_str());
    return 2;
  }
  if (FLAGS_json) {
    PrintJson(*cells);
  } else {
    PrintTable(*cells, KindCount());
  }
  return 0;
}

// DIR/lil.csv (figure,x,series,txns_per_sec,mode; a series per
// implementation and agent count) and DIR/lil.png.
int IntentLockFigure(const std::string& plot_script) {
  if (FLAGS_out.empty()) {
    fprintf(stderr, "detdb-bench figure lil: give --out=DIR\n");
    return 2;
  }
  std::filesystem::create_directories(FLAGS_out);
  auto cells = Sweep();
  if (!cells.ok()) {
    fprintf(stderr, "detdb-bench figure lil: %s\n", std::string(cells.status().message()).c_str());
    return 1;
  }
  PrintTable(*cells, KindCount());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string csv_path = FLAGS_out + "/lil.csv";
  std::ofstream csv(csv_path);
  csv << "figure,x,series,txns_per_sec,mode,cpu_ns_per_txn\n";
  for (const Cell& c : *cells)
    csv << "lil," << c.share << "," << c.kind << " " << c.agents << " agent" << (c.agents > 1 ? "s" : "") << ","
        << c.median.txns_per_sec << "," << (c.agents > cores ? "real, oversubscribed" : "real") << ","
        << c.median.cpu_ns_per_txn << "\n";
  csv.close();
  const std::string png = FLAGS_out + "/lil.png";
  const std::string python = std::ifstream("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd =
      absl::StrCat(python, " '", plot_script, "' '", csv_path, "' '", png,
                   "' 'seed 000 Fig. 4: intent locks only, varying the absolute-lock share' 'share of txns taking an "
                   "absolute lock' symlogx");
  if (std::system(cmd.c_str()) != 0) {
    fprintf(stderr, "detdb-bench figure lil: plotting failed (%s); the CSV is %s\n", cmd.c_str(), csv_path.c_str());
    return 1;
  }
  printf("wrote %s and %s\n", csv_path.c_str(), png.c_str());
  return 0;
}

}  // namespace detdb
