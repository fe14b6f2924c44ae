#include "lockmgr/lock_test_driver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace detdb {

LockTestDriver::LockTestDriver(LockManager* lm, std::vector<TestTxn> txns, bool check_invariants)
    : lm_(lm), txns_(std::move(txns)), slots_(txns_.size()), check_invariants_(check_invariants) {
  for (size_t i = 0; i < txns_.size(); ++i) {
    if (i > 0 && txns_[i].id <= txns_[i - 1].id) Fail("test workload ids not increasing");
    slots_[i].lt.id = txns_[i].id;
    slots_[i].lt.reads = txns_[i].reads;
    slots_[i].lt.writes = txns_[i].writes;
    slots_[i].lt.user = &slots_[i];
  }
}

size_t LockTestDriver::IndexOf(TxnId id) const {
  auto it = std::lower_bound(txns_.begin(), txns_.end(), id,
                             [](const TestTxn& t, TxnId v) { return t.id < v; });
  return it != txns_.end() && it->id == id ? static_cast<size_t>(it - txns_.begin()) : txns_.size();
}

void LockTestDriver::Fail(std::string msg) {
  if (status_.ok()) status_ = absl::InternalError(absl::StrCat(std::string(lm_->name()), ": ", msg));
}

void LockTestDriver::Check(const char* where) {
  if (!check_invariants_) return;
  absl::Status s = lm_->CheckInvariants();
  if (!s.ok()) Fail(absl::StrCat("after ", where, ": ", s.message()));
}

static bool Contains(const std::vector<Key>& v, Key k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

std::vector<TxnId> LockTestDriver::Collect() {
  std::vector<TxnId> out;
  for (LockTxn* lt : ready_) {
    Slot* s = static_cast<Slot*>(lt->user);
    const size_t i = static_cast<size_t>(s - slots_.data());
    const TestTxn& t = txns_[i];
    if (!s->admitted) Fail(absl::StrCat("G4: txn ", t.id, " dispatched before admission"));
    if (s->dispatched) Fail(absl::StrCat("G4: txn ", t.id, " dispatched twice"));
    s->dispatched = true;
    // G1: every earlier conflicting txn must have been released.
    for (size_t j = oldest_; j < i; ++j) {
      if (slots_[j].released) continue;
      const TestTxn& e = txns_[j];
      bool conflict = false;
      for (Key k : t.writes) conflict |= Contains(e.reads, k) || Contains(e.writes, k);
      for (Key k : t.reads) conflict |= Contains(e.writes, k);
      if (conflict)
        Fail(absl::StrCat("G1: txn ", t.id, " dispatched while earlier conflicting txn ", e.id,
                          " holds its locks"));
    }
    out.push_back(t.id);
    running_.push_back(t.id);
    dispatched_.push_back(t.id);
  }
  ready_.clear();
  return out;
}

std::vector<TxnId> LockTestDriver::Poll() {
  lm_->Poll(/*input_idle=*/next_ == txns_.size() || !lm_->CanAdmit(), &ready_);
  Check("Poll");
  std::vector<TxnId> out = Collect();
  // G5: the oldest unreleased txn waits for nothing, so it must be running.
  if (oldest_ < next_ && !slots_[oldest_].dispatched)
    Fail(absl::StrCat("G5: oldest unreleased txn ", txns_[oldest_].id, " not running after Poll"));
  return out;
}

std::vector<TxnId> LockTestDriver::AdmitOne() {
  if (!CanAdmit()) {
    Fail("AdmitOne: cannot admit");
    return {};
  }
  Slot& s = slots_[next_++];
  s.admitted = true;
  // The hint a lock thread gives (LockManager::Prefetch): it must change
  // nothing, which every Check after it verifies.
  if (next_ < slots_.size()) lm_->Prefetch(slots_[next_].lt);
  lm_->Lock(&s.lt, &ready_);
  Check("Lock");
  return Collect();
}

std::vector<TxnId> LockTestDriver::AdmitAll() {
  std::vector<TxnId> out;
  for (;;) {
    for (TxnId id : Poll()) out.push_back(id);
    if (!CanAdmit()) break;
    for (TxnId id : AdmitOne()) out.push_back(id);
  }
  return out;
}

std::vector<TxnId> LockTestDriver::Done(TxnId id) {
  auto it = std::find(running_.begin(), running_.end(), id);
  if (it == running_.end()) {
    Fail(absl::StrCat("Done(", id, "): txn is not running"));
    return {};
  }
  running_.erase(it);
  Slot& s = slots_[IndexOf(id)];
  lm_->Release(&s.lt, &ready_);
  s.released = true;
  Check("Release");
  while (oldest_ < slots_.size() && slots_[oldest_].released) ++oldest_;
  std::vector<TxnId> out = Collect();
  for (TxnId x : Poll()) out.push_back(x);
  return out;
}

absl::Status LockTestDriver::RunToEnd(Order order, std::mt19937_64* rng) {
  size_t steps = 0;
  const size_t max_steps = 20 * txns_.size() + 100;
  while (oldest_ < txns_.size() && status_.ok()) {
    if (++steps > max_steps) {
      Fail("no progress");
      break;
    }
    Poll();
    const bool coin = order == Order::kRandom ? (*rng)() % 2 == 0 : true;
    if (CanAdmit() && (running_.empty() || coin)) {
      AdmitOne();
      continue;
    }
    if (running_.empty()) {
      Fail(absl::StrCat("stuck: nothing running, ", txns_.size() - next_, " not admitted, ",
                        oldest_, " released in order"));
      break;
    }
    size_t pick = 0;
    if (order == Order::kRandom) {
      pick = (*rng)() % running_.size();
    } else {
      pick = std::distance(running_.begin(), order == Order::kOldestFirst
                                                 ? std::min_element(running_.begin(), running_.end())
                                                 : std::max_element(running_.begin(), running_.end()));
    }
    Done(running_[pick]);
  }
  if (status_.ok()) {
    for (size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].dispatched || !slots_[i].released) Fail(absl::StrCat("G4: txn ", txns_[i].id, " never ran"));
    if (!lm_->IsQuiescent()) Fail("G5: not quiescent at the end");
    const LockStats st = lm_->stats();
    if (st.active != 0 || st.blocked != 0) Fail("G5: stats show active or blocked txns at the end");
  }
  return status_;
}

}  // namespace detdb
