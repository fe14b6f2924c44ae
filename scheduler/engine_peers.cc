// Engine: what comes from peers in cluster mode (their batches and results)
// and what bounds it: the peer window (peer_batch_window.h), the batch and
// byte limits, the results awaited here. Split from engine.cc for size;
// engine.h documents the class.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "scheduler/engine.h"
#include "xxhash.h"

namespace detdb {

void Engine::ExpectResults(const pb::Batch& batch) {
  std::lock_guard<std::mutex> l(awaiting_mu_);
  for (const pb::Txn& t : batch.txns()) {
    const uint32_t coordinator = options_.peers->NodeOf(ExecutorsOf(t)[0]);
    if (coordinator != options_.peers->node_id())
      awaiting_.emplace(t.id(), Awaited{TxnCharge(t), t.client_id(), t.client_seq(), coordinator});
  }
}

std::vector<std::shared_ptr<pb::Batch>> Engine::Parts(const pb::Batch& batch) const {
  const PeerLink* peers = options_.peers;
  std::vector<std::shared_ptr<pb::Batch>> parts(peers->num_nodes());
  for (uint32_t n = 0; n < parts.size(); ++n) {
    if (n == peers->node_id()) continue;
    parts[n] = std::make_shared<pb::Batch>();
    parts[n]->set_sequencer_id(batch.sequencer_id());
    parts[n]->set_epoch(batch.epoch());
  }
  std::vector<bool> to(parts.size());
  for (const pb::Txn& t : batch.txns()) {
    std::fill(to.begin(), to.end(), false);
    for (PartitionId p : ParticipantsOf(t)) to[peers->NodeOf(p)] = true;
    for (uint32_t n = 0; n < to.size(); ++n)
      if (to[n] && parts[n] != nullptr) *parts[n]->add_txns() = t;
  }
  return parts;
}

absl::Status Engine::CheckPeerBatch(pb::Batch* batch) const {
  const uint32_t seq = batch->sequencer_id();
  if (seq >= options_.peers->num_nodes() || seq == options_.peers->node_id())
    return absl::InvalidArgumentError(absl::StrCat("batch of sequencer ", seq));
  if (batch->epoch() == 0 || batch->epoch() >= EpochBatcher::kMaxEpoch)
    return absl::InvalidArgumentError(absl::StrCat("batch of epoch ", batch->epoch()));
  // An honest sequencer closes its batch past kMaxBatchBytes with one txn
  // (EpochBatcher), so no honest batch is larger than that plus one txn.
  if (const uint64_t most = EpochBatcher::kMaxBatchBytes + LargestTxnBytes(); batch->ByteSizeLong() > most)
    return absl::InvalidArgumentError(
        absl::StrCat("batch of ", batch->ByteSizeLong(), " bytes (at most ", most, " bytes)"));
  return CheckBatchTxns(batch, seq);
}

absl::Status Engine::CheckBatchTxns(pb::Batch* batch, uint32_t seq) const {
  std::vector<uint32_t> scratch;
  int64_t last_index = -1;
  for (pb::Txn& t : *batch->mutable_txns()) {
    if (EpochBatcher::IdEpoch(t.id()) != batch->epoch() || EpochBatcher::IdSequencer(t.id()) != seq ||
        static_cast<int64_t>(EpochBatcher::IdIndex(t.id())) <= last_index)
      return absl::InvalidArgumentError(absl::StrCat("txn id ", t.id(), " out of place in batch (epoch ",
                                                     batch->epoch(), ", sequencer ", seq, ")"));
    last_index = EpochBatcher::IdIndex(t.id());
    absl::Status s = Validate(t, /*from_peer=*/true);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("txn ", t.id(), ": ", s.message()));
    // Derived fields are recomputed, never trusted.
    EpochBatcher::SetParticipants(&t, *partitioner_, &scratch);
    t.set_origin_node(seq);
  }
  return absl::OkStatus();
}

namespace {
// What decides how a batch executes (not the fields CheckPeerBatch derives).
uint64_t BatchHash(const pb::Batch& batch) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const pb::Txn& t : batch.txns()) {
    const uint64_t head[5] = {t.id(), t.type(), static_cast<uint64_t>(t.args().size()),
                              static_cast<uint64_t>(t.read_set_size()), static_cast<uint64_t>(t.write_set_size())};
    XXH3_64bits_update(state, head, sizeof(head));
    XXH3_64bits_update(state, t.args().data(), t.args().size());
    XXH3_64bits_update(state, t.read_set().data(), t.read_set_size() * sizeof(Key));
    XXH3_64bits_update(state, t.write_set().data(), t.write_set_size() * sizeof(Key));
    if (t.has_table_op()) {
      const std::string op = t.table_op().SerializeAsString();
      XXH3_64bits_update(state, op.data(), op.size());
    }
  }
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}
}  // namespace

