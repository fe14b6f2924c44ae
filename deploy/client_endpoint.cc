#include "deploy/client_endpoint.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/thread_name.h"
#include "glog/logging.h"

namespace detdb {
namespace {

pb::StatusCode ToCode(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return pb::STATUS_OK;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kAlreadyExists:
      return pb::STATUS_INVALID_ARGUMENT;
    case absl::StatusCode::kFailedPrecondition:
      return pb::STATUS_INVALID_ARGUMENT;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
      return pb::STATUS_UNAVAILABLE;
    default:
      return pb::STATUS_INTERNAL;
  }
}

void FillError(const pb::Txn& t, const absl::Status& s, pb::TxnResult* r) {
  r->set_client_id(t.client_id());
  r->set_client_seq(t.client_seq());
  r->set_status(ToCode(s));
  r->set_error(std::string(s.message()));
}

}  // namespace

ClientEndpoint::ClientEndpoint(const ClientEndpointOptions& options) : options_(options) {}

absl::StatusOr<std::unique_ptr<ClientEndpoint>> ClientEndpoint::Create(const ClientEndpointOptions& options) {
  std::unique_ptr<ClientEndpoint> e(new ClientEndpoint(options));
  try {
    e->router_ = std::make_unique<zmq::socket_t>(e->ctx_, zmq::socket_type::router);
    e->router_->set(zmq::sockopt::linger, 0);
    e->router_->set(zmq::sockopt::sndhwm, 100000);
    e->router_->set(zmq::sockopt::rcvhwm, 100000);
    // Hard cap: ZeroMQ disconnects a client that sends more (4x the limit,
    // so that frames just above the limit still get a clear error).
    e->router_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(4 * options.max_request_bytes));
    if (options.curve.has_value()) {  // the ZAP handler before any bind
      auto auth = CurveAuth::Create(&e->ctx_, e->router_.get(), *options.curve);
      if (!auth.ok()) return auth.status();
      e->auth_ = std::move(*auth);
    }
    e->router_->bind(options.bind);
  } catch (const zmq::error_t& err) {
    return absl::UnavailableError(absl::StrCat("client port ", options.bind, ": ", err.what()));
  }
  e->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e->wake_fd_ < 0) return absl::InternalError("eventfd failed");
  return e;
}

ClientEndpoint::~ClientEndpoint() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void ClientEndpoint::Start(Engine* engine, std::function<pb::NodeInfo()> info,
                           std::function<void(pb::ClientReply*)> check) {
  CHECK(!thread_.joinable());
  engine_ = engine;
  info_ = std::move(info);
  check_ = std::move(check);
  thread_ = std::thread([this] {
    SetThreadName("detdb-clients");
    Loop();
  });
  admin_thread_ = std::thread([this] {
    SetThreadName("detdb-admin");
    AdminLoop(false);
  });
  checkpoint_thread_ = std::thread([this] {
    SetThreadName("detdb-ckpt");
    AdminLoop(true);
  });
}

void ClientEndpoint::Stop() {
  stop_.store(true, std::memory_order_release);
  Wake();
  if (thread_.joinable()) thread_.join();
  admin_cancel_.store(true);
  {
    std::lock_guard<std::mutex> l(admin_mu_);
    admin_stop_ = true;
  }
  admin_cv_.notify_all();
  if (admin_thread_.joinable()) admin_thread_.join();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  router_.reset();
  if (auth_ != nullptr) auth_->Stop();
}

ClientEndpointStats ClientEndpoint::stats() const {
  ClientEndpointStats s;
  s.requests = requests_.load();
  s.good = good_frames_.load();
  s.bad_frames = bad_frames_.load();
  s.duplicates = duplicates_.load();
  s.refused = refused_.load();
  s.lost_replies = lost_replies_.load();
  return s;
}

void ClientEndpoint::Wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void ClientEndpoint::Remember(const pb::TxnResult& r) {
  std::lock_guard<std::mutex> l(outcomes_mu_);
  RememberLocked(&outcomes_[r.client_id()], r);
}

