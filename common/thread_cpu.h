// ThreadCpuSlot: the CPU time a thread has used, readable from other threads
// while it runs and after it ended. The thread calls Begin() first and End()
// last; Read() answers from any thread. For statistics only (how much of a
// process's CPU each stage takes: docs/ENGINE.md), never for decisions.
//
// Thread-safety: Begin/End by the owning thread, Read from any thread.
#ifndef DETDB_COMMON_THREAD_CPU_H_
#define DETDB_COMMON_THREAD_CPU_H_

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>

namespace detdb {

// CPU time of the calling thread, in nanoseconds.
inline uint64_t SelfThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class ThreadCpuSlot {
 public:
  void Begin() {
    clockid_t c;
    if (pthread_getcpuclockid(pthread_self(), &c) != 0) return;
    clock_.store(c, std::memory_order_relaxed);
    running_.store(true, std::memory_order_release);
  }
  void End() {
    final_ns_.store(SelfThreadCpuNs(), std::memory_order_relaxed);
    running_.store(false, std::memory_order_release);
  }
  // CPU time used so far; after End(), the time at End; 0 before Begin.
  uint64_t Read() const {
    if (running_.load(std::memory_order_acquire)) {
      timespec ts;
      if (clock_gettime(clock_.load(std::memory_order_relaxed), &ts) == 0)
        return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
    }
    return final_ns_.load(std::memory_order_relaxed);  // ended (or ending: its final time)
  }

 private:
  std::atomic<bool> running_{false};
  std::atomic<clockid_t> clock_{0};
  std::atomic<uint64_t> final_ns_{0};
};

}  // namespace detdb

#endif  // DETDB_COMMON_THREAD_CPU_H_
