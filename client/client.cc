#include "client/client.h"

#include <algorithm>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/types.h"

namespace detdb {

using Clock = std::chrono::steady_clock;

Client::Client(const std::string& endpoint) : endpoint_(endpoint), socket_(ctx_, zmq::socket_type::dealer) {}

Client::~Client() = default;

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& endpoint, const CurveClientKeys& curve) {
  std::unique_ptr<Client> c(new Client(endpoint));
  try {
    c->socket_.set(zmq::sockopt::linger, 0);
    c->socket_.set(zmq::sockopt::sndhwm, 100000);
    c->socket_.set(zmq::sockopt::rcvhwm, 0);
    c->socket_.set(zmq::sockopt::reconnect_ivl, 50);
    // A stable identity: after a reconnect the node still routes this
    // connection's pending results here.
    std::random_device rd;
    std::string id(16, '\0');
    for (char& ch : id) ch = static_cast<char>(rd());
    id[0] = 'c';  // routing ids must not start with a zero byte
    c->socket_.set(zmq::sockopt::routing_id, id);
    ApplyCurveClient(curve, &c->socket_);
    c->socket_.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(absl::StrCat("cannot connect to ", endpoint, ": ", e.what()));
  }
  return c;
}

absl::Status Client::Send(const pb::ClientRequest& request) {
  const size_t size = request.ByteSizeLong();
  zmq::message_t frame(size);
  request.SerializeWithCachedSizesToArray(static_cast<uint8_t*>(frame.data()));
  try {
    if (!socket_.send(frame, zmq::send_flags::dontwait))
      return absl::UnavailableError(absl::StrCat(endpoint_, ": send queue full (node unreachable?)"));
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat(endpoint_, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status Client::SubmitTxns(const std::vector<pb::Txn>& txns) {
  pb::ClientRequest r;
  r.mutable_txns()->Reserve(static_cast<int>(txns.size()));
  for (const pb::Txn& t : txns) *r.add_txns() = t;
  return Send(r);
}

absl::StatusOr<std::optional<pb::ClientReply>> Client::Receive(std::chrono::milliseconds timeout) {
  if (!stash_.empty()) {
    pb::ClientReply r = std::move(stash_.front());
    stash_.pop_front();
    return std::optional<pb::ClientReply>(std::move(r));
  }
  zmq::message_t frame;
  try {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0) return std::optional<pb::ClientReply>();
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) return std::optional<pb::ClientReply>();
    while (frame.more()) (void)socket_.recv(frame, zmq::recv_flags::none);  // not from a node: drop
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat(endpoint_, ": ", e.what()));
  }
  pb::ClientReply r;
  if (!r.ParseFromArray(frame.data(), static_cast<int>(frame.size())))
    return absl::InternalError(absl::StrCat(endpoint_, ": reply does not parse"));
  NoteEpochs(r);
  return std::optional<pb::ClientReply>(std::move(r));
}

void Client::NoteEpochs(const pb::ClientReply& r) {
  for (const pb::TxnResult& res : r.results())
    if (res.status() == pb::STATUS_OK || res.status() == pb::STATUS_ABORTED)
      seen_epoch_ = std::max(seen_epoch_, EpochOfTxnId(res.txn_id()));
}

absl::StatusOr<pb::ClientReply> Client::Call(pb::ClientRequest request, std::chrono::milliseconds timeout) {
  const uint64_t id = next_request_id_++;
  request.set_request_id(id);
  absl::Status s = Send(request);
  if (!s.ok()) return s;
  const auto deadline = Clock::now() + timeout;
  std::deque<pb::ClientReply> others;
  absl::StatusOr<pb::ClientReply> out = absl::DeadlineExceededError(absl::StrCat(endpoint_, ": no reply"));
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    zmq::message_t frame;
    try {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, left) == 0) continue;
      if (!socket_.recv(frame, zmq::recv_flags::dontwait)) continue;
    } catch (const zmq::error_t& e) {
      out = absl::UnavailableError(absl::StrCat(endpoint_, ": ", e.what()));
      break;
    }
    pb::ClientReply r;
    if (!r.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) continue;
    NoteEpochs(r);
    if (r.request_id() != id) {  // a txn result or an older reply: keep it
      others.push_back(std::move(r));
      continue;
    }
    if (r.status() != pb::STATUS_OK)
      out = absl::Status(r.status() == pb::STATUS_UNAVAILABLE ? absl::StatusCode::kUnavailable
                         : r.status() == pb::STATUS_NOT_FOUND ? absl::StatusCode::kNotFound
                                                              : absl::StatusCode::kInvalidArgument,
                         r.error());
    else
      out = std::move(r);
    break;
  }
  for (auto& r : others) stash_.push_back(std::move(r));
  return out;
}

