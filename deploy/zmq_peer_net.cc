#include "deploy/zmq_peer_net.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/thread_name.h"
#include "client/cluster_config.h"
#include "glog/logging.h"
#include "scheduler/remote_reads_guard.h"

namespace detdb {

uint64_t WallClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {
std::string Endpoint(const pb::NodeConfig& n, uint32_t port) { return absl::StrCat("tcp://", n.host(), ":", port); }

// This process's incarnations: its start time in microseconds, increasing
// (two in one process, as in tests, differ), above `floor` (the node's
// last persisted one).
uint64_t NextIncarnation(uint64_t floor) {
  static std::atomic<uint64_t> last{0};
  uint64_t prev = last.load();
  uint64_t next;
  do {
    next = std::max({WallClockMicros(), prev + 1, floor + 1});
  } while (!last.compare_exchange_weak(prev, next));
  return next;
}

// The settings the handshake compares: the caller's and the peer protocol's version.
ZmqPeerNetOptions WithProtocolVersion(ZmqPeerNetOptions o) {
  o.settings["protocol_version"] = absl::StrCat(kPeerProtocolVersion);
  return o;
}
}  // namespace

ZmqPeerNet::ZmqPeerNet(const ZmqPeerNetOptions& options)
    : options_(WithProtocolVersion(options)),
      config_hash_(ClusterConfigHash(options.config)),
      incarnation_(NextIncarnation(options.min_incarnation)) {}

absl::StatusOr<std::unique_ptr<ZmqPeerNet>> ZmqPeerNet::Create(const ZmqPeerNetOptions& options) {
  absl::Status valid = ValidateClusterConfig(options.config);
  if (!valid.ok()) return valid;
  const pb::NodeConfig* self = nullptr;
  uint32_t max_id = 0;
  for (const auto& n : options.config.nodes()) {
    max_id = std::max(max_id, n.id());
    if (n.id() == options.node_id) self = &n;
  }
  if (self == nullptr) return absl::InvalidArgumentError(absl::StrCat("node ", options.node_id, " is not in the config"));
  if (max_id + 1 != static_cast<uint32_t>(options.config.nodes_size()))
    return absl::InvalidArgumentError("cluster mode needs node ids 0 .. N-1");
  std::unique_ptr<ZmqPeerNet> net(new ZmqPeerNet(options));
  net->num_nodes_ = max_id + 1;
  net->node_of_.resize(options.config.num_partitions());
  for (const auto& n : options.config.nodes())
    for (uint32_t p : n.partitions()) net->node_of_[p] = n.id();
  net->receivers_.assign(options.config.num_partitions(), nullptr);
  net->boot_us_.assign(net->num_nodes_, 0);
  net->recovered_.assign(net->num_nodes_, 0);
  net->has_log_of_.assign(net->num_nodes_, false);
  net->checkpoints_of_.assign(net->num_nodes_, {});
  net->from_start_of_.assign(net->num_nodes_, true);
  net->peer_durable_.assign(net->num_nodes_, 0);
  net->peer_checkpoint_.assign(net->num_nodes_, 0);
  net->expected_seq_.assign(net->num_nodes_, 1);
  net->incarnation_of_.assign(net->num_nodes_, 0);
  net->running_of_.assign(net->num_nodes_, false);
  net->rejoining_of_.assign(net->num_nodes_, false);
  net->clock_of_.assign(net->num_nodes_, ClusterClock{});
  try {
    net->pull_ = std::make_unique<zmq::socket_t>(net->ctx_, zmq::socket_type::pull);
    net->pull_->set(zmq::sockopt::rcvhwm, 0);
    net->pull_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options.max_frame_bytes));
    net->pull_->set(zmq::sockopt::linger, 0);
    if (options.curve.has_value()) {  // the ZAP handler before any bind
      // Only the config's nodes, each connection tagged with its node id.
      CurveServerOptions co = *options.curve;
      co.allowed.clear();
      co.user_ids.clear();
      for (const auto& n : options.config.nodes()) {
        co.allowed.insert(n.curve_public_key());
        co.user_ids[n.curve_public_key()] = absl::StrCat(n.id());
      }
      auto auth = CurveAuth::Create(&net->ctx_, net->pull_.get(), co);
      if (!auth.ok()) return auth.status();
      net->auth_ = std::move(*auth);
    }
    net->pull_->bind(Endpoint(*self, self->peer_port()));
    net->peers_.resize(net->num_nodes_);
    for (const auto& n : options.config.nodes()) {
      if (n.id() == options.node_id) continue;
      auto peer = std::make_unique<Peer>();
      peer->push = std::make_unique<zmq::socket_t>(net->ctx_, zmq::socket_type::push);
      peer->push->set(zmq::sockopt::sndhwm, 0);  // never block a sender
      peer->push->set(zmq::sockopt::linger, 0);
      peer->push->set(zmq::sockopt::reconnect_ivl, 50);
      peer->push->set(zmq::sockopt::reconnect_ivl_max, 200);
      if (options.curve.has_value())
        ApplyCurveClient(CurveClientKeys{options.curve->server, n.curve_public_key()}, peer->push.get());
      peer->push->connect(Endpoint(n, n.peer_port()));
      net->peers_[n.id()] = std::move(peer);
    }
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat("peer port ", Endpoint(*self, self->peer_port()), ": ", e.what()));
  }
  return net;
}

