#include "scheduler/peer_outbox.h"

#include "sequencer/epoch_batcher.h"

namespace detdb {

PeerOutbox::PeerOutbox(PeerLink* peers, PeerRetention* retention, bool gated)
    : peers_(peers), retention_(retention), gated_(gated) {}

void PeerOutbox::Send(PartitionId to, pb::RemoteReads msg) {
  const uint32_t node = peers_->NodeOf(to);
  if (node == peers_->node_id()) {
    peers_->Send(to, std::move(msg));
    return;
  }
  if (retention_ != nullptr) retention_->OnSentReads(node, to, msg);
  Gate(to, std::move(msg));
}

void PeerOutbox::SendResult(uint32_t node, const pb::TxnResult& result) {
  if (retention_ != nullptr) retention_->OnSentResult(node, result);
  GateResult(node, result);
}

void PeerOutbox::Resend(PartitionId to, pb::RemoteReads msg) { Gate(to, std::move(msg)); }

void PeerOutbox::ResendResult(uint32_t node, const pb::TxnResult& result) { GateResult(node, result); }

void PeerOutbox::Gate(PartitionId to, pb::RemoteReads msg) {
  bool held = false, first = false;
  if (gated_) {
    const uint64_t epoch = EpochBatcher::IdEpoch(msg.txn_id());
    std::lock_guard<std::mutex> l(mu_);
    if (epoch > durable_) {
      held_[epoch].reads.emplace_back(to, std::move(msg));
      held = true;
      held_total_.fetch_add(1, std::memory_order_relaxed);
      first = ++held_count_ == 1;
      holding_.store(true, std::memory_order_release);
    }
  }
  if (!held) {
    peers_->Send(to, std::move(msg));
  } else if (first && hold_hook_) {
    hold_hook_();
  }
}

void PeerOutbox::GateResult(uint32_t node, const pb::TxnResult& result) {
  bool held = false, first = false;
  if (gated_) {
    const uint64_t epoch = EpochBatcher::IdEpoch(result.txn_id());
    std::lock_guard<std::mutex> l(mu_);
    if (epoch > durable_) {
      held_[epoch].results.emplace_back(node, result);
      held = true;
      held_total_.fetch_add(1, std::memory_order_relaxed);
      first = ++held_count_ == 1;
      holding_.store(true, std::memory_order_release);
    }
  }
  if (!held) {
    peers_->SendResult(node, result);
  } else if (first && hold_hook_) {
    hold_hook_();
  }
}

void PeerOutbox::SetDurable(uint64_t epoch) {
  std::vector<Held> out;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (epoch <= durable_) return;
    durable_ = epoch;
    auto end = held_.upper_bound(epoch);
    for (auto it = held_.begin(); it != end; ++it) {
      held_count_ -= it->second.reads.size() + it->second.results.size();
      out.push_back(std::move(it->second));
    }
    held_.erase(held_.begin(), end);
    holding_.store(held_count_ > 0, std::memory_order_release);
  }
  for (Held& h : out) {
    for (auto& [to, r] : h.reads) peers_->Send(to, std::move(r));
    for (const auto& [node, r] : h.results) peers_->SendResult(node, r);
  }
}

uint64_t PeerOutbox::durable() const {
  std::lock_guard<std::mutex> l(mu_);
  return durable_;
}

uint64_t PeerOutbox::held() const {
  std::lock_guard<std::mutex> l(mu_);
  return held_count_;
}

}  // namespace detdb