absl::StatusOr<pb::NodeInfo> Client::Info(std::chrono::milliseconds timeout) {
  pb::ClientRequest r;
  r.set_info(true);
  auto reply = Call(r, timeout);
  if (!reply.ok()) return reply.status();
  return reply->info();
}

absl::StatusOr<std::vector<pb::PartitionDigest>> Client::Digests(uint64_t epoch, std::chrono::milliseconds timeout) {
  pb::ClientRequest r;
  r.set_digest(true);
  r.set_digest_epoch(epoch);
  auto reply = Call(r, timeout);
  if (!reply.ok()) return reply.status();
  return std::vector<pb::PartitionDigest>(reply->digests().begin(), reply->digests().end());
}

absl::StatusOr<pb::CheckpointInfo> Client::Checkpoint(uint64_t epoch, std::chrono::milliseconds timeout) {
  pb::ClientRequest r;
  r.set_checkpoint(true);
  r.set_checkpoint_epoch(epoch);
  auto reply = Call(r, timeout);
  if (!reply.ok()) return reply.status();
  return reply->checkpoint();
}

absl::StatusOr<pb::ScanReply> Client::Scan(const std::string& table, uint64_t from_row, uint32_t limit,
                                           std::chrono::milliseconds timeout, uint64_t after_epoch) {
  pb::ClientRequest r;
  r.set_scan_table(table);
  r.set_scan_from(from_row);
  r.set_scan_limit(limit);
  r.set_scan_after_epoch(after_epoch);
  auto reply = Call(r, timeout);
  if (!reply.ok()) return reply.status();
  return reply->scan();
}

absl::StatusOr<pb::ClientReply> Client::Check(uint64_t epoch, std::chrono::milliseconds timeout) {
  pb::ClientRequest r;
  r.set_check(true);
  r.set_check_epoch(epoch);
  return Call(r, timeout);
}

absl::StatusOr<std::vector<pb::Batch>> Client::History(std::chrono::milliseconds timeout) {
  pb::ClientRequest r;
  r.set_history(true);
  auto reply = Call(r, timeout);
  if (!reply.ok()) return reply.status();
  return std::vector<pb::Batch>(reply->history().begin(), reply->history().end());
}

absl::StatusOr<std::unique_ptr<ClusterClient>> ClusterClient::Connect(const pb::ClusterConfig& config,
                                                                      const CurveKeyPair& client_keys) {
  const bool curve = config.nodes_size() > 0 && !config.nodes(0).curve_public_key().empty();
  if (curve && client_keys.secret_key.empty())
    return absl::FailedPreconditionError(
        "the cluster config gives the nodes' CURVE keys: this client needs a key pair of the nodes' allowlist "
        "(--curve_key_file; docs/SECURITY.md)");
  std::unique_ptr<ClusterClient> c(new ClusterClient());
  c->config_ = config;
  c->curve_keys_ = client_keys;
  uint32_t max_id = 0;
  for (const auto& n : config.nodes()) max_id = std::max(max_id, n.id());
  c->nodes_.resize(max_id + 1);
  c->node_of_.resize(config.num_partitions());
  for (const auto& n : config.nodes()) {
    CurveClientKeys keys;
    if (curve) keys = CurveClientKeys{client_keys, n.curve_public_key()};
    auto client = Client::Connect(absl::StrCat("tcp://", n.host(), ":", n.client_port()), keys);
    if (!client.ok()) return client.status();
    c->nodes_[n.id()] = std::move(*client);
    for (uint32_t p : n.partitions())
      if (p < c->node_of_.size()) c->node_of_[p] = n.id();
  }
  for (const auto& n : c->nodes_)
    if (n == nullptr) return absl::InvalidArgumentError("node ids must be 0 .. N-1");
  return c;
}

absl::StatusOr<std::optional<std::pair<uint32_t, pb::ClientReply>>> ClusterClient::Receive(
    std::chrono::milliseconds timeout) {
  using Out = std::optional<std::pair<uint32_t, pb::ClientReply>>;
  const uint32_t n = num_nodes();
  for (uint32_t k = 0; k < n; ++k) {  // stashed replies first
    const uint32_t i = (next_ + k) % n;
    if (nodes_[i]->has_stashed()) {
      auto r = nodes_[i]->Receive(std::chrono::milliseconds(0));
      if (!r.ok()) return r.status();
      return Out(std::make_pair(i, std::move(**r)));
    }
  }
  std::vector<zmq::pollitem_t> items(n);
  for (uint32_t i = 0; i < n; ++i) items[i] = {nodes_[i]->socket_handle(), 0, ZMQ_POLLIN, 0};
  try {
    if (zmq::poll(items, timeout) == 0) return Out();
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(e.what());
  }
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = (next_ + k) % n;
    if ((items[i].revents & ZMQ_POLLIN) == 0) continue;
    next_ = (i + 1) % n;
    auto r = nodes_[i]->Receive(std::chrono::milliseconds(0));
    if (!r.ok()) return r.status();
    if (!r->has_value()) continue;
    return Out(std::make_pair(i, std::move(**r)));
  }
  return Out();
}

