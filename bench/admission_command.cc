// `detdb-bench admission-replay FILE`: replays an admission trace
// (`detdb-bench micro --admission_trace=FILE`, scheduler/admission_trace.h)
// through fresh controllers, checks that they choose the recorded windows,
// and prints, per partition, how often and why the window changed and where
// it stayed; with --changes, every change with its time and cause.
// Thread-safety: called from main's thread only.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gflags/gflags.h>

#include "bench/sim_command.h"
#include "scheduler/admission_trace.h"

DEFINE_bool(changes, false, "admission-replay: print every window change (time, from, to, cause)");

namespace detdb {

int AdmissionReplayCommand(const std::string& path) {
  auto file = ReadAdmissionTrace(path);
  if (!file.ok()) {
    fprintf(stderr, "detdb-bench: %s\n", std::string(file.status().message()).c_str());
    return 2;
  }
  std::set<uint32_t> partitions;
  for (const AdmissionTraceRecord& r : file->records) partitions.insert(r.partition);
  printf("admission trace %s: %zu rounds, %zu partition(s); controllers: %u worker(s), max_active %u, %s, "
         "warm-up %.0f ms\n",
         path.c_str(), file->records.size(), partitions.size(), file->options.workers, file->options.max_active,
         file->options.adaptive ? "adaptive" : "fixed", file->options.warmup_us / 1000.0);
  int rc = 0;
  for (uint32_t p : partitions) {
    auto changes = ReplayAdmission(file->options, file->records, p);
    if (!changes.ok()) {
      fprintf(stderr, "detdb-bench: %s\n", std::string(changes.status().message()).c_str());
      rc = 1;
      continue;
    }
    // The partition's rounds: its first and last time.
    bool have_first = false;
    uint64_t first_us = 0, last_us = 0;
    for (const AdmissionTraceRecord& r : file->records) {
      if (r.partition != p) continue;
      if (!have_first) first_us = r.signals.now_us, have_first = true;
      last_us = std::max(last_us, r.signals.now_us);
    }
    std::map<std::string, uint64_t> causes;
    for (const AdmissionChange& c : *changes) ++causes[c.cause];
    printf("partition %u: %zu window changes over %.3f s, replayed exactly\n", p, changes->size(),
           static_cast<double>(last_us - first_us) / 1e6);
    for (const auto& [cause, n] : causes) printf("  %-22s %lu\n", cause.c_str(), static_cast<unsigned long>(n));
    // Time-weighted window: min, median, max, last. A span is the time
    // from one change to the next (0 if a hand-edited trace goes back).
    std::vector<std::pair<uint64_t, uint64_t>> spans;  // (window, microseconds at it)
    uint64_t w = 0, since = first_us;
    bool have = false;
    for (const AdmissionTraceRecord& r : file->records) {
      if (r.partition != p) continue;
      if (!have) {
        w = r.window;
        have = true;
      } else if (r.window != w) {
        spans.push_back({w, r.signals.now_us > since ? r.signals.now_us - since : 0});
        w = r.window;
        since = std::max(since, r.signals.now_us);
      }
    }
    spans.push_back({w, last_us > since ? last_us - since : 0});
    std::sort(spans.begin(), spans.end());
    uint64_t total = 0;
    for (const auto& s : spans) total += s.second;
    uint64_t acc = 0, median = w;  // no time passed: the last window
    if (total > 0) {
      for (const auto& s : spans) {
        acc += s.second;
        if (2 * acc >= total) {
          median = s.first;
          break;
        }
      }
    }
    printf("  window: min %lu, median over time %lu, max %lu, at the end %lu\n",
           static_cast<unsigned long>(spans.front().first), static_cast<unsigned long>(median),
           static_cast<unsigned long>(spans.back().first), static_cast<unsigned long>(w));
    if (FLAGS_changes) {
      for (const AdmissionChange& c : *changes)
        printf("  %10.3f ms  %5lu -> %5lu  %s%s\n", static_cast<double>(c.at_us - first_us) / 1e3,
               static_cast<unsigned long>(c.from), static_cast<unsigned long>(c.to), c.cause.c_str(),
               c.climbing ? " (climbing)" : "");
    }
  }
  return rc;
}

}  // namespace detdb
