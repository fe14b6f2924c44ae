// Intent locks: the modes, the agents' common slow path, and LIL (the
// counters). The lock-queue implementations (baseline and SLI) are in
// intent_lock_queue.cc. See intent_lock.h.
#include "storage/intent_lock.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "storage/elided_latch.h"

namespace detdb {

namespace {

constexpr int M(IntentMode m) { return static_cast<int>(m); }

// Seed 000, Table 4 (N S X IS IX SIX), in the order of IntentMode.
//                            N      IS     IX     S      SIX    X
constexpr bool kCompat[kIntentModes][kIntentModes] = {
    /* N   */ {true, true, true, true, true, true},
    /* IS  */ {true, true, true, true, true, false},
    /* IX  */ {true, true, true, false, false, false},
    /* S   */ {true, true, false, true, false, false},
    /* SIX */ {true, true, false, false, false, false},
    /* X   */ {true, false, false, false, false, false},
};


}  // namespace

namespace intent_internal {
const IntentMode kSup[kIntentModes][kIntentModes] = {
    // N            IS              IX               S                SIX              X
    {IntentMode::kNone, IntentMode::kIS, IntentMode::kIX, IntentMode::kS, IntentMode::kSIX, IntentMode::kX},     // N
    {IntentMode::kIS, IntentMode::kIS, IntentMode::kIX, IntentMode::kS, IntentMode::kSIX, IntentMode::kX},       // IS
    {IntentMode::kIX, IntentMode::kIX, IntentMode::kIX, IntentMode::kSIX, IntentMode::kSIX, IntentMode::kX},     // IX
    {IntentMode::kS, IntentMode::kS, IntentMode::kSIX, IntentMode::kS, IntentMode::kSIX, IntentMode::kX},        // S
    {IntentMode::kSIX, IntentMode::kSIX, IntentMode::kSIX, IntentMode::kSIX, IntentMode::kSIX, IntentMode::kX},  // SIX
    {IntentMode::kX, IntentMode::kX, IntentMode::kX, IntentMode::kX, IntentMode::kX, IntentMode::kX},            // X
};

// kCovers[h][w]: sup(h, w) == h.
const bool kCovers[kIntentModes][kIntentModes] = {
    {true, false, false, false, false, false},   // N
    {true, true, false, false, false, false},    // IS
    {true, true, true, false, false, false},     // IX
    {true, true, false, true, false, false},     // S
    {true, true, true, true, true, false},       // SIX
    {true, true, true, true, true, true},        // X
};
}  // namespace intent_internal

bool Compatible(IntentMode a, IntentMode b) { return kCompat[M(a)][M(b)]; }
IntentMode Supremum(IntentMode a, IntentMode b) { return intent_internal::kSup[M(a)][M(b)]; }

const char* IntentModeName(IntentMode m) {
  switch (m) {
    case IntentMode::kNone: return "N";
    case IntentMode::kIS: return "IS";
    case IntentMode::kIX: return "IX";
    case IntentMode::kS: return "S";
    case IntentMode::kSIX: return "SIX";
    case IntentMode::kX: return "X";
  }
  return "?";
}

absl::StatusOr<IntentLockKind> ParseIntentLockKind(std::string_view name) {
  if (name == "lil") return IntentLockKind::kLil;
  if (name == "sli") return IntentLockKind::kSli;
  if (name == "queue") return IntentLockKind::kQueue;
  return absl::InvalidArgumentError(absl::StrCat("unknown intent lock kind '", std::string(name), "' (lil, sli, queue)"));
}

const char* IntentLockKindName(IntentLockKind kind) {
  switch (kind) {
    case IntentLockKind::kLil: return "lil";
    case IntentLockKind::kSli: return "sli";
    case IntentLockKind::kQueue: return "queue";
  }
  return "?";
}

// ---------------------------------------------------------------- agents

bool IntentAgent::TryAcquire(uint32_t lock, IntentMode mode) { return Hit(lock, mode) || TryAcquireImpl(lock, mode); }

absl::Status IntentAgent::AcquireSlow(uint32_t lock, IntentMode mode, Clock::time_point deadline) {
  bool dropped = false;
  for (;;) {
    const uint64_t seen = Version(lock);  // before the attempt: a release after it wakes the wait
    if (TryAcquireImpl(lock, mode)) return absl::OkStatus();
    if (!dropped) {  // give back what the txn does not use, then look again
      dropped = true;
      DropUnused();
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      CancelImpl(lock);
      return absl::DeadlineExceededError(absl::StrCat("lock ", lock, " in mode ", IntentModeName(mode),
                                                      " not granted before the deadline"));
    }
    CountWait();
    WaitForChange(lock, seen, std::min(deadline, now + std::chrono::milliseconds(1)));
  }
}

// ---------------------------------------------------------------- LIL

namespace {

class LilTable;

// One lock of the global lock table (seed 000's GLT): the counts of granted
// modes and of waiting absolute requests, under a spin latch.
struct alignas(64) LilLock {
  ElidedLatch latch;                  // taken with LockNoElision: every section writes the counts
  uint32_t granted[kIntentModes] = {};  // guarded by latch
  uint32_t waiting[kIntentModes] = {};  // guarded by latch: posted absolute requests
  std::atomic<uint64_t> version{0};   // bumped by every release, downgrade and cancel
};

// Whether an agent holding `held` (and with `own_wait` posted) may now
// hold `want`. REQUIRES: l.latch held.
bool Grantable(const LilLock& l, IntentMode held, IntentMode want, IntentMode own_wait) {
  for (int j = 1; j < kIntentModes; ++j) {
    const uint32_t others = l.granted[j] - (M(held) == j ? 1 : 0);
    if (others > 0 && !kCompat[M(want)][j]) return false;
  }
  if (!IsAbsolute(want)) {
    for (int j = M(IntentMode::kS); j < kIntentModes; ++j) {
      const uint32_t others = l.waiting[j] - (M(own_wait) == j ? 1 : 0);
      if (others > 0 && !kCompat[M(want)][j]) return false;
    }
  }
  return true;
}

class LilAgent final : public IntentAgent {
 public:
  LilAgent(LilTable* table, uint32_t locks, const std::atomic<uint32_t>* signal)
      : IntentAgent(locks, /*keeps=*/true, signal), t_(table) {}
  ~LilAgent() override;

