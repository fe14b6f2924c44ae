// ZmqPeerNet (zmq_peer_net.h): the handshake and the incarnations. Our
// Hello and a peer's (its settings, clock, log, checkpoints, whether it
// runs or rejoins), the handshake's waits and agreements (resume epoch,
// common checkpoint), a running cluster seen from a restarted node, and a
// peer's new incarnation. Split from zmq_peer_net.cc (the sockets, the
// frames, their checks).
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "deploy/zmq_peer_net.h"
#include "glog/logging.h"

namespace detdb {

pb::PeerMessage ZmqPeerNet::MakeHello() {
  pb::PeerMessage m;
  pb::Hello* h = m.mutable_hello();
  std::lock_guard<std::mutex> l(hello_mu_);
  h->set_boot_us(boot_us_[options_.node_id]);
  h->set_epoch_us(options_.epoch_us);
  h->set_recovered_epoch(recovered_epoch_);
  h->set_has_log(has_log_);
  for (uint64_t e : checkpoint_epochs_) h->add_checkpoint_epochs(e);
  h->set_log_starts_later(!log_from_start_);
  for (const auto& [name, value] : options_.settings) (*h->mutable_settings())[name] = value;
  if (const std::optional<ClusterClock>& clock = running_.has_value() ? running_ : rejoining_; clock.has_value()) {
    h->set_running(running_.has_value());
    h->set_rejoining(!running_.has_value());
    h->set_start_us(clock->start_us);
    h->set_clock_origin_epoch(clock->origin_epoch);
  }
  return m;
}

void ZmqPeerNet::SetRunning(const ClusterClock& clock) {
  std::lock_guard<std::mutex> l(hello_mu_);
  running_ = clock;
  rejoining_.reset();
}

void ZmqPeerNet::SetRejoining(const ClusterClock& clock) {
  std::lock_guard<std::mutex> l(hello_mu_);
  rejoining_ = clock;
}

absl::StatusOr<std::optional<ClusterClock>> ZmqPeerNet::running_cluster() {
  std::lock_guard<std::mutex> l(hello_mu_);
  std::string running, rejoining, starting;  // node lists, "1, 2"
  std::optional<ClusterClock> clock;
  uint32_t clock_node = 0;  // the lowest running node: whose clock we take
  for (uint32_t n = 0; n < num_nodes_; ++n) {
    if (n == options_.node_id) continue;
    std::string* list = running_of_[n] ? &running : rejoining_of_[n] ? &rejoining : &starting;
    absl::StrAppend(list, list->empty() ? "" : ", ", n);
    if (!running_of_[n]) continue;
    if (!clock.has_value()) {
      clock = clock_of_[n];
      clock_node = n;
    } else if (clock_of_[n].start_us != clock->start_us || clock_of_[n].origin_epoch != clock->origin_epoch) {
      // Every running node took one clock (the agreed start, or the one it
      // rejoined on): two clocks are a bug or a forgery, and a rejoin on
      // either could sequence where the other nodes refuse (review 2
      // finding 2).
      const std::string error = absl::StrCat(
          "node ", n, " runs on another cluster clock (start ", clock_of_[n].start_us, " us, origin epoch ",
          clock_of_[n].origin_epoch, ") than node ", clock_node, " (start ", clock->start_us, " us, origin epoch ",
          clock->origin_epoch, "): node ", options_.node_id, " cannot rejoin on either (a bug or a forged Hello); "
          "restart every node");
      LOG(ERROR) << error;
      return absl::FailedPreconditionError(error);
    }
  }
  if (!rejoining.empty())
    return absl::FailedPreconditionError(absl::StrCat(
        rejoining.find(',') == std::string::npos ? "node " : "nodes ", rejoining,
        rejoining.find(',') == std::string::npos ? " is" : " are", " still rejoining as node ", options_.node_id,
        " starts (a rejoin takes one restarted node at a time); restart every node"));
  if (running.empty()) return std::optional<ClusterClock>();
  if (!starting.empty())
    return absl::FailedPreconditionError(absl::StrCat(
        "node(s) ", running, " run while node(s) ", starting, " start as this node ", options_.node_id,
        " does: a rejoin takes one restarted node at a time; restart every node"));
  LOG(INFO) << "node(s) " << running << " run on the cluster clock of start " << clock->start_us
            << " us, origin epoch " << clock->origin_epoch << " (as node " << clock_node << "'s Hello says)";
  return clock;
}

void ZmqPeerNet::OnPeerIncarnation(uint32_t node, uint64_t incarnation, bool answer) {
  Peer* peer = node < peers_.size() ? peers_[node].get() : nullptr;
  if (peer == nullptr) return;
  pb::PeerMessage hello;
  if (answer) hello = MakeHello();  // before p->mu: MakeHello takes hello_mu_
  std::lock_guard<std::mutex> l(peer->mu);
  peer->to_incarnation = incarnation;
  std::vector<pb::PeerMessage> waiting;  // frames sent before we heard it (SendLocked)
  waiting.swap(peer->waiting);
  if (peer->push == nullptr) return;
  if (answer) {
    // Our Hello first, so that it hears us (and whether we run) before
    // anything else, numbered from 1: every frame we sent it before was
    // for another incarnation of it, except our first Hello, which this
    // one repeats (Handle takes a repeated Hello without counting it).
    peer->next_seq = 1;
    peer->stamped = 0;
    peer->checkpoint_stamped = 0;
    SendLocked(node, peer, &hello);
  }
  for (pb::PeerMessage& m : waiting) SendLocked(node, peer, &m);  // in order, after our Hellos
}

absl::StatusOr<uint64_t> ZmqPeerNet::Handshake(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(hello_mu_);
  const bool all = hello_cv_.wait_for(l, timeout, [&] {
    return hello_cancelled_ || !hello_error_.empty() || std::all_of(boot_us_.begin(), boot_us_.end(), [](uint64_t b) { return b != 0; });
  });
  if (hello_cancelled_) return absl::CancelledError("handshake cancelled");
  if (!hello_error_.empty()) return absl::FailedPreconditionError(hello_error_);
  if (!all) {
    std::string missing;
    for (uint32_t n = 0; n < num_nodes_; ++n)
      if (boot_us_[n] == 0) absl::StrAppend(&missing, missing.empty() ? "" : ", ", n);
    return absl::DeadlineExceededError(absl::StrCat("no hello yet from node(s) ", missing));
  }
  const uint64_t last = *std::max_element(boot_us_.begin(), boot_us_.end());
  return last + static_cast<uint64_t>(options_.start_margin.count()) * 1000;
}

absl::StatusOr<uint64_t> ZmqPeerNet::resume_epoch() {
  std::lock_guard<std::mutex> l(hello_mu_);
  const uint32_t self = options_.node_id;
  for (uint32_t n = 0; n < num_nodes_; ++n) {
    if (boot_us_[n] == 0)
      return absl::FailedPreconditionError(
          absl::StrCat("node ", self, ": no Hello from node ", n, " yet: cannot agree on the resume epoch"));
    if (!has_log_of_[n])
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", n, " runs without an input log (--data_dir) while node ", self,
          " logs (epochs 1..", recovered_[self], "): refusing to start rather than truncate the log; give every node "
          "--data_dir"));
  }
  const uint64_t resume = *std::min_element(recovered_.begin(), recovered_.end());
  if (resume == 0 && recovered_[self] > 0) {
    const uint32_t empty =
        static_cast<uint32_t>(std::min_element(recovered_.begin(), recovered_.end()) - recovered_.begin());
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", empty, " reports an empty input log while node ", self, " holds epochs 1..", recovered_[self],
        ": refusing to start rather than delete this log (a lost or wrong --data_dir on node ", empty,
        " would drop acknowledged txns); restore its log, or remove every node's log to start afresh"));
  }
  return resume;
}

