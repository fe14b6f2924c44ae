#include "scheduler/engine.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options,
                                                       const Partitioner* partitioner,
                                                       const ProcedureRegistry* procedures) {
  if (partitioner->num_partitions() == 0 || partitioner->num_partitions() > 1024)
    return absl::InvalidArgumentError("between 1 and 1024 partitions");
  if (options.epoch_us == 0) return absl::InvalidArgumentError("epoch_us must be positive");
  if (options.max_keys_per_txn == 0 || options.max_keys_per_txn > kMaxKeysPerTxn)
    return absl::InvalidArgumentError(absl::StrCat("max_keys_per_txn must be in [1, ", kMaxKeysPerTxn, "]"));
  if (options.max_pending == 0) return absl::InvalidArgumentError("max_pending must be positive");
  if (const uint64_t largest = options.max_args_bytes + 8 * static_cast<uint64_t>(options.max_keys_per_txn) + 64;
      options.max_pending_bytes < largest)  // = LargestTxnBytes()
    return absl::InvalidArgumentError(absl::StrCat("max_pending_bytes (", options.max_pending_bytes,
                                                   ") must hold the largest txn accepted (", largest, " bytes)"));
  if (options.peer_window_us == 0) return absl::InvalidArgumentError("peer_window_us must be positive");
  if (auto kind = ParseIntentLockKind(options.intent_locks); !kind.ok()) return kind.status();
  // Scans visit covered keys only, which Validate keeps out of the declared
  // sets; without a key cover it could not (and in-place Updates of
  // declared keys, docs/ENGINE.md, would change a scan's views).
  if (procedures->range_cover() != nullptr && procedures->key_cover() == nullptr)
    return absl::InvalidArgumentError("the procedures have a range cover but no key cover (scheduler/procedure.h)");
  if (options.peers != nullptr) {
    if (options.peers->num_nodes() == 0 || options.peers->num_nodes() > EpochBatcher::kMaxSequencers ||
        options.peers->node_id() >= options.peers->num_nodes())
      return absl::InvalidArgumentError("bad node id or node count");
    if (options.epoch_us < 100) return absl::InvalidArgumentError("cluster mode needs epoch_us >= 100");
  }
  std::unique_ptr<Engine> e(new Engine(options, partitioner, procedures));
  // In one process txns may be queued before Start(); a cluster node takes
  // none before its sequencer knows the agreed start time.
  e->accepting_.store(options.peers == nullptr, std::memory_order_release);
  if (e->local_.empty()) return absl::InvalidArgumentError("this node serves no partition");
  if (options.peers != nullptr) {
    // Kept for the peers' rejoins only with the input log (without it no
    // durable epoch ever trims what is kept, and no node can rejoin) and
    // unless rejoin is off (rejoin_retention_bytes 0); messages wait for
    // durability only for a rejoin too.
    const bool rejoin = !options.log.dir.empty() && options.rejoin_retention_bytes > 0;
    if (rejoin)
      e->retention_ = std::make_unique<PeerRetention>(options.peers->num_nodes(), options.peers->node_id(),
                                                      options.rejoin_retention_bytes);
    e->outbox_ = std::make_unique<PeerOutbox>(options.peers, e->retention_.get(), /*gated=*/rejoin);
  }
  Transport* transport = options.peers != nullptr ? static_cast<Transport*>(e->outbox_.get()) : e->transport_.get();
  // The window ahead of the merged epoch for peers' batches and early reads.
  const uint64_t window_epochs = PeerWindowEpochs(options);
  if (options.peers != nullptr)
    e->window_ = std::make_unique<PeerBatchWindow>(options.peers->num_nodes(), /*first_epoch=*/1, window_epochs);
  std::vector<bool> local(partitioner->num_partitions(), false);
  for (PartitionId p : e->local_) local[p] = true;
  if (options.peers != nullptr) {
    // A txn of a peer's has a reader on each remote partition at most: all of
    // their reads may arrive early (keys and framing; values are the tables').
    const uint64_t remote = partitioner->num_partitions() - e->local_.size();
    const uint64_t need = remote * (16 * static_cast<uint64_t>(options.max_keys_per_txn) + 256);
    if (options.max_held_reads_bytes < need)
      return absl::InvalidArgumentError(absl::StrCat("max_held_reads_bytes (", options.max_held_reads_bytes,
                                                     ") must hold one txn's reads from every remote partition (",
                                                     need, " bytes)"));
  }
  e->schedulers_.resize(partitioner->num_partitions());
  for (PartitionId p : e->local_) {
    SchedulerOptions so;
    so.partition = p;
    so.workers = options.workers;
    so.release_on_workers = options.release_on_workers;
    so.adaptive_admission = options.adaptive_admission;
    so.staged_alloc = options.staged_alloc;
    so.admission_trace = options.admission_trace;
    so.lock_manager = options.lock_manager;
    so.lock = options.lock;
    so.num_sequencers = options.peers != nullptr ? options.peers->num_nodes() : 1;
    so.epoch_in_id = options.peers != nullptr;
    so.window_epochs = window_epochs;
    so.max_held_reads_bytes = options.max_held_reads_bytes;
    if (options.peers != nullptr) {
      so.is_local = [local](PartitionId q) { return q < local.size() && local[q]; };
      Engine* engine = e.get();
      so.clock_epoch = [engine] { return engine->ClockEpoch(); };
    }
    auto s = Scheduler::Create(so, e->stores_[p].get(), partitioner, procedures, transport, e.get());
    if (!s.ok()) return s.status();
    e->schedulers_[p] = std::move(*s);
  }
  if (!options.log.dir.empty()) {
    Engine* self = e.get();
    e->stage_ = std::make_unique<LogStage>(
        options.log, options.peers != nullptr ? options.peers->num_nodes() : 1,
        options.peers != nullptr ? options.peers->node_id() : 0, options.peers, options.peers != nullptr,
        [self](std::shared_ptr<const pb::Batch> b) { self->EnqueueLocal(b); },
        [self](pb::TxnResult r) { self->DeliverNow(std::move(r)); },
        [self](const absl::Status& s) { self->OnLogFailure(s); });
    // Reads and results for other nodes leave once their epoch is durable
    // here (scheduler/peer_outbox.h).
    // While some wait, idle epochs are not logged lazily (LogStage).
    if (e->outbox_ != nullptr) {
      PeerOutbox* outbox = e->outbox_.get();
      LogStage* stage = e->stage_.get();
      e->stage_->SetDurableHook([outbox](uint64_t epoch) { outbox->SetDurable(epoch); });
      e->stage_->SetWaitingHook([outbox] { return outbox->holding(); });
      outbox->SetHoldHook([stage] { stage->Hurry(); });
    }
  }
  // Last: a peer batch may arrive at once and must find the log stage.
  if (options.peers != nullptr) options.peers->SetHandler(e.get());
  return e;
}

