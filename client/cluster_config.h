// Loading and checking the cluster configuration (proto/cluster.proto).
// A config is valid when it names at least one node; node ids are unique and
// below 64; every node has a host, ports in 1..65535 (http_port: 0 for none)
// and at least one partition; no two endpoints (host, port) coincide; every
// partition 0 .. num_partitions - 1 is served by exactly one node; and
// either every node has a valid curve_public_key (Z85) or none has.
//
// Thread-safety: pure functions.
#ifndef DETDB_CLIENT_CLUSTER_CONFIG_H_
#define DETDB_CLIENT_CLUSTER_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/cluster.pb.h"

namespace detdb {

// Parses protobuf text format and validates. InvalidArgument says what is wrong.
absl::StatusOr<pb::ClusterConfig> ParseClusterConfig(const std::string& text);
// Reads `path` and parses it. NotFound if the file cannot be read.
absl::StatusOr<pb::ClusterConfig> LoadClusterConfig(const std::string& path);
absl::Status ValidateClusterConfig(const pb::ClusterConfig& config);

// A hash of the config's meaning, exchanged by nodes when they connect:
// equal for equal configs, whatever the order of nodes in the file.
uint64_t ClusterConfigHash(const pb::ClusterConfig& config);

// The node serving `partition`, or nullptr. REQUIRES: a valid config.
const pb::NodeConfig* NodeOfPartition(const pb::ClusterConfig& config, uint32_t partition);

}  // namespace detdb

#endif  // DETDB_CLIENT_CLUSTER_CONFIG_H_