absl::StatusOr<uint64_t> ZmqPeerNet::checkpoint_epoch(uint64_t resume) {
  std::lock_guard<std::mutex> l(hello_mu_);
  // The newest epoch <= resume in every node's list.
  for (uint64_t e : checkpoints_of_[options_.node_id]) {
    if (e > resume) continue;
    bool everywhere = true;
    for (const auto& list : checkpoints_of_)
      everywhere = everywhere && std::find(list.begin(), list.end(), e) != list.end();
    if (everywhere) return e;
  }
  std::string later;
  for (uint32_t n = 0; n < num_nodes_; ++n)
    if (!from_start_of_[n]) absl::StrAppend(&later, later.empty() ? "" : ", ", n);
  if (!later.empty())
    return absl::FailedPreconditionError(absl::StrCat(
        "no checkpoint epoch at or before ", resume, " is held by every node, and the input log of node(s) ", later,
        " no longer starts at epoch 1: the nodes cannot replay the same epochs; restore a common checkpoint"));
  return 0;
}

void ZmqPeerNet::CancelHandshake() {
  std::lock_guard<std::mutex> l(hello_mu_);
  hello_cancelled_ = true;
  hello_cv_.notify_all();
}

void ZmqPeerNet::TakeHello(const pb::PeerMessage& m, bool heard, bool restarted) {
  const uint32_t from = m.from_node();
  if (restarted) {
    restarts_.fetch_add(1, std::memory_order_relaxed);
    LOG(WARNING) << "node " << from << " restarted (incarnation " << m.incarnation()
                 << "): taking its frames from 1 again and answering its hello (it rejoins if we run)";
  }
  // Answered: a restarted peer, and a peer that has not heard us when it
  // said hello (to_incarnation 0). Our Hello may have gone to its earlier
  // process only (which consumed it and died, or never ran); without an
  // answer it would never hear us and time out in its handshake (review 2
  // finding 7). At a cluster start both nodes answer each other once.
  if (heard) OnPeerIncarnation(from, m.incarnation(), restarted || m.to_incarnation() == 0);
  std::lock_guard<std::mutex> l(hello_mu_);
  if (m.hello().epoch_us() != options_.epoch_us)
    hello_error_ = absl::StrCat("node ", m.from_node(), " runs with epoch_us ", m.hello().epoch_us(), ", we with ",
                                options_.epoch_us);
  else if (std::string diff = SettingsDiffer(m.from_node(), m.hello()); !diff.empty())
    hello_error_ = diff;
  else if (const int64_t skew = static_cast<int64_t>(m.hello().boot_us() - WallClockMicros());
           skew > kMaxClockSkewUs)
    // A boot time far in the future would hold every sequencer back (an
    // old one is normal: the peer may have waited for us a long time).
    hello_error_ = absl::StrCat("node ", m.from_node(), "'s clock is ", skew / 1000000,
                                " s ahead of ours: synchronise the clocks (NTP)");
  else if (const int64_t ahead = static_cast<int64_t>(m.hello().start_us() - WallClockMicros());
           (m.hello().running() || m.hello().rejoining()) && ahead > kMaxClockSkewUs) {
    // A cluster that runs started in the past: a start ahead of our clock
    // by more than the skew would have a rejoining node wait for epochs
    // nobody sequences, and bound the peers' batches by nothing (review 2
    // finding 2).
    hello_error_ = absl::StrCat("node ", m.from_node(), m.hello().running() ? " runs" : " rejoins",
                                " on a cluster clock that starts ", ahead / 1000000, " s ahead of ours (start ",
                                m.hello().start_us(), " us): a bug, a forged Hello, or clocks out of sync (NTP); "
                                "restart every node");
    LOG(ERROR) << hello_error_;
  }
  else if (heard) {  // the first Hello of this incarnation
    boot_us_[m.from_node()] = std::max<uint64_t>(1, m.hello().boot_us());
    recovered_[m.from_node()] = m.hello().recovered_epoch();
    has_log_of_[m.from_node()] = m.hello().has_log();
    checkpoints_of_[m.from_node()].assign(m.hello().checkpoint_epochs().begin(),
                                          m.hello().checkpoint_epochs().end());
    from_start_of_[m.from_node()] = !m.hello().log_starts_later();
    running_of_[m.from_node()] = m.hello().running();
    rejoining_of_[m.from_node()] = m.hello().rejoining();
    clock_of_[m.from_node()] = ClusterClock{m.hello().start_us(), m.hello().clock_origin_epoch()};
  } else if (m.incarnation() != 0) {
    // Its answer to our Hello, whose first Hello we had heard already (a
    // later Hello of a known incarnation names ours: Handle drops others).
    VLOG(1) << "node " << m.from_node() << " answered our hello; heard it already";
  } else {
    LOG(WARNING) << "node " << m.from_node() << " said hello without an incarnation (a binary before peer "
                 << "protocol 3?); ignored";
  }
  hello_cv_.notify_all();
}

