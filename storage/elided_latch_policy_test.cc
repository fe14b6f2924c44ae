// ElidedLatch's elision policy on any CPU: an injected Speculation plays
// the hardware transaction (ElidedLatch::SetSpeculationForTesting), so the
// retry-by-cause policy, the wait before every attempt (no lemming effect)
// and the counters run here whether or not this machine has RTM, under
// ThreadSanitizer too. The hardware path itself: elided_latch_test.cc.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/elided_latch.h"
#include "storage/spin_wait.h"

namespace detdb {
namespace {

using Cause = ElidedLatch::AbortCause;
constexpr unsigned kStarted = ElidedLatch::kTxStarted;
constexpr unsigned kLatchHeldStatus = ElidedLatch::kTxExplicit | (ElidedLatch::kAbortLatchHeld << 24);

thread_local bool t_in_tx = false;

// Begin() returns the next status of its script, then `fallthrough` (by
// default: started). A started "transaction" is not isolated: the tests'
// sections touch nothing another thread touches, or fall back for real.
class FakeSpeculation : public ElidedLatch::Speculation {
 public:
  explicit FakeSpeculation(std::vector<unsigned> script = {}, unsigned fallthrough = kStarted)
      : script_(script.begin(), script.end()), fallthrough_(fallthrough) {}

  unsigned Begin() override {
    begins_.fetch_add(1, std::memory_order_relaxed);
    if (watch_ != nullptr && watch_->IsHeld()) begins_while_held_.fetch_add(1, std::memory_order_relaxed);
    if (on_begin_) on_begin_();
    unsigned status = fallthrough_;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!script_.empty()) {
        status = script_.front();
        script_.pop_front();
      }
    }
    t_in_tx = status == kStarted;
    return status;
  }
  unsigned AbortLatchHeld() override {
    EXPECT_TRUE(t_in_tx);
    t_in_tx = false;
    return kLatchHeldStatus;
  }
  void End() override {
    EXPECT_TRUE(t_in_tx);
    t_in_tx = false;
  }
  bool InTransaction() override { return t_in_tx; }

  // Counts Begin() calls that found `latch` held for real.
  void Watch(const ElidedLatch* latch) { watch_ = latch; }
  // Runs at the start of every Begin() (set before any Lock).
  void OnBegin(std::function<void()> f) { on_begin_ = std::move(f); }
  uint64_t begins() const { return begins_.load(); }
  uint64_t begins_while_held() const { return begins_while_held_.load(); }

 private:
  std::mutex mu_;
  std::deque<unsigned> script_;
  const unsigned fallthrough_;
  const ElidedLatch* watch_ = nullptr;
  std::function<void()> on_begin_;
  std::atomic<uint64_t> begins_{0};
  std::atomic<uint64_t> begins_while_held_{0};
};

// Injects a Speculation for one test.
class Injected {
 public:
  explicit Injected(ElidedLatch::Speculation* s) {
    ElidedLatch::SetSpeculationForTesting(s);
    EXPECT_TRUE(ElidedLatch::ElisionEnabled());
  }
  ~Injected() { ElidedLatch::SetSpeculationForTesting(nullptr); }
};

// One Lock/Unlock; returns whether the section ran with the latch held for
// real, and the calling thread's counter deltas.
bool LockOnce(ElidedLatch* latch, ElidedLatch::Stats* delta) {
  const ElidedLatch::Stats before = ElidedLatch::ThreadStats();
  latch->Lock();
  const bool held = latch->IsHeld();
  EXPECT_EQ(held, !t_in_tx);  // either elided or latched, never both
  latch->Unlock();
  EXPECT_FALSE(latch->IsHeld());
  EXPECT_FALSE(t_in_tx);
  *delta = ElidedLatch::ThreadStats() - before;
  return held;
}