void ClientEndpoint::RememberLocked(Outcomes* o, const pb::TxnResult& r) {
  o->max_seq = std::max(o->max_seq, r.client_seq());
  // A (client, seq) has one result: one the checkpoint restored comes
  // again from the replay of the epochs after it; keep the first.
  if (o->by_seq.contains(r.client_seq())) return;
  o->by_seq[r.client_seq()] = o->dropped + o->recent.size();
  o->recent.push_back(r);
  while (o->recent.size() > options_.outcomes_per_client) {
    auto it = o->by_seq.find(o->recent.front().client_seq());
    if (it != o->by_seq.end() && it->second == o->dropped) o->by_seq.erase(it);
    o->recent.pop_front();
    ++o->dropped;
  }
}

absl::StatusOr<std::string> ClientEndpoint::SaveOutcomes() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> l(outcomes_mu_);
    ids.reserve(outcomes_.size());
    for (const auto& [id, o] : outcomes_) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  pb::EndpointState state;
  for (uint64_t id : ids) {
    pb::EndpointClientState* c = state.add_clients();
    c->set_client_id(id);
    std::lock_guard<std::mutex> l(outcomes_mu_);  // one client at a time: OnResult waits briefly
    auto it = outcomes_.find(id);
    if (it == outcomes_.end()) continue;
    c->set_max_seq(it->second.max_seq);
    c->mutable_recent()->Reserve(static_cast<int>(it->second.recent.size()));
    for (const pb::TxnResult& r : it->second.recent) *c->add_recent() = r;
  }
  std::string out;
  if (state.ByteSizeLong() > (1ull << 31) - 1 || !state.SerializeToString(&out))
    return absl::ResourceExhaustedError(
        absl::StrCat("the exactly-once table of ", ids.size(), " clients does not serialize (over 2 GiB)"));
  return out;
}

absl::Status ClientEndpoint::RestoreOutcomes(std::string_view bytes) {
  if (bytes.empty()) return absl::OkStatus();
  pb::EndpointState state;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return absl::InvalidArgumentError(
        absl::StrCat(bytes.size(), " bytes do not parse as an exactly-once table (detdb.pb.EndpointState)"));
  for (const pb::EndpointClientState& c : state.clients()) {
    if (c.client_id() == 0) return absl::InvalidArgumentError("exactly-once table: client id 0");
    for (const pb::TxnResult& r : c.recent())
      if (r.client_id() != c.client_id() || r.client_seq() > c.max_seq())
        return absl::InvalidArgumentError(absl::StrCat("exactly-once table: client ", c.client_id(),
                                                       " holds a result of client ", r.client_id(), " seq ",
                                                       r.client_seq(), " (max seq ", c.max_seq(), ")"));
  }
  size_t results = 0;
  std::lock_guard<std::mutex> l(outcomes_mu_);
  for (const pb::EndpointClientState& c : state.clients()) {
    Outcomes& o = outcomes_[c.client_id()];
    o.max_seq = std::max(o.max_seq, c.max_seq());
    for (const pb::TxnResult& r : c.recent()) RememberLocked(&o, r);
    results += c.recent_size();
  }
  LOG(INFO) << "restored the exactly-once table of " << state.clients_size() << " client(s), " << results
            << " result(s)";
  return absl::OkStatus();
}

bool ClientEndpoint::Recall(uint64_t client, uint64_t seq, pb::TxnResult* out, uint64_t* max_seq) {
  std::lock_guard<std::mutex> l(outcomes_mu_);
  auto it = outcomes_.find(client);
  *max_seq = it == outcomes_.end() ? 0 : it->second.max_seq;
  if (it == outcomes_.end()) return false;
  auto s = it->second.by_seq.find(seq);
  if (s == it->second.by_seq.end()) return false;
  *out = it->second.recent[s->second - it->second.dropped];
  return true;
}

void ClientEndpoint::OnResult(pb::TxnResult&& result) {
  Remember(result);
  // Before the engine takes txns it only replays its log: those results
  // rebuild the table above; nobody waits for them.
  if (engine_ != nullptr && engine_->replaying()) return;
  bool wake;
  {
    std::lock_guard<std::mutex> l(out_mu_);
    // Wake the endpoint for the first result (it then waits up to
    // reply_batch_us for more) and again when a batch is full.
    wake = (results_.empty() && replies_.empty()) || results_.size() + 1 == kReplyBatch;
    if (results_.empty()) first_result_ = std::chrono::steady_clock::now();
    results_.push_back(std::move(result));
  }
  if (wake) Wake();
}

