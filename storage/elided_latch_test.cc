#include "storage/elided_latch.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/spin_wait.h"

namespace detdb {
namespace {

// Several threads increment plain (non-atomic) counters under the latch:
// any overlap of critical sections loses increments (and is a data race
// ThreadSanitizer reports).
void RunCounterTest(int threads, int iterations) {
  ElidedLatch latch;
  uint64_t counter = 0;
  uint64_t shadow[8] = {};  // a few more cache lines in the critical section
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < iterations; ++i) {
        ElidedLatchGuard g(&latch);
        ++counter;
        shadow[(i + t) % 8] += 1;
      }
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& w : workers) w.join();
  EXPECT_EQ(counter, uint64_t(threads) * iterations);
  uint64_t sum = 0;
  for (uint64_t s : shadow) sum += s;
  EXPECT_EQ(sum, uint64_t(threads) * iterations);
  EXPECT_FALSE(latch.IsHeld());
}

TEST(StorageElidedLatch, MutualExclusionDefault) { RunCounterTest(4, 50000); }

TEST(StorageElidedLatch, MutualExclusionManyThreadsWithoutElision) {
  ElidedLatch::SetElisionForTesting(false);
  EXPECT_FALSE(ElidedLatch::ElisionEnabled());
  RunCounterTest(8, 20000);
  ElidedLatch::SetElisionForTesting(true);
}

TEST(StorageElidedLatch, RtmDetectionIsStable) {
  const bool rtm = ElidedLatch::RtmAvailable();
  EXPECT_EQ(rtm, ElidedLatch::RtmAvailable());
  // Elision is never on without RTM.
  if (!rtm) {
    EXPECT_FALSE(ElidedLatch::ElisionEnabled());
  }
#if defined(__SANITIZE_THREAD__)
  EXPECT_FALSE(ElidedLatch::ElisionEnabled());
#endif
  const std::string status = ElidedLatch::ElisionStatus();
  EXPECT_FALSE(status.empty());
  // The status names RTM and says why it is off, or that the probe committed.
  EXPECT_NE(status.find("RTM"), std::string::npos) << status;
  std::printf("RTM available: %d, elision enabled: %d (%s)\n", rtm, ElidedLatch::ElisionEnabled(), status.c_str());
}

TEST(StorageElidedLatch, TryLockAndIsHeld) {
  ElidedLatch latch;
  EXPECT_FALSE(latch.IsHeld());
  ASSERT_TRUE(latch.TryLock());
  EXPECT_TRUE(latch.IsHeld());
  EXPECT_FALSE(latch.TryLock());
  latch.Unlock();
  EXPECT_FALSE(latch.IsHeld());
  latch.LockNoElision();
  EXPECT_TRUE(latch.IsHeld());
  latch.Unlock();
  EXPECT_FALSE(latch.IsHeld());
}

