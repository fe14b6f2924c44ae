// What detdb-ctl and detdb-cli ask of a whole cluster: every node's info
// (a node that does not answer is reported, not waited for) and the
// per-partition state digests at one epoch boundary a little ahead of every
// node (comparable across nodes even while clients write).
//
// Thread-safety: the functions use the given ClusterClient from the calling
// thread only (TakeDigests opens a connection per node for its threads).
#ifndef DETDB_DEPLOY_CLUSTER_ADMIN_H_
#define DETDB_DEPLOY_CLUSTER_ADMIN_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "proto/client.pb.h"

namespace detdb {

struct NodeStatus {
  uint32_t node = 0;
  std::string endpoint;
  absl::StatusOr<pb::NodeInfo> info = absl::UnknownError("not asked");
};

// Info of every node, each asked with `timeout`.
std::vector<NodeStatus> QueryNodes(ClusterClient* c, std::chrono::milliseconds timeout);

struct DigestRow {
  uint32_t partition = 0, node = 0;
  uint64_t digest = 0;
};
struct ClusterDigests {
  uint64_t epoch = 0;                    // the boundary
  std::vector<DigestRow> rows;           // by node, then partition
  std::vector<std::string> node_errors;  // "node N: why", for nodes that gave none
};

// Picks a boundary ~200 ms (at least one epoch) ahead of every node's epoch
// and asks every node at once (each pauses there). Unavailable if a node
// does not answer its info request (within min(timeout, 2 s)): the others
// would wait for it at the boundary. Nodes that fail to give digests within
// max(timeout, the lead + 1 s) are in node_errors.
absl::StatusOr<ClusterDigests> TakeDigests(ClusterClient* c, std::chrono::milliseconds timeout);

// A scan of one table on every node while txns run (Engine::ScanTable on
// each, under S intent locks): the first `limit` records with row >=
// from_row over the whole cluster, in key order. Each node's partitions are
// scanned one after the other (no common cut: TakeDigests gives one).
// The scan reads c's own writes: each partition is scanned after every
// txn of the epochs c has results of (ClusterClient::seen_epoch) ran there.
struct ClusterScan {
  uint32_t table = 0;
  std::string name;
  uint32_t value_size = 0;
  std::vector<pb::ScanRow> rows;         // key order
  bool more = false;                     // records beyond these exist
  std::vector<std::string> node_errors;  // "node N: why"
};
// NotFound if every answering node says the table does not exist.
absl::StatusOr<ClusterScan> ScanTable(ClusterClient* c, const std::string& table, uint64_t from_row, uint32_t limit,
                                      std::chrono::milliseconds timeout);

}  // namespace detdb

#endif  // DETDB_DEPLOY_CLUSTER_ADMIN_H_