void ClientEndpoint::Loop() {
  zmq::message_t identity, payload;
  while (!stop_.load(std::memory_order_acquire)) {
    zmq::pollitem_t items[2] = {{router_->handle(), 0, ZMQ_POLLIN, 0}, {nullptr, wake_fd_, ZMQ_POLLIN, 0}};
    try {
      // Results wait up to reply_batch_us for company: fewer, larger frames.
      auto timeout = std::chrono::milliseconds(100);
      {
        std::lock_guard<std::mutex> l(out_mu_);
        if (!replies_.empty() || results_.size() >= kReplyBatch) {
          timeout = std::chrono::milliseconds(0);
        } else if (!results_.empty()) {
          const auto due = first_result_ + options_.reply_batch;
          const auto now = std::chrono::steady_clock::now();
          timeout = due <= now ? std::chrono::milliseconds(0)
                               : std::max(std::chrono::milliseconds(1),
                                          std::chrono::ceil<std::chrono::milliseconds>(due - now));
        }
      }
      zmq::poll(items, 2, timeout);
      if (items[1].revents & ZMQ_POLLIN) {
        uint64_t n;
        (void)!read(wake_fd_, &n, sizeof(n));
      }
      FlushIfDue();
      if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
      // A bounded number of requests per round, so results keep flowing.
      for (int i = 0; i < 256 && router_->recv(identity, zmq::recv_flags::dontwait); ++i) {
        const std::string id(static_cast<const char*>(identity.data()), identity.size());
        if (!identity.more()) {  // cannot happen on a ROUTER; be safe
          bad_frames_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        (void)router_->recv(payload, zmq::recv_flags::none);
        if (payload.more()) {  // more than one payload frame: drain and refuse
          while (payload.more()) (void)router_->recv(payload, zmq::recv_flags::none);
          BadFrame(id, "a request is a single frame (use a DEALER socket)");
          continue;
        }
        HandleFrame(id, payload);
      }
      FlushIfDue();
    } catch (const zmq::error_t& e) {
      LOG(ERROR) << "client socket: " << e.what();
    }
  }
  try {
    Flush();  // the last replies
  } catch (const zmq::error_t& e) {
    LOG(ERROR) << "client socket: " << e.what();
  }
}

void ClientEndpoint::BadFrame(const std::string& identity, const std::string& why) {
  bad_frames_.fetch_add(1, std::memory_order_relaxed);
  LOG_EVERY_N(WARNING, 100) << "bad client frame: " << why;
  pb::ClientReply r;
  r.set_status(pb::STATUS_INVALID_ARGUMENT);
  r.set_error(why);
  Reply(identity, r);
}

absl::Status ClientEndpoint::DecodeRequest(std::string_view payload, size_t max_bytes, pb::ClientRequest* request) {
  if (payload.size() > max_bytes || payload.size() > static_cast<size_t>(INT32_MAX))
    return absl::InvalidArgumentError(
        absl::StrCat("request of ", payload.size(), " bytes exceeds the limit of ", max_bytes));
  if (!request->ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    return absl::InvalidArgumentError("request does not parse as detdb.pb.ClientRequest");
  return absl::OkStatus();
}

void ClientEndpoint::HandleFrame(const std::string& identity, const zmq::message_t& payload) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  pb::ClientRequest req;
  if (absl::Status s = DecodeRequest(std::string_view(static_cast<const char*>(payload.data()), payload.size()),
                                     options_.max_request_bytes, &req);
      !s.ok())
    return BadFrame(identity, std::string(s.message()));
  good_frames_.fetch_add(1, std::memory_order_relaxed);
  if (req.txns_size() > 0 && req.outcome_only()) {
    HandleOutcomes(identity, req);
  } else if (req.txns_size() > 0) {
    HandleTxns(identity, &req);
  }
  if (req.info()) {
    pb::ClientReply r;
    r.set_request_id(req.request_id());
    *r.mutable_info() = info_();
    r.mutable_info()->set_bad_frames(bad_frames_.load());
    r.mutable_info()->set_duplicates(duplicates_.load());
    r.mutable_info()->set_lost_replies(lost_replies_.load());
    Reply(identity, r);
  }
  if (req.history()) {
    pb::ClientReply r;
    r.set_request_id(req.request_id());
    for (const auto& b : engine_->history()) *r.add_history() = *b;
    if (r.history_size() == 0 && engine_->stats().epochs > 0) {
      r.set_status(pb::STATUS_INVALID_ARGUMENT);
      r.set_error("this node keeps no history (start it with --record_history)");
    }
    Reply(identity, r);
  }
  if (req.check() && !check_) {
    pb::ClientReply r;
    r.set_request_id(req.request_id());
    r.set_status(pb::STATUS_INVALID_ARGUMENT);
    r.set_error("this node's workload has no consistency checker");
    Reply(identity, r);
  }
  const bool scan = !req.scan_table().empty();
  if (req.digest() || (req.check() && check_) || req.checkpoint() || scan) {
    // Waiting for the schedulers may take a while: not on this thread.
    bool queued = false;
    {
      std::lock_guard<std::mutex> l(admin_mu_);
      if (digests_.size() + checkpoints_.size() < kMaxQueuedDigests) {
        if (req.digest()) digests_.push_back({identity, req.request_id(), req.digest_epoch(), false});
        if (req.check()) digests_.push_back({identity, req.request_id(), req.check_epoch(), true});
        if (req.checkpoint())
          checkpoints_.push_back({identity, req.request_id(), req.checkpoint_epoch(), false, /*checkpoint=*/true});
        if (scan)
          digests_.push_back({identity, req.request_id(), req.scan_from(), false, false, /*scan=*/true,
                              req.scan_table(), std::min(req.scan_limit(), kMaxScanRows), req.scan_after_epoch()});
        queued = true;
      }
    }
    if (queued) {
      admin_cv_.notify_all();
    } else {
      pb::ClientReply r;
      r.set_request_id(req.request_id());
      r.set_status(pb::STATUS_UNAVAILABLE);
      r.set_error("too many digest requests queued");
      Reply(identity, r);
    }
  }
}

void ClientEndpoint::AdminLoop(bool checkpoints) {
  for (;;) {
    DigestRequest d;
    {
      std::unique_lock<std::mutex> l(admin_mu_);
      std::deque<DigestRequest>& queue = checkpoints ? checkpoints_ : digests_;
      admin_cv_.wait(l, [&] { return admin_stop_ || !queue.empty(); });
      if (admin_stop_) return;
      d = std::move(queue.front());
      queue.pop_front();
    }
    Outgoing out;
    out.identity = d.identity;
    out.reply.set_request_id(d.request_id);
    absl::Status s;
    if (d.scan) {
      // Under S intent locks while txns run: no epoch boundary to wait for
      // (but the txns of the epochs the client has seen results of).
      auto scanned = engine_->ScanTable(d.table, d.min_epoch, d.limit, options_.digest_timeout, d.after_epoch);
      s = scanned.status();
      if (scanned.ok()) {
        pb::ScanReply* sr = out.reply.mutable_scan();
        sr->set_table(scanned->table);
        sr->set_name(scanned->name);
        sr->set_value_size(scanned->value_size);
        sr->set_more(scanned->more);
        size_t bytes = 0;
        for (Engine::ScanRow& row : scanned->rows) {
          if (bytes + row.value.size() > kMaxScanBytes && sr->rows_size() > 0) {
            sr->set_more(true);
            break;
          }
          bytes += row.value.size();
          pb::ScanRow* r = sr->add_rows();
          r->set_partition(row.partition);
          r->set_key(row.key);
          r->set_value(std::move(row.value));
        }
      }
    } else if (d.checkpoint) {
      auto c = engine_->Checkpoint(d.min_epoch, options_.digest_timeout, &admin_cancel_);
      s = c.status();
      if (c.ok()) {
        pb::CheckpointInfo* ci = out.reply.mutable_checkpoint();
        ci->set_epoch(c->epoch);
        ci->set_bytes(c->bytes);
        ci->set_path(c->path);
        ci->set_pause_ms(c->pause_ms);
        ci->set_fork_ms(c->fork_ms);
        ci->set_lock_ms(c->lock_ms);
        ci->set_write_ms(c->write_ms);
        ci->set_total_ms(c->total_ms);
      }
    } else if (d.check) {
      s = engine_->AtEpochBoundary(d.min_epoch, options_.digest_timeout, &admin_cancel_,
                                   [&] { check_(&out.reply); });
      if (s.ok()) s = engine_->WaitDurable(d.min_epoch, options_.digest_timeout);  // like any reply
    } else {
      auto digests = engine_->SnapshotDigests(d.min_epoch, options_.digest_timeout, &admin_cancel_);
      s = digests.status();
      if (digests.ok()) {
        out.reply.set_digest_epoch(d.min_epoch);
        for (auto [p, digest] : *digests) {
          pb::PartitionDigest* pd = out.reply.add_digests();
          pd->set_partition(p);
          pd->set_digest(digest);
        }
      }
    }
    if (!s.ok()) {
      // A scan of an unknown table is NOT_FOUND (ToCode keeps that code for
      // the outcomes of txns).
      out.reply.set_status(d.scan && absl::IsNotFound(s) ? pb::STATUS_NOT_FOUND : ToCode(s));
      out.reply.set_error(std::string(s.message()));
    }
    {
      std::lock_guard<std::mutex> l(out_mu_);
      replies_.push_back(std::move(out));
    }
    Wake();
  }
}

void ClientEndpoint::HandleTxns(const std::string& identity, pb::ClientRequest* req) {
  pb::ClientReply errors;
  std::vector<pb::Txn> accepted;
  accepted.reserve(req->txns_size());
  struct Undo {
    uint64_t client;
    ClientState old;
  };
  std::vector<Undo> undo;
  for (pb::Txn& t : *req->mutable_txns()) {
    absl::Status s;
    if (t.client_id() == 0) s = absl::InvalidArgumentError("client_id must be nonzero");
    // A retry of a request that has a result: its original result, not a
    // second run.
    pb::TxnResult known;
    uint64_t max_result_seq = 0;
    if (s.ok() && Recall(t.client_id(), t.client_seq(), &known, &max_result_seq)) {
      duplicates_.fetch_add(1, std::memory_order_relaxed);
      *errors.add_results() = std::move(known);
      if (auto c = clients_.find(t.client_id()); c != clients_.end()) c->second.identity = identity;
      continue;
    }
    auto it = clients_.find(t.client_id());
    if (s.ok() && it == clients_.end() && clients_.size() >= options_.max_clients) {
      EvictIdleClients();
      if (clients_.size() >= options_.max_clients) s = absl::UnavailableError("too many client ids");
    }
    const uint64_t last = std::max(it != clients_.end() && it->second.seen ? it->second.last_seq : 0, max_result_seq);
    if (s.ok() && (max_result_seq > 0 || (it != clients_.end() && it->second.seen)) && t.client_seq() <= last) {
      s = absl::AlreadyExistsError(absl::StrCat("duplicate or out-of-order request: client ", t.client_id(), " seq ",
                                                t.client_seq(), " (last accepted ", last,
                                                "): still running or its outcome is no longer kept"));
      duplicates_.fetch_add(1, std::memory_order_relaxed);
    }
    if (s.ok()) s = engine_->Check(t);
    if (!s.ok()) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      FillError(t, s, errors.add_results());
      continue;
    }
    if (it == clients_.end()) it = clients_.emplace(t.client_id(), ClientState{}).first;
    undo.push_back({t.client_id(), it->second});
    it->second.identity = identity;
    it->second.last_seq = t.client_seq();
    it->second.seen = true;
    it->second.last_used = std::chrono::steady_clock::now();
    accepted.push_back(std::move(t));
  }
  if (!accepted.empty()) {
    // Before the submit, which takes the txns: their arrival, for the latency.
    const auto now = std::chrono::steady_clock::now();
    for (const pb::Txn& t : accepted) arrived_[{t.client_id(), t.client_seq()}] = Arrival{now, t.type()};
    absl::Status s = engine_->SubmitChecked(&accepted);
    if (!s.ok()) {  // nothing of it was sequenced: the client may retry the same seqs
      for (auto u = undo.rbegin(); u != undo.rend(); ++u) clients_[u->client] = u->old;
      refused_.fetch_add(accepted.size(), std::memory_order_relaxed);
      for (const pb::Txn& t : accepted) {
        arrived_.erase({t.client_id(), t.client_seq()});
        FillError(t, s, errors.add_results());
      }
    }
  }
  if (errors.results_size() > 0) Reply(identity, errors);
}

