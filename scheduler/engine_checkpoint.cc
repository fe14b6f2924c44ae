// Engine's checkpoint part: taking a checkpoint at an epoch boundary while
// txns run, and choosing and loading one at recovery. See
// scheduler/checkpoint.h and docs/DURABILITY.md, section "Checkpoints".
#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "scheduler/engine.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {
double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

CheckpointOptions Engine::checkpoint_options() const {
  CheckpointOptions o = options_.checkpoint;
  // Never null: the paths below call it directly (a cancelled durability
  // wait removed its temp file through a null fs: every detdb node crashed
  // when stopped during that wait).
  if (o.fs == nullptr) o.fs = options_.log.fs != nullptr ? options_.log.fs : PosixFileSystem();
  return o;
}

void Engine::NoteBatchIds(const pb::Batch& batch) {
  if (batch.txns_size() == 0) return;
  // A later checkpoint asks for an epoch >= merged_epoch() - 1 (the
  // schedulers must not have passed its boundary): older entries are only
  // needed as the floor.
  const uint64_t merged = merged_epoch();
  std::lock_guard<std::mutex> l(ids_mu_);
  epoch_last_ids_.emplace_back(batch.epoch(), batch.txns().rbegin()->id());
  while (epoch_last_ids_.size() > 1 && epoch_last_ids_[1].first + 1 <= merged) {
    ids_floor_ = std::max(ids_floor_, epoch_last_ids_.front().second);
    epoch_last_ids_.pop_front();
  }
}

TxnId Engine::LastIdThrough(uint64_t epoch) {
  std::lock_guard<std::mutex> l(ids_mu_);
  TxnId id = ids_floor_;
  for (const auto& [e, last] : epoch_last_ids_)
    if (e <= epoch) id = std::max(id, last);
  return id;
}

void Engine::NoteUnanswered(const pb::Batch& batch) {
  if (batch.txns_size() == 0) return;
  std::lock_guard<std::mutex> l(unanswered_mu_);
  unanswered_[batch.txns().rbegin()->id()] =
      Unanswered{batch.txns(0).id(), batch.epoch(), static_cast<uint64_t>(batch.txns_size())};
}

void Engine::NoteAnswered(TxnId id) {
  std::lock_guard<std::mutex> l(unanswered_mu_);
  // Our sequencer's ids grow with the epoch (dense in one process, epoch
  // first in a cluster): the batch is the first whose last id is >= id.
  // Replayed txns (before the sequencer starts) are in none.
  auto it = unanswered_.lower_bound(id);
  if (it == unanswered_.end() || id < it->second.first) return;
  if (--it->second.left == 0) {
    unanswered_.erase(it);
    unanswered_cv_.notify_all();
  }
}

