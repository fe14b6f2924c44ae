#include "scheduler/scheduler_core.h"

#include "glog/logging.h"

namespace detdb {

bool SubBatchMerger::Add(SubBatchRef&& sb) {
  const auto key = std::make_pair(sb.epoch, sb.sequencer_id);
  if (key < next_ || pending_.contains(key)) return false;
  pending_.emplace(key, std::move(sb));
  return true;
}

bool SubBatchMerger::TakeNext(SubBatchRef* out) {
  if (Held()) return false;  // held at an epoch boundary
  auto it = pending_.find(next_);
  if (it == pending_.end()) return false;  // wait for it: never skip
  *out = std::move(it->second);
  pending_.erase(it);
  if (++next_.second == num_sequencers_) next_ = {next_.first + 1, 0};
  return true;
}

bool SubBatchMerger::NextHasTxns() const {
  if (Held()) return false;
  auto it = pending_.find(next_);
  return it != pending_.end() && !it->second.txns.empty();
}

uint64_t SubBatchMerger::SkipTo(uint64_t epoch) {
  uint64_t dropped = 0;
  auto end = pending_.lower_bound({epoch, 0});
  for (auto it = pending_.begin(); it != end; ++it) dropped += it->second.txns.size();
  pending_.erase(pending_.begin(), end);
  if (epoch > next_.first) next_ = {epoch, 0};
  return dropped;
}

bool SubBatchMerger::HoldAt(uint64_t epoch) {
  if (next_ > std::make_pair(epoch, 0u)) return false;  // already merging epoch or later
  holds_.insert(epoch);
  return true;
}

void SubBatchMerger::ReleaseHold(uint64_t epoch) {
  auto it = holds_.find(epoch);
  if (it != holds_.end()) holds_.erase(it);
}

PartitionCore::PartitionCore(const PartitionCoreOptions& options, std::unique_ptr<LockManager> lm,
                             const TxnExecutor* exec, MergedInput* input, CoreListener* listener)
    : exec_(exec),
      input_(input),
      listener_(listener),
      lm_(std::move(lm)),
      staged_(options.staged_alloc ? std::make_unique<StagedStates>() : nullptr),
      admission_(EngineAdmissionOptions(options.workers, options.max_active, options.adaptive_admission,
                                        options.admission_warmup_us)),
      trace_(options.admission_trace),
      trace_partition_(options.trace_partition) {}

bool PartitionCore::InputAvailable() {
  if (lookahead_ != nullptr || cursor_ < current_.txns.size()) return true;
  return input_->NextHasTxns();
}

// The next txn in merge order, or nullptr if its sub-batch has not arrived.
// The txn stays valid while current_.owner (copied into its state) lives.
const pb::Txn* PartitionCore::NextInput() {
  while (cursor_ == current_.txns.size()) {
    if (!input_->TakeNext(&current_)) return nullptr;
    cursor_ = 0;
    if (staged_ != nullptr && !current_.txns.empty()) staged_->OpenGroup(static_cast<uint32_t>(current_.txns.size()));
  }
  return current_.txns[cursor_++];
}

PartitionTxn* PartitionCore::NewState(const pb::Txn* txn) {
  PartitionTxn* st;
  if (staged_ != nullptr) {
    st = staged_->New(static_cast<uint32_t>(txn->read_set_size() + txn->write_set_size()), txn->type());
  } else if (free_states_.empty()) {
    all_states_.push_back(std::make_unique<PartitionTxn>());
    st = all_states_.back().get();
  } else {
    st = free_states_.back();
    free_states_.pop_back();
  }
  exec_->Init(st, txn, current_.owner);
  if (listener_ != nullptr) listener_->OnTaken(*st);
  return st;
}

void PartitionCore::Release(PartitionTxn* st, ReadyList* ready) {
  if (st->table_op) table_op_running_ = false;
  lm_->Release(&st->lt, ready);
  DCHECK(st->owner == nullptr) << "the owner is dropped by the runner";
  if (staged_ != nullptr) {
    staged_->Release(st);  // the last of its sub-batch frees the sub-batch's memory
  } else {
    st->txn = nullptr;
    free_states_.push_back(st);
  }
  --active_;
  ++released_;
  if (listener_ != nullptr) listener_->OnActiveChanged(active_);
}

AdmitResult PartitionCore::Admit(int slice, const RunnerState& state, ReadyList* ready) {
  AdmitResult out;
  AdmissionSignals sig;
  table_op_waiting_ = false;
  for (int n = 0; n < slice && lm_->CanAdmit() && admission_.MayAdmit(active_) && !table_op_running_; ++n) {
    PartitionTxn* st = lookahead_;
    lookahead_ = nullptr;
    if (st == nullptr) {
      const pb::Txn* txn = NextInput();
      input_idle_ = txn == nullptr;
      sig.input_ran_out = input_idle_;
      if (input_idle_) break;
      st = NewState(txn);
    }
    input_idle_ = false;
    if (st->table_op) {
      // A table operation runs alone: after every txn admitted before it
      // is released, and nothing after it until it is.
      if (active_ > 0) {
        lookahead_ = st;
        table_op_waiting_ = true;
        break;
      }
      table_op_running_ = true;
    }
    // Take the txn after it too, and let the lock manager start loading
    // its lock state (LockManager::Prefetch) while this one locks.
    if (const pb::Txn* next = NextInput(); next != nullptr) {
      lookahead_ = NewState(next);
      lm_->Prefetch(lookahead_->lt);
    }
    ++active_;
    if (listener_ != nullptr) listener_->OnActiveChanged(active_);
    const bool granted = lm_->Lock(&st->lt, ready);
    ++out.admitted;
    out.active_sum += active_;
    ++sig.admitted;
    if (!granted) {
      ++out.blocked;
      ++sig.blocked;
    }
    out.progress = true;
  }
  if (lm_->CanAdmit() && !admission_.MayAdmit(active_)) {
    // The window stopped admission, if there is input to admit: look
    // without taking it (input_idle_ is stale once the window binds).
    input_idle_ = !InputAvailable();
    sig.window_bound = !input_idle_;
    sig.input_ran_out |= input_idle_;
  }
  sig.starved = state.starved_total - starved_seen_;
  starved_seen_ = state.starved_total;
  sig.released = released_;
  released_ = 0;
  sig.parked = state.parked;
  sig.now_us = state.now_us;
  admission_.Adjust(sig);
  if (trace_ != nullptr) trace_->Record(trace_partition_, sig, admission_);
  admission_blocked_ = !lm_->CanAdmit() || !admission_.MayAdmit(active_) || table_op_waiting_ || table_op_running_;
  window_bound_ = sig.window_bound && !admission_.MayAdmit(active_);
  if (sig.window_bound && admission_.MayAdmit(active_)) out.progress = true;  // it grew: admit at once
  lm_->Poll(input_idle_ || admission_blocked_, ready);
  return out;
}

bool RemoteReadsTable::TakeEarlyOrPark(PartitionTxn* st, std::vector<pb::RemoteReads>* spent) {
  std::vector<pb::RemoteReads>& arrived = *spent;  // checked reads that came before the txn was dispatched
  arrived.clear();
  if (guard_) {
    guard_->Take(st->txn->id(), &arrived);
  } else if (auto it = early_.find(st->txn->id()); it != early_.end()) {
    arrived = std::move(it->second);
    early_.erase(it);
  }
  for (const pb::RemoteReads& msg : arrived) TxnExecutor::AddRemote(st, msg);
  if (!st->MissingRemoteReads()) return true;
  parked_.emplace(st->txn->id(), st);  // WAITING: the worker moves on
  return false;
}

PartitionTxn* RemoteReadsTable::OnRemoteReads(pb::RemoteReads&& msg, uint64_t merged_epoch, uint64_t clock_epoch,
                                              RemoteReadsGuard::Verdict* verdict, std::string* why) {
  auto it = parked_.find(msg.txn_id());
  if (guard_) {
    *verdict = guard_->OnReads(&msg, merged_epoch, clock_epoch, why);
    if (*verdict != RemoteReadsGuard::Verdict::kDeliver) return nullptr;  // kept by the guard, or refused
    CHECK(it != parked_.end()) << "txn " << msg.txn_id() << " taken by a worker but not parked";
  } else if (it == parked_.end()) {
    *verdict = RemoteReadsGuard::Verdict::kKept;
    early_[msg.txn_id()].push_back(std::move(msg));  // kept until the txn is dispatched
    return nullptr;
  } else {
    *verdict = RemoteReadsGuard::Verdict::kDeliver;
  }
  PartitionTxn* st = it->second;
  TxnExecutor::AddRemote(st, msg);
  if (st->MissingRemoteReads()) return nullptr;
  parked_.erase(it);
  st->resumed = true;
  return st;
}

}  // namespace detdb
