#include "deploy/kv_client.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "common/partitioner.h"

namespace detdb {

absl::StatusOr<std::unique_ptr<KvClient>> KvClient::Connect(const pb::ClusterConfig& config,
                                                            const KvClientOptions& options) {
  auto cc = ClusterClient::Connect(config, options.curve);
  if (!cc.ok()) return cc.status();
  uint64_t id = options.client_id;
  if (id == 0) {
    std::random_device rd;
    // A fresh id per client: a node refuses seqs at or below the last one
    // it accepted from an id, and this client starts at 1.
    while (id == 0) id = (static_cast<uint64_t>(rd()) << 32 | rd()) >> 1;
  }
  return std::unique_ptr<KvClient>(new KvClient(std::move(*cc), options, id));
}

uint32_t KvClient::NodeOf(const pb::Txn& txn) const {
  const ModPartitioner parts(cluster_->config().num_partitions());
  return txn.read_set_size() == 0 ? 0 : cluster_->NodeOfPartition(parts.PartitionOf(txn.read_set(0)));
}

absl::StatusOr<KvReply> KvClient::Run(absl::StatusOr<pb::Txn> txn) {
  if (!txn.ok()) return txn.status();
  txn->set_client_id(client_id_);
  txn->set_client_seq(++seq_);
  const uint32_t node = NodeOf(*txn);
  Client* c = cluster_->node(node);
  absl::StatusOr<pb::TxnResult> result = c->Run(*txn, options_.timeout);
  // A time-out is not a failure: the txn may be sequenced and commit later
  // (never resent here with a new seq, which could run it twice).
  if (absl::IsDeadlineExceeded(result.status()))
    return absl::DeadlineExceededError(
        absl::StrCat("timed out after ", options_.timeout.count(), " ms: node ", node, " (", c->endpoint(),
                     ") did not answer; the outcome is unknown: the txn may still commit when the cluster "
                     "recovers (a node may be down or the cluster may wait for one; see info). It is not "
                     "retried: check the key before running it again"));
  if (!result.ok()) return result.status();
  // Drop results of nothing we wait for (Run keeps others for Receive).
  while (c->has_stashed()) (void)c->Receive(std::chrono::milliseconds(0));
  return ParseKvReply(*txn, *result);
}

}  // namespace detdb
