#include "scheduler/engine.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "xxhash.h"

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
  std::unique_ptr<Engine> e(new Engine(options, partitioner, procedures));
  for (PartitionId p = 0; p < partitioner->num_partitions(); ++p) {
    SchedulerOptions so;
    so.partition = p;
    so.workers = options.workers;
    so.lock_manager = options.lock_manager;
    so.lock = options.lock;
    auto s = Scheduler::Create(so, e->stores_[p].get(), partitioner, procedures, e->transport_.get(), e.get());
    if (!s.ok()) return s.status();
    e->schedulers_.push_back(std::move(*s));
  }
  return e;
}

Engine::Engine(const EngineOptions& options, const Partitioner* partitioner, const ProcedureRegistry* procedures)
    : options_(options), partitioner_(partitioner), procedures_(procedures) {
  for (PartitionId p = 0; p < partitioner->num_partitions(); ++p)
    stores_.push_back(std::make_unique<PartitionStore>());
  transport_ = std::make_unique<InProcessTransport>(partitioner->num_partitions());
  SequencerOptions so;
  so.epoch_us = options.epoch_us;
  so.max_pending = options.max_pending;
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

absl::Status Engine::Start() {
  if (started_) return absl::FailedPreconditionError("engine already started");
  for (PartitionId p = 1; p < stores_.size(); ++p) {
    if (stores_[p]->table_ids() != stores_[0]->table_ids())
      return absl::FailedPreconditionError(absl::StrCat("partition ", p, " has other tables than partition 0"));
    for (uint32_t id : stores_[0]->table_ids())
      if (stores_[p]->GetTable(id)->value_size() != stores_[0]->GetTable(id)->value_size())
        return absl::FailedPreconditionError(
            absl::StrCat("table ", id, " has another record size on partition ", p));
  }
  started_ = true;
  for (auto& s : schedulers_) s->Start();
  sequencer_->Start();
  return absl::OkStatus();
}

absl::Status Engine::Stop(std::chrono::milliseconds drain_timeout) {
  if (!started_ || stopped_) return absl::OkStatus();
  stopped_ = true;
  sequencer_->Stop();  // sequences everything accepted so far
  // Drained: every txn answered, and released by every partition it touched
  // (a passive participant may finish after the coordinator replied).
  auto drained = [&] {
    if (replied_.load() < submitted_.load()) return false;
    for (const auto& s : schedulers_)
      if (!s->Drained()) return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + drain_timeout;
  while (!drained() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (auto& s : schedulers_) s->Stop();
  const uint64_t open = submitted_.load() - replied_.load();
  if (open != 0) return absl::DeadlineExceededError(absl::StrCat(open, " txns still running at stop"));
  for (PartitionId p = 0; p < schedulers_.size(); ++p)
    if (!schedulers_[p]->IsQuiescent())
      return absl::InternalError(absl::StrCat("partition ", p, " not quiescent after drain"));
  return absl::OkStatus();
}

absl::Status Engine::Validate(const pb::Txn& txn) const {
  if (procedures_->Find(txn.type()) == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("unknown txn type ", txn.type()));
  if (txn.client_id() == 0 || txn.client_id() > clients_.size())
    return absl::InvalidArgumentError(absl::StrCat("unknown client ", txn.client_id()));
  if (static_cast<size_t>(txn.read_set_size() + txn.write_set_size()) > options_.max_keys_per_txn)
    return absl::InvalidArgumentError(absl::StrCat("txn has ", txn.read_set_size() + txn.write_set_size(),
                                                   " keys; the limit is ", options_.max_keys_per_txn));
  for (const auto* set : {&txn.read_set(), &txn.write_set()}) {
    for (Key k : *set) {
      if (stores_[0]->GetTable(KeyTable(k)) == nullptr)
        return absl::InvalidArgumentError(absl::StrCat("key ", k, " names unknown table ", KeyTable(k)));
      if (partitioner_->PartitionOf(k) >= stores_.size())
        return absl::InvalidArgumentError(absl::StrCat("key ", k, " is outside every partition"));
    }
  }
  return absl::OkStatus();
}

// Counts n txns as submitted before they can possibly be answered (so Stop
// never sees more answers than submissions), refusing past max_pending.
absl::Status Engine::Admit(size_t n) {
  const uint64_t before = submitted_.fetch_add(n, std::memory_order_acq_rel);
  if (before + n - replied_.load(std::memory_order_acquire) > options_.max_pending) {
    submitted_.fetch_sub(n, std::memory_order_acq_rel);
    return absl::UnavailableError("engine overloaded: too many txns accepted and not yet answered");
  }
  return absl::OkStatus();
}

absl::Status Engine::Submit(pb::Txn txn) {
  absl::Status s = Validate(txn);
  if (s.ok()) s = Admit(1);
  if (s.ok()) {
    s = sequencer_->Submit(std::move(txn));
    if (!s.ok()) submitted_.fetch_sub(1, std::memory_order_acq_rel);
  }
  if (!s.ok()) rejected_.fetch_add(1, std::memory_order_relaxed);
  return s;
}

absl::Status Engine::SubmitMany(std::vector<pb::Txn>* txns) {
  for (const pb::Txn& t : *txns) {
    absl::Status s = Validate(t);
    if (!s.ok()) {
      rejected_.fetch_add(txns->size(), std::memory_order_relaxed);
      return s;
    }
  }
  const size_t n = txns->size();
  absl::Status s = Admit(n);
  if (s.ok()) {
    s = sequencer_->SubmitMany(txns);
    if (!s.ok()) submitted_.fetch_sub(n, std::memory_order_acq_rel);
  }
  if (!s.ok()) rejected_.fetch_add(n, std::memory_order_relaxed);
  return s;
}

void Engine::OnBatch(std::shared_ptr<const pb::Batch> batch) {
  if (options_.record_history) {
    std::lock_guard<std::mutex> l(history_mu_);
    history_.push_back(batch);
  }
  // Split into one sub-batch per partition (empty ones too: schedulers must
  // see every epoch). In one process they point into the shared batch.
  std::vector<SubBatchRef> subs(schedulers_.size());
  for (SubBatchRef& s : subs) {
    s.epoch = batch->epoch();
    s.sequencer_id = batch->sequencer_id();
    s.owner = batch;
  }
  for (const pb::Txn& t : batch->txns())
    for (PartitionId p : ParticipantsOf(t)) subs[p].txns.push_back(&t);
  for (PartitionId p = 0; p < schedulers_.size(); ++p) schedulers_[p]->Enqueue(std::move(subs[p]));
}

void Engine::OnTxnResult(const pb::Txn& txn, pb::TxnResult result) {
  TxnClient* c = txn.client_id() - 1 < clients_.size() ? clients_[txn.client_id() - 1] : nullptr;
  if (c != nullptr) c->OnResult(result);
  replied_.fetch_add(1, std::memory_order_release);
}

uint64_t Engine::Digest() const {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const auto& s : stores_) {
    const uint64_t d = s->Digest();
    XXH3_64bits_update(state, &d, sizeof(d));
  }
  const uint64_t out = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return out;
}

EngineStats Engine::stats() const {
  EngineStats s;
  s.submitted = submitted_.load();
  s.replied = replied_.load();
  s.rejected = rejected_.load();
  s.epochs = sequencer_->epochs_closed();
  for (const auto& sch : schedulers_) s.partitions.push_back(sch->stats());
  return s;
}

std::vector<LockStats> Engine::lock_stats() const {
  std::vector<LockStats> out;
  for (const auto& sch : schedulers_) out.push_back(sch->lock_stats());
  return out;
}

std::vector<std::shared_ptr<const pb::Batch>> Engine::history() const {
  std::lock_guard<std::mutex> l(history_mu_);
  return history_;
}

}  // namespace detdb
