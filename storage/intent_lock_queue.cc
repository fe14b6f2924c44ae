// Intent locks with lock queues: Gray's lock head per lock (a mutex, the
// queue of requests, a condition variable), and speculative lock
// inheritance on top of it (seed 004). See intent_lock.h.
//
// SLI, as in Shore-MT: at the end of a txn an agent does not release an
// intent request whose lock nobody waits for; it marks it inherited (one
// release store) and leaves it in the queue. Its next txn reclaims it with
// a compare-and-swap inherited -> granted, without the mutex. An inherited
// request the next txn does not reclaim is released at that txn's end. An
// absolute request invalidates every inherited request of another agent
// (compare-and-swap inherited -> invalid, under the mutex) and unlinks it;
// the owner finds it invalid and requests again through the mutex.
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "glog/logging.h"
#include "storage/intent_lock.h"

namespace detdb {
namespace intent_internal {
namespace {

constexpr int M(IntentMode m) { return static_cast<int>(m); }

class QueueTable;

// One agent's request on one lock. The owner keeps one per lock for its
// lifetime (nothing is allocated per request).
struct Request {
  enum : uint8_t { kOut = 0, kGranted, kInherited, kInvalid };
  // The granted part's life: kOut (none), kGranted, kInherited (SLI: kept
  // between txns), kInvalid (SLI: taken away by an absolute request).
  // Inherited -> granted by the owner without the mutex (CAS); every other
  // change under the lock's mutex.
  std::atomic<uint8_t> state{kOut};
  // Guarded by the lock's mutex (the owner reads `granted` of its own
  // request without it only while it is kGranted or kInherited, when
  // nobody else writes it).
  IntentMode granted = IntentMode::kNone;
  IntentMode waiting = IntentMode::kNone;  // a posted request's mode
  bool linked = false;
  Request* prev = nullptr;
  Request* next = nullptr;
};

struct alignas(64) Head {
  std::mutex mu;
  std::condition_variable cv;
  Request* first = nullptr;              // guarded by mu
  std::atomic<uint32_t> waiters{0};      // posted requests (SLI's "nobody waits")
  std::atomic<uint64_t> version{0};      // written under mu

  void Link(Request* r) {
    r->prev = nullptr;
    r->next = first;
    if (first != nullptr) first->prev = r;
    first = r;
    r->linked = true;
  }
  void Unlink(Request* r) {
    if (r->prev != nullptr) r->prev->next = r->next;
    else first = r->next;
    if (r->next != nullptr) r->next->prev = r->prev;
    r->prev = r->next = nullptr;
    r->linked = false;
  }
  void Changed() {
    version.fetch_add(1, std::memory_order_relaxed);
    cv.notify_all();
  }
};

class QueueAgent final : public IntentAgent {
 public:
  QueueAgent(QueueTable* table, uint32_t locks, bool inherit);
  ~QueueAgent() override;

  void ReleaseAll() override;
  // Inherited requests are invalidated by absolute requests, nothing to
  // serve there; an in-use request stronger than its txn asked for (a
  // reclaimed inherited one) is downgraded if an absolute request waits.
  void ServeRevocations() override { Downgrade(/*only_if_waited_for=*/true); }

 protected:
  bool TryAcquireImpl(uint32_t lock, IntentMode mode) override;
  void CancelImpl(uint32_t lock) override;
  void WaitForChange(uint32_t lock, uint64_t seen, Clock::time_point until) override;
  uint64_t Version(uint32_t lock) const override;
  void EndTxnSlow() override;
  // Every granted request is in use and inherited ones never hold anyone
  // back: only what the txn holds beyond what it asked for is given back.
  void DropUnused() override { Downgrade(/*only_if_waited_for=*/false); }
  void CountWait() override;

 private:
  // Releases r's granted part (whatever its state). REQUIRES: not posted.
  void Release(uint32_t lock);
  // Releases the inherited requests the last txn did not reclaim.
  void DropInherited();
  // Downgrades the requests in use to what their txn asked for (only those
  // an absolute request waits for, if only_if_waited_for).
  void Downgrade(bool only_if_waited_for);

  QueueTable* const t_;
  const bool inherit_;
  std::vector<Request> reqs_;
  std::vector<uint32_t> used_;       // locks granted to the current txn
  std::vector<uint32_t> inherited_;  // locks left inherited by the last txn
  uint32_t posted_ = ~0u;
};

class QueueTable final : public IntentLockTable {
 public:
  QueueTable(const IntentLockOptions& options, bool inherit)
      : IntentLockTable(options), inherit_(inherit), heads_(new Head[options.locks]) {}

