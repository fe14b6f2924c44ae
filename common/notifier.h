// Notifier: lets one thread sleep until another has news for it, without a
// syscall on the notifying side when nobody sleeps. The waiter first polls
// (pauses, giving its core away with a yield every 16 polls: on a 2-core
// machine the client, sequencer, lock threads and workers share the cores,
// so a waiter must let the thread it waits for run), then blocks on a
// condition variable, so an idle thread uses no CPU.
//
// How long it polls (docs/ENGINE.md, "Threads sleep when idle"). Under
// load, 1024 polls (64 yields, about 0.1 ms when no other thread wants the
// core): a hand-off then rarely needs a futex sleep and wake-up (the
// notifying side's syscall, the sleeper's wake-up latency); TPC-C New-Order
// + Payment ran 1.04x faster (median of 12 interleaved pairs, 2026-11-28)
// than with 64 polls. After 8 Waits in a row that went on to the sleep
// (counted across all of this notifier's waiters, e.g. the workers of one
// queue; a Wait counts even if the notification came as it went to sleep),
// the waits poll only 64 times, until one is answered while it polls: a
// thread woken once per epoch of an idle engine does not spin 0.1 ms per
// epoch (an idle one-node server: 5% of a core with this rule, 11% with
// 1024 polls always, 6% with 64 always), and a lightly loaded one hands
// off as it did with 64 polls always.
//
//   producer: publish work; notifier.Notify();
//   consumer: while (!stop) { do all available work; notifier.Wait(); }
//
// A Notify() that happens before Wait() is not lost: Wait() returns at once.
// Thread-safety: thread-safe.
#ifndef DETDB_COMMON_NOTIFIER_H_
#define DETDB_COMMON_NOTIFIER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DETDB_CPU_RELAX() _mm_pause()
#else
#define DETDB_CPU_RELAX() std::this_thread::yield()
#endif

namespace detdb {

class Notifier {
 public:
  void Notify() {
    signaled_.store(true, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> l(mu_);
      cv_.notify_all();
    }
  }

  // Returns when notified (consuming the notification) or after `timeout`.
  void Wait(std::chrono::microseconds timeout = std::chrono::milliseconds(10)) {
    const int slept = slept_.load(std::memory_order_relaxed);
    const int polls = slept >= kIdleAfterSleeps ? kIdlePolls : kBusyPolls;
    for (int i = 0; i < polls; ++i) {
      // Read before the read-modify-write: a poll that finds nothing
      // leaves the notifier's cache line shared with the notifying thread.
      if (signaled_.load(std::memory_order_relaxed) && signaled_.exchange(false, std::memory_order_acq_rel)) {
        if (slept != 0) slept_.store(0, std::memory_order_relaxed);
        return;
      }
      if (i % 16 == 15) {
        std::this_thread::yield();
      } else {
        DETDB_CPU_RELAX();
      }
    }
    if (slept < kIdleAfterSleeps) slept_.store(slept + 1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> l(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cv_.wait_for(l, timeout, [&] { return signaled_.load(std::memory_order_seq_cst); });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    // Consume a notification that came (before the timeout or just after:
    // the caller looks at its state next either way).
    signaled_.exchange(false, std::memory_order_acquire);
  }

  // Whether the next Wait polls only kIdlePolls times (see the file comment).
  bool idle() const { return slept_.load(std::memory_order_relaxed) >= kIdleAfterSleeps; }
  // Waits asleep on the condition variable now (tests).
  int sleepers() const { return sleepers_.load(std::memory_order_seq_cst); }

 private:
  // Polls before sleeping: normally, and after kIdleAfterSleeps Waits in a
  // row that slept (see the file comment).
  static constexpr int kBusyPolls = 1024;
  static constexpr int kIdlePolls = 64;
  static constexpr int kIdleAfterSleeps = 8;
  std::atomic<bool> signaled_{false};
  std::atomic<int> sleepers_{0};
  // Waits in a row that slept, up to kIdleAfterSleeps (a hint shared by
  // all waiters: relaxed, a lost update only changes one Wait's polls).
  std::atomic<int> slept_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace detdb

#endif  // DETDB_COMMON_NOTIFIER_H_
