#include "scheduler/peer_link.h"

#include <algorithm>

#include "glog/logging.h"
#include "scheduler/remote_reads_guard.h"

namespace detdb {

class InProcessPeerHub::Link final : public PeerLink {
 public:
  Link(InProcessPeerHub* hub, uint32_t node, uint32_t num_nodes) : hub_(hub), node_(node), num_nodes_(num_nodes) {}

  uint32_t node_id() const override { return node_; }
  uint32_t num_nodes() const override { return num_nodes_; }
  uint32_t NodeOf(PartitionId p) const override { return hub_->node_of_.at(p); }
  void SetHandler(PeerHandler* handler) override { handler_ = handler; }
  void RegisterReceiver(PartitionId p, RemoteReadsReceiver* r) override { hub_->receivers_.at(p) = r; }
  void Send(PartitionId to, pb::RemoteReads msg) override {
    const absl::Status s =
        CheckReadsSender(msg, node_, *this, static_cast<uint32_t>(hub_->node_of_.size()));
    if (!s.ok()) {
      hub_->refused_reads_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(WARNING, 1000) << "refusing remote reads: " << s;
      return;
    }
    hub_->receivers_.at(to)->OnRemoteReads(std::move(msg));
  }
  void SendBatch(uint32_t node, const pb::Batch& batch) override {
    CHECK_NE(node, node_);
    hub_->links_.at(node)->handler_->OnPeerBatch(std::make_shared<pb::Batch>(batch));
  }
  void SendResult(uint32_t node, const pb::TxnResult& result) override {
    hub_->links_.at(node)->handler_->OnPeerResult(node_, result);
  }
  void SetDurableEpoch(uint64_t epoch) override {
    for (const auto& l : hub_->links_)
      if (l.get() != this) l->handler_->OnPeerDurable(node_, epoch);
  }
  void SetCheckpointEpoch(uint64_t epoch) override {
    for (const auto& l : hub_->links_)
      if (l.get() != this) l->handler_->OnPeerCheckpoint(node_, epoch);
  }

 private:
  InProcessPeerHub* const hub_;
  const uint32_t node_, num_nodes_;
  PeerHandler* handler_ = nullptr;
};

InProcessPeerHub::InProcessPeerHub(std::vector<uint32_t> node_of)
    : node_of_(std::move(node_of)), receivers_(node_of_.size(), nullptr) {
  const uint32_t n = node_of_.empty() ? 0 : *std::max_element(node_of_.begin(), node_of_.end()) + 1;
  for (uint32_t i = 0; i < n; ++i) links_.push_back(std::make_unique<Link>(this, i, n));
}

InProcessPeerHub::~InProcessPeerHub() = default;

PeerLink* InProcessPeerHub::link(uint32_t node) { return links_.at(node).get(); }

}  // namespace detdb