std::string ZmqPeerNet::SettingsDiffer(uint32_t from, const pb::Hello& hello) const {
  std::string out;  // every difference, "; "-separated
  auto add = [&](const std::string& d) { absl::StrAppend(&out, out.empty() ? "" : "; ", d); };
  for (const auto& [name, ours] : options_.settings) {
    auto it = hello.settings().find(name);
    if (it == hello.settings().end())
      add(absl::StrCat("node ", from, " runs without ", name, ", we with ", name, " ", ours));
    else if (it->second != ours)
      add(absl::StrCat("node ", from, " runs with ", name, " ", it->second, ", we with ", ours));
  }
  for (const auto& [name, theirs] : hello.settings())
    if (!options_.settings.contains(name))
      add(absl::StrCat("node ", from, " runs with ", name, " ", theirs, ", we without"));
  if (!out.empty()) absl::StrAppend(&out, " (every node must load the same data and check txns alike)");
  return out;
}

uint32_t ZmqPeerNet::peers_heard() {
  std::lock_guard<std::mutex> l(hello_mu_);
  uint32_t n = 0;
  for (uint32_t i = 0; i < boot_us_.size(); ++i) n += i != options_.node_id && boot_us_[i] != 0;
  return n;
}

namespace {
constexpr char kIncarnationFile[] = "incarnation";
}  // namespace

