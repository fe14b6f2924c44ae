// KvClient: the key-value workload (workloads/kv, docs/KV.md) over a
// cluster, for programs and detdb-cli: typed calls that build the request
// (workloads/kv/kv_request.h), send it to the node serving the first key's
// partition, wait for its outcome (Client::Run: exactly once across lost
// replies and node restarts) and parse the reply.
//
//   auto kv = KvClient::Connect(config);
//   (*kv)->Put("alice", KvInt(100));
//   absl::StatusOr<KvReply> r = (*kv)->Transfer("alice", "bob", 30);
//   // r.ok(): committed (r->from_balance == 70); Aborted: e.g. insufficient funds
//
// Every call returns within options.timeout: DeadlineExceeded (naming the
// node) if the node does not answer, e.g. because it or a node the cluster
// waits for is down. The txn's outcome is then unknown: it may still commit
// when the cluster recovers; it is not retried under a new sequence number.
// Thread-safety: not thread-safe; one KvClient per thread.
#ifndef DETDB_DEPLOY_KV_CLIENT_H_
#define DETDB_DEPLOY_KV_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "proto/cluster.pb.h"
#include "proto/kv.pb.h"
#include "workloads/kv/kv_request.h"

namespace detdb {

struct KvClientOptions {
  std::chrono::milliseconds timeout{5000};  // per call
  uint64_t client_id = 0;                   // 0: a random one
  CurveKeyPair curve;                       // this client's keys, for a CURVE cluster (docs/SECURITY.md)
};

class KvClient {
 public:
  // config must be valid (LoadClusterConfig). Connecting is lazy.
  static absl::StatusOr<std::unique_ptr<KvClient>> Connect(const pb::ClusterConfig& config,
                                                           const KvClientOptions& options = {});

  absl::StatusOr<KvReply> Get(std::string_view key) { return Run(KvGetRequest(key)); }
  absl::StatusOr<KvReply> Put(std::string_view key, const pb::KvValue& value) {
    return Run(KvPutRequest(key, value));
  }
  absl::StatusOr<KvReply> Delete(std::string_view key) { return Run(KvDeleteRequest(key)); }
  // expected nullopt: only if the key is absent. Committed either way; the
  // reply's outcome says whether it swapped (OK) or not (CAS_MISMATCH).
  absl::StatusOr<KvReply> Cas(std::string_view key, const std::optional<pb::KvValue>& expected,
                              const pb::KvValue& value) {
    return Run(KvCasRequest(key, expected, value));
  }
  absl::StatusOr<KvReply> Transfer(std::string_view from, std::string_view to, int64_t amount) {
    return Run(KvTransferRequest(from, to, amount));
  }
  absl::StatusOr<KvReply> Append(std::string_view key, std::string_view element) {
    return Run(KvAppendRequest(key, element));
  }
  // Runs a txn built by kv_request.h (its client id and seq are set here).
  absl::StatusOr<KvReply> Run(absl::StatusOr<pb::Txn> txn);

  // The node that serves txn's first key.
  uint32_t NodeOf(const pb::Txn& txn) const;
  ClusterClient* cluster() { return cluster_.get(); }
  uint64_t client_id() const { return client_id_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }

 private:
  KvClient(std::unique_ptr<ClusterClient> cluster, const KvClientOptions& options, uint64_t client_id)
      : cluster_(std::move(cluster)), options_(options), client_id_(client_id) {}

  std::unique_ptr<ClusterClient> cluster_;
  const KvClientOptions options_;
  const uint64_t client_id_;
  uint64_t seq_ = 0;
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_KV_CLIENT_H_
