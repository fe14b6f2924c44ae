// Notifier: lets one thread sleep until another has news for it, without a
// syscall on the notifying side when nobody sleeps. The waiter spins a
// little first (cheap hand-offs under load), then blocks on a condition
// variable, so an idle thread uses no CPU: on a 2-core machine the
// sequencer, lock threads and workers share the cores.
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
    for (int i = 0; i < kSpins; ++i) {
      if (signaled_.exchange(false, std::memory_order_acq_rel)) return;
      if (i % 16 == 15) {
        std::this_thread::yield();
      } else {
        DETDB_CPU_RELAX();
      }
    }
    std::unique_lock<std::mutex> l(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cv_.wait_for(l, timeout, [&] { return signaled_.load(std::memory_order_seq_cst); });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    signaled_.store(false, std::memory_order_relaxed);
  }

 private:
  static constexpr int kSpins = 64;
  std::atomic<bool> signaled_{false};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace detdb

#endif  // DETDB_COMMON_NOTIFIER_H_