  void ReleaseAll() override {
    CancelPosted();
    Reduce([](uint32_t, const Entry&, const LilLock&) { return IntentMode::kNone; }, kNoLock);
  }
  void ServeRevocations() override;

 protected:
  bool TryAcquireImpl(uint32_t lock, IntentMode mode) override;
  void CancelImpl(uint32_t lock) override;
  void WaitForChange(uint32_t lock, uint64_t seen, Clock::time_point until) override;
  uint64_t Version(uint32_t lock) const override;
  void EndTxnSlow() override {
    if (holds_absolute_) {  // absolute locks are never cached
      holds_absolute_ = false;
      Reduce([](uint32_t, const Entry& e, const LilLock&) { return IsAbsolute(e.mode) ? IntentMode::kNone : e.mode; },
             kNoLock);
    }
    ServeRevocations();
  }
  void DropUnused() override {
    Reduce([this](uint32_t, const Entry& e, const LilLock&) { return e.txn == txn_ ? e.used : IntentMode::kNone; },
           kNoLock);
  }
  void CountWait() override;

 private:
  // Sets every held lock (or only `only`) to target(lock, entry, its
  // global state; called under the latch), a mode the entry covers: kNone
  // releases it, a weaker mode downgrades it.
  template <typename F>
  void Reduce(F target, uint32_t only);
  void CancelPosted() {
    if (posted_lock_ != kNoLock) CancelImpl(posted_lock_);
  }

