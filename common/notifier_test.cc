#include "common/notifier.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace detdb {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(Notifier, ANotifyBeforeTheWaitIsNotLost) {
  Notifier n;
  n.Notify();
  const auto start = steady_clock::now();
  n.Wait(std::chrono::seconds(10));
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));
  // Consumed: the next Wait times out.
  const auto again = steady_clock::now();
  n.Wait(milliseconds(20));
  EXPECT_GE(steady_clock::now() - again, milliseconds(20));
}

TEST(Notifier, AWaitReturnsAfterItsTimeoutWithoutANotify) {
  Notifier n;
  const auto start = steady_clock::now();
  n.Wait(milliseconds(30));
  EXPECT_GE(steady_clock::now() - start, milliseconds(30));
}

// Waits until the notifier has a sleeper (a waiter in the condition
// variable, past its polls).
void AwaitSleeper(const Notifier& n) {
  while (n.sleepers() == 0) std::this_thread::sleep_for(microseconds(100));
}

// After kIdleAfterSleeps waits in a row that slept, the notifier polls
// briefly; a Notify wakes a sleeper at once, and a wait answered while it
// polls makes it poll long again.
TEST(Notifier, IdleAfterWaitsThatSleptBusyAgainWhenAWaitIsAnsweredWhilePolling) {
  Notifier n;
  EXPECT_FALSE(n.idle());
  for (int i = 0; i < 8; ++i) n.Wait(microseconds(100));  // nobody notifies: every one sleeps
  EXPECT_TRUE(n.idle());

  // A sleeper woken by Notify (its 60 s timeout would fail the bound).
  std::thread waiter([&] { n.Wait(std::chrono::seconds(60)); });
  AwaitSleeper(n);
  const auto start = steady_clock::now();
  n.Notify();
  waiter.join();
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(n.idle());  // it slept

  // A notification already there when the wait polls: busy again.
  n.Notify();
  n.Wait(std::chrono::seconds(60));
  EXPECT_FALSE(n.idle());
}

// Hand-offs between two threads, each waiting for the other, both on the
// poll path and (every 8th round, the notifying side first waiting until
// the other sleeps) on the sleep path: no notification is lost. A lost one
// would leave a round waiting for the 60 s timeout.
TEST(Notifier, HandOffsLoseNoNotificationPollingOrAsleep) {
  Notifier to_b, to_a;
  std::atomic<int> turn{0};
  constexpr int kRounds = 2000;
  std::atomic<int64_t> slowest_ns{0};
  auto note = [&](steady_clock::time_point since) {
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(steady_clock::now() - since).count();
    if (ns > slowest_ns.load()) slowest_ns = ns;
  };
  std::thread b([&] {
    for (int i = 0; i < kRounds; ++i) {
      const auto since = steady_clock::now();
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) to_b.Wait(std::chrono::seconds(60));
      note(since);
      if (i % 8 == 7) AwaitSleeper(to_a);  // a is asleep now: this Notify must wake it
      turn.store(2 * i + 2, std::memory_order_release);
      to_a.Notify();
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    if (i % 8 == 3) AwaitSleeper(to_b);
    turn.store(2 * i + 1, std::memory_order_release);
    to_b.Notify();
    const auto since = steady_clock::now();
    while (turn.load(std::memory_order_acquire) != 2 * i + 2) to_a.Wait(std::chrono::seconds(60));
    note(since);
  }
  b.join();
  EXPECT_EQ(turn.load(), 2 * kRounds);
  EXPECT_LT(slowest_ns.load(), int64_t{30} * 1000 * 1000 * 1000) << "a round waited for a Wait's timeout";
}

}  // namespace
}  // namespace detdb
