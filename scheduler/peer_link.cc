#include "scheduler/peer_link.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "glog/logging.h"
#include "scheduler/remote_reads_guard.h"

namespace detdb {

class InProcessPeerHub::Link final : public PeerLink {
 public:
  Link(InProcessPeerHub* hub, uint32_t node, uint32_t num_nodes) : hub_(hub), node_(node), num_nodes_(num_nodes) {}

  uint32_t node_id() const override { return node_; }
  PeerHandler* attached_handler() const { return handler_; }
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
    if (!Fits(msg)) return;
    hub_->Deliver(node_, hub_->node_of_.at(to), [&] { hub_->receivers_.at(to)->OnRemoteReads(std::move(msg)); });
  }
  void SendBatch(uint32_t node, const pb::Batch& batch) override {
    CHECK_NE(node, node_);
    if (!Fits(batch)) return;
    hub_->Deliver(node_, node, [&] { handler(node)->OnPeerBatch(std::make_shared<pb::Batch>(batch)); });
  }
  void SendResult(uint32_t node, const pb::TxnResult& result) override {
    if (!Fits(result)) return;
    hub_->Deliver(node_, node, [&] { handler(node)->OnPeerResult(node_, result); });
  }
  void SetDurableEpoch(uint64_t epoch) override {
    hub_->durable_[node_].store(epoch);
    for (uint32_t n = 0; n < num_nodes_; ++n)
      if (n != node_) hub_->Deliver(node_, n, [&] { handler(n)->OnPeerDurable(node_, epoch); });
  }
  void SetCheckpointEpoch(uint64_t epoch) override {
    for (uint32_t n = 0; n < num_nodes_; ++n)
      if (n != node_) hub_->Deliver(node_, n, [&] { handler(n)->OnPeerCheckpoint(node_, epoch); });
  }
  void SendRejoinRequest(uint32_t node, const pb::RejoinRequest& request) override {
    CHECK_NE(node, node_);
    if (!Fits(request)) return;
    hub_->Deliver(node_, node, [&] { handler(node)->OnRejoinRequest(node_, request); });
  }
  void SendRejoinReply(uint32_t node, const pb::RejoinReply& reply) override {
    CHECK_NE(node, node_);
    if (!Fits(reply)) return;
    hub_->Deliver(node_, node, [&] { handler(node)->OnRejoinReply(node_, reply); });
  }

 private:
  PeerHandler* handler(uint32_t node) const { return hub_->links_.at(node)->handler_; }
  // Within the hub's message limit; else counted and logged (dropped).
  bool Fits(const google::protobuf::Message& m) const {
    const uint64_t limit = hub_->max_message_bytes_.load(std::memory_order_relaxed);
    if (limit == 0 || m.ByteSizeLong() <= limit) return true;
    hub_->oversized_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(ERROR, 100) << "node " << node_ << ": dropping a message of " << m.ByteSizeLong()
                            << " bytes, over the limit of " << limit;
    return false;
  }

  InProcessPeerHub* const hub_;
  const uint32_t node_, num_nodes_;
  PeerHandler* handler_ = nullptr;  // written only while detached (or before any message)
};

InProcessPeerHub::InProcessPeerHub(std::vector<uint32_t> node_of)
    : node_of_(std::move(node_of)), receivers_(node_of_.size(), nullptr) {
  const uint32_t n = node_of_.empty() ? 0 : *std::max_element(node_of_.begin(), node_of_.end()) + 1;
  up_ = std::make_unique<std::atomic<bool>[]>(n);
  busy_ = std::make_unique<std::atomic<int64_t>[]>(n);
  durable_ = std::make_unique<std::atomic<uint64_t>[]>(n);
  for (uint32_t i = 0; i < n; ++i) {
    links_.push_back(std::make_unique<Link>(this, i, n));
    up_[i].store(true);
    busy_[i].store(0);
    durable_[i].store(0);
  }
}

InProcessPeerHub::~InProcessPeerHub() = default;

PeerLink* InProcessPeerHub::link(uint32_t node) { return links_.at(node).get(); }

template <typename F>
void InProcessPeerHub::Deliver(uint32_t from, uint32_t to, F&& deliver) {
  // Counted first, then checked (Detach: cleared first, then waits for the
  // count): either Detach waits for this delivery or it is skipped.
  busy_[from].fetch_add(1);
  busy_[to].fetch_add(1);
  if (up_[from].load() && up_[to].load()) deliver();
  busy_[to].fetch_sub(1);
  busy_[from].fetch_sub(1);
}

void InProcessPeerHub::Detach(uint32_t node) {
  up_[node].store(false);
  while (busy_[node].load() != 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

void InProcessPeerHub::Attach(uint32_t node) {
  up_[node].store(true);
  PeerHandler* h = links_.at(node)->attached_handler();
  if (h == nullptr) return;
  for (uint32_t n = 0; n < links_.size(); ++n)
    if (n != node) Deliver(n, node, [&] { h->OnPeerDurable(n, durable_[n].load()); });
}

}  // namespace detdb
