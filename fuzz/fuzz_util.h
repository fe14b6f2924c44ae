// Helpers shared by the fuzz targets (fuzz/*.cc): quiet logging, and the
// engines a node builds for each workload, created once per fuzz process.
//
// Thread-safety: single-threaded (libFuzzer calls the targets on one thread).
#ifndef DETDB_FUZZ_FUZZ_UTIL_H_
#define DETDB_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "common/partitioner.h"
#include "scheduler/engine.h"
#include "scheduler/procedure.h"

namespace detdb::fuzz {

// glog: fatal only, to stderr; protobuf's log: off (the decoders log what
// they drop; millions of inputs must not flood the output).
void QuietLogs();

// An engine set up as deploy/node.cc sets one up for `workload` ("micro",
// "tpcc" or "kv"): its partitioner, every workload's procedures, the
// workload's tables (small) and checks (SetWorkloadChecks); results go to a
// sink, so client ids are the clients' own. Not started: Check and
// CheckPeerBatch validate without running anything. peers: cluster mode
// (partitions of other nodes are not local).
struct WorkloadEngine {
  std::unique_ptr<Partitioner> partitioner;
  ProcedureRegistry procedures;
  std::unique_ptr<TxnClient> sink;
  std::unique_ptr<Engine> engine;
};
// Dies (LOG(FATAL)) on a setup error: the fuzz target cannot run without it.
std::unique_ptr<WorkloadEngine> MakeWorkloadEngine(const std::string& workload, uint32_t num_partitions,
                                                   PeerLink* peers = nullptr);

inline constexpr uint64_t kMicroRowsPerPartition = 1000;

}  // namespace detdb::fuzz

#endif  // DETDB_FUZZ_FUZZ_UTIL_H_
