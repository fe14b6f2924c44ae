// Runs the microbenchmark against a running detdb cluster (deploy/
// local_cluster.sh, or `detdb` nodes started by hand): asks every node what
// it loaded, then drives closed-loop clients (each at most outstanding /
// clients txns in flight) that send every txn to the node of its first
// key, and reports throughput, latency percentiles (submission to reply;
// single- and multi-partition txns apart), aborts and refusals.
//
// Thread-safety: RunMicroCluster blocks the calling thread; progress
// callbacks run on it. It starts `clients` threads of its own.
#ifndef DETDB_BENCH_MICRO_CLUSTER_H_
#define DETDB_BENCH_MICRO_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "bench/histogram.h"
#include "workloads/micro/micro.h"
#include "client/curve.h"
#include "proto/cluster.pb.h"

namespace detdb {

struct MicroClusterOptions {
  pb::ClusterConfig config;
  CurveKeyPair curve;              // the client's keys for a CURVE cluster (docs/SECURITY.md)
  // partitions and records_per_partition are taken from the cluster.
  MicroOptions workload;
  uint32_t clients = 1;            // client threads, each with its own connections and client id
  uint32_t outstanding = 4000;     // txns in flight at most, over all clients
  uint64_t txns = 0;               // stop after this many txns (0: use duration)
  double duration_s = 3;
  double stall_timeout_s = 30;     // give up when no reply came for this long
  std::function<void(const ProgressSample&)> progress;  // about once a second (totals since the start)
};

struct MicroClusterResult {
  std::string lock_manager;        // as the nodes report it
  uint32_t nodes = 0, partitions = 0;
  uint64_t submitted = 0, committed = 0, aborted = 0, refused = 0, duplicates = 0;
  double seconds = 0, txns_per_sec = 0;
  uint64_t p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0;
  uint64_t single_count = 0, single_p50_us = 0, single_p99_us = 0;
  uint64_t multi_count = 0, multi_p50_us = 0, multi_p99_us = 0;
};

absl::StatusOr<MicroClusterResult> RunMicroCluster(const MicroClusterOptions& options);

}  // namespace detdb

#endif  // DETDB_BENCH_MICRO_CLUSTER_H_