absl::StatusOr<std::vector<pb::NodeInfo>> ClusterClient::InfoAll(std::chrono::milliseconds timeout) {
  std::vector<pb::NodeInfo> out;
  for (auto& n : nodes_) {
    auto info = n->Info(timeout);
    if (!info.ok()) return info.status();
    out.push_back(*info);
  }
  return out;
}

absl::Status ClusterClient::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  absl::Status last = absl::DeadlineExceededError("no node answered");
  while (Clock::now() < deadline) {
    bool all = true;
    for (uint32_t i = 0; i < num_nodes() && all; ++i) {
      auto info = nodes_[i]->Info(std::chrono::milliseconds(500));
      if (!info.ok()) {
        last = absl::UnavailableError(absl::StrCat("node ", i, " (", nodes_[i]->endpoint(), ") does not answer"));
        all = false;
      } else if (!info->ready()) {
        last = absl::UnavailableError(absl::StrCat("node ", i, " is not ready (waiting for its peers)"));
        all = false;
      }
    }
    if (all) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat("cluster not ready: ", last.message()));
}

absl::StatusOr<std::vector<pb::TxnResult>> Client::Outcomes(const std::vector<pb::Txn>& txns,
                                                            std::chrono::milliseconds timeout) {
  pb::ClientRequest req;
  req.set_outcome_only(true);
  for (const pb::Txn& t : txns) {
    pb::Txn* q = req.add_txns();
    q->set_client_id(t.client_id());
    q->set_client_seq(t.client_seq());
  }
  auto r = Call(std::move(req), timeout);
  if (!r.ok()) return r.status();
  return std::vector<pb::TxnResult>(r->results().begin(), r->results().end());
}

absl::StatusOr<pb::TxnResult> Client::Run(const pb::Txn& txn, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto mine = [&](const pb::TxnResult& r) {
    return r.client_id() == txn.client_id() && r.client_seq() == txn.client_seq();
  };
  // A final answer: the txn ran (OK or aborted) or was refused for good.
  auto final = [](const pb::TxnResult& r) {
    return r.status() == pb::STATUS_OK || r.status() == pb::STATUS_ABORTED ||
           (r.status() == pb::STATUS_INVALID_ARGUMENT && r.error().find("duplicate") == std::string::npos);
  };
  std::deque<pb::ClientReply> others;
  absl::StatusOr<pb::TxnResult> out = absl::DeadlineExceededError(
      absl::StrCat(endpoint_, ": no outcome for client ", txn.client_id(), " seq ", txn.client_seq()));
  bool send = true;
  while (Clock::now() < deadline) {
    if (send) {
      (void)SubmitTxns({txn});  // a lost send is found by the outcome query below
      send = false;
    }
    // Wait a while for the result.
    const auto wait_until = std::min(deadline, Clock::now() + std::chrono::milliseconds(500));
    bool answered = false, resend = false;
    while (!answered && Clock::now() < wait_until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - Clock::now());
      zmq::message_t frame;
      try {
        zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, std::max(left, std::chrono::milliseconds(1))) == 0) continue;
        if (!socket_.recv(frame, zmq::recv_flags::dontwait)) continue;
      } catch (const zmq::error_t& e) {
        break;
      }
      pb::ClientReply r;
      if (!r.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) continue;
      NoteEpochs(r);
      pb::ClientReply rest = r;
      rest.clear_results();
      for (const pb::TxnResult& res : r.results()) {
        if (!mine(res)) {
          *rest.add_results() = res;
          continue;
        }
        if (final(res)) {
          out = res;
          answered = true;
        } else if (res.status() == pb::STATUS_UNAVAILABLE) {
          resend = true;  // refused before sequencing (overload, recovery): the same seq again
        }
      }
      if (rest.results_size() > 0 || r.results_size() == 0) others.push_back(std::move(rest));
      if (resend) break;
    }
    if (answered) break;
    if (resend) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      send = true;
      continue;
    }
    // No result: ask whether the node has it.
    auto o = Outcomes({txn}, std::chrono::milliseconds(500));
    if (!o.ok() || o->size() != 1) continue;  // the node is down: ask again
    const pb::TxnResult& res = (*o)[0];
    if (final(res)) {
      out = res;
      break;
    }
    send = res.status() == pb::STATUS_NOT_FOUND;
  }
  for (auto& r : others) stash_.push_back(std::move(r));
  return out;
}

uint64_t ClusterClient::seen_epoch() const {
  uint64_t e = 0;
  for (const auto& n : nodes_) e = std::max(e, n->seen_epoch());
  return e;
}

}  // namespace detdb
