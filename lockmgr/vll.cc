// VLL and VLL+SCA (LOCKING.md 3 and 4). See vll.h.
#include "lockmgr/vll.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "lockmgr/lock_manager_common.h"
#include "lockmgr/normalize.h"

namespace detdb {
namespace {

using lockmgr_internal::LockManagerCommon;
using lockmgr_internal::RequestStore;

struct SlotRequest {
  uint32_t slot;
  LockMode mode;
};

struct Counters {
  int32_t cx = 0;  // admitted, unfinished txns with X on the slot
  int32_t cs = 0;  // ... with S
};

class VllLockManager final : public LockManagerCommon {
 public:
  VllLockManager(const LockManagerOptions& o, bool with_sca)
      : LockManagerCommon(with_sca ? "vll_sca" : "vll", o),
        with_sca_(with_sca),
        mask_(o.table_size - 1),
        bit_mask_(o.sca_bits - 1),
        counters_(o.table_size) {
    if (with_sca_) {
      dx_.assign(o.sca_bits / 64 + 1, 0);
      ds_.assign(o.sca_bits / 64 + 1, 0);
    }
  }

  bool CanAdmit() const override {
    return stats_.blocked < options_.vll_blocked_threshold && ActiveBelowBound();
  }

  bool Lock(LockTxn* t, ReadyList* ready) override {
    NormalizeRequests(t->reads, t->writes, [this](Key k) {
      const uint64_t s = Mix64(k) & mask_;
      __builtin_prefetch(&counters_[s], 1);
      return s;
    }, &scratch_);
    const uint32_t n = static_cast<uint32_t>(scratch_.size());
    SlotRequest* req = requests_.Allocate(t, n);
    bool free = true;  // BeginTransaction (3.2)
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t s = static_cast<uint32_t>(scratch_[i].slot);
      req[i] = {s, scratch_[i].mode};
      Counters& c = counters_[s];
      if (req[i].mode == LockMode::kExclusive) {
        free &= ++c.cx == 1 && c.cs == 0;  // t is the only holder
      } else {
        ++c.cs;
        free &= c.cx == 0;  // no writer anywhere
      }
    }
    // Append to the TxnQueue.
    t->lm.prev = tail_;
    t->lm.next = nullptr;
    (tail_ != nullptr ? tail_->lm.next : head_) = t;
    tail_ = t;
    return FinishLock(t, free, ready);
  }

  void Release(LockTxn* t, ReadyList* ready) override {  // FinishTransaction (3.3)
    for (const SlotRequest& r : RequestStore<SlotRequest>::Of(t)) {
      Counters& c = counters_[r.slot];
      if (r.mode == LockMode::kExclusive) {
        --c.cx;
        DCHECK_GE(c.cx, 0);
      } else {
        --c.cs;
        DCHECK_GE(c.cs, 0);
      }
    }
    (t->lm.prev != nullptr ? t->lm.prev->lm.next : head_) = t->lm.next;
    (t->lm.next != nullptr ? t->lm.next->lm.prev : tail_) = t->lm.prev;
    t->lm.prev = t->lm.next = nullptr;
    sca_dirty_ = true;
    FinishRelease(t, &requests_);
  }

  void Poll(bool input_idle, ReadyList* ready) override {  // 3.4
    if (head_ != nullptr && head_->lm.state == LockState::kBlocked) {  // head rule
      Unblock(head_, ready);
      ++stats_.head_rule_grants;
    } else if (with_sca_ && sca_dirty_ && stats_.blocked > 0 &&
               (stats_.blocked >= options_.vll_blocked_threshold ||
                (options_.sca_when_idle && input_idle))) {
      const bool found = RunSca(ready);
      // The first-hit variant stops early: stay dirty so the next poll goes on.
      sca_dirty_ = found && options_.sca_first_hit;
    }
    MaybeCheckInvariants("Poll");
  }

  bool IsQuiescent() const override {
    if (head_ != nullptr || tail_ != nullptr || !StatsQuiescent() || requests_.bytes_live() != 0)
      return false;
    for (const Counters& c : counters_)
      if (c.cx != 0 || c.cs != 0) return false;
    return true;
  }

