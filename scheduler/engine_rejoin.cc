// Engine: a node rejoining a cluster that kept running (Rejoin) and the
// peers' side of it (OnRejoinRequest). docs/DURABILITY.md "Rejoining a
// running cluster" gives the design; engine.h documents the class.
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "scheduler/engine.h"
#include "scheduler/rejoin_plan.h"

namespace detdb {

namespace {
using Clock = std::chrono::steady_clock;
// An unanswered request is sent again after this long (the peer answers
// every copy alike).
constexpr auto kAskAgain = std::chrono::seconds(5);
// The merge stood still this long during the catch-up: the reads and
// results from the merged epoch on are asked for again (one refused as
// early or over the held-reads budget is still kept by its sender).
constexpr auto kNoProgress = std::chrono::seconds(3);
// A peer answered reads and results only up to its durable epoch, which is
// still below what we asked for: asked again after this long.
constexpr auto kAskLagging = std::chrono::milliseconds(20);

// How often a catch-up's progress is sampled (OldestAwaitingReads walks).
constexpr auto kProgressSample = std::chrono::milliseconds(100);

// A catch-up's progress, sampled: a counter that moves (epochs merged,
// txns answered), and the oldest txn waiting for remote reads. A sample
// moved if the counter or the oldest waiting txn changed, unless that txn
// is the one of the last sample: a txn waiting all along is no progress,
// however far the merge runs on through empty epochs (review 2 finding 1).
class ProgressWatch {
 public:
  explicit ProgressWatch(Clock::time_point now) : moved_at_(now), sampled_at_(now) {}
  // Takes a sample unless the last one is younger than kProgressSample.
  void Sample(Clock::time_point now, const std::function<uint64_t()>& counter,
              const std::function<TxnId()>& oldest_waiting) {
    if (now - sampled_at_ < kProgressSample) return;
    sampled_at_ = now;
    const uint64_t c = counter();
    const TxnId oldest = oldest_waiting();
    if ((c != counter_ || oldest != oldest_) && !(oldest != 0 && oldest == oldest_)) moved_at_ = now;
    counter_ = c;
    oldest_ = oldest;
  }
  Clock::duration still(Clock::time_point now) const { return now - moved_at_; }
  void Moved(Clock::time_point now) { moved_at_ = now; }
  TxnId oldest_waiting() const { return oldest_; }

