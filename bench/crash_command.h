// `detdb-bench crash`: durability under kill -9, checked end to end.
//
// Starts a real cluster of --nodes `detdb` processes, each logging its input
// (--data_dir), drives it with a seeded microbenchmark load whose history
// (every request, every acknowledged result) is recorded, kills random nodes
// (--crash_mode: one node, all at once, or mixed) with SIGKILL at random
// moments --kills times, restarts them after 0 to --crash_down_s seconds,
// and at the end checks the history against the durable logs:
//
//   acknowledged N, lost L, duplicated D, result mismatches R, digest mismatches M
//
// - lost: acknowledged (client id, seq) in no node's log;
// - duplicated: (client id, seq) in the logs more than once, or acknowledged
//   twice with different results;
// - result mismatches: an acknowledged result that differs from what a
//   serial replay of the durable log gives for that txn;
// - digest mismatches: partitions whose digest (asked of the nodes at an
//   epoch boundary after the load) differs from the serial replay's.
// Exits 0 iff all four are 0 (1 otherwise, 2 on a setup error).
//
// A client talks to one node only (a node's exactly-once table holds the
// requests it accepted), and after a kill or a silence of a second asks
// that node for the outcome of its unanswered requests
// (Client::Outcomes), resubmitting only those the node never had: what a
// real client does.
//
// Compiled into detdb-bench (flags belong to binaries).
#ifndef DETDB_BENCH_CRASH_COMMAND_H_
#define DETDB_BENCH_CRASH_COMMAND_H_

namespace detdb {

int CrashCommand();

}  // namespace detdb

#endif  // DETDB_BENCH_CRASH_COMMAND_H_