void ClientEndpoint::HandleOutcomes(const std::string& identity, const pb::ClientRequest& req) {
  pb::ClientReply reply;
  reply.set_request_id(req.request_id());
  const bool ready = engine_->started();
  for (const pb::Txn& t : req.txns()) {
    pb::TxnResult r;
    uint64_t max_result_seq = 0;
    if (Recall(t.client_id(), t.client_seq(), &r, &max_result_seq)) {
      *reply.add_results() = std::move(r);
      continue;
    }
    r.set_client_id(t.client_id());
    r.set_client_seq(t.client_seq());
    auto it = clients_.find(t.client_id());
    const uint64_t accepted = it != clients_.end() && it->second.seen ? it->second.last_seq : 0;
    if (!ready) {
      r.set_status(pb::STATUS_UNAVAILABLE);
      r.set_error("node not ready (recovering): ask again");
    } else if (t.client_seq() <= std::max(accepted, max_result_seq)) {
      r.set_status(pb::STATUS_UNAVAILABLE);
      r.set_error("accepted and still running, or its outcome is no longer kept: ask again");
    } else {
      r.set_status(pb::STATUS_NOT_FOUND);
      r.set_error("this node never accepted the request (or lost it before it was durable): resubmit it");
    }
    *reply.add_results() = std::move(r);
  }
  Reply(identity, reply);
}

