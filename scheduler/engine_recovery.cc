// Engine's input-log part: recovery and replay at Start, the peers' durable
// epochs, the log's failure. See scheduler/log_stage.h and docs/DURABILITY.md.
#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "scheduler/engine.h"

namespace detdb {

absl::StatusOr<uint64_t> Engine::RecoverLog() {
  if (stage_ == nullptr) return absl::FailedPreconditionError("no input log configured");
  if (options_.peers != nullptr) {
    std::lock_guard<std::mutex> l(awaiting_mu_);
    early_results_open_ = true;  // until ReplayLog notes what it awaits
  }
  // The checkpoints' epochs: recovery notes what the log holds for them
  // (FindCheckpoints compares it with what each checkpoint recorded).
  std::vector<uint64_t> checkpoints;
  if (!options_.checkpoint.dir.empty()) {
    auto listed = ListCheckpoints(checkpoint_options());
    if (listed.ok()) checkpoints = *listed;  // an error shows in FindCheckpoints
  }
  auto e = stage_->Recover(checkpoints);
  if (!e.ok()) return e.status();
  if (absl::Status c = FindCheckpoints(*e); !c.ok()) return c;
  log_recovered_ = true;
  log_epoch_ = *e;
  return *e;
}

absl::StatusOr<Engine::Replayed> Engine::LoadAndReplay(uint64_t resume, std::optional<uint64_t> checkpoint_epoch,
                                                       bool every_node_holds) {
  Replayed out;
  TxnId checkpoint_last_id = 0;
  auto from = RestoreCheckpoint(resume, checkpoint_epoch, &checkpoint_last_id);
  if (!from.ok()) return from.status();
  out.from = *from;
  // Only now: the restore had the stores to itself (no worker, no idle
  // worker's reclaim round ran meanwhile).
  for (PartitionId p : local_) schedulers_[p]->Start();
  auto in = stage_->Open(resume, *from + 1, checkpoint_last_id, every_node_holds);
  if (!in.ok()) return in.status();
  // Our newest valid checkpoint (<= resume, the durable epoch Open told the
  // peers), for the peers' CheckpointAgreement.
  if (options_.peers != nullptr && agreement_.newest() > 0) options_.peers->SetCheckpointEpoch(agreement_.newest());
  // Every txn from the checkpoint on runs again here, and sends its reads
  // and results again: kept for the peers from there (a rejoin of theirs).
  if (retention_ != nullptr) retention_->Start(*from + 1);
  const uint32_t self = options_.peers != nullptr ? options_.peers->node_id() : 0;
  uint64_t own_bytes = 0;
  for (const auto& b : in->batches) {
    out.total += b->txns_size();
    if (b->sequencer_id() == self) {
      // Answered here, as when they were first submitted.
      out.own += b->txns_size();
      for (const pb::Txn& t : b->txns()) own_bytes += TxnCharge(t);  // freed as they are answered
      if (options_.peers != nullptr) {
        ExpectResults(*b);
        out.own_batches.emplace(b->epoch(), b);
      }
    } else if (absl::Status s = CheckPeerBatch(b.get()); !s.ok()) {
      return absl::DataLossError(absl::StrCat("input log ", options_.log.dir, ": logged batch of node ",
                                              b->sequencer_id(), " epoch ", b->epoch(), ": ", s.message()));
    }
  }
  if (retention_ != nullptr && !every_node_holds) KeepReplayedBatches(in->batches);
  // Only now do our STATE answers count the log's epochs as received here.
  replay_floor_.store(resume, std::memory_order_release);
  submitted_.fetch_add(out.own, std::memory_order_acq_rel);
  pending_bytes_.fetch_add(own_bytes, std::memory_order_acq_rel);
  replayed_.store(out.total, std::memory_order_relaxed);
  for (const auto& b : in->batches) EnqueueLocal(b);
  out.last_id = in->last_id;
  return out;
}

void Engine::KeepReplayedBatches(const std::vector<std::shared_ptr<pb::Batch>>& batches) {
  // Our STATE answer counts every epoch of our log as received here
  // (next_expected), and a peer whose log lags ours may still lose those
  // epochs in a crash of its own: its batches we received and our parts
  // for it are kept again, as if just received and sent, each until that
  // peer's log holds its epoch (review finding 2b). Those up to the
  // checkpoint we restored (before `batches`) are in every peer's log: a
  // checkpoint is published only once its epoch is durable on every node.
  const uint32_t self = options_.peers->node_id();
  uint64_t lowest = UINT64_MAX;  // the lowest durable epoch of a peer, as we heard it
  for (uint32_t n = 0; n < options_.peers->num_nodes(); ++n)
    if (n != self) lowest = std::min(lowest, retention_->durable(n));
  for (const auto& b : batches) {
    if (b->epoch() <= lowest) continue;  // every peer's log holds it
    if (b->sequencer_id() != self) {
      retention_->OnReceivedBatch(b->sequencer_id(), b);
      continue;
    }
    std::vector<std::shared_ptr<pb::Batch>> parts = Parts(*b);
    for (uint32_t n = 0; n < parts.size(); ++n)
      if (parts[n] != nullptr) retention_->OnSentBatch(n, std::move(parts[n]));
  }
}

void Engine::CloseEarlyResults() {
  // Results that peers sent before the expectations existed.
  std::vector<std::pair<uint32_t, pb::TxnResult>> early;
  {
    std::lock_guard<std::mutex> l(awaiting_mu_);
    early_results_open_ = false;
    early.swap(early_results_);
  }
  for (const auto& [from, r] : early) OnPeerResult(from, r);
}

absl::Status Engine::ReplayLog(uint64_t start_us, std::optional<uint64_t> resume_epoch,
                               std::optional<uint64_t> checkpoint_epoch) {
  if (!log_recovered_) {
    auto e = RecoverLog();
    if (!e.ok()) return e.status();
  }
  const uint64_t resume = resume_epoch.value_or(log_epoch_);
  // Every node's log holds the epochs up to resume (a peer rejoining while
  // we replay counts them as received here).
  replay_floor_.store(resume, std::memory_order_release);
  if (options_.peers != nullptr) {
    // The cluster's clock before the replay (review finding 1): the peers
    // that finished first sequence on, and their batches and reads are
    // bounded by the wall-clock epoch, not by our merge, which lags the
    // whole replay; epoch resume + k closes at start_us + k * epoch_us.
    clock_origin_epoch_.store(resume, std::memory_order_release);
    start_us_.store(start_us, std::memory_order_release);
  }
  replaying_.store(true, std::memory_order_release);
  struct Done {
    std::atomic<bool>* flag;
    ~Done() { flag->store(false, std::memory_order_release); }
  } done_replaying{&replaying_};
  const auto t0 = std::chrono::steady_clock::now();
  // Only replayed txns are answered during replay (txns submitted before
  // Start in one process wait in the sequencer, which starts after it).
  const uint64_t replied_before = replied_.load();
  auto in = LoadAndReplay(resume, checkpoint_epoch, /*every_node_holds=*/true);
  if (!in.ok()) return in.status();  // Start closes the log stage
  CloseEarlyResults();
  // Wait until every replayed txn is released and answered (the replies
  // rebuild the clients' exactly-once tables before anything new is taken).
  const auto deadline = t0 + std::chrono::hours(1);
  for (;;) {
    bool done = merged_epoch() > resume && replied_.load() - replied_before >= in->own;
    for (PartitionId p : local_) done = done && schedulers_[p]->Idle();
    if (done) break;
    if (stage_->failed()) return absl::InternalError("input log failed during replay");
    if (std::chrono::steady_clock::now() > deadline)
      return absl::DeadlineExceededError(absl::StrCat("replay of the input log up to epoch ", resume,
                                                      " not finished after an hour: merged ", merged_epoch()));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  sequencer_->ResumeAt(resume + 1, options_.peers != nullptr ? 1 : in->last_id + 1);
  {
    std::lock_guard<std::mutex> l(ids_mu_);
    ids_floor_ = in->last_id;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  LOG(INFO) << "input log " << options_.log.dir << ": replayed " << in->total << " txns of epochs " << in->from + 1
            << ".." << resume << (in->from > 0 ? absl::StrCat(" after checkpoint ", in->from) : std::string())
            << " in " << ms << " ms; sequencing resumes at epoch " << resume + 1;
  return absl::OkStatus();
}

void Engine::OnLogFailure(const absl::Status& s) {
  {
    std::lock_guard<std::mutex> l(log_error_mu_);
    log_error_ = absl::UnavailableError(absl::StrCat("the input log failed, this node takes no txns: ", s.message()));
  }
  accepting_.store(false, std::memory_order_release);
  LOG(ERROR) << "the input log failed (" << s << "): this engine accepts nothing more and replies no more";
  if (options_.on_log_failure) options_.on_log_failure(s);
}

void Engine::OnPeerDurable(uint32_t node, uint64_t epoch) {
  agreement_.OnPeerDurable(node, epoch);
  if (retention_ != nullptr) retention_->OnPeerDurable(node, epoch);
  if (stage_ != nullptr) stage_->OnPeerDurable(node, epoch);
}

void Engine::OnPeerCheckpoint(uint32_t node, uint64_t epoch) {
  if (!agreement_.OnPeerCheckpoint(node, epoch)) {
    LOG_EVERY_N(WARNING, 100) << "node " << node << " reported checkpoint epoch " << epoch
                              << ", above its durable epoch or below its previous report: ignored";
    return;
  }
  // Reads and results up to the newest common checkpoint are no longer
  // needed by any rejoin.
  if (retention_ != nullptr) retention_->SetAnchor(agreement_.anchor());
  // A newer checkpoint may be common now: the reclaimer prunes and cuts
  // (not this network thread: it does file I/O).
  {
    std::lock_guard<std::mutex> l(reclaim_mu_);
    reclaim_due_ = true;
  }
  reclaim_cv_.notify_one();
}

}  // namespace detdb