// A waiter blocked behind a long holder gets in once the holder leaves (and
// yields meanwhile instead of spinning forever; not asserted, it just must
// not hang). Under elision the waiter waits for the latch to be free before
// each attempt, so it cannot run while the latch is held for real.
TEST(StorageElidedLatch, WaiterEntersAfterLongHolderLeaves) {
  ElidedLatch latch;
  uint64_t value = 0;
  latch.LockNoElision();
  std::atomic<bool> waiter_done{false};
  std::thread waiter([&] {
    ElidedLatchGuard g(&latch);
    value += 1;
    waiter_done.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waiter_done.load(std::memory_order_acquire));
  value = 41;
  latch.Unlock();
  waiter.join();
  EXPECT_EQ(value, 42u);
}

TEST(StorageElidedLatch, NestedLatches) {
  ElidedLatch a, b;
  uint64_t x = 0;
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        a.Lock();
        b.Lock();
        ++x;
        b.Unlock();
        a.Unlock();
        // TryLock inside another latch's (possibly elided) section.
        a.Lock();
        while (!b.TryLock()) {
        }
        ++x;
        b.Unlock();
        a.Unlock();
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(x, 60000u);
  EXPECT_FALSE(a.IsHeld());
  EXPECT_FALSE(b.IsHeld());
}

// The tests below run the hardware path; on CPUs without RTM they say so
// and skip (the policy runs everywhere through an injected Speculation:
// elided_latch_policy_test.cc).
#define SKIP_WITHOUT_RTM()                                                                     \
  if (!ElidedLatch::ElisionEnabled())                                                          \
  GTEST_SKIP() << "RTM path not run on this machine: " << ElidedLatch::ElisionStatus()       \
               << " (spin lock only; the retry policy is tested with an injected Speculation)"

void PrintStats(const char* what, const ElidedLatch::Stats& s) {
  std::printf("%s: elided %lu, fallback %lu, aborts %lu (", what, static_cast<unsigned long>(s.elided),
              static_cast<unsigned long>(s.fallback), static_cast<unsigned long>(s.aborts));
  for (int c = 0; c < ElidedLatch::kNumAbortCauses; ++c)
    std::printf("%s%s %lu", c ? ", " : "", ElidedLatch::AbortCauseName(ElidedLatch::AbortCause(c)),
                static_cast<unsigned long>(s.aborts_by_cause[c]));
  std::printf(")\n");
}

TEST(StorageElidedLatch, ElidesWhenRtmAvailable) {
  SKIP_WITHOUT_RTM();
  ElidedLatch latch;
  const ElidedLatch::Stats before = ElidedLatch::ThreadStats();
  uint64_t x = 0, held = 0;
  for (int i = 0; i < 1000; ++i) {
    ElidedLatchGuard g(&latch);
    if (latch.IsHeld()) ++held;  // elided sections only read the word
    ++x;
  }
  const ElidedLatch::Stats d = ElidedLatch::ThreadStats() - before;
  EXPECT_EQ(x, 1000u);
  EXPECT_EQ(held, d.fallback);
  // Uncontended tiny sections commit elided nearly always.
  EXPECT_GT(d.elided, 900u);
  EXPECT_EQ(d.elided + d.fallback, 1000u);
  PrintStats("uncontended", d);
}

// A section that writes far more lines than the L1 holds aborts on
// capacity every time; the policy takes the latch after that one abort
// instead of burning kMaxElisionAttempts.
TEST(StorageElidedLatch, CapacityAbortFallsBackAtOnceWithRtm) {
  SKIP_WITHOUT_RTM();
  ElidedLatch latch;
  std::vector<char> big(8 << 20);
  const ElidedLatch::Stats before = ElidedLatch::ThreadStats();
  constexpr int kLocks = 20;
  int held = 0;
  for (int i = 0; i < kLocks; ++i) {
    ElidedLatchGuard g(&latch);
    for (size_t b = 0; b < big.size(); b += 64) big[b] = static_cast<char>(i);
    if (latch.IsHeld()) ++held;  // fell back: held for real
  }
  const ElidedLatch::Stats d = ElidedLatch::ThreadStats() - before;
  PrintStats("8 MiB sections", d);
  EXPECT_EQ(d.elided, 0u);
  EXPECT_EQ(held, kLocks);
  EXPECT_EQ(d.fallback, uint64_t{kLocks});
  EXPECT_GE(d.by(ElidedLatch::AbortCause::kCapacity), uint64_t{kLocks} / 2);
  // At most one abort per Lock that is not retried: capacity (or an
  // interrupt's "other") ends the attempts. Transient conflicts before it
  // are retried, by the policy: on an Intel Xeon VM (2026-11-29) the ASan
  // build saw 6-21 conflicts in 20 such Locks of one thread before the
  // capacity abort (a Lock whose 8 attempts all meet conflicts falls back
  // with none: hence at most).
  EXPECT_LE(d.by(ElidedLatch::AbortCause::kCapacity), uint64_t{kLocks});
  EXPECT_LE(d.aborts - d.by(ElidedLatch::AbortCause::kConflict) - d.by(ElidedLatch::AbortCause::kRetry),
            uint64_t{kLocks});
}

// The lemming effect on real hardware: while a thread holds the latch for
// real, eliding threads wait instead of aborting, and elide again after it.
TEST(StorageElidedLatch, NoLemmingEffectWithRtm) {
  SKIP_WITHOUT_RTM();
  ElidedLatch latch;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> held_sections{0};
  std::thread holder([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      latch.LockNoElision();
      for (int i = 0; i < 2000; ++i) CpuRelax();
      held_sections.fetch_add(1, std::memory_order_relaxed);
      latch.Unlock();
      for (int i = 0; i < 2000; ++i) CpuRelax();
    }
  });
  while (held_sections.load(std::memory_order_relaxed) == 0) std::this_thread::yield();
  const ElidedLatch::Stats before = ElidedLatch::ThreadStats();
  uint64_t x = 0;
  constexpr int kLocks = 200000;
  for (int i = 0; i < kLocks; ++i) {
    ElidedLatchGuard g(&latch);
    ++x;
  }
  stop.store(true, std::memory_order_relaxed);
  holder.join();
  const ElidedLatch::Stats d = ElidedLatch::ThreadStats() - before;
  PrintStats("beside a real holder", d);
  EXPECT_EQ(x, uint64_t{kLocks});
  EXPECT_GT(held_sections.load(), 0u);
  // Conflicts with the holder do happen (it takes the latch while sections
  // run) but are retried after waiting: almost every Lock still elides.
  EXPECT_LT(d.fallback, uint64_t{kLocks} / 20);
}

}  // namespace
}  // namespace detdb