void ClientEndpoint::EvictIdleClients() {
  // Forgetting a client id also forgets its last seq: a duplicate sent after
  // options_.client_idle of silence is not caught. Results still in flight
  // for it are lost.
  const auto cutoff = std::chrono::steady_clock::now() - options_.client_idle;
  absl::erase_if(clients_, [&](const auto& kv) { return kv.second.last_used < cutoff; });
}

void ClientEndpoint::Reply(const std::string& identity, const pb::ClientReply& reply) {
  const size_t size = reply.ByteSizeLong();
  try {
    zmq::message_t id(identity.data(), identity.size()), body(size);
    reply.SerializeWithCachedSizesToArray(static_cast<uint8_t*>(body.data()));
    if (!router_->send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait) ||
        !router_->send(body, zmq::send_flags::dontwait))
      lost_replies_.fetch_add(1, std::memory_order_relaxed);
  } catch (const zmq::error_t& e) {
    lost_replies_.fetch_add(1, std::memory_order_relaxed);  // e.g. the client went away
  }
}

void ClientEndpoint::FlushIfDue() {
  {
    std::lock_guard<std::mutex> l(out_mu_);
    if (replies_.empty() && (results_.empty() || (results_.size() < kReplyBatch &&
                                                  std::chrono::steady_clock::now() < first_result_ + options_.reply_batch)))
      return;
  }
  Flush();
}