absl::Status Engine::WaitAnswered(uint64_t epoch, std::chrono::steady_clock::time_point deadline,
                                  const std::function<bool()>& cancelled) {
  std::unique_lock<std::mutex> l(unanswered_mu_);
  while (!unanswered_.empty() && unanswered_.begin()->second.epoch <= epoch) {
    if (stage_->failed()) return absl::UnavailableError("the input log failed");
    if (cancelled()) return absl::CancelledError("cancelled while waiting for results to leave");
    if (std::chrono::steady_clock::now() > deadline)
      return absl::DeadlineExceededError(absl::StrCat("results of epoch ", unanswered_.begin()->second.epoch,
                                                      " (", unanswered_.begin()->second.left,
                                                      " txns) not handed to the clients yet"));
    unanswered_cv_.wait_for(l, std::chrono::milliseconds(5));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointStats> Engine::Checkpoint(uint64_t epoch, std::chrono::milliseconds timeout,
                                                   const std::atomic<bool>* cancel) {
  if (stage_ == nullptr || options_.checkpoint.dir.empty())
    return absl::FailedPreconditionError("checkpoints need the input log and a checkpoint directory (--data_dir)");
  if (!accepting_.load(std::memory_order_acquire))
    return absl::FailedPreconditionError("the engine is not running (starting, stopping or its log failed)");
  // Stop waits for every call in flight; every wait below also ends when
  // Stop runs (finding 14).
  {
    std::lock_guard<std::mutex> l(inflight_mu_);
    if (checkpoint_stop_.load(std::memory_order_acquire))
      return absl::CancelledError(absl::StrCat("checkpoint of epoch ", epoch, ": the engine is stopping"));
    ++active_checkpoints_;
  }
  struct Active {
    Engine* e;
    ~Active() {
      std::lock_guard<std::mutex> l(e->inflight_mu_);
      --e->active_checkpoints_;
      e->inflight_cv_.notify_all();
    }
  } active{this};
  // One deadline for every wait of this checkpoint (finding 21).
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + timeout;
  const std::function<bool()> cancelled = [this, cancel] {
    return checkpoint_stop_.load(std::memory_order_acquire) || (cancel != nullptr && cancel->load());
  };
  // A wait that ended because Stop runs says so.
  auto stopping = [&](const absl::Status& s) {
    if (s.ok() || !checkpoint_stop_.load(std::memory_order_acquire)) return s;
    return absl::CancelledError(absl::StrCat("checkpoint of epoch ", epoch, ": the engine is stopping (", s.message(),
                                             ")"));
  };
  auto already = [&] {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint of epoch ", epoch, ": epoch ", last_capture_epoch_,
                                                      " was already captured here; ask for a later epoch"));
  };
  {
    std::lock_guard<std::mutex> l(checkpoint_mu_);
    if (epoch <= last_capture_epoch_) return already();
  }
  CheckpointOptions co = checkpoint_options();
  if (co.client_state) {
    // The client state must hold every result of epochs <= epoch (recovery
    // replays only the later ones): asked for once all have been handed
    // over. It may hold later ones too: their epochs are durable (a result
    // leaves only then), so replay after this checkpoint reproduces them
    // identically and they merge with what it holds.
    co.client_state = [this, deadline, cancelled, inner = co.client_state](uint64_t e) -> absl::StatusOr<std::string> {
      if (absl::Status w = WaitAnswered(e, deadline, cancelled); !w.ok()) return w;
      return inner(e);
    };
  }
  const std::string tmp_path = CheckpointTempPath(co, epoch);
  // Until this call returns, PruneCheckpoints leaves tmp_path alone.
  struct InFlight {
    Engine* e;
    std::string name;
    bool registered = false;
    ~InFlight() {
      if (!registered) return;
      std::lock_guard<std::mutex> l(e->inflight_mu_);
      e->inflight_tmp_.erase(name);
    }
  } in_flight{this, tmp_path.substr(tmp_path.rfind('/') + 1)};
  CheckpointStats stats;
  stats.epoch = epoch;
  CheckpointMeta meta;
  meta.epoch = epoch;
  meta.config_hash = options_.log.config_hash;
  meta.partitions = local_;
  std::vector<const PartitionStore*> stores;
  for (PartitionId p : local_) stores.push_back(stores_[p].get());
  absl::StatusOr<ForkedCapture> capture = absl::UnknownError("not captured");
  absl::Status refused;
  // Paused at the boundary only for the fork: the child keeps the state of
  // the boundary (copy-on-write), the schedulers go on. checkpoint_mu_ is
  // held only here, not for the wait (findings 9, 13): a periodic
  // checkpoint of an earlier epoch is not refused while an admin one waits.
  absl::Status s = AtEpochBoundaryUntil(epoch + 1, deadline, cancelled, [&] {
    std::lock_guard<std::mutex> capture_lock(checkpoint_mu_);
    if (epoch <= last_capture_epoch_) {  // another call captured this epoch or a later one meanwhile
      refused = already();
      return;
    }
    const auto p0 = std::chrono::steady_clock::now();
    // S on every local partition (docs/STORAGE.md, "Intent locks"): the
    // partitions are idle here, so no txn uses an intent lock; the S waits
    // only until the workers gave back the intents they cached (they do so
    // before they sleep), and keeps any whole-table writer out until the
    // child holds its copy.
    std::vector<std::unique_ptr<IntentAgent>> capture_locks;
    for (PartitionId p : local_) {
      capture_locks.push_back(stores_[p]->intents().NewAgent());
      if (absl::Status l = capture_locks.back()->AcquireUntil(IntentLockTable::kPartitionLock, IntentMode::kS, deadline);
          !l.ok()) {
        refused = absl::DeadlineExceededError(
            absl::StrCat("checkpoint of epoch ", epoch, ": partition ", p, " not free for the capture: ", l.message()));
        return;
      }
    }
    stats.lock_ms = MsSince(p0);
    meta.last_txn_id = options_.peers == nullptr ? LastIdThrough(epoch) : 0;
    // Which history the checkpoint belongs to: epoch's records as logged.
    meta.log_crc = stage_->EpochCrc(epoch).value_or(0);
    const auto f0 = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> l(inflight_mu_);  // before the child exists: Stop waits for it
      inflight_tmp_.insert(in_flight.name);
      in_flight.registered = true;
      ++live_children_;
    }
    // The child shares the stores' pages: reclamation seals, frees nothing.
    for (PartitionId p : local_) stores_[p]->HoldFrees();
    capture = ForkCapture(meta, stores, co.test_child_stall);
    stats.fork_ms = MsSince(f0);
    stats.pause_ms = MsSince(p0);
    last_capture_epoch_ = epoch;  // the schedulers pass the boundary now: no second try of this epoch
  });
  if (s.ok() && !refused.ok()) return refused;
  // The child is gone (reaped, or never forked): reclamation frees again,
  // at once, not after the results and the fsync (finding 18).
  bool released = false;
  auto release_child = [&] {
    if (!in_flight.registered || released) return;
    released = true;
    for (PartitionId p : local_) stores_[p]->ReleaseFrees();
    std::lock_guard<std::mutex> l(inflight_mu_);
    --live_children_;
    inflight_cv_.notify_all();
  };
  absl::StatusOr<std::string> tmp = absl::UnknownError("not received");
  if (s.ok() && capture.ok()) {
    capture->tmp_path = tmp_path;
    capture->deadline = deadline;
    capture->cancelled = cancelled;
    capture->on_reaped = release_child;
    tmp = ReceiveCapture(*capture, co, epoch, &stats);  // reaps the child whatever happens
  }
  release_child();
  if (!s.ok()) return stopping(s);
  if (!capture.ok()) return capture.status();
  if (!tmp.ok()) return stopping(tmp.status());
  // Published only once `epoch` is durable on every node: a restart resumes
  // at or after it, so the checkpoint is never ahead of the log.
  while (stage_->watermark() < epoch) {
    if (checkpoint_stop_.load(std::memory_order_acquire)) {
      (void)co.fs->Remove(*tmp);
      return absl::CancelledError(absl::StrCat("checkpoint of epoch ", epoch, ": the engine is stopping"));
    }
    if (stage_->failed() || std::chrono::steady_clock::now() > deadline || cancelled()) {
      (void)co.fs->Remove(*tmp);
      return absl::UnavailableError(absl::StrCat("checkpoint of epoch ", epoch, ": the epoch did not become durable on "
                                                 "every node (watermark ", stage_->watermark(), ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  if (absl::Status p = PublishCheckpoint(co, *tmp, epoch); !p.ok()) return p;
  // Told to the peers on every message from now on (beside the durable epoch).
  const uint64_t newest = agreement_.OnPublished(epoch);
  if (options_.peers != nullptr) options_.peers->SetCheckpointEpoch(newest);
  // Ours may be the copy that made it common: what is kept for the peers'
  // rejoins shrinks now, not at the next peer report (review finding 10).
  if (retention_ != nullptr) retention_->SetAnchor(agreement_.anchor());
  size_t dropped = 0;
  auto kept = PruneAndCutLocked(co, &dropped);
  if (!kept.ok()) return kept.status();
  stats.path = JoinPath(co.dir, CheckpointName(epoch));
  stats.total_ms = MsSince(t0);
  checkpoints_.fetch_add(1, std::memory_order_relaxed);
  last_checkpoint_epoch_.store(epoch, std::memory_order_relaxed);
  LOG(INFO) << "checkpoint " << stats.path << ": " << stats.bytes << " bytes, paused " << stats.pause_ms
            << " ms (S intent locks " << stats.lock_ms << " ms, fork " << stats.fork_ms << " ms), written in " << stats.write_ms << " ms, total "
            << stats.total_ms << " ms; kept epochs " << absl::StrJoin(*kept, ",") << "; " << dropped
            << " log segment(s) dropped";
  return stats;
}

absl::StatusOr<std::vector<uint64_t>> Engine::PruneAndCutLocked(const CheckpointOptions& co, size_t* dropped) {
  *dropped = 0;
  // Plan from the anchor as it is now (a later rise re-plans); noted as
  // planned only once the prune and the cut both succeeded, so that an I/O
  // error is retried (finding 20).
  const uint64_t anchor = agreement_.anchor();
  auto listed = ListCheckpoints(co);
  if (!listed.ok()) return listed.status();
  // Keeps every checkpoint from the newest one every node holds on, plus
  // older fallbacks; the log is needed only after the oldest kept anchor,
  // and is cut only once keep anchors exist, so that a damaged newest one
  // always has an older one (or the log from epoch 1) to fall back to.
  const CheckpointPlan plan = agreement_.Plan(*listed, co.keep, co.max_uncommon);
  if (!plan.dropped_uncommon.empty()) {
    std::string who = plan.behind.empty() ? std::string("their checkpoint epochs never coincide with this node's")
                                          : absl::StrCat("node(s) ", absl::StrJoin(plan.behind, ","),
                                                         " published none of them (no checkpoints there?)");
    LOG(ERROR) << "pruning checkpoint(s) of epochs " << absl::StrJoin(plan.dropped_uncommon, ",")
               << " that no other node confirmed (more than " << co.max_uncommon << " after the newest common one, "
               << anchor << "): " << who << "; the input log is not cut past epoch " << anchor
               << " until every node publishes a checkpoint of the same epoch";
  }
  auto kept = PruneCheckpoints(co, plan.keep, [this](std::string_view name) {
    std::lock_guard<std::mutex> l(inflight_mu_);
    return inflight_tmp_.contains(std::string(name));
  });
  if (!kept.ok()) return kept.status();
  if (plan.cut_before > 0) {
    auto d = DropInputLogBefore(options_.log.dir, plan.cut_before, options_.log.fs);
    if (!d.ok()) return d.status();
    *dropped = *d;
  }
  planned_anchor_ = anchor;
  return kept;
}

absl::StatusOr<size_t> Engine::ReclaimCheckpoints() {
  if (stage_ == nullptr || options_.checkpoint.dir.empty()) return 0;
  if (!accepting_.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  if (agreement_.anchor() == planned_anchor_) return 0;
  const uint64_t before = planned_anchor_;
  size_t dropped = 0;
  auto kept = PruneAndCutLocked(checkpoint_options(), &dropped);
  if (!kept.ok()) return kept.status();
  if (planned_anchor_ != before)
    LOG(INFO) << "checkpoint " << planned_anchor_ << " is held by every node: kept epochs "
              << absl::StrJoin(*kept, ",") << "; " << dropped << " log segment(s) dropped";
  return dropped;
}

void Engine::StartReclaimer() {
  if (stage_ == nullptr || options_.checkpoint.dir.empty() || options_.peers == nullptr) return;
  reclaimer_ = std::thread([this] { ReclaimLoop(); });
}

void Engine::StopReclaimer() {
  {
    std::lock_guard<std::mutex> l(reclaim_mu_);
    reclaim_stop_ = true;
  }
  reclaim_cv_.notify_all();
  if (reclaimer_.joinable()) reclaimer_.join();
}

void Engine::ReclaimLoop() {
  std::unique_lock<std::mutex> l(reclaim_mu_);
  while (!reclaim_stop_) {
    // Woken by a peer's report; every second anyway (a retry after an I/O
    // error: ReclaimCheckpoints is a no-op once the plan is carried out).
    reclaim_cv_.wait_for(l, std::chrono::seconds(1), [&] { return reclaim_due_ || reclaim_stop_; });
    if (reclaim_stop_) break;
    reclaim_due_ = false;
    l.unlock();
    if (auto r = ReclaimCheckpoints(); !r.ok()) {
      LOG_EVERY_N(WARNING, 10) << "pruning checkpoints: " << r.status();
    }
    l.lock();
  }
}

absl::Status Engine::FindCheckpoints(uint64_t log_epoch) {
  checkpoint_epochs_.clear();
  newest_checkpoint_.reset();
  auto first = InputLogFirstEpoch(options_.log.dir, options_.log.fs);
  if (!first.ok()) return first.status();
  log_from_start_ = !first->has_value() || **first == 1;
  if (options_.checkpoint.dir.empty()) return absl::OkStatus();
  const CheckpointOptions co = checkpoint_options();
  auto epochs = ListCheckpoints(co);
  if (!epochs.ok()) return epochs.status();
  std::vector<std::string> bad;
  // Files that can never be used (damaged, or not of this log's history):
  // quarantined once this node is sure to start; a config mismatch or an
  // I/O error is not the file's fault and leaves it alone.
  std::vector<uint64_t> quarantine;
  for (uint64_t e : *epochs) {
    const std::string path = JoinPath(co.dir, CheckpointName(e));
    if (e > log_epoch) {
      bad.push_back(absl::StrCat(path, ": epoch ", e, " is after the log's last complete epoch ", log_epoch));
      quarantine.push_back(e);
      continue;
    }
    if (first->has_value() && **first > e + 1) {
      bad.push_back(absl::StrCat(path, ": the log starts at epoch ", **first, ", after it"));
      quarantine.push_back(e);
      continue;
    }
    auto c = ReadCheckpoint(co, e);
    if (absl::IsDataLoss(c.status())) quarantine.push_back(e);
    if (c.ok() && c->meta.config_hash != options_.log.config_hash)
      c = absl::FailedPreconditionError(absl::StrCat("checkpoint ", path, ": config hash ", c->meta.config_hash,
                                                     ", this node's is ", options_.log.config_hash));
    if (c.ok() && c->meta.partitions != local_)
      c = absl::FailedPreconditionError(absl::StrCat("checkpoint ", path, ": other partitions than this node's"));
    if (c.ok() && c->meta.log_crc != 0) {
      const std::optional<uint32_t> logged = stage_->RecoveredEpochCrc(e);
      if (logged.has_value() && *logged != c->meta.log_crc) {
        c = absl::DataLossError(absl::StrCat("checkpoint ", path, ": epoch ", e, "'s records differ from the log's (CRC ",
                                             c->meta.log_crc, " recorded, ", *logged,
                                             " logged): it belongs to another history"));
        quarantine.push_back(e);
      }
    }
    if (!c.ok()) {
      bad.push_back(std::string(c.status().message()));
      continue;
    }
    checkpoint_epochs_.push_back(e);
    if (!newest_checkpoint_) newest_checkpoint_ = std::move(*c);
  }
  for (const std::string& b : bad) LOG(WARNING) << "unusable checkpoint: " << b;
  if (checkpoint_epochs_.empty() && !bad.empty() && (!log_from_start_ || !first->has_value()))
    return absl::DataLossError(absl::StrCat("no usable checkpoint and the input log ", options_.log.dir,
                                            " does not start at epoch 1, so this node cannot rebuild its state: ",
                                            absl::StrJoin(bad, "; ")));
  if (checkpoint_epochs_.empty() && !log_from_start_)
    return absl::DataLossError(absl::StrCat("the input log ", options_.log.dir, " starts at epoch ",
                                            first->value_or(0), " and there is no checkpoint in ", co.dir,
                                            " to start from"));
  if (absl::Status q = QuarantineCheckpoints(co, quarantine); !q.ok()) return q;
  if (!quarantine.empty())
    LOG(WARNING) << "renamed the unusable checkpoint(s) of epochs " << absl::StrJoin(quarantine, ",") << " to *"
                 << kQuarantineSuffix << " (kept for inspection, never loaded)";
  if (!checkpoint_epochs_.empty())
    LOG(INFO) << "checkpoints usable for recovery: epochs " << absl::StrJoin(checkpoint_epochs_, ",");
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Engine::RestoreCheckpoint(uint64_t resume, std::optional<uint64_t> checkpoint_epoch,
                                                   TxnId* last_id) {
  // A checkpoint after the resume epoch holds epochs that are about to be
  // cut from the log and sequenced anew (possible with --log_sync=none):
  // quarantined before the log is cut (Open), never loaded later.
  std::vector<uint64_t> after;
  for (uint64_t e : checkpoint_epochs_)
    if (e > resume) after.push_back(e);
  if (!after.empty()) {
    if (absl::Status q = QuarantineCheckpoints(checkpoint_options(), after); !q.ok()) return q;
    LOG(WARNING) << "checkpoint(s) of epochs " << absl::StrJoin(after, ",") << " are after the epoch every node "
                 << "resumes at (" << resume << "): renamed to *" << kQuarantineSuffix;
    checkpoint_epochs_.erase(std::remove_if(checkpoint_epochs_.begin(), checkpoint_epochs_.end(),
                                            [&](uint64_t e) { return e > resume; }),
                             checkpoint_epochs_.end());
  }
  uint64_t c = 0;
  if (checkpoint_epoch.has_value()) {
    c = *checkpoint_epoch;
  } else {
    for (uint64_t e : checkpoint_epochs_)
      if (e <= resume) {
        c = e;
        break;
      }
  }
  agreement_.Start(checkpoint_epochs_, c);
  if (c == 0) {
    newest_checkpoint_.reset();
    if (!log_from_start_)
      return absl::DataLossError(absl::StrCat("recovery without a checkpoint needs the log from epoch 1; ",
                                              options_.log.dir, " starts later"));
    return 0;
  }
  if (c > resume || std::find(checkpoint_epochs_.begin(), checkpoint_epochs_.end(), c) == checkpoint_epochs_.end())
    return absl::FailedPreconditionError(absl::StrCat("no usable checkpoint of epoch ", c, " here (usable: ",
                                                      absl::StrJoin(checkpoint_epochs_, ","), "; resume at ",
                                                      resume, ")"));
  if (!newest_checkpoint_ || newest_checkpoint_->meta.epoch != c) {
    auto loaded = ReadCheckpoint(checkpoint_options(), c);
    if (!loaded.ok()) return loaded.status();
    newest_checkpoint_ = std::move(*loaded);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<PartitionStore*> stores;
  for (auto& s : stores_) stores.push_back(s.get());
  if (absl::Status s = detdb::RestoreCheckpoint(*newest_checkpoint_, stores); !s.ok()) return s;
  // The layer above's state of the checkpoint (the client endpoint's
  // exactly-once table), before the replay's results merge into it.
  if (options_.checkpoint.restore_client_state) {
    if (absl::Status s = options_.checkpoint.restore_client_state(newest_checkpoint_->client_state); !s.ok())
      return absl::DataLossError(absl::StrCat("checkpoint ", newest_checkpoint_->path,
                                              ": its client state section: ", s.message()));
  }
  *last_id = newest_checkpoint_->meta.last_txn_id;
  LOG(INFO) << "loaded checkpoint " << newest_checkpoint_->path << " (" << newest_checkpoint_->bytes.size()
            << " bytes) in " << MsSince(t0) << " ms";
  newest_checkpoint_.reset();
  for (PartitionId p : local_) schedulers_[p]->SkipTo(c + 1);
  restored_checkpoint_.store(c, std::memory_order_relaxed);
  return c;
}

}  // namespace detdb