ZmqPeerNet::~ZmqPeerNet() { Stop(); }

void ZmqPeerNet::RegisterReceiver(PartitionId partition, RemoteReadsReceiver* receiver) {
  CHECK_EQ(node_of_.at(partition), options_.node_id) << "partition " << partition << " is not local";
  receivers_[partition] = receiver;
}

void ZmqPeerNet::Start() {
  CHECK(handler_ != nullptr) << "SetHandler before Start";
  CHECK(!thread_.joinable());
  {
    std::lock_guard<std::mutex> l(hello_mu_);
    boot_us_[options_.node_id] = WallClockMicros();
    recovered_[options_.node_id] = recovered_epoch_;
    has_log_of_[options_.node_id] = has_log_;
    checkpoints_of_[options_.node_id] = checkpoint_epochs_;
    from_start_of_[options_.node_id] = log_from_start_;
  }
  thread_ = std::thread([this] {
    SetThreadName("detdb-net");
    ReceiveLoop();
  });
  for (uint32_t n = 0; n < num_nodes_; ++n) {
    if (n == options_.node_id) continue;
    pb::PeerMessage m = MakeHello();
    SendTo(n, &m);
  }
}

void ZmqPeerNet::Stop() {
  CancelHandshake();
  if (thread_.joinable()) SendDurableStamps(/*force=*/true);  // the final stamp: peers release held replies
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  for (auto& p : peers_) {
    if (p == nullptr) continue;
    std::lock_guard<std::mutex> l(p->mu);
    p->push.reset();
  }
  pull_.reset();
  if (auth_ != nullptr) auth_->Stop();  // after the socket it guards is closed
}

ZmqPeerNetStats ZmqPeerNet::stats() const {
  ZmqPeerNetStats s;
  s.received = received_.load(std::memory_order_relaxed);
  s.good = good_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  for (int r = 0; r < kPeerDropReasons; ++r) s.by_reason[r] = drops_[r].load(std::memory_order_relaxed);
  s.sender_mismatch = s.by_reason[static_cast<int>(PeerDrop::kSenderMismatch)];
  s.sent = sent_.load(std::memory_order_relaxed);
  s.send_failed = send_failed_.load(std::memory_order_relaxed);
  s.lost = lost_.load(std::memory_order_relaxed);
  s.forged_reads = s.by_reason[static_cast<int>(PeerDrop::kForgedReads)];
  s.stale = s.by_reason[static_cast<int>(PeerDrop::kStale)];
  s.restarts = restarts_.load(std::memory_order_relaxed);
  return s;
}

