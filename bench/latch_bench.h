// The seed-001 latch benchmark: index lookups and inserts on one B+tree
// (bench/bench_btree.h) guarded as a whole by one latch, by 1 to N threads,
// with a share of inserts (the paper's 0, 5, 20 and 100%), under four
// schemes:
//   rw          a spinning reader-writer latch with writer preference (the
//               paper's TBB spin_rw_mutex): every lookup writes the latch
//               word (a shared count), so readers move its line between
//               cores;
//   spin        a test-and-test-and-set spin latch for lookups and inserts
//               (ElidedLatch::LockNoElision);
//   optimistic  inserts take a VersionLatch's write lock; lookups take no
//               latch and write nothing: snapshot, descend, validate, and
//               descend again if an insert ran meanwhile
//               (storage/version_latch.h);
//   elided      the spin latch elided with RTM for lookups and inserts
//               (ElidedLatch::Lock): where the CPU has no RTM this scheme
//               does not run and the output says so.
// Lookups are of present keys (even, bulk-loaded) and must find them with
// their value; inserts are of odd keys (a duplicate writes nothing). Each
// run checks the tree afterwards, so the benchmark fails on a broken latch.
//
// Figures: throughput (operations per second of the slowest thread's
// span), CPU ns per operation (the threads' CPU time: steadier than
// throughput on a shared machine), and the cost of each scheme: retries per
// lookup (optimistic), aborts by cause and fallbacks per operation (elided).
// Programs: detdb_latchbench (table or --json) and `detdb-bench figure
// elision --out DIR` (CSV and PNG).
//
// Thread-safety: RunLatchBench and RunLatchSweep start and join their own
// threads; call them from one thread at a time.
#ifndef DETDB_BENCH_LATCH_BENCH_H_
#define DETDB_BENCH_LATCH_BENCH_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/elided_latch.h"

namespace detdb {

struct LatchBenchOptions {
  std::string scheme = "spin";  // rw, spin, optimistic or elided
  uint32_t threads = 1;
  double insert_share = 0;  // of operations, 0..1
  uint64_t keys = 1000000;  // bulk-loaded: 0, 2, 4, ...
  uint64_t ops_per_thread = 500000;
  uint64_t seed = 1;
};

struct LatchBenchResult {
  std::string scheme;
  uint32_t threads = 0;
  double insert_share = 0;
  uint64_t ops = 0, lookups = 0, inserts = 0;
  uint64_t inserted = 0;  // inserts of a new key
  double seconds = 0;
  double ops_per_sec = 0;
  double cpu_ns_per_op = 0;
  uint64_t lookup_retries = 0;  // optimistic: descents thrown away by validation
  ElidedLatch::Stats elision;   // elided: every worker's counters
};

// The schemes, in the order tables list them.
const std::vector<std::string>& LatchSchemes();
// Whether `scheme` runs on this machine; if not, *why (one line).
bool LatchSchemeAvailable(const std::string& scheme, std::string* why);

// One run. InvalidArgument for an unknown or unavailable scheme; Internal if
// a lookup missed a present key or the tree is broken afterwards.
absl::StatusOr<LatchBenchResult> RunLatchBench(const LatchBenchOptions& options);

// Every scheme x thread count x insert share, `rounds` times, the schemes
// taking turns within each (threads, share) point (so load from other
// processes hits them alike); each cell reports its median round by
// throughput. Unavailable schemes give cells with available = false.
struct LatchSweepOptions {
  std::vector<std::string> schemes;
  std::vector<uint32_t> threads;
  std::vector<double> insert_shares;
  uint64_t keys = 1000000;
  uint64_t ops_per_thread = 500000;
  uint32_t rounds = 3;
  uint64_t seed = 1;
};
struct LatchCell {
  std::string scheme;
  uint32_t threads = 0;
  double insert_share = 0;
  bool available = true;
  std::string why;          // when not available
  LatchBenchResult median;  // when available
};
// progress, if set, is called after every run (for a line on stderr).
absl::StatusOr<std::vector<LatchCell>> RunLatchSweep(const LatchSweepOptions& options,
                                                     const std::function<void(const LatchBenchResult&)>& progress);

// The table (one line per cell, the throughput also relative to rw).
void PrintLatchTable(FILE* out, const LatchSweepOptions& options, const std::vector<LatchCell>& cells);
// One JSON object (one line, no newline) per cell.
std::string LatchCellJson(const LatchSweepOptions& options, const LatchCell& cell);

}  // namespace detdb

#endif  // DETDB_BENCH_LATCH_BENCH_H_
