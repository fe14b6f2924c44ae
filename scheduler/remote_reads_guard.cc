#include "scheduler/remote_reads_guard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "scheduler/peer_link.h"
#include "sequencer/epoch_batcher.h"
#include "xxhash.h"

namespace detdb {

namespace {
// What a held message costs beyond its bytes (map node, vector slot).
constexpr uint64_t kHeldOverhead = 128;
}  // namespace

const char* RemoteReadsGuard::Name(Verdict v) {
  switch (v) {
    case Verdict::kDeliver:
      return "delivered";
    case Verdict::kKept:
      return "kept";
    case Verdict::kDuplicate:
      return "duplicate";
    case Verdict::kForged:
      return "forged";
    case Verdict::kTooEarly:
      return "too early";
    case Verdict::kOverBudget:
      return "over the held-reads budget";
    case Verdict::kLate:
      return "late";
    case Verdict::kConflict:
      return "conflicting";
  }
  return "?";
}

RemoteReadsGuard::RemoteReadsGuard(const RemoteReadsGuardOptions& options) : options_(options) {}

uint64_t RemoteReadsGuard::Bytes(const pb::RemoteReads& msg) { return msg.ByteSizeLong() + kHeldOverhead; }

uint64_t RemoteReadsGuard::ContentHash(const pb::RemoteReads& msg) {
  uint64_t h = XXH3_64bits_withSeed(nullptr, 0, msg.from_partition());
  for (const pb::KeyValue& kv : msg.reads()) {
    const uint64_t head[2] = {kv.key(), kv.found() ? 1u : 0u};
    h = XXH3_64bits_withSeed(head, sizeof(head), h);
    h = XXH3_64bits_withSeed(kv.value().data(), kv.value().size(), h);
  }
  return h;
}

void RemoteReadsGuard::CountRefused(Verdict v, const std::string& why) {
  switch (v) {
    case Verdict::kDuplicate:
      ++stats_.duplicate;
      return;
    case Verdict::kConflict: {
      ++stats_.conflicting;
      // At most a line a second: a hostile peer must not fill the disk.
      LOG_EVERY_T(ERROR, 1) << "partition " << options_.self << ": " << why
                 << " (a forgery, or a node that diverged; refused, the first version is used)";
      return;
    }
    default:
      ++stats_.forged;
  }
}

void RemoteReadsGuard::DropHeld(std::map<TxnId, Held>::iterator it) {
  held_bytes_ -= it->second.bytes;
  held_msgs_ -= it->second.msgs.size();
  early_.erase(it);
}

void RemoteReadsGuard::Expire(uint64_t merged_epoch) {
  // Every txn of an epoch two below the merged one has been taken (the
  // scheduler merged the next epoch's sub-batches after finishing it).
  if (!options_.epoch_in_id || merged_epoch < 2) return;
  const TxnId below = EpochBatcher::EpochSequencerId(merged_epoch - 1, 0, 0);
  while (!early_.empty() && early_.begin()->first < below) {
    stats_.expired += early_.begin()->second.msgs.size();
    DropHeld(early_.begin());
  }
}

void RemoteReadsGuard::Expect(const pb::Txn& txn, uint64_t merged_epoch) {
  const TxnId id = txn.id();
  last_expected_ = std::max(last_expected_, id);
  Expected e;
  e.txn = &txn;
  for (PartitionId r : txn.readers()) e.remaining += r != options_.self;
  // Held reads of lower ids are for txns not executed here: ids are taken
  // in increasing order.
  while (!early_.empty() && early_.begin()->first < id) {
    stats_.expired += early_.begin()->second.msgs.size();
    DropHeld(early_.begin());
  }
  if (auto it = early_.find(id); it != early_.end()) {
    std::vector<HeldMsg> msgs;
    msgs.swap(it->second.msgs);
    held_msgs_ -= msgs.size();
    held_bytes_ -= it->second.bytes;
    early_.erase(it);
    std::string why;
    for (HeldMsg& m : msgs) {
      const Verdict v = Check(e, m.msg, m.hash, &why);
      if (v != Verdict::kKept) {
        CountRefused(v, why);
        continue;
      }
      Accept(&e, m.msg.from_partition(), m.hash);
      e.kept.push_back(std::move(m.msg));
    }
  }
  if (!dropped_.empty()) {
    for (auto it = dropped_.lower_bound({id, 0}); it != dropped_.end() && it->first == id;) {
      if (std::none_of(e.received.begin(), e.received.end(), [&](const auto& r) { return r.first == it->second; })) {
        ++stats_.dropped_expected;
        LOG_EVERY_T(ERROR, 1) << "partition " << options_.self << ": txn " << id << " expects the reads of partition "
                   << it->second << ", which were refused (too early or over budget); it waits for them";
      }
      it = dropped_.erase(it);
    }
    while (!dropped_.empty() && dropped_.begin()->first < id) dropped_.erase(dropped_.begin());
  }
  expected_.emplace(id, std::move(e));
  Expire(merged_epoch);
}

void RemoteReadsGuard::Take(TxnId id, std::vector<pb::RemoteReads>* out) {
  auto it = expected_.find(id);
  if (it == expected_.end()) return;
  Expected& e = it->second;
  e.taken = true;
  for (pb::RemoteReads& m : e.kept) out->push_back(std::move(m));
  e.kept.clear();
  if (e.remaining == 0) expected_.erase(it);
}

RemoteReadsGuard::Verdict RemoteReadsGuard::Check(const Expected& e, const pb::RemoteReads& msg, uint64_t hash,
                                                  std::string* why) const {
  const PartitionId from = msg.from_partition();
  const pb::Txn& txn = *e.txn;
  if (from == options_.self) {
    *why = absl::StrCat("reads of txn ", txn.id(), " claim to come from this partition (", from, ")");
    return Verdict::kForged;
  }
  if (std::find(txn.readers().begin(), txn.readers().end(), from) == txn.readers().end()) {
    *why = absl::StrCat("partition ", from, " is not a reader of txn ", txn.id());
    return Verdict::kForged;
  }
  auto got = std::find_if(e.received.begin(), e.received.end(), [&](const auto& r) { return r.first == from; });
  if (got != e.received.end() && got->second == hash) {  // a resend: no need to look further
    *why = absl::StrCat("reads of txn ", txn.id(), " from partition ", from, " arrived already");
    return Verdict::kDuplicate;
  }
  // Exactly the read-set keys on `from`, in read-set order.
  int i = 0;
  for (Key k : txn.read_set()) {
    if (options_.partitioner->PartitionOf(k) != from) continue;
    if (i >= msg.reads_size() || msg.reads(i).key() != k) {
      *why = absl::StrCat("reads of txn ", txn.id(), " from partition ", from, " do not match its read set at read ", i);
      return Verdict::kForged;
    }
    const pb::KeyValue& kv = msg.reads(i++);
    const size_t want = kv.found() ? options_.value_size(k) : 0;
    if (kv.value().size() != want || (kv.found() && want == 0)) {
      *why = absl::StrCat("reads of txn ", txn.id(), " from partition ", from, ": key ", k, " has a value of ",
                          kv.value().size(), " bytes, not ", want);
      return Verdict::kForged;
    }
  }
  if (i != msg.reads_size()) {
    *why = absl::StrCat("reads of txn ", txn.id(), " from partition ", from, " hold ", msg.reads_size(),
                        " reads; its read set has ", i, " keys there");
    return Verdict::kForged;
  }
  if (got != e.received.end()) {
    *why = absl::StrCat("reads of txn ", txn.id(), " from partition ", from,
                        " arrived again with other values than those accepted");
    return Verdict::kConflict;
  }
  return Verdict::kKept;
}

RemoteReadsGuard::Verdict RemoteReadsGuard::OnReads(pb::RemoteReads* msg, uint64_t merged_epoch, uint64_t clock_epoch,
                                                    std::string* why) {
  const TxnId id = msg->txn_id();
  if (auto it = expected_.find(id); it != expected_.end()) {
    Expected& e = it->second;
    const uint64_t hash = ContentHash(*msg);
    const Verdict v = Check(e, *msg, hash, why);
    if (v != Verdict::kKept) {
      CountRefused(v, *why);
      return v;
    }
    Accept(&e, msg->from_partition(), hash);
    if (!e.taken) {
      e.kept.push_back(std::move(*msg));
      return Verdict::kKept;
    }
    if (e.remaining == 0) expected_.erase(it);
    return Verdict::kDeliver;
  }
  if (id <= last_expected_) {
    *why = absl::StrCat("reads of txn ", id, ", which this partition finished or does not execute");
    ++stats_.late;
    return Verdict::kLate;
  }
  Expire(merged_epoch);
  const bool local = !options_.epoch_in_id || !options_.is_local || options_.is_local(msg->from_partition());
  const uint64_t hash = ContentHash(*msg);
  if (auto h = early_.find(id); h != early_.end()) {
    size_t versions = 0;
    for (const HeldMsg& m : h->second.msgs) {
      if (m.msg.from_partition() != msg->from_partition()) continue;
      if (m.hash == hash) {
        *why = absl::StrCat("reads of txn ", id, " from partition ", msg->from_partition(), " are held already");
        ++stats_.duplicate;
        return Verdict::kDuplicate;
      }
      ++versions;
    }
    if (versions >= kMaxVariants) {
      *why = absl::StrCat("reads of txn ", id, " from partition ", msg->from_partition(), ": ", versions,
                          " other versions are held already (only a forger sends different reads)");
      ++stats_.forged;
      return Verdict::kForged;
    }
  }
  auto remember = [&] {
    dropped_.emplace(id, msg->from_partition());
    if (dropped_.size() > kMaxDropped) dropped_.erase(dropped_.begin());
  };
  if (options_.epoch_in_id) {
    const uint64_t epoch = EpochBatcher::IdEpoch(id);
    if (epoch + 1 < merged_epoch) {
      *why = absl::StrCat("reads of txn ", id, " of epoch ", epoch, ", which this partition merged already");
      ++stats_.late;
      return Verdict::kLate;
    }
    const uint64_t base = std::max(merged_epoch, clock_epoch);
    if (!local && epoch >= base + options_.window_epochs) {
      *why = absl::StrCat("reads of txn ", id, " of epoch ", epoch, ", more than ", options_.window_epochs,
                          " epochs ahead of epoch ", base, " (merged ", merged_epoch, ", wall clock ", clock_epoch, ")");
      ++stats_.too_early;
      remember();
      return Verdict::kTooEarly;
    }
  }
  const uint64_t bytes = Bytes(*msg);
  if (!local && held_bytes_ + bytes > options_.max_held_bytes) {
    remember();
    *why = absl::StrCat("reads of txn ", id, " not known yet: ", held_bytes_, " bytes of such reads are held already (",
                        "the limit is ", options_.max_held_bytes, ")");
    ++stats_.over_budget;
    return Verdict::kOverBudget;
  }
  Held& h = early_[id];
  h.msgs.push_back({std::move(*msg), hash});
  h.bytes += bytes;
  held_bytes_ += bytes;
  ++held_msgs_;
  ++stats_.held;
  return Verdict::kKept;
}

RemoteReadsStats RemoteReadsGuard::stats() const {
  RemoteReadsStats s = stats_;
  s.held_now = held_msgs_;
  s.held_bytes = held_bytes_;
  return s;
}

absl::Status CheckReadsSender(const pb::RemoteReads& msg, uint32_t sender, const PeerLink& link,
                              uint32_t num_partitions) {
  const uint32_t from = msg.from_partition();
  if (from >= num_partitions)
    return absl::InvalidArgumentError(absl::StrCat("remote reads from partition ", from, ", which does not exist"));
  if (link.NodeOf(from) != sender)
    return absl::InvalidArgumentError(absl::StrCat("node ", sender, " sent reads of partition ", from,
                                                   ", which node ", link.NodeOf(from), " serves"));
  return absl::OkStatus();
}

}  // namespace detdb