 private:
  Clock::time_point moved_at_, sampled_at_;
  uint64_t counter_ = 0;
  TxnId oldest_ = 0;
};

const char* KindName(pb::RejoinRequest::Kind k) {
  switch (k) {
    case pb::RejoinRequest::STATE:
      return "state";
    case pb::RejoinRequest::BATCHES:
      return "batches";
    case pb::RejoinRequest::MESSAGES:
      return "messages";
    default:
      return "unknown";
  }
}
}  // namespace

// ---- The peers' side.

void Engine::OnRejoinRequest(uint32_t node, const pb::RejoinRequest& req) {
  PeerLink* peers = options_.peers;
  if (peers == nullptr || node >= peers->num_nodes() || node == peers->node_id()) return;
  rejoin_requests_.fetch_add(1, std::memory_order_relaxed);
  const uint32_t self = peers->node_id();
  pb::RejoinReply reply;
  reply.set_id(req.id());
  reply.set_kind(req.kind());
  if (retention_ == nullptr) {
    reply.set_error(absl::StrCat("node ", self,
                                 options_.log.dir.empty() ? " runs without an input log"
                                                          : " runs with rejoin off (--rejoin_retention_mb=0)",
                                 " and keeps nothing for a rejoin; restart every node"));
    peers->SendRejoinReply(node, reply);
    return;
  }
  switch (req.kind()) {
    case pb::RejoinRequest::STATE: {
      // A page: one frame must stay below the link's limit (review finding 7).
      bool more = false;
      for (const auto& b : retention_->ReceivedAfter(node, req.own_floor(), req.max_bytes(), &more))
        *reply.add_received() = *b;
      reply.set_more(more);
      uint64_t next;
      {
        std::lock_guard<std::mutex> l(window_mu_);
        next = window_->frontier(node);
      }
      // Our log holds every epoch we replayed: those count as received.
      reply.set_next_expected(std::max(next, replay_floor_.load(std::memory_order_acquire) + 1));
      reply.set_requester_durable(retention_->durable(node));
      LOG(INFO) << "node " << node << " rejoins: it may lack its batches after epoch " << req.own_floor()
                << "; we hold " << reply.received_size() << (more ? " (and more)" : "")
                << " of them and all before epoch " << reply.next_expected();
      break;
    }
    case pb::RejoinRequest::BATCHES: {
      if (req.after_epoch() < retention_->durable(node)) {
        reply.set_error(absl::StrCat("node ", self, " keeps its batches for node ", node, " after epoch ",
                                     retention_->durable(node), " only (node ", node, " reported that one durable), ",
                                     "node ", node, " asks from epoch ", req.after_epoch() + 1));
        break;
      }
      const auto batches = retention_->SentAfter(node, req.after_epoch());
      for (const auto& b : batches) peers->SendBatch(node, *b);
      LOG(INFO) << "node " << node << " rejoins: resent our " << batches.size() << " batch(es) after epoch "
                << req.after_epoch();
      break;
    }
    case pb::RejoinRequest::MESSAGES: {
      const uint64_t kept = retention_->kept_from(node);
      reply.set_kept_from(kept);
      if (req.from_epoch() < kept) {
        reply.set_error(absl::StrCat(
            "node ", self, " keeps the remote reads and results it sent to node ", node, " from epoch ", kept,
            " on only (older ones are covered by the checkpoint every node holds, or were dropped beyond "
            "rejoin_retention_bytes), but node ", node, " replays from epoch ", req.from_epoch(),
            ": it restarted from an older checkpoint; restart every node"));
        break;
      }
      // Only epochs durable here: the outbox holds the later ones and sends
      // them once durable, to the node's current incarnation (resending
      // them would hold a copy more on every request, review finding 3).
      PeerRetention::Messages m = retention_->MessagesFrom(node, req.from_epoch(),
                                                           std::max<uint64_t>(1, req.max_bytes()), outbox_->durable() + 1);
      // Through the outbox, under the same rule.
      for (auto& [to, r] : m.reads) outbox_->Resend(to, std::move(r));
      for (const pb::TxnResult& r : m.results) outbox_->ResendResult(node, r);
      reply.set_through_epoch(m.through);
      reply.set_done(m.done);
      VLOG(1) << "node " << node << " rejoins: resent " << m.reads.size() << " remote reads and " << m.results.size()
              << " results of epochs " << req.from_epoch() << ".." << m.through - 1;
      break;
    }
    default:
      reply.set_error(absl::StrCat("unknown rejoin request kind ", static_cast<int>(req.kind())));
  }
  peers->SendRejoinReply(node, reply);
}

void Engine::OnRejoinReply(uint32_t node, const pb::RejoinReply& reply) {
  std::lock_guard<std::mutex> l(rejoin_mu_);
  auto it = rejoin_calls_.find(reply.id());
  // Not asked (or not of that node), or answered already (a resent request).
  if (it == rejoin_calls_.end() || it->second.node != node || it->second.reply.has_value()) return;
  it->second.reply = reply;
  rejoin_cv_.notify_all();
}

// ---- The rejoining node's side.

uint64_t Engine::SendRejoinRequest(uint32_t node, pb::RejoinRequest request) {
  {
    std::lock_guard<std::mutex> l(rejoin_mu_);
    request.set_id(next_rejoin_id_++);
    rejoin_calls_[request.id()] = RejoinCall{node, request, std::nullopt};
  }
  // Without the lock: in one process the answer comes on this thread.
  options_.peers->SendRejoinRequest(node, request);
  return request.id();
}

void Engine::ResendRejoinRequest(uint64_t id) {
  uint32_t node;
  pb::RejoinRequest request;
  {
    std::lock_guard<std::mutex> l(rejoin_mu_);
    auto it = rejoin_calls_.find(id);
    if (it == rejoin_calls_.end() || it->second.reply.has_value()) return;
    node = it->second.node;
    request = it->second.request;
  }
  LOG(WARNING) << "no answer from node " << node << " to our rejoin request (" << KindName(request.kind())
               << ") yet: asking again";
  options_.peers->SendRejoinRequest(node, request);
}

std::optional<pb::RejoinReply> Engine::TakeRejoinReply(uint64_t id) {
  std::lock_guard<std::mutex> l(rejoin_mu_);
  auto it = rejoin_calls_.find(id);
  if (it == rejoin_calls_.end() || !it->second.reply.has_value()) return std::nullopt;
  std::optional<pb::RejoinReply> out = std::move(it->second.reply);
  rejoin_calls_.erase(it);
  return out;
}

void Engine::ForgetRejoinRequest(uint64_t id) {
  std::lock_guard<std::mutex> l(rejoin_mu_);
  rejoin_calls_.erase(id);
}

absl::StatusOr<std::map<uint32_t, pb::RejoinReply>> Engine::AskEveryPeer(const pb::RejoinRequest& request) {
  std::map<uint32_t, pb::RejoinRequest> requests;
  for (uint32_t n = 0; n < options_.peers->num_nodes(); ++n)
    if (n != options_.peers->node_id()) requests[n] = request;
  return AskPeers(requests);
}

absl::StatusOr<std::map<uint32_t, pb::RejoinReply>> Engine::AskPeers(
    const std::map<uint32_t, pb::RejoinRequest>& requests) {
  std::map<uint32_t, uint64_t> asked;  // node -> request id
  std::map<uint32_t, Clock::time_point> asked_at;
  for (const auto& [n, request] : requests) {
    asked[n] = SendRejoinRequest(n, request);
    asked_at[n] = Clock::now();
  }
  std::map<uint32_t, pb::RejoinReply> out;
  auto forget = [&] {
    for (const auto& [n, id] : asked) ForgetRejoinRequest(id);
  };
  const auto t0 = Clock::now();
  while (out.size() < asked.size()) {
    if (StartCancelled()) {
      forget();
      return absl::CancelledError("rejoin cancelled");
    }
    if (Clock::now() - t0 > options_.rejoin_progress_timeout) {
      std::string silent;
      for (const auto& [n, id] : asked)
        if (!out.contains(n)) absl::StrAppend(&silent, silent.empty() ? "" : ", ", n);
      forget();
      return absl::DeadlineExceededError(absl::StrCat(
          "rejoin (", KindName(requests.begin()->second.kind()), "): no answer from node(s) ", silent, " after ",
          options_.rejoin_progress_timeout.count(), " ms (down, or unreachable?); restart every node"));
    }
    for (const auto& [n, id] : asked) {
      if (out.contains(n)) continue;
      if (auto r = TakeRejoinReply(id); r.has_value()) {
        if (!r->error().empty()) {
          forget();
          return absl::FailedPreconditionError(absl::StrCat("rejoin (", KindName(r->kind()), "): node ", n,
                                                            " answers: ", r->error()));
        }
        out.emplace(n, std::move(*r));
      } else if (Clock::now() - asked_at[n] > kAskAgain) {
        ResendRejoinRequest(id);
        asked_at[n] = Clock::now();
      }
    }
    if (out.size() == asked.size()) break;  // in one process the answers came on this thread
    std::unique_lock<std::mutex> l(rejoin_mu_);
    rejoin_cv_.wait_for(l, std::chrono::milliseconds(20));
  }
  return out;
}

absl::Status Engine::CheckOwnPart(pb::Batch* part, uint64_t max_epoch) const {
  const uint32_t self = options_.peers->node_id();
  if (part->sequencer_id() != self)
    return absl::InvalidArgumentError(absl::StrCat("batch of sequencer ", part->sequencer_id()));
  if (part->epoch() == 0 || part->epoch() > max_epoch)
    return absl::InvalidArgumentError(absl::StrCat("batch of epoch ", part->epoch(), " (at most ", max_epoch, ")"));
  if (const uint64_t most = EpochBatcher::kMaxBatchBytes + LargestTxnBytes(); part->ByteSizeLong() > most)
    return absl::InvalidArgumentError(
        absl::StrCat("batch of ", part->ByteSizeLong(), " bytes (at most ", most, " bytes)"));
  return CheckBatchTxns(part, self);
}

absl::Status Engine::AskPeersState(uint64_t own_floor, RejoinPlanInput* pin) {
  pb::RejoinRequest ask;
  ask.set_kind(pb::RejoinRequest::STATE);
  ask.set_own_floor(own_floor);
  ask.set_max_bytes(options_.rejoin_reply_bytes);
  std::map<uint32_t, pb::RejoinRequest> pending;  // by node: its next page
  for (uint32_t n = 0; n < options_.peers->num_nodes(); ++n)
    if (n != options_.peers->node_id()) pending[n] = ask;
  // Every page moves the floor up (checked), and no honest epoch exceeds
  // max_epoch: a bounded loop.
  while (!pending.empty()) {
    auto pages = AskPeers(pending);
    if (!pages.ok()) return pages.status();
    for (const auto& [node, r] : *pages) {
      RejoinPeerState& ps = pin->peers[node];
      uint64_t last = pending[node].own_floor();
      for (const pb::Batch& b : r.received()) {
        auto part = std::make_shared<pb::Batch>(b);
        absl::Status c = CheckOwnPart(part.get(), pin->max_epoch);
        if (c.ok() && part->epoch() <= last)
          c = absl::InvalidArgumentError(absl::StrCat("batch of epoch ", part->epoch(), " after epoch ", last));
        if (!c.ok())
          return absl::FailedPreconditionError(
              absl::StrCat("rejoin: node ", node, " answers with a bad batch of ours: ", c.message()));
        last = part->epoch();
        ps.received.push_back(std::move(part));
      }
      ps.next_expected = r.next_expected();
      ps.durable = r.requester_durable();
      if (!r.more()) {
        pending.erase(node);
      } else if (r.received().empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("rejoin: node ", node, " answers that it holds more of our batches after epoch ", last,
                         " but sends none"));
      } else {
        pending[node].set_own_floor(last);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::Rejoin(const ClusterClock& clock) {
  if (options_.peers == nullptr || stage_ == nullptr)
    return absl::FailedPreconditionError("only a cluster node with an input log can rejoin a running cluster");
  if (started_) return absl::FailedPreconditionError("engine already started");
  if (clock.start_us == 0) return absl::InvalidArgumentError("rejoin without the cluster's clock");
  if (retention_ == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", options_.peers->node_id(), " runs with rejoin off (rejoin_retention_bytes 0, --rejoin_retention_mb=0): "
        "its reads for other nodes did not wait for its log, so it cannot rejoin a running cluster; restart every node"));
  if (absl::Status s = CheckSchemas(); !s.ok()) return s;
  started_ = true;
  // The cluster's clock first: what peers send is bounded by it (finding 1).
  clock_origin_epoch_.store(clock.origin_epoch, std::memory_order_release);
  start_us_.store(clock.start_us, std::memory_order_release);
  absl::Status s = RejoinSteps(clock);
  if (!s.ok()) {
    stopped_ = true;
    accepting_.store(false, std::memory_order_release);
    sequencer_->Stop();
    (void)stage_->Close();  // no writer callbacks into a half-started engine
    for (PartitionId p : local_) schedulers_[p]->Stop();
    return s;
  }
  accepting_.store(true, std::memory_order_release);
  StartReclaimer();
  return absl::OkStatus();
}

absl::Status Engine::RejoinSteps(const ClusterClock& clock) {
  PeerLink* peers = options_.peers;
  const uint32_t self = peers->node_id();
  if (!log_recovered_) {
    auto e = RecoverLog();
    if (!e.ok()) return e.status();
  }
  // The clock came in a peer's Hello (review 2 finding 2): our log holds
  // no epoch beyond the clock of when we logged it plus the window peers'
  // batches are taken in, so a clock behind that is not the cluster's.
  if (const uint64_t now = ClockEpoch(), window = window_->window_epochs(); now + window < log_epoch_)
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", self, ": the running peers' cluster clock (start ", clock.start_us, " us, origin epoch ",
        clock.origin_epoch, ") is at epoch ", now, ", but our input log holds epoch ", log_epoch_, ", more than the ",
        window, "-epoch peer window ahead: a bug, a forged Hello, or a clock stepped back; restart every node"));
  replaying_.store(true, std::memory_order_release);
  struct Done {
    std::atomic<bool>* flag;
    ~Done() { flag->store(false, std::memory_order_release); }
  } done_replaying{&replaying_};
  const auto t0 = Clock::now();
  const uint64_t replied_before = replied_.load();

  // 1. What every peer holds of our batches, and what we sequence again.
  RejoinPlanInput pin;
  pin.self = self;
  pin.num_nodes = peers->num_nodes();
  pin.log_epoch = log_epoch_;
  pin.clock_origin = clock.origin_epoch;
  // What an honest peer can hold of ours: up to the cluster's clock plus
  // the window it takes peer batches in (review finding 3).
  pin.max_epoch = std::min(ClockEpoch() + window_->window_epochs(), EpochBatcher::kMaxEpoch - 1);
  if (absl::Status s = AskPeersState(std::min(log_epoch_, clock.origin_epoch), &pin); !s.ok()) return s;
  auto plan = PlanRejoin(pin);
  if (!plan.ok()) return plan.status();
  for (const auto& b : plan->own)
    if (absl::Status c = CheckBatchTxns(b.get(), self); !c.ok())
      return absl::DataLossError(absl::StrCat("rejoin: our batch of epoch ", b->epoch(), " as the peers hold it: ",
                                              c.message()));

  // 2. Our log up to keep_through, from our newest checkpoint at or before it.
  auto in = LoadAndReplay(plan->keep_through, std::nullopt, /*every_node_holds=*/false);
  if (!in.ok()) return in.status();

  // 3. Our epochs after the log, sequenced again: noted, kept and sent
  // where they are missing (so are those of the log a peer lacks), logged,
  // executed.
  uint64_t own = in->own, own_bytes = 0;
  std::map<uint64_t, std::shared_ptr<const pb::Batch>> mine = std::move(in->own_batches);
  for (const auto& b : plan->own) {
    ExpectResults(*b);
    own += b->txns_size();
    for (const pb::Txn& t : b->txns()) own_bytes += TxnCharge(t);
    if (options_.record_history) {
      std::lock_guard<std::mutex> l(history_mu_);
      history_.push_back(b);
    }
    mine[b->epoch()] = b;
  }
  submitted_.fetch_add(own - in->own, std::memory_order_acq_rel);
  pending_bytes_.fetch_add(own_bytes, std::memory_order_acq_rel);
  std::map<uint64_t, std::vector<std::shared_ptr<pb::Batch>>> parts;  // by epoch
  // The parts of our batch of epoch e (kept for the peers); null if we do
  // not hold it (before the checkpoint we restarted from).
  auto parts_of = [&](uint64_t e) -> const std::vector<std::shared_ptr<pb::Batch>>* {
    auto it = parts.find(e);
    if (it != parts.end()) return &it->second;
    auto b = mine.find(e);
    if (b == mine.end()) return nullptr;
    auto p = Parts(*b->second);
    for (uint32_t n = 0; n < p.size(); ++n)
      if (p[n] != nullptr) retention_->OnSentBatch(n, p[n]);
    return &parts.emplace(e, std::move(p)).first->second;
  };
  for (const auto& b : plan->own) (void)parts_of(b->epoch());  // all in mine
  uint64_t resent = 0;
  for (uint32_t n = 0; n < plan->lacks.size(); ++n) {
    for (uint64_t e : plan->lacks[n]) {
      const auto* p = parts_of(e);
      if (p == nullptr)
        return absl::FailedPreconditionError(absl::StrCat(
            "rejoin: node ", n, " lacks our batch of epoch ", e, ", which is before the checkpoint we restarted from (",
            in->from, "): restart every node"));
      peers->SendBatch(n, *(*p)[n]);
      ++resent;
    }
  }
  for (const auto& b : plan->own) stage_->Add(b);

  // 4. The peers' batches after keep_through (those they sent while we
  // were down, or that we dropped before this start).
  pb::RejoinRequest theirs;
  theirs.set_kind(pb::RejoinRequest::BATCHES);
  theirs.set_after_epoch(plan->keep_through);
  if (auto r = AskEveryPeer(theirs); !r.ok()) return r.status();
  CloseEarlyResults();

  // 5. Our sequencer on the cluster's clock: epoch horizon + 1 closes at
  // start_us + (horizon + 1 - origin) * epoch_us, the epochs passed since
  // at once (empty: no client is taken yet), so the peers merge on.
  sequencer_->ResumeAt(plan->horizon + 1, 1);
  sequencer_->Start(clock.start_us + (plan->horizon - clock.origin_epoch) * options_.epoch_us);
  rejoined_at_.store(plan->horizon, std::memory_order_relaxed);
  LOG(INFO) << "rejoin: replayed our log up to epoch " << plan->keep_through << " (log held " << log_epoch_
            << ", from checkpoint " << in->from << "), sequenced epochs " << plan->keep_through + 1 << ".."
            << plan->horizon << " again from the peers' copies (" << own - in->own << " txns), resent " << resent
            << " batch(es) peers lacked; sequencing resumes at epoch " << plan->horizon + 1;

  // 6. The reads and results of our txns from the checkpoint on, from the
  // peers, until our own txns are answered and every txn up to the
  // horizon is done here.
  std::atomic<bool> stop_pump{false};
  std::mutex pump_mu;
  absl::Status pump_error;
  std::thread pump([&] { PumpMessages(in->from + 1, &stop_pump, &pump_error, &pump_mu); });
  auto failed = [&]() -> absl::Status {
    if (StartCancelled()) return absl::CancelledError("rejoin cancelled");
    if (stage_->failed()) return absl::InternalError("the input log failed during the rejoin");
    std::lock_guard<std::mutex> l(pump_mu);
    return pump_error;
  };
  // Progress: an epoch merged, a txn of ours answered, a partition moved.
  // None for rejoin_progress_timeout: a clear error, not a hang (review
  // finding 4).
  // A txn waiting for remote reads all along is none either (review 2
  // finding 1: the merge runs on through empty epochs meanwhile).
  ProgressWatch progress(Clock::now());
  auto stalled = [&]() -> absl::Status {
    const auto now = Clock::now();
    progress.Sample(
        now,
        [&] {
          uint64_t c = merged_epoch() + replied_.load();
          for (PartitionId p : local_) c += schedulers_[p]->merged_epoch();
          return c;
        },
        [&] { return OldestAwaitingReads(); });
    if (progress.still(now) <= options_.rejoin_progress_timeout) return absl::OkStatus();
    const TxnId waiting = progress.oldest_waiting();
    return absl::DeadlineExceededError(absl::StrCat(
        "rejoin: no progress for ", options_.rejoin_progress_timeout.count(), " ms at merged epoch ", merged_epoch(),
        " (sequenced again up to epoch ", plan->horizon, "; ", replied_.load() - replied_before, " of our ", own,
        " replayed txns answered", waiting != 0 ? absl::StrCat("; txn ", waiting, " of epoch ",
                                                            EpochBatcher::IdEpoch(waiting), " waits for remote reads")
                                                : std::string(),
        "): a txn waits for remote reads or a batch no peer sends; restart every node"));
  };
  absl::Status s;
  while ((s = failed()).ok() && (s = stalled()).ok() &&
         !(merged_epoch() > plan->horizon && replied_.load() - replied_before >= own))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Every txn up to the horizon released here: held at a boundary after it
  // until all merged before are (the pump goes on meanwhile).
  while (s.ok()) {
    uint64_t boundary = plan->horizon + 1;
    for (PartitionId p : local_) boundary = std::max(boundary, schedulers_[p]->merged_epoch() + 1);
    absl::Status held = AtEpochBoundaryUntil(boundary, Clock::now() + std::chrono::seconds(2),
                                             [&] { return !failed().ok(); }, [] {});
    if (held.ok()) break;
    s = failed();
    if (s.ok()) s = stalled();
  }
  stop_pump.store(true, std::memory_order_release);
  pump.join();
  if (!s.ok()) return s;
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  LOG(INFO) << "rejoin done in " << ms << " ms: " << in->total << " txns replayed from the log, " << own
            << " of ours answered; taking txns";
  return absl::OkStatus();
}

TxnId Engine::OldestAwaitingReads() const {
  TxnId out = 0;
  for (PartitionId p : local_)
    if (const TxnId t = schedulers_[p]->OldestAwaitingReads(); t != 0 && (out == 0 || t < out)) out = t;
  return out;
}

void Engine::PumpMessages(uint64_t first_epoch, const std::atomic<bool>* stop, absl::Status* error,
                          std::mutex* error_mu) {
  PeerLink* peers = options_.peers;
  const uint32_t self = peers->node_id(), n = peers->num_nodes();
  // Two chunks per peer may be held at once (the one the merge is in and
  // the next): half the held-reads budget.
  const uint64_t chunk =
      std::max<uint64_t>(64 << 10, options_.max_held_reads_bytes / (4 * std::max<uint32_t>(1, n - 1)));
  struct Cursor {
    uint64_t from = 0, chunk_start = 0, asked = 0;  // asked: the request id outstanding (0: none)
    bool done = false;
    Clock::time_point asked_at;
    Clock::time_point not_before;  // after an answer that moved nothing (the peer's log lags)
  };
  std::vector<Cursor> c(n);
  for (Cursor& k : c) k.from = k.chunk_start = first_epoch;
  ProgressWatch progress(Clock::now());
  while (!stop->load(std::memory_order_acquire)) {
    const uint64_t merged = merged_epoch();
    const auto now = Clock::now();
    progress.Sample(now, [&] { return merged; }, [&] { return OldestAwaitingReads(); });
    if (progress.still(now) > kNoProgress) {
      // From the oldest txn still waiting for remote reads (the merge may
      // have run hundreds of epochs past it), else from just below the
      // merge (review finding 4).
      uint64_t again = merged > 1 ? merged - 1 : 1;
      if (const TxnId oldest = OldestAwaitingReads(); oldest != 0)
        again = std::min(again, EpochBatcher::IdEpoch(oldest));
      again = std::max(first_epoch, again);
      LOG(INFO) << "rejoin: no progress at merged epoch " << merged << " (oldest txn waiting for remote reads: "
                << progress.oldest_waiting() << "): asking again for reads and results from epoch " << again;
      // Every idle cursor, a `done` one too: a read sent live after `done`
      // and refused here over budget is kept by its sender (review 2 f. 1).
      for (Cursor& k : c) {
        if (k.asked != 0) continue;
        k.from = k.chunk_start = std::min(k.from, again);
        k.done = false;
      }
      progress.Moved(now);
    }
    for (uint32_t node = 0; node < n; ++node) {
      if (node == self) continue;
      Cursor& k = c[node];
      if (k.asked != 0) {
        auto r = TakeRejoinReply(k.asked);
        if (!r.has_value()) {
          if (now - k.asked_at > kAskAgain) {
            ResendRejoinRequest(k.asked);
            k.asked_at = now;
          }
          continue;
        }
        k.asked = 0;
        if (!r->error().empty()) {
          std::lock_guard<std::mutex> l(*error_mu);
          *error = absl::FailedPreconditionError(absl::StrCat("rejoin: node ", node, " answers: ", r->error()));
          return;
        }
        if (r->through_epoch() <= k.from && !r->done()) k.not_before = now + kAskLagging;
        k.from = std::max(k.from, r->through_epoch());
        k.done = r->done();
      }
      // The merge reached the last chunk asked for: ask for the next.
      if (!k.done && merged + 1 >= k.chunk_start && now >= k.not_before) {
        pb::RejoinRequest req;
        req.set_kind(pb::RejoinRequest::MESSAGES);
        req.set_from_epoch(k.from);
        req.set_max_bytes(chunk);
        k.chunk_start = k.from;
        k.asked_at = now;
        k.asked = SendRejoinRequest(node, req);
      }
    }
    std::unique_lock<std::mutex> l(rejoin_mu_);
    rejoin_cv_.wait_for(l, std::chrono::milliseconds(2));
  }
  for (const Cursor& k : c)
    if (k.asked != 0) ForgetRejoinRequest(k.asked);
}

}  // namespace detdb
