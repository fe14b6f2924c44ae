// MeteredLockManager: the real lock manager, counting the keys of every Lock
// and Release, so that the simulation (sim.h) can charge the thread that
// called it the calibrated cost (sim_costs.h).
//
// Thread-safety: as the wrapped LockManager (one thread at a time).
#ifndef DETDB_BENCH_METERED_LOCK_MANAGER_H_
#define DETDB_BENCH_METERED_LOCK_MANAGER_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>

#include "bench/sim_costs.h"
#include "lockmgr/lock_manager.h"

namespace detdb {

class MeteredLockManager final : public LockManager {
 public:
  explicit MeteredLockManager(std::unique_ptr<LockManager> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  bool CanAdmit() const override { return inner_->CanAdmit(); }
  bool Lock(LockTxn* t, ReadyList* ready) override {
    ++ops_;
    keys_ += Keys(*t);
    return inner_->Lock(t, ready);
  }
  void Prefetch(const LockTxn& t) const override { inner_->Prefetch(t); }
  void Release(LockTxn* t, ReadyList* ready) override {
    ++ops_;
    keys_ += Keys(*t);
    inner_->Release(t, ready);
  }
  void Poll(bool input_idle, ReadyList* ready) override { inner_->Poll(input_idle, ready); }
  bool IsQuiescent() const override { return inner_->IsQuiescent(); }
  absl::Status CheckInvariants() const override { return inner_->CheckInvariants(); }
  LockStats stats() const override { return inner_->stats(); }

  // The distinct keys of t (a read-modify-write key is in both sets; the
  // calibration's txns list each key once).
  static uint64_t Keys(const LockTxn& t) {
    uint64_t n = t.writes.size();
    for (Key k : t.reads) n += std::find(t.writes.begin(), t.writes.end(), k) == t.writes.end();
    return n;
  }

  // Virtual ns of the Lock and Release calls since the last call; each
  // call is half of a txn's calibrated Lock + Release, and half of the lock
  // side's overhead per txn beyond the lock manager (extra_txn_ns).
  double TakeCost(const SimCosts::Lock& c, double extra_txn_ns) {
    const double ns = ops_ * (c.txn_ns + extra_txn_ns) / 2 + keys_ * c.key_ns / 2;
    ops_ = keys_ = 0;
    return ns;
  }

 private:
  const std::unique_ptr<LockManager> inner_;
  uint64_t ops_ = 0, keys_ = 0;
};

}  // namespace detdb

#endif  // DETDB_BENCH_METERED_LOCK_MANAGER_H_