absl::StatusOr<uint64_t> LoadIncarnation(FileSystem* fs, const std::string& dir) {
  const std::string path = JoinPath(dir, kIncarnationFile);
  auto exists = fs->FileExists(path);
  if (!exists.ok()) return exists.status();
  if (!*exists) return 0;
  auto text = fs->ReadFile(path, 64);
  if (!text.ok()) return text.status();
  uint64_t incarnation = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &incarnation))
    return absl::DataLossError(absl::StrCat(path, " does not hold an incarnation (a number): \"", *text,
                                            "\"; remove it to start anew from the clock"));
  return incarnation;
}

absl::Status SaveIncarnation(FileSystem* fs, const std::string& dir, uint64_t incarnation) {
  const std::string path = JoinPath(dir, kIncarnationFile);
  const std::string tmp = path + ".tmp";
  auto stale = fs->FileExists(tmp);
  if (!stale.ok()) return stale.status();
  if (*stale)
    if (absl::Status s = fs->Remove(tmp); !s.ok()) return s;  // of a crash during an earlier save
  auto f = fs->NewAppendableFile(tmp);
  if (!f.ok()) return f.status();
  absl::Status s = (*f)->Append(absl::StrCat(incarnation, "\n"));
  if (s.ok()) s = (*f)->Sync();
  if (absl::Status c = (*f)->Close(); s.ok()) s = c;
  if (s.ok()) s = fs->Rename(tmp, path);
  if (s.ok()) s = fs->SyncDir(dir);
  return s;
}

}  // namespace detdb