  std::unique_ptr<IntentAgent> NewAgent() override {
    return std::make_unique<QueueAgent>(this, options_.locks, inherit_);
  }
  IntentLockStats stats() const override {
    IntentLockStats s;
    s.slow_acquires = slow_.load(std::memory_order_relaxed);
    s.absolute_grants = absolute_.load(std::memory_order_relaxed);
    s.waits = waits_.load(std::memory_order_relaxed);
    s.invalidated = invalidated_.load(std::memory_order_relaxed);
    s.reclaimed = reclaimed_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  friend class QueueAgent;
  const bool inherit_;
  std::unique_ptr<Head[]> heads_;
  std::atomic<uint64_t> slow_{0}, absolute_{0}, waits_{0}, invalidated_{0}, reclaimed_{0};
};

QueueAgent::QueueAgent(QueueTable* table, uint32_t locks, bool inherit)
    : IntentAgent(locks, /*keeps=*/false, /*revoke_signal=*/nullptr), t_(table), inherit_(inherit), reqs_(locks) {}

QueueAgent::~QueueAgent() { ReleaseAll(); }

bool QueueAgent::TryAcquireImpl(uint32_t lock, IntentMode mode) {
  CHECK(posted_ == ~0u || posted_ == lock) << "one posted request per agent";
  Request& r = reqs_[lock];
  Entry& e = entries_[lock];
  // held: the mode granted; asked: what the txn asked for (less than held
  // only when it reclaimed a stronger inherited request).
  auto grant = [&](IntentMode held, IntentMode asked) {
    e.mode = held;
    e.used = asked;
    e.txn = txn_;
  };
  if (inherit_ && posted_ == ~0u && e.txn != txn_ && Covers(r.granted, mode)) {
    // SLI's fast path: take over the request the last txn left inherited.
    uint8_t expect = Request::kInherited;
    if (r.state.compare_exchange_strong(expect, Request::kGranted, std::memory_order_acq_rel)) {
      t_->reclaimed_.fetch_add(1, std::memory_order_relaxed);
      grant(r.granted, mode);
      used_.push_back(lock);
      return true;
    }
  }
  t_->slow_.fetch_add(1, std::memory_order_relaxed);
  Head& h = t_->heads_[lock];
  std::lock_guard<std::mutex> g(h.mu);
  // Under the mutex nobody else changes r: settle what the last txn left.
  switch (r.state.load(std::memory_order_relaxed)) {
    case Request::kInherited:
      if (Covers(r.granted, mode)) {  // reclaimed
        r.state.store(Request::kGranted, std::memory_order_relaxed);
        t_->reclaimed_.fetch_add(1, std::memory_order_relaxed);
        grant(r.granted, mode);
        used_.push_back(lock);
        return true;
      }
      // Too weak: given back; the request below starts afresh.
      h.Unlink(&r);
      r.state.store(Request::kOut, std::memory_order_relaxed);
      r.granted = IntentMode::kNone;
      h.Changed();
      break;
    case Request::kInvalid:  // unlinked by an absolute request
      r.state.store(Request::kOut, std::memory_order_relaxed);
      r.granted = IntentMode::kNone;
      break;
    default:
      break;
  }
  const IntentMode held = r.state.load(std::memory_order_relaxed) == Request::kGranted ? r.granted : IntentMode::kNone;
  const IntentMode want = Supremum(held, mode);
  const IntentMode asked = held != IntentMode::kNone && e.txn == txn_ ? Supremum(e.used, mode) : mode;
  if (IsAbsolute(want)) {
    // Inherited requests do not hold an absolute request back.
    for (Request* q = h.first; q != nullptr;) {
      Request* next = q->next;
      uint8_t expect = Request::kInherited;
      if (q != &r && q->state.compare_exchange_strong(expect, Request::kInvalid, std::memory_order_acq_rel)) {
        h.Unlink(q);  // (an inherited request is never posted: its owner settles it first)
        t_->invalidated_.fetch_add(1, std::memory_order_relaxed);
      }
      q = next;
    }
  }
  bool grantable = true;
  for (Request* q = h.first; q != nullptr && grantable; q = q->next) {
    if (q == &r) continue;
    const uint8_t st = q->state.load(std::memory_order_acquire);
    if ((st == Request::kGranted || st == Request::kInherited) && !Compatible(want, q->granted)) grantable = false;
    if (!IsAbsolute(want) && IsAbsolute(q->waiting) && !Compatible(want, q->waiting)) grantable = false;
  }
  if (grantable) {
    if (!r.linked) h.Link(&r);
    if (held == IntentMode::kNone) used_.push_back(lock);
    r.granted = want;
    r.state.store(Request::kGranted, std::memory_order_release);
    if (r.waiting != IntentMode::kNone) {
      r.waiting = IntentMode::kNone;
      h.waiters.fetch_sub(1, std::memory_order_relaxed);
    }
    posted_ = ~0u;
    grant(want, asked);
    if (IsAbsolute(want)) t_->absolute_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (r.waiting == IntentMode::kNone) h.waiters.fetch_add(1, std::memory_order_relaxed);
  r.waiting = want;
  if (!r.linked) h.Link(&r);
  posted_ = lock;
  return false;
}

void QueueAgent::CancelImpl(uint32_t lock) {
  if (posted_ != lock) return;
  Request& r = reqs_[lock];
  Head& h = t_->heads_[lock];
  std::lock_guard<std::mutex> g(h.mu);
  r.waiting = IntentMode::kNone;
  h.waiters.fetch_sub(1, std::memory_order_relaxed);
  const uint8_t st = r.state.load(std::memory_order_relaxed);
  if (r.linked && st != Request::kGranted && st != Request::kInherited) h.Unlink(&r);
  h.Changed();
  posted_ = ~0u;
}

void QueueAgent::Release(uint32_t lock) {
  Request& r = reqs_[lock];
  Head& h = t_->heads_[lock];
  {
    std::lock_guard<std::mutex> g(h.mu);
    if (r.linked) h.Unlink(&r);
    r.state.store(Request::kOut, std::memory_order_relaxed);
    r.granted = IntentMode::kNone;
    h.Changed();
  }
  entries_[lock].mode = IntentMode::kNone;
}

void QueueAgent::DropInherited() {
  for (uint32_t lock : inherited_) {
    Request& r = reqs_[lock];
    const uint8_t st = r.state.load(std::memory_order_acquire);
    if (st == Request::kGranted) continue;  // reclaimed: in used_
    Release(lock);                          // still inherited, or invalidated (already unlinked)
  }
  inherited_.clear();
}

void QueueAgent::Downgrade(bool only_if_waited_for) {
  for (uint32_t lock : used_) {
    Entry& e = entries_[lock];
    if (e.txn != txn_ || e.mode == e.used) continue;
    Request& r = reqs_[lock];
    Head& h = t_->heads_[lock];
    std::lock_guard<std::mutex> g(h.mu);
    bool waited_for = !only_if_waited_for;
    for (const Request* q = h.first; q != nullptr && !waited_for; q = q->next)
      waited_for = q != &r && IsAbsolute(q->waiting) && !Compatible(q->waiting, e.mode);
    if (!waited_for) continue;
    r.granted = e.used;
    e.mode = e.used;
    h.Changed();
  }
}

void QueueAgent::EndTxnSlow() {
  DropInherited();
  for (uint32_t lock : used_) {
    Request& r = reqs_[lock];
    Head& h = t_->heads_[lock];
    // SLI's criteria: a shared (intent) mode, nobody waiting. Every lock
    // here is a partition or a table, high in the hierarchy and hot.
    if (inherit_ && !IsAbsolute(r.granted) && h.waiters.load(std::memory_order_relaxed) == 0) {
      r.state.store(Request::kInherited, std::memory_order_release);
      entries_[lock].mode = IntentMode::kNone;  // the next txn reclaims it through TryAcquireImpl
      inherited_.push_back(lock);
    } else {
      Release(lock);
    }
  }
  used_.clear();
}

void QueueAgent::ReleaseAll() {
  if (posted_ != ~0u) CancelImpl(posted_);
  DropInherited();
  for (uint32_t lock : used_) Release(lock);
  used_.clear();
}

uint64_t QueueAgent::Version(uint32_t lock) const { return t_->heads_[lock].version.load(std::memory_order_relaxed); }

void QueueAgent::WaitForChange(uint32_t lock, uint64_t seen, Clock::time_point until) {
  Head& h = t_->heads_[lock];
  std::unique_lock<std::mutex> g(h.mu);
  if (h.version.load(std::memory_order_relaxed) == seen) h.cv.wait_until(g, until);
}

void QueueAgent::CountWait() { t_->waits_.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

std::unique_ptr<IntentLockTable> NewQueueIntentLocks(const IntentLockOptions& options, bool inherit) {
  return std::make_unique<QueueTable>(options, inherit);
}

}  // namespace intent_internal
}  // namespace detdb
