// Invariant checking shared by the two DCLP variants (LOCKING.md 5.6,
// D1-D6). From the admitted, unreleased txns alone it derives what every
// hash lock and every predecessor count must be, using two facts of the
// algorithm: writers on a slot release in id order, and a read cannot
// release before the writer in front of it.
//
// Thread-safety: none; runs on the lock thread inside CheckInvariants().
#ifndef DETDB_LOCKMGR_DCLP_CHECK_H_
#define DETDB_LOCKMGR_DCLP_CHECK_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lockmgr/lock_manager.h"

namespace detdb {
namespace lockmgr_internal {

// What one slot must look like.
struct SlotExpectation {
  uint64_t slot;
  const LockTxn* last_x;                        // D1: newest unreleased writer, or null
  std::vector<const LockTxn*> reads_after;      // D2: unreleased readers after last_x
  std::vector<const LockTxn*> writers_on_reads; // writers whose units are reads (VT list)
};

class DependencyCheck {
 public:
  explicit DependencyCheck(std::vector<const LockTxn*> txns) : txns_(std::move(txns)) {
    std::sort(txns_.begin(), txns_.end(),
              [](const LockTxn* a, const LockTxn* b) { return a->id < b->id; });
  }

  // The active txns in id order.
  const std::vector<const LockTxn*>& txns() const { return txns_; }

  // REQUIRES: called for the txns in id order.
  void AddRequest(const LockTxn* t, uint64_t slot, LockMode mode) {
    slots_[slot].push_back({t, mode});
  }

  bool HasSlot(uint64_t slot) const { return slots_.contains(slot); }

  // vt_folds_reads: full DCLP (a writer after a read run waits for the reads
  // only, through the VT); false: fragmented storage (it waits for the
  // previous writer too). Calls check_slot(const SlotExpectation&) for each
  // slot, then verifies every txn's predecessor count and state (D3).
  template <typename SlotFn>
  absl::Status Run(bool vt_folds_reads, SlotFn&& check_slot, uint64_t* blocked) {
    absl::flat_hash_map<const LockTxn*, int32_t> units;
    for (auto& [slot, reqs] : slots_) {
      SlotExpectation e{slot, nullptr, {}, {}};
      for (const auto& [u, mode] : reqs) {
        if (mode == LockMode::kExclusive) {
          const int32_t reads = static_cast<int32_t>(e.reads_after.size());
          const int32_t prev = e.last_x != nullptr ? 1 : 0;
          if (vt_folds_reads) {
            units[u] += reads > 0 ? reads : prev;
            if (reads > 0) e.writers_on_reads.push_back(u);
          } else {
            units[u] += reads + prev;
          }
          e.last_x = u;
          e.reads_after.clear();
        } else {
          units[u] += e.last_x != nullptr ? 1 : 0;
          e.reads_after.push_back(u);
        }
      }
      absl::Status s = check_slot(e);
      if (!s.ok()) return s;
    }
    *blocked = 0;
    for (const LockTxn* t : txns_) {
      const int32_t want = units[t];
      if (t->lm.pending != want)
        return absl::InternalError(absl::StrCat("D3: txn ", t->id, " prednum ", t->lm.pending,
                                                " expected ", want));
      const LockState state = want == 0 ? LockState::kFree : LockState::kBlocked;
      if (t->lm.state != state)
        return absl::InternalError(absl::StrCat("D3: txn ", t->id, " state does not match prednum"));
      *blocked += want != 0;
    }
    return absl::OkStatus();
  }

 private:
  std::vector<const LockTxn*> txns_;
  absl::flat_hash_map<uint64_t, std::vector<std::pair<const LockTxn*, LockMode>>> slots_;
};

}  // namespace lockmgr_internal
}  // namespace detdb

#endif  // DETDB_LOCKMGR_DCLP_CHECK_H_
