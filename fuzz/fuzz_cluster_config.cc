// fuzz_cluster_config: the cluster config loader (client/cluster_config.h).
// Input: the text of a config file (protobuf text format). ParseClusterConfig
// parses and validates it; a config it accepts must hash and map every
// partition to a node (what the nodes do with it next).
#include <cstddef>
#include <cstdint>
#include <string>

#include "client/cluster_config.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detdb::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;  // config files are small; keeps the text parser fast
  auto config = detdb::ParseClusterConfig(std::string(reinterpret_cast<const char*>(data), size));
  if (!config.ok()) return 0;
  (void)detdb::ClusterConfigHash(*config);
  for (uint32_t p = 0; p < config->num_partitions(); ++p) {
    if (detdb::NodeOfPartition(*config, p) == nullptr) __builtin_trap();  // valid: every partition is served
  }
  return 0;
}