Engine::Engine(const EngineOptions& options, const Partitioner* partitioner, const ProcedureRegistry* procedures)
    : options_(options),
      partitioner_(partitioner),
      procedures_(procedures),
      track_answers_(!options.log.dir.empty() && !options.checkpoint.dir.empty() &&
                     options.checkpoint.client_state != nullptr) {
  const PeerLink* peers = options.peers;
  for (PartitionId p = 0; p < partitioner->num_partitions(); ++p) {
    const bool local = peers == nullptr || peers->NodeOf(p) == peers->node_id();
    const PartitionStoreOptions so{.intent_locks = ParseIntentLockKind(options.intent_locks).value_or(IntentLockKind::kLil)};
    stores_.push_back(local ? std::make_unique<PartitionStore>(so) : nullptr);
    if (local) local_.push_back(p);
  }
  SequencerOptions so;
  so.epoch_us = options.epoch_us;
  so.max_pending = options.max_pending;
  if (peers == nullptr) {
    transport_ = std::make_unique<InProcessTransport>(partitioner->num_partitions());
  } else {
    so.sequencer_id = peers->node_id();
    so.id_scheme = EpochBatcher::IdScheme::kEpochSequencer;
  }
  sequencer_ = std::make_unique<Sequencer>(so, partitioner, this);
}

Engine::~Engine() {
  if (started_ && !stopped_) (void)Stop(std::chrono::milliseconds(0));
}

uint64_t Engine::RegisterClient(TxnClient* client) {
  CHECK(!started_) << "register clients before Start()";
  clients_.push_back(client);
  return clients_.size();  // ids start at 1; 0 means "no client"
}