TEST(StorageElidedLatchPolicy, ClassifiesAbortsByCause) {
  using L = ElidedLatch;
  EXPECT_EQ(L::ClassifyAbort(kLatchHeldStatus), Cause::kExplicit);
  EXPECT_EQ(L::ClassifyAbort(L::kTxExplicit | L::kTxNested), Cause::kExplicit);
  EXPECT_EQ(L::ClassifyAbort(L::kTxRetry), Cause::kRetry);
  EXPECT_EQ(L::ClassifyAbort(L::kTxConflict | L::kTxRetry), Cause::kConflict);
  EXPECT_EQ(L::ClassifyAbort(L::kTxCapacity), Cause::kCapacity);
  EXPECT_EQ(L::ClassifyAbort(L::kTxCapacity | L::kTxRetry), Cause::kCapacity);
  EXPECT_EQ(L::ClassifyAbort(L::kTxDebug), Cause::kDebug);
  EXPECT_EQ(L::ClassifyAbort(L::kTxNested), Cause::kNested);
  EXPECT_EQ(L::ClassifyAbort(0), Cause::kOther);
  EXPECT_STREQ(L::AbortCauseName(Cause::kConflict), "conflict");
  EXPECT_STREQ(L::AbortCauseName(Cause::kOther), "other");
}

TEST(StorageElidedLatchPolicy, RetriesTransientAbortsOnly) {
  using L = ElidedLatch;
  EXPECT_TRUE(L::RetryAfterAbort(kLatchHeldStatus));
  EXPECT_TRUE(L::RetryAfterAbort(L::kTxConflict));
  EXPECT_TRUE(L::RetryAfterAbort(L::kTxConflict | L::kTxRetry));
  EXPECT_TRUE(L::RetryAfterAbort(L::kTxRetry));
  EXPECT_FALSE(L::RetryAfterAbort(L::kTxCapacity));
  EXPECT_FALSE(L::RetryAfterAbort(L::kTxCapacity | L::kTxRetry));
  EXPECT_FALSE(L::RetryAfterAbort(L::kTxExplicit | (1u << 24)));  // not our code
  EXPECT_FALSE(L::RetryAfterAbort(L::kTxDebug));
  EXPECT_FALSE(L::RetryAfterAbort(L::kTxNested));
  EXPECT_FALSE(L::RetryAfterAbort(0));
}

TEST(StorageElidedLatchPolicy, ConflictsAreRetriedThenTheSectionElides) {
  using L = ElidedLatch;
  FakeSpeculation spec({L::kTxConflict | L::kTxRetry, L::kTxRetry, L::kTxConflict});
  Injected inject(&spec);
  ElidedLatch latch;
  ElidedLatch::Stats d;
  EXPECT_FALSE(LockOnce(&latch, &d));  // elided in the end
  EXPECT_EQ(spec.begins(), 4u);
  EXPECT_EQ(d.elided, 1u);
  EXPECT_EQ(d.fallback, 0u);
  EXPECT_EQ(d.aborts, 3u);
  EXPECT_EQ(d.by(Cause::kConflict), 2u);
  EXPECT_EQ(d.by(Cause::kRetry), 1u);
}

TEST(StorageElidedLatchPolicy, CapacityTakesTheLatchAtOnceAndNothingSticks) {
  FakeSpeculation spec({ElidedLatch::kTxCapacity});
  Injected inject(&spec);
  ElidedLatch latch;
  ElidedLatch::Stats d;
  EXPECT_TRUE(LockOnce(&latch, &d));  // held for real
  EXPECT_EQ(spec.begins(), 1u);       // no second attempt
  EXPECT_EQ(d.elided, 0u);
  EXPECT_EQ(d.fallback, 1u);
  EXPECT_EQ(d.aborts, 1u);
  EXPECT_EQ(d.by(Cause::kCapacity), 1u);
  // The next Lock() tries elision again.
  EXPECT_FALSE(LockOnce(&latch, &d));
  EXPECT_EQ(d.elided, 1u);
  EXPECT_EQ(d.aborts, 0u);
}

TEST(StorageElidedLatchPolicy, AbortsWithoutARetryHintTakeTheLatch) {
  using L = ElidedLatch;
  const std::pair<unsigned, Cause> cases[] = {{0, Cause::kOther},
                                              {L::kTxDebug, Cause::kDebug},
                                              {L::kTxNested, Cause::kNested},
                                              {L::kTxExplicit | (7u << 24), Cause::kExplicit}};
  for (const auto& [status, cause] : cases) {
    FakeSpeculation spec({status});
    Injected inject(&spec);
    ElidedLatch latch;
    ElidedLatch::Stats d;
    EXPECT_TRUE(LockOnce(&latch, &d)) << status;
    EXPECT_EQ(spec.begins(), 1u) << status;
    EXPECT_EQ(d.fallback, 1u) << status;
    EXPECT_EQ(d.aborts, 1u) << status;
    EXPECT_EQ(d.by(cause), 1u) << status;
  }
}