  absl::Status CheckInvariants() const override {
    absl::flat_hash_map<uint32_t, Counters> want;  // V1
    absl::flat_hash_map<uint32_t, std::pair<bool, bool>> seen;  // slot -> (X, S) by earlier txns
    uint64_t blocked = 0, count = 0;
    const LockTxn* prev = nullptr;
    for (const LockTxn* t = head_; t != nullptr; prev = t, t = t->lm.next) {
      ++count;
      if (t->lm.prev != prev) return absl::InternalError("TxnQueue links broken");
      if (prev != nullptr && prev->id >= t->id)  // V3
        return absl::InternalError(absl::StrCat("V3: TxnQueue not in id order at ", t->id));
      const bool is_blocked = t->lm.state == LockState::kBlocked;
      if (!is_blocked && t->lm.state != LockState::kFree)
        return absl::InternalError(absl::StrCat("txn ", t->id, " in TxnQueue with no state"));
      blocked += is_blocked;
      for (const SlotRequest& r : RequestStore<SlotRequest>::Of(t)) {
        auto& [x_before, s_before] = seen[r.slot];
        const bool x = r.mode == LockMode::kExclusive;
        if (!is_blocked && (x_before || (x && s_before)))  // V4
          return absl::InternalError(absl::StrCat("V4: free txn ", t->id, " conflicts on slot ",
                                                  r.slot, " with an earlier unfinished txn"));
        (x ? want[r.slot].cx : want[r.slot].cs) += 1;
      }
      for (const SlotRequest& r : RequestStore<SlotRequest>::Of(t))
        (r.mode == LockMode::kExclusive ? seen[r.slot].first : seen[r.slot].second) = true;
    }
    if (prev != tail_) return absl::InternalError("TxnQueue tail is wrong");
    if (count != stats_.active) return absl::InternalError("V3: TxnQueue length != active txns");
    if (blocked != stats_.blocked)  // V2
      return absl::InternalError(absl::StrCat("V2: blocked_count ", stats_.blocked, " expected ", blocked));
    if (blocked > options_.vll_blocked_threshold)
      return absl::InternalError(absl::StrCat("V2: ", blocked, " blocked txns exceed the threshold ",
                                              options_.vll_blocked_threshold));
    for (const auto& [slot, c] : want) {
      const Counters& have = counters_[slot];
      if (have.cx != c.cx || have.cs != c.cs)
        return absl::InternalError(absl::StrCat("V1: slot ", slot, " counters (", have.cx, ",", have.cs,
                                                ") expected (", c.cx, ",", c.cs, ")"));
    }
    if (counters_.size() <= lockmgr_internal::kFullScanSlots) {
      for (size_t slot = 0; slot < counters_.size(); ++slot)
        if ((counters_[slot].cx != 0 || counters_[slot].cs != 0) && !want.contains(slot))
          return absl::InternalError(absl::StrCat("V1/V6: slot ", slot, " counts without requests"));
    }
    return absl::OkStatus();
  }

 protected:
  size_t MemoryBytes() const override {
    return counters_.size() * sizeof(Counters) + requests_.bytes_reserved() +
           (dx_.capacity() + ds_.capacity()) * sizeof(uint64_t) +
           touched_.capacity() * sizeof(uint32_t) + scratch_.capacity() * sizeof(NormRequest);
  }

 private:
  void Unblock(LockTxn* t, ReadyList* ready) {
    t->lm.state = LockState::kFree;
    --stats_.blocked;
    ready->push_back(t);
  }

  bool TestBit(const std::vector<uint64_t>& v, uint32_t b) const { return (v[b >> 6] >> (b & 63)) & 1; }
  void SetBit(std::vector<uint64_t>* v, uint32_t b) {
    uint64_t& w = (*v)[b >> 6];
    if (w == 0) touched_.push_back(b >> 6);
    w |= uint64_t{1} << (b & 63);
  }

  // SCA (4.3): returns whether it unblocked a txn.
  bool RunSca(ReadyList* ready) {
    ++stats_.sca_runs;
    for (uint32_t w : touched_) dx_[w] = ds_[w] = 0;  // clear only what was set
    touched_.clear();
    bool found = false;
    for (LockTxn* t = head_; t != nullptr; t = t->lm.next) {
      auto reqs = RequestStore<SlotRequest>::Of(t);
      if (t->lm.state == LockState::kBlocked) {
        bool ok = true;  // check every bit first ...
        for (const SlotRequest& r : reqs) {
          const uint32_t b = r.slot & bit_mask_;
          ok &= r.mode == LockMode::kExclusive ? !TestBit(dx_, b) && !TestBit(ds_, b) : !TestBit(dx_, b);
        }
        if (ok) {
          Unblock(t, ready);
          ++stats_.sca_grants;
          found = true;
        }
      }
      for (const SlotRequest& r : reqs)  // ... then mark, whatever t's state
        SetBit(r.mode == LockMode::kExclusive ? &dx_ : &ds_, r.slot & bit_mask_);
      if (found && options_.sca_first_hit) break;
    }
    return found;
  }

  const bool with_sca_;
  const uint64_t mask_;
  const uint32_t bit_mask_;
  std::vector<Counters> counters_;
  LockTxn* head_ = nullptr;  // TxnQueue, oldest first
  LockTxn* tail_ = nullptr;
  bool sca_dirty_ = true;  // a completion happened since the last SCA run
  std::vector<uint64_t> dx_, ds_;
  std::vector<uint32_t> touched_;  // words of dx_/ds_ that may be non-zero
  RequestStore<SlotRequest> requests_;
  std::vector<NormRequest> scratch_;
};

}  // namespace

std::unique_ptr<LockManager> NewVllLockManager(const LockManagerOptions& options, bool with_sca) {
  return std::make_unique<VllLockManager>(options, with_sca);
}

}  // namespace detdb
