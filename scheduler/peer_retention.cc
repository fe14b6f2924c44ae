#include "scheduler/peer_retention.h"

#include <algorithm>

#include "glog/logging.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {

namespace {
// What one heap allocation costs beyond what it asked for: the allocator's
// header and the rounding up to 16 bytes (glibc malloc), on average.
constexpr uint64_t kAllocationOverhead = 16;
// make_shared's control block beside the object: the vtable pointer and
// the use and weak counts.
constexpr uint64_t kControlBlock = sizeof(void*) + 2 * sizeof(int);
}  // namespace

uint64_t PeerRetention::MemoryOf(const google::protobuf::Message& kept, size_t slot) {
  // SpaceUsedLong: the object and what its fields allocated (strings beyond
  // the inline buffer, repeated fields' arrays and elements), by
  // reflection; not the allocator's headers of those. Its slot in the
  // epoch's vector twice: a vector's capacity runs up to double its size.
  return kept.SpaceUsedLong() + kControlBlock + kAllocationOverhead + 2 * slot;
}

uint64_t PeerRetention::EpochBytes() {
  // A map node: the red-black tree's node header (colour, three pointers),
  // the key and the Kept (two vectors), in one allocation.
  return 4 * sizeof(void*) + sizeof(uint64_t) + sizeof(Kept) + kAllocationOverhead;
}

PeerRetention::PeerRetention(uint32_t num_nodes, uint32_t self, uint64_t max_message_bytes)
    : self_(self), max_message_bytes_(max_message_bytes) {
  for (uint32_t n = 0; n < num_nodes; ++n) nodes_.push_back(n == self ? nullptr : std::make_unique<Node>());
}

void PeerRetention::Start(uint64_t first_epoch) {
  for (auto& n : nodes_) {
    if (n == nullptr) continue;
    std::lock_guard<std::mutex> l(n->mu);
    // Never below the anchor, which may be set first (a peer's checkpoint
    // heard during a rejoin's STATE; review 2 finding 8).
    n->kept_from = std::max<uint64_t>({n->kept_from, 1, first_epoch});
    TrimLocked(n.get());
  }
}