TEST(StorageElidedLatchPolicy, RetriesAreBounded) {
  FakeSpeculation spec({}, ElidedLatch::kTxConflict | ElidedLatch::kTxRetry);  // every attempt conflicts
  Injected inject(&spec);
  ElidedLatch latch;
  ElidedLatch::Stats d;
  EXPECT_TRUE(LockOnce(&latch, &d));
  EXPECT_EQ(spec.begins(), uint64_t{ElidedLatch::kMaxElisionAttempts});
  EXPECT_EQ(d.by(Cause::kConflict), uint64_t{ElidedLatch::kMaxElisionAttempts});
  EXPECT_EQ(d.fallback, 1u);
}

// The lemming cure: a Lock() that meets the latch held for real waits for it
// to be free before it speculates, then elides. It does not spend its
// attempts on the held latch and take it itself.
TEST(StorageElidedLatchPolicy, WaitsForAHeldLatchBeforeSpeculating) {
  FakeSpeculation spec;
  Injected inject(&spec);
  ElidedLatch latch;
  spec.Watch(&latch);
  latch.LockNoElision();
  std::atomic<bool> started{false}, done{false};
  bool held_in_section = true;
  ElidedLatch::Stats d;
  std::thread waiter([&] {
    const ElidedLatch::Stats before = ElidedLatch::ThreadStats();
    started.store(true);
    latch.Lock();
    held_in_section = latch.IsHeld();
    done.store(true);
    latch.Unlock();
    d = ElidedLatch::ThreadStats() - before;
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the waiter is in Lock() by now (usually)
  EXPECT_FALSE(done.load());
  latch.Unlock();
  waiter.join();
  EXPECT_FALSE(held_in_section);  // elided
  EXPECT_EQ(spec.begins_while_held(), 0u);
  EXPECT_EQ(spec.begins(), 1u);
  EXPECT_EQ(d.aborts, 0u);
  EXPECT_EQ(d.fallback, 0u);
  EXPECT_EQ(d.elided, 1u);
}

// A thread that takes the latch between the wait and the speculation makes
// the section abort (explicitly: the latch was held); that is retried after
// waiting again, and the section elides.
TEST(StorageElidedLatchPolicy, LatchTakenDuringTheAttemptIsRetriedAfterWaiting) {
  FakeSpeculation spec;
  Injected inject(&spec);
  ElidedLatch latch;
  std::atomic<bool> take{false}, taken{false};
  std::thread other([&] {
    while (!take.load()) std::this_thread::yield();
    latch.LockNoElision();
    taken.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    latch.Unlock();
  });
  int calls = 0;
  spec.OnBegin([&] {
    if (++calls == 1) {  // the first attempt: another thread takes the latch now
      take.store(true);
      while (!taken.load()) std::this_thread::yield();
    }
  });
  ElidedLatch::Stats d;
  EXPECT_FALSE(LockOnce(&latch, &d));
  other.join();
  EXPECT_EQ(spec.begins(), 2u);
  EXPECT_EQ(d.by(Cause::kExplicit), 1u);
  EXPECT_EQ(d.aborts, 1u);
  EXPECT_EQ(d.fallback, 0u);
  EXPECT_EQ(d.elided, 1u);
}

// Eliding threads with sections of some length, beside a thread that takes
// the latch for real again and again, each time until an elider arrives at
// Lock() while it holds it (or a while passed). The eliders wait out each real section and
// elide after it. Without the wait before each attempt this is the lemming
// effect: an elider that meets the latch held burns its attempts in a
// moment and takes the latch itself, so the next elider meets it held and
// does the same, and the eliders keep taking it in turn after the real
// holder left.
TEST(StorageElidedLatchPolicy, NoLemmingEffectBesideARealHolder) {
  FakeSpeculation spec;
  Injected inject(&spec);
  ElidedLatch latch;
  constexpr int kThreads = 2, kLocks = 5000;
  std::atomic<int> finished{0};
  std::atomic<uint64_t> arrivals{0}, real_sections{0};
  std::thread holder([&] {
    while (finished.load() < kThreads) {
      const uint64_t a = arrivals.load();
      latch.LockNoElision();
      // Hold until an elider came to Lock() meanwhile (or for a while: the
      // eliders may all be waiting already, or be preempted).
      for (int i = 0; i < 20000 && arrivals.load() == a; ++i) CpuRelax();
      for (int i = 0; i < 2000; ++i) CpuRelax();
      real_sections.fetch_add(1, std::memory_order_relaxed);
      latch.Unlock();
      for (int i = 0; i < 500; ++i) CpuRelax();
    }
  });
  std::atomic<uint64_t> fallbacks{0}, elided{0}, held_sections{0};
  std::vector<std::thread> eliders;
  for (int t = 0; t < kThreads; ++t) {
    eliders.emplace_back([&] {
      const ElidedLatch::Stats before = ElidedLatch::ThreadStats();
      for (int i = 0; i < kLocks; ++i) {
        arrivals.fetch_add(1);
        latch.Lock();
        if (!t_in_tx) held_sections.fetch_add(1, std::memory_order_relaxed);
        for (int p = 0; p < 100; ++p) CpuRelax();
        latch.Unlock();
      }
      const ElidedLatch::Stats d = ElidedLatch::ThreadStats() - before;
      fallbacks.fetch_add(d.fallback);
      elided.fetch_add(d.elided);
      finished.fetch_add(1);
    });
  }
  for (auto& t : eliders) t.join();
  holder.join();
  const uint64_t locks = uint64_t{kThreads} * kLocks;
  std::printf("real sections %lu; eliders: elided %lu, fallback %lu of %lu Locks\n",
              static_cast<unsigned long>(real_sections.load()), static_cast<unsigned long>(elided.load()),
              static_cast<unsigned long>(fallbacks.load()), static_cast<unsigned long>(locks));
  EXPECT_EQ(elided.load() + fallbacks.load(), locks);
  EXPECT_EQ(held_sections.load(), fallbacks.load());
  // An elider came to Lock() during most real sections; falling back for
  // them even one time in a hundred would be the lemming effect.
  EXPECT_LE(fallbacks.load(), real_sections.load() / 100);
}

// Sections that fall back exclude each other for real (a plain counter,
// which ThreadSanitizer checks too).
TEST(StorageElidedLatchPolicy, FallbackSectionsAreMutuallyExclusive) {
  FakeSpeculation spec({}, ElidedLatch::kTxCapacity);
  Injected inject(&spec);
  ElidedLatch latch;
  uint64_t counter = 0;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        ElidedLatchGuard g(&latch);
        ++counter;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(counter, 80000u);
}

// GlobalStats sums live threads' counters and keeps exited threads' ones.
TEST(StorageElidedLatchPolicy, GlobalStatsSumsEveryThread) {
  FakeSpeculation spec;
  Injected inject(&spec);
  ElidedLatch latch;
  const ElidedLatch::Stats before = ElidedLatch::GlobalStats();
  std::atomic<bool> counted{false}, exit{false};
  std::thread live([&] {
    for (int i = 0; i < 50; ++i) ElidedLatchGuard g(&latch);
    counted.store(true);
    while (!exit.load()) std::this_thread::yield();
  });
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 100; ++i) ElidedLatchGuard g(&latch);
    });
  for (auto& t : ts) t.join();
  while (!counted.load()) std::this_thread::yield();
  EXPECT_EQ((ElidedLatch::GlobalStats() - before).elided, 350u);  // 300 exited + 50 live
  exit.store(true);
  live.join();
  const ElidedLatch::Stats d = ElidedLatch::GlobalStats() - before;
  EXPECT_EQ(d.elided, 350u);  // the live thread's counters moved to the exited sum once
  EXPECT_EQ(d.aborts, 0u);
  EXPECT_EQ(d.fallback, 0u);
}

}  // namespace
}  // namespace detdb