void ZmqPeerNet::SendTo(uint32_t node, pb::PeerMessage* msg) {
  Peer* peer = node < peers_.size() ? peers_[node].get() : nullptr;
  if (peer == nullptr) {
    LOG_EVERY_N(ERROR, 100) << "no peer socket to node " << node << "; message dropped";
    send_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::lock_guard<std::mutex> l(peer->mu);
  if (peer->push == nullptr) return;  // stopped
  SendLocked(node, peer, msg);
}

void ZmqPeerNet::SendLocked(uint32_t node, Peer* peer, pb::PeerMessage* msg) {
  if (peer->to_incarnation == 0 && !msg->has_hello()) {
    // We have not heard the peer's Hello: a frame sent now would carry
    // to_incarnation 0, which the peer drops as stale (only a Hello may),
    // yet it would take a sequence number, and the peer would count a gap
    // at our next frame once it heard us (unless our answer renumbered
    // them). Not sending it without a number instead would lose it
    // silently (a batch nobody resends: PeerOutbox and PeerRetention resend
    // only at a peer's rejoin). So it waits, unnumbered, and leaves in
    // order, numbered and for the peer's incarnation, right after its
    // first Hello reached us (OnPeerIncarnation). It is rare: the engine
    // sends only after the handshake heard every peer, and durable stamps
    // skip a peer not heard (our Hello carries them).
    LOG_FIRST_N(WARNING, 5) << "node " << options_.node_id << ": a frame for node " << node
                            << " waits for its Hello (not heard yet); " << peer->waiting.size() + 1 << " waiting";
    peer->waiting.push_back(std::move(*msg));
    return;
  }
  msg->set_config_hash(config_hash_);
  msg->set_from_node(options_.node_id);
  msg->set_incarnation(incarnation_);
  msg->set_to_incarnation(peer->to_incarnation);
  // The checkpoint epoch first: a checkpoint is published only once its
  // epoch is durable, so the durable epoch read after it is never below it.
  msg->set_checkpoint_epoch(checkpoint_epoch_.load(std::memory_order_acquire));
  msg->set_durable_epoch(durable_epoch_.load(std::memory_order_relaxed));
  msg->set_seq(peer->next_seq++);
  peer->stamped = std::max(peer->stamped, msg->durable_epoch());
  peer->checkpoint_stamped = std::max(peer->checkpoint_stamped, msg->checkpoint_epoch());
  peer->last_send = std::chrono::steady_clock::now();
  const size_t size = msg->ByteSizeLong();
  zmq::message_t frame(size);
  msg->SerializeWithCachedSizesToArray(static_cast<uint8_t*>(frame.data()));
  try {
    if (!peer->push->send(frame, zmq::send_flags::dontwait)) {
      send_failed_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(ERROR, 1000) << "peer " << node << " send queue full; frame dropped";
      return;
    }
  } catch (const zmq::error_t& e) {
    LOG_EVERY_N(ERROR, 1000) << "send to node " << node << ": " << e.what();
    send_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  sent_.fetch_add(1, std::memory_order_relaxed);
}

void ZmqPeerNet::Send(PartitionId to, pb::RemoteReads msg) {
  CHECK_LT(to, node_of_.size()) << "remote reads for partition " << to;  // callers pass checked txns
  const uint32_t node = node_of_[to];
  if (node == options_.node_id) {
    receivers_[to]->OnRemoteReads(std::move(msg));
    return;
  }
  pb::PeerMessage m;
  m.set_to_partition(to);
  *m.mutable_remote_reads() = std::move(msg);
  SendTo(node, &m);
}

void ZmqPeerNet::SendBatch(uint32_t node, const pb::Batch& batch) {
  CHECK_NE(node, options_.node_id);
  pb::PeerMessage m;
  *m.mutable_batch() = batch;
  SendTo(node, &m);
}

void ZmqPeerNet::SendResult(uint32_t node, const pb::TxnResult& result) {
  CHECK_NE(node, options_.node_id);
  pb::PeerMessage m;
  *m.mutable_result() = result;
  SendTo(node, &m);
}

void ZmqPeerNet::SendRejoinRequest(uint32_t node, const pb::RejoinRequest& request) {
  CHECK_NE(node, options_.node_id);
  pb::PeerMessage m;
  *m.mutable_rejoin_request() = request;
  SendTo(node, &m);
}

void ZmqPeerNet::SendRejoinReply(uint32_t node, const pb::RejoinReply& reply) {
  CHECK_NE(node, options_.node_id);
  pb::PeerMessage m;
  *m.mutable_rejoin_reply() = reply;
  SendTo(node, &m);
}

void ZmqPeerNet::ReceiveLoop() {
  zmq::message_t frame;
  while (!stop_.load(std::memory_order_acquire)) {
    zmq::pollitem_t item{pull_->handle(), 0, ZMQ_POLLIN, 0};
    try {
      zmq::poll(&item, 1, std::chrono::milliseconds(10));
      SendDurableStamps(/*force=*/false);
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      while (pull_->recv(frame, zmq::recv_flags::dontwait)) {
        if (frame.more()) {  // peers send single frames: drop the rest of a multipart message
          received_.fetch_add(1, std::memory_order_relaxed);
          Drop(PeerDrop::kMalformed, frame.size(), "a peer frame is a single part");
          while (frame.more() && pull_->recv(frame, zmq::recv_flags::dontwait)) {
          }
          continue;
        }
        std::optional<uint32_t> authenticated;
        if (auth_ != nullptr) {
          // The node id CurveAuth gave the connection's key (ZAP User-Id).
          const char* user_id = zmq_msg_gets(frame.handle(), "User-Id");
          uint32_t node = kUnknownNode;
          if (user_id == nullptr || !absl::SimpleAtoi(user_id, &node) || node >= num_nodes_) node = kUnknownNode;
          authenticated = node;
        }
        Handle(frame, authenticated);
        if (stop_.load(std::memory_order_acquire)) break;
      }
    } catch (const zmq::error_t& e) {
      LOG(ERROR) << "peer socket: " << e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

const char* PeerDropName(PeerDrop reason) {
  switch (reason) {
    case PeerDrop::kMalformed: return "malformed";
    case PeerDrop::kConfigHash: return "config_hash";
    case PeerDrop::kUnknownSender: return "unknown_sender";
    case PeerDrop::kSenderMismatch: return "sender_mismatch";
    case PeerDrop::kStale: return "stale_frame";
    case PeerDrop::kOtherSequencer: return "other_sequencer";
    case PeerDrop::kNotHere: return "partition_not_here";
    case PeerDrop::kForgedReads: return "forged_reads";
    case PeerDrop::kCount: break;
  }
  return "unknown";
}

void ZmqPeerNet::Drop(PeerDrop reason, size_t bytes, const std::string& why) {
  drops_[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
  dropped_.fetch_add(1, std::memory_order_relaxed);
  LOG_EVERY_N(ERROR, 100) << "dropping peer frame (" << bytes << " bytes, " << PeerDropName(reason) << "): " << why;
}

void ZmqPeerNet::Handle(const zmq::message_t& frame, std::optional<uint32_t> authenticated) {
  received_.fetch_add(1, std::memory_order_relaxed);
  auto drop = [&](PeerDrop reason, const std::string& why) { Drop(reason, frame.size(), why); };
  if (frame.size() > options_.max_frame_bytes) return drop(PeerDrop::kMalformed, "too large");
  pb::PeerMessage m;
  if (!m.ParseFromArray(frame.data(), static_cast<int>(frame.size())))
    return drop(PeerDrop::kMalformed, "does not parse");
  if (m.config_hash() != config_hash_)
    return drop(PeerDrop::kConfigHash, absl::StrCat("node ", m.from_node(), " runs with another cluster config (hash ",
                                                    m.config_hash(), ", ours ", config_hash_, ")"));
  if (m.from_node() >= num_nodes_ || m.from_node() == options_.node_id)
    return drop(PeerDrop::kUnknownSender, "unknown sender");
  // With CURVE, from_node is tied to the key: a node may speak only for
  // itself (its frame sequence, its batches, reads and results). Checked
  // before the incarnations below: a forged Hello must not reset the
  // sequence of the node it claims to be.
  if (authenticated.has_value() && *authenticated != m.from_node()) {
    drops_[static_cast<int>(PeerDrop::kSenderMismatch)].fetch_add(1, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_T(ERROR, 1) << "refusing a peer frame that claims node " << m.from_node() << " but came over "
                          << (*authenticated == kUnknownNode ? std::string("a connection of no node's key")
                                                             : absl::StrCat("node ", *authenticated, "'s CURVE key"))
                          << " (a forgery: node keys must stay secret)";
    return;
  }
  const uint32_t from = m.from_node();
  // Frames of another process than the one at either end: normal around a
  // restart (queued while a node was down, in flight when it died), so
  // counted as stale but logged at INFO only.
  auto stale = [&](const std::string& why) {
    drops_[static_cast<int>(PeerDrop::kStale)].fetch_add(1, std::memory_order_relaxed);
    dropped_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(INFO, 1000) << "dropping a stale peer frame: " << why;
  };
  if (m.to_incarnation() != incarnation_ && !(m.has_hello() && m.to_incarnation() == 0))
    return stale(absl::StrCat("frame from node ", from, " for incarnation ", m.to_incarnation(),
                              " of this node, which is at ", incarnation_, " (queued before this process started)"));
  // A Hello that has not heard us (to_incarnation 0) is legitimate only as
  // the first Hello of its sender's incarnation (a process that starts or
  // restarts): a process says hello once before it hears us (Start), and
  // every later Hello of it (its answers, OnPeerIncarnation) names our
  // incarnation. One of an incarnation heard already is a replay or a bug:
  // dropped, it neither moves the sender's sequence nor passes for an
  // answer (a follow-up of review 2 finding 7). Incarnation 0 is none (a
  // binary before protocol 3): never heard, it goes on to TakeHello, whose
  // settings check names the protocol version.
  if (m.has_hello() && m.to_incarnation() != incarnation_ && incarnation_of_[from] != 0 &&
      m.incarnation() == incarnation_of_[from])
    return drop(PeerDrop::kStale, absl::StrCat("a repeated Hello from node ", from, "'s incarnation ", m.incarnation(),
                                               " says it has not heard this node (to_incarnation 0), but its first "
                                               "Hello was taken already: a replay or a bug"));
  bool heard = false, restarted = false;  // a Hello of a new incarnation of the sender
  if (m.incarnation() != incarnation_of_[from]) {
    if (m.has_hello() && m.incarnation() < incarnation_of_[from]) {
      // Not normal: a restarted node whose clock stepped back (incarnations
      // are start times) would never be heard (review finding 12).
      LOG_EVERY_T(WARNING, 10) << "a Hello of node " << from << "'s incarnation " << m.incarnation()
                               << ", older than its incarnation " << incarnation_of_[from]
                               << " heard before: dropped (did its clock step back? restart it later)";
    }
    if (!m.has_hello() || m.incarnation() < incarnation_of_[from])
      return stale(absl::StrCat("frame of incarnation ", m.incarnation(), " of node ", from, ", which is at ",
                                incarnation_of_[from], " (an earlier process's, or one before its Hello)"));
    heard = true;
    restarted = incarnation_of_[from] != 0;
    incarnation_of_[from] = m.incarnation();
    expected_seq_[from] = 1;  // its frames are numbered from 1 again
  }
  uint64_t& expected = expected_seq_[m.from_node()];
  // A Hello again in the sender's incarnation (naming ours, checked
  // above): its answer to our first Hello, numbered 1 again
  // (OnPeerIncarnation), which crossed its own first Hello. Taken
  // (TakeHello ignores it) without moving the expectation: it carries
  // nothing new, and the sender's next frame is 2.
  const bool hello_again = m.has_hello() && !heard && m.seq() < expected;
  if (m.seq() < expected && !hello_again) {
    // A resent or replayed frame: dropped, and the expectation stays
    // (moving it back would take every later copy again).
    return drop(PeerDrop::kStale, absl::StrCat("frame ", m.seq(), " from node ", m.from_node(),
                                               " is below the expected ", expected, " (resent or replayed)"));
  }
  if (m.seq() > expected) {
    lost_.fetch_add(m.seq() - expected, std::memory_order_relaxed);
    LOG(ERROR) << "lost " << m.seq() - expected << " frame(s) from node " << m.from_node()
               << " (a connection broke with frames in flight): this node cannot go on past the gap; "
                  "restart the cluster";
  }
  if (!hello_again) expected = m.seq() + 1;
  if (m.durable_epoch() > peer_durable_[m.from_node()]) {
    peer_durable_[m.from_node()] = m.durable_epoch();
    handler_->OnPeerDurable(m.from_node(), m.durable_epoch());
  }
  if (m.checkpoint_epoch() > peer_checkpoint_[m.from_node()]) {
    peer_checkpoint_[m.from_node()] = m.checkpoint_epoch();
    handler_->OnPeerCheckpoint(m.from_node(), m.checkpoint_epoch());
  }
  switch (m.body_case()) {
    case pb::PeerMessage::kHello:
      TakeHello(m, heard, restarted);
      good_.fetch_add(1, std::memory_order_relaxed);
      return;
    case pb::PeerMessage::kBatch:
      if (m.batch().sequencer_id() != m.from_node())
        return drop(PeerDrop::kOtherSequencer, "batch of another sequencer");
      good_.fetch_add(1, std::memory_order_relaxed);
      handler_->OnPeerBatch(std::make_shared<pb::Batch>(std::move(*m.mutable_batch())));
      return;
    case pb::PeerMessage::kRemoteReads: {
      const uint32_t to = m.to_partition();
      if (to >= receivers_.size() || receivers_[to] == nullptr)
        return drop(PeerDrop::kNotHere, "remote reads for a partition not here");
      if (absl::Status s = CheckReadsSender(m.remote_reads(), m.from_node(), *this, num_partitions()); !s.ok()) {
        return drop(PeerDrop::kForgedReads, std::string(s.message()));
      }
      good_.fetch_add(1, std::memory_order_relaxed);
      receivers_[to]->OnRemoteReads(std::move(*m.mutable_remote_reads()));
      return;
    }
    case pb::PeerMessage::kResult:
      good_.fetch_add(1, std::memory_order_relaxed);
      handler_->OnPeerResult(m.from_node(), m.result());
      return;
    case pb::PeerMessage::kRejoinRequest:
      good_.fetch_add(1, std::memory_order_relaxed);
      handler_->OnRejoinRequest(from, m.rejoin_request());
      return;
    case pb::PeerMessage::kRejoinReply:
      good_.fetch_add(1, std::memory_order_relaxed);
      handler_->OnRejoinReply(from, m.rejoin_reply());
      return;
    case pb::PeerMessage::BODY_NOT_SET:
      good_.fetch_add(1, std::memory_order_relaxed);
      return;  // a durable (and checkpoint) stamp alone (handled above)
    default:
      return drop(PeerDrop::kMalformed, "unknown message");
  }
}

void ZmqPeerNet::SendDurableStamps(bool force) {
  const uint64_t checkpoint = checkpoint_epoch_.load(std::memory_order_acquire);
  const uint64_t durable = durable_epoch_.load(std::memory_order_relaxed);
  if (durable == 0 && checkpoint == 0) return;
  const auto now = std::chrono::steady_clock::now();
  for (uint32_t n = 0; n < num_nodes_; ++n) {
    if (n == options_.node_id || n >= peers_.size() || peers_[n] == nullptr) continue;
    {
      Peer& p = *peers_[n];
      std::lock_guard<std::mutex> l(p.mu);
      // Not to a peer not heard yet (it would wait, SendLocked): our Hello
      // carries the stamps, and the next one leaves once it is heard.
      if (p.push == nullptr || p.to_incarnation == 0 ||
          (p.stamped >= durable && p.checkpoint_stamped >= checkpoint))
        continue;
      if (!force && now - p.last_send < std::chrono::microseconds(options_.epoch_us)) continue;
    }
    pb::PeerMessage m;
    SendTo(n, &m);
  }
}

}  // namespace detdb
