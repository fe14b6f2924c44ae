// The detdb client library: a connection to one node's client port
// (Client, a ZeroMQ DEALER) and to every node of a cluster (ClusterClient).
// Requests and replies are the pb::ClientRequest / pb::ClientReply of
// proto/client.proto. Txns are sent without waiting (many may be in
// flight); their results come back through Receive(). The synchronous
// calls (Info, Digests, History) keep any txn results that arrive meanwhile
// for the next Receive().
//
//   auto c = Client::Connect("tcp://127.0.0.1:41001");
//   pb::Txn t = ...; t.set_client_id(id); t.set_client_seq(++seq);
//   (*c)->SubmitTxns({t});
//   auto reply = (*c)->Receive(std::chrono::seconds(1));  // reply->results()
//
// Client ids are the client's own choice (nonzero); a node refuses a txn
// whose client_seq is not above the last one it accepted for that id.
// Thread-safety: not thread-safe; one thread per Client / ClusterClient.
#ifndef DETDB_CLIENT_CLIENT_H_
#define DETDB_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/curve.h"
#include "proto/client.pb.h"
#include "proto/cluster.pb.h"
#include "zmq.hpp"

namespace detdb {

class Client {
 public:
  // endpoint: "tcp://host:port". Connecting is lazy (ZeroMQ retries), so
  // this fails only on a malformed endpoint. curve: the client's key pair
  // and the node's public key for a CURVE node (docs/SECURITY.md); empty:
  // the NULL mechanism, which a CURVE node refuses.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& endpoint,
                                                         const CurveClientKeys& curve = {});
  ~Client();

  // Sends one request frame. Unavailable if the node is unreachable and the
  // send queue is full.
  absl::Status Send(const pb::ClientRequest& request);
  absl::Status SubmitTxns(const std::vector<pb::Txn>& txns);
  // The next reply (a stashed one first), or nullopt after timeout.
  // Internal if a reply does not parse; Unavailable on a socket error.
  absl::StatusOr<std::optional<pb::ClientReply>> Receive(std::chrono::milliseconds timeout);

  absl::StatusOr<pb::NodeInfo> Info(std::chrono::milliseconds timeout);
  // Digests of the node's partitions at the boundary of `epoch` (see
  // pb::ClientRequest::digest_epoch): comparable across nodes, also under load.
  absl::StatusOr<std::vector<pb::PartitionDigest>> Digests(uint64_t epoch, std::chrono::milliseconds timeout);
  // Has the node take a checkpoint at the boundary after `epoch` (see
  // pb::ClientRequest::checkpoint_epoch); returns once it is published.
  absl::StatusOr<pb::CheckpointInfo> Checkpoint(uint64_t epoch, std::chrono::milliseconds timeout);
  // A scan of `table` (name or id) on the node's partitions while txns run
  // (pb::ClientRequest::scan_table): up to `limit` records with row >=
  // from_row, in key order, after every txn of epochs <= after_epoch ran
  // there (pass seen_epoch() to read your own writes).
  absl::StatusOr<pb::ScanReply> Scan(const std::string& table, uint64_t from_row, uint32_t limit,
                                     std::chrono::milliseconds timeout, uint64_t after_epoch = 0);
  // The newest epoch of any txn result this client has received (from a
  // cluster node: txn ids carry their epoch, EpochOfTxnId).
  uint64_t seen_epoch() const { return seen_epoch_; }
  // The workload's consistency check of the node's partitions at the
  // boundary of `epoch` (reply fields consistency_*).
  absl::StatusOr<pb::ClientReply> Check(uint64_t epoch, std::chrono::milliseconds timeout);
  // Exactly once across restarts. The outcome of each (client_id,
  // client_seq) of txns (nothing else of them is read): per txn its original
  // result, STATUS_UNAVAILABLE (still running, or the node is recovering:
  // ask again) or STATUS_NOT_FOUND (the node never accepted it or lost it
  // before it was durable, so never acknowledged it: resubmit it).
  absl::StatusOr<std::vector<pb::TxnResult>> Outcomes(const std::vector<pb::Txn>& txns,
                                                      std::chrono::milliseconds timeout);
  // Runs txn (client id and seq set) and returns its result, across node
  // restarts and lost replies: while no result comes it asks for the outcome
  // and resubmits the same (client id, seq) only when the node does not have
  // it, so the txn runs once. DeadlineExceeded if no outcome by timeout.
  // Results of other txns that arrive meanwhile are kept for Receive().
  absl::StatusOr<pb::TxnResult> Run(const pb::Txn& txn, std::chrono::milliseconds timeout);
  // The node's sequencer batches (node started with --record_history).
  absl::StatusOr<std::vector<pb::Batch>> History(std::chrono::milliseconds timeout);

  const std::string& endpoint() const { return endpoint_; }
  // For zmq::poll over several clients.
  void* socket_handle() { return socket_.handle(); }
  bool has_stashed() const { return !stash_.empty(); }

 private:
  explicit Client(const std::string& endpoint);
  absl::StatusOr<pb::ClientReply> Call(pb::ClientRequest request, std::chrono::milliseconds timeout);
  // Raises seen_epoch_ to the epochs of r's results.
  void NoteEpochs(const pb::ClientReply& r);

  const std::string endpoint_;
  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
  uint64_t next_request_id_ = 1;
  std::deque<pb::ClientReply> stash_;
  uint64_t seen_epoch_ = 0;
};

class ClusterClient {
 public:
  // One connection per node of config (which must be valid). If the
  // config gives the nodes' curve_public_key, CURVE with client_keys (the
  // client's key pair; FailedPrecondition if empty).
  static absl::StatusOr<std::unique_ptr<ClusterClient>> Connect(const pb::ClusterConfig& config,
                                                                const CurveKeyPair& client_keys = {});

  uint32_t num_nodes() const { return static_cast<uint32_t>(nodes_.size()); }
  Client* node(uint32_t id) { return nodes_.at(id).get(); }
  // The node serving partition p.
  uint32_t NodeOfPartition(uint32_t p) const { return node_of_.at(p); }
  const pb::ClusterConfig& config() const { return config_; }
  // The key pair given to Connect (for more connections to the same cluster).
  const CurveKeyPair& curve_keys() const { return curve_keys_; }

  // The next reply from any node: (node id, reply), or nullopt after timeout.
  absl::StatusOr<std::optional<std::pair<uint32_t, pb::ClientReply>>> Receive(std::chrono::milliseconds timeout);
  // Info of every node (by node id).
  absl::StatusOr<std::vector<pb::NodeInfo>> InfoAll(std::chrono::milliseconds timeout);
  // Waits until every node answers and is ready.
  absl::Status WaitReady(std::chrono::milliseconds timeout);
  // The newest epoch of any result received from any node (Client::seen_epoch).
  uint64_t seen_epoch() const;

 private:
  pb::ClusterConfig config_;
  CurveKeyPair curve_keys_;
  std::vector<std::unique_ptr<Client>> nodes_;  // by node id
  std::vector<uint32_t> node_of_;               // by partition
  uint32_t next_ = 0;                           // fairness of Receive
};

}  // namespace detdb

#endif  // DETDB_CLIENT_CLIENT_H_