absl::Status Engine::CheckSchemas() const {
  const PartitionId first = local_[0];
  for (PartitionId p : local_) {
    if (stores_[p]->table_ids() != stores_[first]->table_ids())
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", p, " has other tables than partition ", first));
    for (uint32_t id : stores_[first]->table_ids())
      if (stores_[p]->GetTable(id)->value_size() != stores_[first]->GetTable(id)->value_size())
        return absl::FailedPreconditionError(
            absl::StrCat("table ", id, " has another record size on partition ", p));
  }
  return absl::OkStatus();
}

absl::Status Engine::Start(uint64_t start_us, std::optional<uint64_t> resume_epoch,
                           std::optional<uint64_t> checkpoint_epoch) {
  if (started_) return absl::FailedPreconditionError("engine already started");
  if (absl::Status s = CheckSchemas(); !s.ok()) return s;
  started_ = true;
  if (stage_ == nullptr) {
    if (options_.peers != nullptr) {
      // The clock epoch's origin: the sequencer starts at epoch 1.
      clock_origin_epoch_.store(sequencer_->epochs_closed(), std::memory_order_release);
      start_us_.store(start_us, std::memory_order_release);
    }
    for (PartitionId p : local_) schedulers_[p]->Start();
  } else {
    // ReplayLog sets the clock (before its replay, review finding 1) and
    // starts the schedulers once the checkpoint is loaded.
    absl::Status s = ReplayLog(start_us, resume_epoch, checkpoint_epoch);
    if (!s.ok()) {
      stopped_ = true;
      accepting_.store(false, std::memory_order_release);
      (void)stage_->Close();  // no writer callbacks into a half-started engine
      for (PartitionId p : local_) schedulers_[p]->Stop();
      return s;
    }
  }
  sequencer_->Start(start_us);
  accepting_.store(true, std::memory_order_release);
  StartReclaimer();
  return absl::OkStatus();
}

