#include "scheduler/checkpoint_agreement.h"

#include <algorithm>

namespace detdb {

CheckpointAgreement::CheckpointAgreement(uint32_t num_nodes, uint32_t self)
    : num_nodes_(std::max<uint32_t>(num_nodes, 1)),
      self_(self),
      durable_(num_nodes_, 0),
      reported_(num_nodes_, 0),
      seen_(num_nodes_) {}

void CheckpointAgreement::Start(const std::vector<uint64_t>& valid, uint64_t start) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<uint64_t> sorted = valid;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (!sorted.empty()) newest_ = std::max(newest_, sorted.back());
  if (num_nodes_ == 1) {
    // Alone, every valid checkpoint is one "every node" holds.
    for (uint64_t e : sorted)
      if (anchors_.empty() || e > anchors_.back()) anchors_.push_back(e);
  } else if (start > 0 && (anchors_.empty() || start > anchors_.back())) {
    anchors_.push_back(start);  // every node holds it (the handshake chose it so)
  }
  if (anchors_.size() > kMaxRemembered) anchors_.erase(anchors_.begin(), anchors_.end() - kMaxRemembered);
  const uint64_t a = anchors_.empty() ? 0 : anchors_.back();
  for (uint64_t e : sorted)
    if (e > a) own_.insert(e);
  // Peers may have reported theirs before this node started.
  for (uint64_t e : std::vector<uint64_t>(own_.begin(), own_.end())) CheckCommonLocked(e);
}

uint64_t CheckpointAgreement::OnPublished(uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  newest_ = std::max(newest_, epoch);
  if (anchors_.empty() || epoch > anchors_.back()) {
    own_.insert(epoch);
    CheckCommonLocked(epoch);
  }
  return newest_;
}

void CheckpointAgreement::OnPeerDurable(uint32_t node, uint64_t epoch) {
  if (node >= num_nodes_ || node == self_) return;
  std::lock_guard<std::mutex> l(mu_);
  durable_[node] = std::max(durable_[node], epoch);
}

bool CheckpointAgreement::OnPeerCheckpoint(uint32_t node, uint64_t epoch) {
  if (node >= num_nodes_ || node == self_) return false;
  std::lock_guard<std::mutex> l(mu_);
  // A node publishes a checkpoint only once its epoch is durable on every
  // node, and its newest published epoch never goes down.
  if (epoch > durable_[node] || epoch < reported_[node]) return false;
  if (epoch == reported_[node]) return true;
  reported_[node] = epoch;
  if (!anchors_.empty() && epoch <= anchors_.back()) return true;
  std::set<uint64_t>& seen = seen_[node];
  seen.insert(epoch);
  while (seen.size() > kMaxRemembered) seen.erase(seen.begin());
  CheckCommonLocked(epoch);
  return true;
}

void CheckpointAgreement::CheckCommonLocked(uint64_t epoch) {
  if (!anchors_.empty() && epoch <= anchors_.back()) return;
  if (own_.count(epoch) == 0) return;
  for (uint32_t n = 0; n < num_nodes_; ++n)
    if (n != self_ && seen_[n].count(epoch) == 0) return;
  anchors_.push_back(epoch);
  if (anchors_.size() > kMaxRemembered) anchors_.erase(anchors_.begin());
  own_.erase(own_.begin(), own_.upper_bound(epoch));
  for (auto& seen : seen_) seen.erase(seen.begin(), seen.upper_bound(epoch));
  while (own_.size() > kMaxRemembered) own_.erase(own_.begin());
}

uint64_t CheckpointAgreement::newest() const {
  std::lock_guard<std::mutex> l(mu_);
  return newest_;
}

uint64_t CheckpointAgreement::anchor() const {
  std::lock_guard<std::mutex> l(mu_);
  return anchors_.empty() ? 0 : anchors_.back();
}

CheckpointPlan CheckpointAgreement::Plan(const std::vector<uint64_t>& listed, uint32_t keep,
                                         uint32_t max_uncommon) const {
  keep = std::max<uint32_t>(keep, 1);
  std::vector<uint64_t> on_disk = listed;
  std::sort(on_disk.begin(), on_disk.end());
  on_disk.erase(std::unique(on_disk.begin(), on_disk.end()), on_disk.end());
  std::vector<uint64_t> anchors, reported;
  {
    std::lock_guard<std::mutex> l(mu_);
    anchors = anchors_;
    reported = reported_;
  }
  CheckpointPlan plan;
  plan.keep = on_disk;  // unless the anchors say otherwise: keep all, cut nothing
  auto held = [&](uint64_t e) { return std::binary_search(on_disk.begin(), on_disk.end(), e); };
  const uint64_t anchor = anchors.empty() ? 0 : anchors.back();
  if (anchor > 0 && held(anchor)) {
    // The anchor and up to keep-1 earlier anchors still on disk (fallbacks).
    std::vector<uint64_t> kept_anchors{anchor};
    for (auto it = anchors.rbegin() + 1; it != anchors.rend() && kept_anchors.size() < keep; ++it)
      if (held(*it)) kept_anchors.push_back(*it);
    if (kept_anchors.size() >= keep) {
      // Everything from the oldest kept anchor on (finding 16).
      plan.keep.clear();
      for (uint64_t e : on_disk)
        if (e >= kept_anchors.back()) plan.keep.push_back(e);
      plan.cut_before = kept_anchors.back();
    }
  }
  // At most max_uncommon not (yet) common ones after the anchor (finding 15).
  if (num_nodes_ > 1 && max_uncommon > 0) {
    size_t uncommon = 0;
    for (uint64_t e : plan.keep) uncommon += e > anchor ? 1 : 0;
    size_t excess = uncommon > max_uncommon ? uncommon - max_uncommon : 0;
    std::vector<uint64_t> kept;
    for (uint64_t e : plan.keep) {
      if (excess > 0 && e > anchor) {
        plan.dropped_uncommon.push_back(e);
        --excess;
      } else {
        kept.push_back(e);
      }
    }
    plan.keep = std::move(kept);
    if (!plan.dropped_uncommon.empty())
      for (uint32_t n = 0; n < num_nodes_; ++n)
        if (n != self_ && reported[n] < plan.dropped_uncommon.back()) plan.behind.push_back(n);
  }
  return plan;
}

}  // namespace detdb
