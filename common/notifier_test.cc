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

// After kIdleAfterSleeps waits in a row that slept, the notifier polls
// briefly; a Notify still wakes a sleeper at once, and a wait answered while
// it polls makes it poll long again.
TEST(Notifier, IdleAfterWaitsThatSleptBusyAgainWhenAWaitIsAnsweredWhilePolling) {
  Notifier n;
  EXPECT_FALSE(n.idle());
  for (int i = 0; i < 8; ++i) n.Wait(microseconds(100));  // nobody notifies: every one sleeps
  EXPECT_TRUE(n.idle());

  // A sleeper woken by Notify (the test's 10 s timeout would fail it).
  std::atomic<bool> woke{false};
  std::thread waiter([&] {
    n.Wait(std::chrono::seconds(10));
    woke = true;
  });
  std::this_thread::sleep_for(milliseconds(50));  // long enough to be asleep
  const auto start = steady_clock::now();
  n.Notify();
  waiter.join();
  EXPECT_TRUE(woke);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(n.idle());  // it slept

  // A notification already there when the wait polls: busy again.
  n.Notify();
  n.Wait(std::chrono::seconds(10));
  EXPECT_FALSE(n.idle());
}

// Many hand-offs between two threads, each waiting for the other: no
// notification is lost (a lost one would stall a round for the 10 s timeout
// and fail the time bound).
TEST(Notifier, PingPongLosesNoNotification) {
  Notifier to_b, to_a;
  std::atomic<int> turn{0};
  constexpr int kRounds = 20000;
  const auto start = steady_clock::now();
  std::thread b([&] {
    for (int i = 0; i < kRounds; ++i) {
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) to_b.Wait(std::chrono::seconds(10));
      turn.store(2 * i + 2, std::memory_order_release);
      to_a.Notify();
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    turn.store(2 * i + 1, std::memory_order_release);
    to_b.Notify();
    while (turn.load(std::memory_order_acquire) != 2 * i + 2) to_a.Wait(std::chrono::seconds(10));
  }
  b.join();
  EXPECT_EQ(turn.load(), 2 * kRounds);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace detdb