void ClientEndpoint::Flush() {
  std::vector<pb::TxnResult> results;
  std::vector<Outgoing> replies;
  {
    std::lock_guard<std::mutex> l(out_mu_);
    results.swap(results_);
    replies.swap(replies_);
  }
  for (const Outgoing& o : replies) Reply(o.identity, o.reply);
  if (results.empty()) return;
  // One reply frame per connection.
  absl::flat_hash_map<std::string, pb::ClientReply> by_conn;
  const auto now = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> by_type(by_type_mu_);  // once per frame, not per txn
  for (pb::TxnResult& r : results) {
    if (auto a = arrived_.find({r.client_id(), r.client_seq()}); a != arrived_.end()) {
      latency_.Observe(std::chrono::duration<double>(now - a->second.at).count());
      ProcedureOutcomes& o = by_type_[a->second.type];
      ++(r.status() == pb::STATUS_OK ? o.committed : r.status() == pb::STATUS_ABORTED ? o.aborted : o.failed);
      arrived_.erase(a);
    }
    auto it = clients_.find(r.client_id());
    if (it == clients_.end()) {
      lost_replies_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    *by_conn[it->second.identity].add_results() = std::move(r);
  }
  by_type.unlock();
  for (const auto& [identity, reply] : by_conn) Reply(identity, reply);
}

}  // namespace detdb