void PeerRetention::KeepLocked(Batches* m, uint64_t durable, std::shared_ptr<const pb::Batch> batch) {
  if (batch->epoch() <= durable) return;
  const uint64_t bytes = batch->ByteSizeLong();
  KeptBatch& k = (*m)[batch->epoch()];
  if (k.batch != nullptr) {
    batches_.fetch_sub(1, std::memory_order_relaxed);
    batch_bytes_.fetch_sub(k.bytes, std::memory_order_relaxed);
  }
  k.batch = std::move(batch);
  k.bytes = bytes;
  batches_.fetch_add(1, std::memory_order_relaxed);
  batch_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void PeerRetention::DropThroughLocked(Batches* m, uint64_t epoch) {
  const auto end = m->upper_bound(epoch);
  for (auto it = m->begin(); it != end; ++it) {
    batches_.fetch_sub(1, std::memory_order_relaxed);
    batch_bytes_.fetch_sub(it->second.bytes, std::memory_order_relaxed);
  }
  m->erase(m->begin(), end);
}

std::vector<std::shared_ptr<const pb::Batch>> PeerRetention::After(const Batches& m, uint64_t epoch,
                                                                  uint64_t max_bytes, bool* more) {
  std::vector<std::shared_ptr<const pb::Batch>> out;
  uint64_t bytes = 0;
  auto it = m.upper_bound(epoch);
  for (; it != m.end(); ++it) {
    if (!out.empty() && bytes + it->second.bytes > max_bytes) break;
    bytes += it->second.bytes;
    out.push_back(it->second.batch);
  }
  if (more != nullptr) *more = it != m.end();
  return out;
}

void PeerRetention::OnSentBatch(uint32_t node, std::shared_ptr<const pb::Batch> batch) {
  Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  KeepLocked(&n.sent, n.durable, std::move(batch));
}

void PeerRetention::OnReceivedBatch(uint32_t node, std::shared_ptr<const pb::Batch> batch) {
  Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  KeepLocked(&n.received, n.durable, std::move(batch));
}

void PeerRetention::OnSentReads(uint32_t node, PartitionId to, const pb::RemoteReads& msg) {
  const uint64_t epoch = EpochBatcher::IdEpoch(msg.txn_id());
  // The copy and its size before the lock (the size walks it by reflection).
  auto kept = std::make_shared<const pb::RemoteReads>(msg);
  uint64_t bytes = MemoryOf(*kept, sizeof(KeptReads));
  Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  if (epoch < n.kept_from) return;
  auto [it, new_epoch] = n.messages.try_emplace(epoch);
  if (new_epoch) bytes += EpochBytes();  // charged with its first message, dropped with the epoch
  it->second.reads.push_back(KeptReads{to, std::move(kept), bytes});
  ChargeLocked(&n, node, bytes);
}

void PeerRetention::OnSentResult(uint32_t node, const pb::TxnResult& result) {
  const uint64_t epoch = EpochBatcher::IdEpoch(result.txn_id());
  auto kept = std::make_shared<const pb::TxnResult>(result);
  uint64_t bytes = MemoryOf(*kept, sizeof(KeptResult));
  Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  if (epoch < n.kept_from) return;
  auto [it, new_epoch] = n.messages.try_emplace(epoch);
  if (new_epoch) bytes += EpochBytes();
  it->second.results.push_back(KeptResult{std::move(kept), bytes});
  ChargeLocked(&n, node, bytes);
}

void PeerRetention::ChargeLocked(Node* n, uint32_t node, uint64_t bytes) {
  n->bytes += bytes;
  message_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (n->bytes <= max_message_bytes_) return;
  // The oldest epochs go (never the newest one: its txns may still run).
  uint64_t dropped = 0;
  while (n->bytes > max_message_bytes_ && n->messages.size() > 1) {
    n->kept_from = n->messages.begin()->first + 1;
    dropped += n->messages.begin()->second.reads.size() + n->messages.begin()->second.results.size();
    TrimLocked(n);
  }
  dropped_messages_.fetch_add(dropped, std::memory_order_relaxed);
  LOG_EVERY_T(WARNING, 10) << "keeping more than " << max_message_bytes_ << " bytes of remote reads and results "
                           << "sent to node " << node << " since the newest checkpoint every node holds: "
                           << "dropped those of epochs before " << n->kept_from << "; node " << node
                           << " can now rejoin alone only from a later checkpoint (take checkpoints: "
                           << "detdb --checkpoint_interval_s)";
}

void PeerRetention::TrimLocked(Node* n) {
  while (!n->messages.empty() && n->messages.begin()->first < n->kept_from) {
    uint64_t bytes = 0;
    for (const KeptReads& r : n->messages.begin()->second.reads) bytes += r.bytes;
    for (const KeptResult& r : n->messages.begin()->second.results) bytes += r.bytes;
    n->bytes -= std::min(n->bytes, bytes);
    message_bytes_.fetch_sub(bytes, std::memory_order_relaxed);  // charged alike (ChargeLocked)
    n->messages.erase(n->messages.begin());
  }
}

void PeerRetention::OnPeerDurable(uint32_t node, uint64_t epoch) {
  if (node >= nodes_.size() || nodes_[node] == nullptr) return;
  Node& n = *nodes_[node];
  std::lock_guard<std::mutex> l(n.mu);
  if (epoch <= n.durable) return;
  n.durable = epoch;
  DropThroughLocked(&n.sent, epoch);
  DropThroughLocked(&n.received, epoch);
}

void PeerRetention::SetAnchor(uint64_t epoch) {
  for (auto& n : nodes_) {
    if (n == nullptr) continue;
    std::lock_guard<std::mutex> l(n->mu);
    if (epoch + 1 <= n->kept_from) continue;
    n->kept_from = epoch + 1;
    TrimLocked(n.get());
  }
}

uint64_t PeerRetention::durable(uint32_t node) const {
  const Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  return n.durable;
}

uint64_t PeerRetention::kept_from(uint32_t node) const {
  const Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  return n.kept_from;
}

std::vector<std::shared_ptr<const pb::Batch>> PeerRetention::SentAfter(uint32_t node, uint64_t epoch) const {
  const Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  return After(n.sent, epoch);
}

std::vector<std::shared_ptr<const pb::Batch>> PeerRetention::ReceivedAfter(uint32_t node, uint64_t epoch,
                                                                          uint64_t max_bytes, bool* more) const {
  const Node& n = *nodes_.at(node);
  std::lock_guard<std::mutex> l(n.mu);
  return After(n.received, epoch, max_bytes, more);
}

PeerRetention::Messages PeerRetention::MessagesFrom(uint32_t node, uint64_t from, uint64_t max_bytes,
                                                    uint64_t until) const {
  const Node& n = *nodes_.at(node);
  Messages out;
  std::vector<KeptReads> reads;          // the snapshot: pointers, copied below
  std::vector<KeptResult> results;
  {
    std::lock_guard<std::mutex> l(n.mu);
    out.through = from;
    uint64_t bytes = 0;
    auto it = n.messages.lower_bound(from);
    for (; it != n.messages.end(); ++it) {
      if (it->first >= until) {
        out.through = std::max(from, until);  // nothing kept in [through, until)
        break;
      }
      if (bytes >= max_bytes && bytes > 0) break;
      for (const KeptReads& r : it->second.reads) bytes += r.bytes;
      for (const KeptResult& r : it->second.results) bytes += r.bytes;
      reads.insert(reads.end(), it->second.reads.begin(), it->second.reads.end());
      results.insert(results.end(), it->second.results.begin(), it->second.results.end());
      out.through = it->first + 1;
    }
    out.done = it == n.messages.end();
  }
  // Without the lock: the kept messages are immutable, and the pointers
  // hold them even if they are dropped meanwhile.
  if (copy_hook_) copy_hook_();
  out.reads.reserve(reads.size());
  for (const KeptReads& r : reads) out.reads.emplace_back(r.to, *r.msg);
  out.results.reserve(results.size());
  for (const KeptResult& r : results) out.results.push_back(*r.msg);
  return out;
}

}  // namespace detdb