  static constexpr uint32_t kNoLock = ~0u;
  LilTable* const t_;
  std::vector<uint32_t> held_;  // locks with entries_[lock].mode != kNone
  uint32_t posted_lock_ = kNoLock;
  IntentMode posted_mode_ = IntentMode::kNone;  // counted in the lock's waiting[] if absolute
};

// The global lock table (seed 000's GLT): per lock the counts of granted
// modes and of waiting absolute requests, under a spin latch.
class LilTable final : public IntentLockTable {
 public:
  explicit LilTable(const IntentLockOptions& options)
      : IntentLockTable(options), locks_(new LilLock[options.locks]) {}
  ~LilTable() override = default;

  std::unique_ptr<IntentAgent> NewAgent() override {
    return std::make_unique<LilAgent>(this, options_.locks, &revoke_signal_);
  }
  IntentLockStats stats() const override {
    IntentLockStats s;
    s.slow_acquires = slow_.load(std::memory_order_relaxed);
    s.absolute_grants = absolute_.load(std::memory_order_relaxed);
    s.waits = waits_.load(std::memory_order_relaxed);
    s.revoked = revoked_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  friend class LilAgent;

  // After a release or cancel (the version was bumped): wakes the waiters.
  void Wake() {
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard<std::mutex> l(sleep_mu_);
    sleep_cv_.notify_all();
  }

  std::unique_ptr<LilLock[]> locks_;
  // Absolute requests posted and not yet granted or cancelled, over all
  // locks: the revocation signal agents read at every EndTxn. Written only
  // by absolute requests: a line every agent keeps shared in its cache.
  alignas(64) std::atomic<uint32_t> revoke_signal_{0};
  // Waits are rare (an absolute request, or an intent behind one): one
  // mutex and condition variable for the table, with a 1 ms recheck.
  alignas(64) std::atomic<uint32_t> sleepers_{0};
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
  std::atomic<uint64_t> slow_{0}, absolute_{0}, waits_{0}, revoked_{0};
};

bool LilAgent::TryAcquireImpl(uint32_t lock, IntentMode mode) {
  CHECK(posted_lock_ == kNoLock || posted_lock_ == lock) << "one posted request per agent";
  Entry& e = entries_[lock];
  const bool in_use = e.mode != IntentMode::kNone && e.txn == txn_;
  if (IsAbsolute(mode) && e.mode != IntentMode::kNone && !in_use) {
    // An absolute request starts from what its txn holds, not from a cached
    // intent (else S on a cached IX would ask for SIX).
    Reduce([](uint32_t l, const Entry&, const LilLock&) { return IntentMode::kNone; }, lock);
  }
  const IntentMode want = Supremum(e.mode, mode);
  const IntentMode used = in_use ? Supremum(e.used, mode) : mode;
  LilLock& l = t_->locks_[lock];
  const IntentMode own_wait = posted_lock_ == lock ? posted_mode_ : IntentMode::kNone;
  t_->slow_.fetch_add(1, std::memory_order_relaxed);
  l.latch.LockNoElision();
  if (Grantable(l, e.mode, want, own_wait)) {
    if (e.mode != IntentMode::kNone) {
      --l.granted[M(e.mode)];
    } else {
      held_.push_back(lock);
    }
    ++l.granted[M(want)];
    if (IsAbsolute(own_wait)) --l.waiting[M(own_wait)];
    l.latch.Unlock();
    if (IsAbsolute(own_wait)) t_->revoke_signal_.fetch_sub(1, std::memory_order_acq_rel);
    posted_lock_ = kNoLock;
    posted_mode_ = IntentMode::kNone;
    e.mode = want;
    e.used = used;
    e.txn = txn_;
    if (IsAbsolute(want)) {
      holds_absolute_ = true;
      t_->absolute_.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  }
  int signal = 0;
  if (own_wait != want) {  // post (or re-post with the mode asked for now)
    if (IsAbsolute(own_wait)) {
      --l.waiting[M(own_wait)];
      --signal;
    }
    if (IsAbsolute(want)) {
      ++l.waiting[M(want)];
      ++signal;
    }
  }
  l.latch.Unlock();
  // The signal rises after the count: an agent that sees it finds the
  // waiting request when it looks (under the latch).
  if (signal > 0) t_->revoke_signal_.fetch_add(1, std::memory_order_acq_rel);
  if (signal < 0) t_->revoke_signal_.fetch_sub(1, std::memory_order_acq_rel);
  posted_lock_ = lock;
  posted_mode_ = want;
  return false;
}

void LilAgent::CancelImpl(uint32_t lock) {
  if (posted_lock_ != lock) return;
  if (IsAbsolute(posted_mode_)) {
    LilLock& l = t_->locks_[lock];
    l.latch.LockNoElision();
    --l.waiting[M(posted_mode_)];
    l.version.fetch_add(1, std::memory_order_seq_cst);  // intents held back by it may go now
    l.latch.Unlock();
    t_->revoke_signal_.fetch_sub(1, std::memory_order_acq_rel);
    t_->Wake();
  }
  posted_lock_ = kNoLock;
  posted_mode_ = IntentMode::kNone;
}

template <typename F>
void LilAgent::Reduce(F target, uint32_t only) {
  bool changed = false;
  for (size_t i = 0; i < held_.size();) {
    const uint32_t lock = held_[i];
    if (only != kNoLock && lock != only) {
      ++i;
      continue;
    }
    Entry& e = entries_[lock];
    LilLock& l = t_->locks_[lock];
    l.latch.LockNoElision();
    const IntentMode to = target(lock, e, l);
    if (to != e.mode) {
      DCHECK(Covers(e.mode, to));
      --l.granted[M(e.mode)];
      if (to != IntentMode::kNone) ++l.granted[M(to)];
      l.version.fetch_add(1, std::memory_order_seq_cst);
    }
    l.latch.Unlock();
    if (to == e.mode) {
      ++i;
      continue;
    }
    changed = true;
    e.mode = to;
    if (to != IntentMode::kNone) {
      ++i;
    } else {
      held_[i] = held_.back();
      held_.pop_back();
    }
  }
  if (changed) t_->Wake();
}

LilAgent::~LilAgent() { ReleaseAll(); }

void LilAgent::ServeRevocations() {
  if (t_->revoke_signal_.load(std::memory_order_acquire) == 0) return;
  uint64_t revoked = 0;
  // A request posted after an entry's look is served at the next boundary.
  Reduce(
      [&](uint32_t, const Entry& e, const LilLock& l) {
        bool blocks = false;
        for (int j = M(IntentMode::kS); j < kIntentModes; ++j)
          if (l.waiting[j] > 0 && !kCompat[j][M(e.mode)]) blocks = true;
        if (!blocks) return e.mode;
        const IntentMode to = e.txn == txn_ ? e.used : IntentMode::kNone;  // keep what the txn asked for
        revoked += to != e.mode;
        return to;
      },
      kNoLock);
  if (revoked > 0) t_->revoked_.fetch_add(revoked, std::memory_order_relaxed);
}

uint64_t LilAgent::Version(uint32_t lock) const { return t_->locks_[lock].version.load(std::memory_order_seq_cst); }

void LilAgent::WaitForChange(uint32_t lock, uint64_t seen, Clock::time_point until) {
  // sleepers_ up, then the version (both seq_cst) against the releaser's
  // version up, then sleepers_: one of the two sees the other.
  t_->sleepers_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> l(t_->sleep_mu_);
    if (Version(lock) == seen) t_->sleep_cv_.wait_until(l, until);
  }
  t_->sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void LilAgent::CountWait() { t_->waits_.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

std::unique_ptr<IntentLockTable> IntentLockTable::Create(const IntentLockOptions& options) {
  CHECK_GE(options.locks, 1u);
  switch (options.kind) {
    case IntentLockKind::kLil: return std::make_unique<LilTable>(options);
    case IntentLockKind::kSli: return intent_internal::NewQueueIntentLocks(options, /*inherit=*/true);
    case IntentLockKind::kQueue: return intent_internal::NewQueueIntentLocks(options, /*inherit=*/false);
  }
  LOG(FATAL) << "unknown intent lock kind";
  return nullptr;
}

}  // namespace detdb