absl::Status Engine::Stop(std::chrono::milliseconds drain_timeout) {
  if (!started_ || stopped_) return absl::OkStatus();
  stopped_ = true;
  accepting_.store(false, std::memory_order_release);
  // Checkpoints end: every wait in one also watches checkpoint_stop_, a
  // capture child is killed and reaped (within a poll interval), so this
  // wait is short; it has no cap, so nothing uses the stores or the log
  // stage after it (finding 14).
  {
    std::unique_lock<std::mutex> l(inflight_mu_);
    checkpoint_stop_.store(true, std::memory_order_release);
    inflight_cv_.wait(l, [&] { return active_checkpoints_ == 0 && live_children_ == 0; });
  }
  StopReclaimer();
  sequencer_->Stop();  // sequences everything accepted so far
  // Drained: every txn answered, and released by every partition it touched
  // (a passive participant may finish after the coordinator replied).
  // In a cluster, peers' batches for epochs after this node's last one keep
  // arriving and can never merge: drain up to our last epoch, or as far as
  // the merge gets when peers stopped before us (no progress for 200 ms).
  const uint64_t last_epoch = sequencer_->epochs_closed();
  uint64_t seen_merged = 0;
  auto progress_at = std::chrono::steady_clock::now();
  auto drained = [&] {
    if (replied_.load() < submitted_.load()) return false;
    if (options_.peers == nullptr) {
      for (PartitionId p : local_)
        if (!schedulers_[p]->Drained()) return false;
      return true;
    }
    for (PartitionId p : local_)
      if (!schedulers_[p]->Idle()) return false;
    const uint64_t merged = merged_epoch();
    if (merged > last_epoch) return true;
    const auto now = std::chrono::steady_clock::now();
    if (merged != seen_merged) {
      seen_merged = merged;
      progress_at = now;
    }
    return now - progress_at > std::chrono::milliseconds(200);
  };
  const auto deadline = std::chrono::steady_clock::now() + drain_timeout;
  while (!drained() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (PartitionId p : local_) schedulers_[p]->Stop();
  if (stage_ != nullptr) {
    absl::Status s = stage_->Close();
    if (!s.ok()) return s;
  }
  const uint64_t open = submitted_.load() - replied_.load();
  if (open != 0) return absl::DeadlineExceededError(absl::StrCat(open, " txns still running at stop"));
  for (PartitionId p : local_)
    if (!schedulers_[p]->IsQuiescent())
      return absl::InternalError(absl::StrCat("partition ", p, " not quiescent after drain"));
  return absl::OkStatus();
}

absl::Status Engine::Validate(const pb::Txn& txn, bool from_peer) const {
  const bool known_client = txn.client_id() != 0 && (options_.results != nullptr || txn.client_id() <= clients_.size());
  if (txn.has_table_op()) {  // no procedure, so no workload check
    if (!known_client) return absl::InvalidArgumentError(absl::StrCat("unknown client ", txn.client_id()));
    return ValidateTableOp(txn, from_peer);
  }
  if (procedures_->Find(txn.type()) == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("unknown txn type ", txn.type()));
  if (!known_client) return absl::InvalidArgumentError(absl::StrCat("unknown client ", txn.client_id()));
  if (txn.args().size() > options_.max_args_bytes)
    return absl::InvalidArgumentError(
        absl::StrCat("txn args of ", txn.args().size(), " bytes; the limit is ", options_.max_args_bytes));
  if (static_cast<size_t>(txn.read_set_size() + txn.write_set_size()) > options_.max_keys_per_txn)
    return absl::InvalidArgumentError(absl::StrCat("txn has ", txn.read_set_size() + txn.write_set_size(),
                                                   " keys; the limit is ", options_.max_keys_per_txn));
  const KeyCover cover = procedures_->key_cover();
  // With one partition PartitionOf is 0 by its contract (partitioner.h,
  // as EpochBatcher and TxnExecutor::Init rely on): no call per key.
  // Otherwise a partitioner that breaks the contract is caught here.
  const bool check_partition = partitioner_->num_partitions() != 1;
  const PartitionStore* const tables = schema();
  for (const auto* set : {&txn.read_set(), &txn.write_set()}) {
    for (Key k : *set) {
      if (tables->GetTable(KeyTable(k)) == nullptr)
        return absl::InvalidArgumentError(absl::StrCat("key ", k, " names unknown table ", KeyTable(k)));
      // A covered key is locked through its cover only (procedure.h): the
      // key's own lock would not keep out the txns that hold the cover and
      // read or scan it, so their results would depend on timing.
      if (cover != nullptr && cover(k) != k)
        return absl::InvalidArgumentError(
            absl::StrCat("key ", k, " is covered by key ", cover(k), ": declare the cover, not the key"));
      if (check_partition && partitioner_->PartitionOf(k) >= stores_.size())
        return absl::InvalidArgumentError(absl::StrCat("key ", k, " is outside every partition"));
      DCHECK_LT(partitioner_->PartitionOf(k), stores_.size());
      if (options_.key_check) {
        absl::Status s = options_.key_check(k);
        if (!s.ok()) return s;
      }
    }
  }
  if (options_.txn_check) return options_.txn_check(txn);
  return absl::OkStatus();
}

// Counts n txns of `bytes` TxnCharge as submitted before they can possibly
// be answered (so Stop never sees more answers than submissions), refusing
// past max_pending txns or max_pending_bytes.
absl::Status Engine::Admit(size_t n, uint64_t bytes) {
  const uint64_t before = submitted_.fetch_add(n, std::memory_order_acq_rel);
  const uint64_t bytes_before = pending_bytes_.fetch_add(bytes, std::memory_order_acq_rel);
  const uint64_t replied = replied_.load(std::memory_order_acquire);
  const uint64_t open = before + n > replied ? before + n - replied : 0;
  if (open > options_.max_pending || bytes_before + bytes > options_.max_pending_bytes) {
    submitted_.fetch_sub(n, std::memory_order_acq_rel);
    pending_bytes_.fetch_sub(bytes, std::memory_order_acq_rel);
    if (open > options_.max_pending)
      return absl::UnavailableError("engine overloaded: too many txns accepted and not yet answered");
    return absl::UnavailableError(absl::StrCat("engine overloaded: ", bytes_before,
                                               " bytes of txns accepted and not yet answered (max_pending_bytes ",
                                               options_.max_pending_bytes, ")"));
  }
  return absl::OkStatus();
}

absl::Status Engine::NotAccepting() const {
  {
    std::lock_guard<std::mutex> l(log_error_mu_);
    if (!log_error_.ok()) return log_error_;  // the input log failed: its error, not "not ready"
  }
  return absl::UnavailableError("not accepting txns: node not ready yet, or stopping");
}

absl::Status Engine::Submit(pb::Txn txn) {
  if (!accepting_.load(std::memory_order_acquire)) {
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return NotAccepting();
  }
  if (options_.peers != nullptr) txn.set_origin_node(options_.peers->node_id());
  absl::Status s = Validate(txn);
  const uint64_t charge = TxnCharge(txn);
  if (s.ok()) s = Admit(1, charge);
  if (s.ok()) {
    s = sequencer_->Submit(std::move(txn));
    if (!s.ok()) {
      submitted_.fetch_sub(1, std::memory_order_acq_rel);
      pending_bytes_.fetch_sub(charge, std::memory_order_acq_rel);
    }
  }
  if (!s.ok()) rejected_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

absl::Status Engine::SubmitMany(std::vector<pb::Txn>* txns) { return SubmitGroup(txns, true); }

absl::Status Engine::SubmitChecked(std::vector<pb::Txn>* txns) { return SubmitGroup(txns, false); }

absl::Status Engine::SubmitGroup(std::vector<pb::Txn>* txns, bool validate) {
  if (!accepting_.load(std::memory_order_acquire)) {
    rejected_.fetch_add(txns->size(), std::memory_order_relaxed);
    return NotAccepting();
  }
  uint64_t charge = 0;
  for (pb::Txn& t : *txns) {
    if (options_.peers != nullptr) t.set_origin_node(options_.peers->node_id());
    absl::Status s = validate ? Validate(t) : absl::OkStatus();
    if (!s.ok()) {
      rejected_.fetch_add(txns->size(), std::memory_order_relaxed);
      return s;
    }
    charge += TxnCharge(t);
  }
  const size_t n = txns->size();
  absl::Status s = Admit(n, charge);
  if (s.ok()) {
    s = sequencer_->SubmitMany(txns);
    if (!s.ok()) {
      submitted_.fetch_sub(n, std::memory_order_acq_rel);
      pending_bytes_.fetch_sub(charge, std::memory_order_acq_rel);
    }
  }
  if (!s.ok()) rejected_.fetch_add(n, std::memory_order_relaxed);
  return s;
}

void Engine::OnBatch(std::shared_ptr<const pb::Batch> batch) {
  if (options_.peers == nullptr && !options_.checkpoint.dir.empty()) NoteBatchIds(*batch);
  if (track_answers_) NoteUnanswered(*batch);  // before any of its txns can run
  if (options_.record_history) {
    std::lock_guard<std::mutex> l(history_mu_);
    history_.push_back(batch);
  }
  if (options_.peers != nullptr) {
    // Every other node gets the txns touching its partitions, every epoch
    // (an empty batch too, so its schedulers can pass the epoch); each
    // part is kept until that node's log holds its epoch (a rejoin).
    ExpectResults(*batch);  // before any peer can see the batch
    std::vector<std::shared_ptr<pb::Batch>> parts = Parts(*batch);
    for (uint32_t n = 0; n < parts.size(); ++n) {
      if (parts[n] == nullptr) continue;
      if (retention_ != nullptr) retention_->OnSentBatch(n, parts[n]);
      options_.peers->SendBatch(n, *parts[n]);
    }
  }
  if (stage_ != nullptr) {
    stage_->Add(std::move(batch));  // logs it; executes it now or once durable
  } else {
    EnqueueLocal(batch);
  }
}

void Engine::EnqueueLocal(const std::shared_ptr<const pb::Batch>& batch) {
  // Split into one sub-batch per local partition (empty ones too: schedulers
  // must see every epoch). They point into the shared batch.
  std::vector<SubBatchRef> subs(schedulers_.size());
  for (PartitionId p : local_) {
    subs[p].epoch = batch->epoch();
    subs[p].sequencer_id = batch->sequencer_id();
    subs[p].owner = batch;
  }
  // Each txn once per local participant (ParticipantsOf, without its
  // vector per txn: a txn's entries for p are consecutive, so a repeat of
  // p is the last entry).
  const auto add = [&](PartitionId p, const pb::Txn* t) {
    if (is_local(p) && (subs[p].txns.empty() || subs[p].txns.back() != t)) subs[p].txns.push_back(t);
  };
  for (const pb::Txn& t : batch->txns()) {
    if (t.readers_size() == 0 && t.writers_size() == 0) add(0, &t);
    for (PartitionId p : t.readers()) add(p, &t);
    for (PartitionId p : t.writers()) add(p, &t);
  }
  for (PartitionId p : local_) schedulers_[p]->Enqueue(std::move(subs[p]));
}

void Engine::Deliver(pb::TxnResult&& result, uint64_t charge) {
  // The txn's bytes are freed once it ran (its reply is small), even if the
  // reply waits for durability.
  pending_bytes_.fetch_sub(charge, std::memory_order_acq_rel);
  if (stage_ != nullptr) {
    stage_->Hold(std::move(result));  // DeliverNow once its epoch is durable on every node
  } else {
    DeliverNow(std::move(result));
  }
}

void Engine::DeliverNow(pb::TxnResult&& result) {
  const uint64_t txn_id = result.txn_id();
  if (options_.results != nullptr) {
    options_.results->OnResult(std::move(result));
  } else {
    TxnClient* c = result.client_id() - 1 < clients_.size() ? clients_[result.client_id() - 1] : nullptr;
    if (c != nullptr) c->OnResult(std::move(result));
  }
  if (track_answers_) NoteAnswered(txn_id);
  replied_.fetch_add(1, std::memory_order_release);
}

absl::Status Engine::Replay(const std::vector<std::shared_ptr<const pb::Batch>>& batches,
                            std::chrono::milliseconds timeout) {
  if (options_.peers != nullptr) return absl::FailedPreconditionError("Replay runs in one process only");
  if (started_) return absl::FailedPreconditionError("engine already started");
  uint64_t expect = 1;
  for (const auto& b : batches) {
    if (b->epoch() != expect++ || b->sequencer_id() != 0)
      return absl::InvalidArgumentError("replay needs one sequencer's batches of epochs 1, 2, 3, ... in order");
  }
  started_ = true;
  stopped_ = true;  // no sequencer, no new txns
  for (PartitionId p : local_) schedulers_[p]->Start();
  for (const auto& b : batches) EnqueueLocal(b);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto drained = [&] {
    for (PartitionId p : local_)
      if (!schedulers_[p]->Drained()) return false;
    return true;
  };
  while (!drained() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool done = drained();
  for (PartitionId p : local_) schedulers_[p]->Stop();
  if (!done) return absl::DeadlineExceededError("replay did not finish");
  return absl::OkStatus();
}

EngineStats Engine::stats() const {
  EngineStats s;
  s.submitted = submitted_.load();
  s.replied = replied_.load();
  s.rejected = rejected_.load();
  s.bad_peer_batches = bad_peer_batches_.load();
  s.bad_peer_results = bad_peer_results_.load();
  s.forged_peer_results = forged_peer_results_.load();
  s.duplicate_peer_batches = duplicate_peer_batches_.load();
  s.far_peer_batches = far_peer_batches_.load();
  s.conflicting_peer_batches = conflicting_peer_batches_.load();
  s.peer_window_epochs = window_ != nullptr ? window_->window_epochs() : 0;
  s.pending_bytes = pending_bytes_.load();
  s.late_peer_results = late_peer_results_.load();
  s.rejoin_requests = rejoin_requests_.load();
  if (retention_ != nullptr) {
    s.retained_bytes = retention_->message_bytes();
    s.retained_batches = retention_->batches();
    s.retained_batch_bytes = retention_->batch_bytes();
  }
  if (outbox_ != nullptr) s.held_peer_messages = outbox_->held_total();
  s.rejoined_at = rejoined_at_.load();
  s.epochs = sequencer_->epochs_closed();
  if (stage_ != nullptr) {
    s.durable_epoch = stage_->durable_epoch();
    s.durable_watermark = stage_->watermark();
    s.held_replies = stage_->held();
    s.log = stage_->writer_stats();
  }
  s.replayed_txns = replayed_.load();
  s.restored_checkpoint = restored_checkpoint_.load();
  s.checkpoints = checkpoints_.load();
  s.last_checkpoint_epoch = last_checkpoint_epoch_.load();
  {
    std::lock_guard<std::mutex> l(inflight_mu_);
    s.capture_children = live_children_;
  }
  for (PartitionId p : local_) s.partitions.push_back(schedulers_[p]->stats());
  return s;
}

std::vector<LockStats> Engine::lock_stats() const {
  std::vector<LockStats> out;
  for (PartitionId p : local_) out.push_back(schedulers_[p]->lock_stats());
  return out;
}

std::vector<std::shared_ptr<const pb::Batch>> Engine::history() const {
  std::lock_guard<std::mutex> l(history_mu_);
  return history_;
}

}  // namespace detdb