void Engine::OnPeerBatch(std::shared_ptr<pb::Batch> batch) {
  const uint32_t seq = batch->sequencer_id();
  const uint64_t epoch = batch->epoch();
  const uint64_t hash = BatchHash(*batch);
  // Duplicates and far-future epochs first: cheap, before any txn is looked at.
  auto screen = [&](bool record) {
    if (seq >= options_.peers->num_nodes() || epoch == 0 || epoch >= EpochBatcher::kMaxEpoch)
      return PeerBatchWindow::Verdict::kAccept;  // CheckPeerBatch refuses it with the reason
    const uint64_t merged = merged_epoch(), base = ClockEpoch();
    std::lock_guard<std::mutex> l(window_mu_);
    return record ? window_->Record(seq, epoch, merged, base, hash)
                  : window_->Classify(seq, epoch, merged, base, hash);
  };
  auto refuse = [&](PeerBatchWindow::Verdict v) {
    if (v == PeerBatchWindow::Verdict::kDuplicate) {  // resent: normal once nodes rejoin
      duplicate_peer_batches_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (v == PeerBatchWindow::Verdict::kConflict) {
      conflicting_peer_batches_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_T(ERROR, 1) << "refusing the batch of node " << seq << " for epoch " << epoch
                 << ": it was delivered before with other txns (a forgery, or node " << seq
                 << " diverged); the first is kept";
      return;
    }
    far_peer_batches_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(WARNING, 1000) << "refusing the batch of node " << seq << " for epoch " << epoch << ": "
                               << PeerBatchWindow::Name(v) << " " << ClockEpoch() << " (merged " << merged_epoch()
                               << "; window " << window_->window_epochs() << " epochs)";
  };
  PeerBatchWindow::Verdict v = screen(false);
  if (v != PeerBatchWindow::Verdict::kAccept) return refuse(v);
  absl::Status s = CheckPeerBatch(batch.get());
  if (!s.ok()) {
    // Dropping it stalls the merge at this epoch: safe, never divergent.
    bad_peer_batches_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(ERROR, 100) << "dropping a bad batch from node " << seq << ": " << s;
    return;
  }
  v = screen(true);  // a copy may have been taken meanwhile
  if (v != PeerBatchWindow::Verdict::kAccept) return refuse(v);
  // Kept until the sender's log holds this epoch: if the sender dies and
  // lost its own copy, it sequences the epoch again from what its peers
  // received (a rejoin).
  if (retention_ != nullptr) retention_->OnReceivedBatch(seq, batch);
  if (stage_ != nullptr) {
    stage_->Add(std::move(batch));
  } else {
    EnqueueLocal(batch);
  }
}

void Engine::OnTxnResult(const pb::Txn& txn, pb::TxnResult&& result) {
  if (options_.peers != nullptr && txn.origin_node() != options_.peers->node_id()) {
    // Its origin counts it; kept for the origin's rejoin (it replays the
    // txn and awaits this again), sent once its epoch is durable here.
    outbox_->SendResult(txn.origin_node(), result);
    return;
  }
  Deliver(std::move(result), TxnCharge(txn));
}

void Engine::OnPeerResult(uint32_t from, const pb::TxnResult& result) {
  uint64_t charge = 0;
  {
    std::lock_guard<std::mutex> l(awaiting_mu_);
    auto it = awaiting_.find(result.txn_id());
    if (it == awaiting_.end()) {
      if (early_results_open_ && early_results_.size() < kMaxEarlyResults) {
        // A peer replaying its log may answer before our replay noted what
        // it awaits (engine_recovery.cc).
        early_results_.emplace_back(from, result);
        return;
      }
      if (const uint64_t epoch = EpochBatcher::IdEpoch(result.txn_id()); epoch >= 1 && epoch < merged_epoch()) {
        // Every result awaited for that epoch was noted when it was
        // sequenced here: this one was answered already (a peer replaying,
        // or resending for a rejoin).
        late_peer_results_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      bad_peer_results_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(ERROR, 100) << "dropping a result for txn " << result.txn_id() << " from node " << from
                              << ", which is not awaited here";
      return;
    }
    const Awaited& a = it->second;
    if (from != a.coordinator || result.client_id() != a.client_id || result.client_seq() != a.client_seq) {
      // Only the coordinator runs the procedure and answers; anything else
      // is a forgery (or a divergence). The txn keeps waiting for the real one.
      forged_peer_results_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_T(ERROR, 1) << "refusing a result for txn " << result.txn_id() << " from node " << from
                            << " (client " << result.client_id() << " seq " << result.client_seq()
                            << "): its coordinator is node " << a.coordinator << " (client " << a.client_id
                            << " seq " << a.client_seq << "); the txn waits for its coordinator's result";
      return;
    }
    charge = a.charge;
    awaiting_.erase(it);
  }
  Deliver(pb::TxnResult(result), charge);  // a copy: the peer's message is const
}

uint64_t Engine::ClockEpoch() const {
  const uint64_t start = start_us_.load(std::memory_order_acquire);
  if (start == 0) return 0;  // not started (or replaying): the merged epoch bounds alone
  const uint64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  return clock_origin_epoch_.load(std::memory_order_relaxed) + (now > start ? (now - start) / options_.epoch_us : 0);
}

uint64_t Engine::LargestTxnBytes() const {
  return options_.max_args_bytes + 8 * static_cast<uint64_t>(options_.max_keys_per_txn) + 64;
}

}  // namespace detdb
