// SpinWait: how storage's latches wait (ElidedLatch, VersionLatch): pause
// instructions at first (a short critical section ends within a few hundred
// cycles), then yield the CPU at every step, so a waiter behind a holder
// that was preempted does not burn its core for the holder's time slice.
//
//   SpinWait w;
//   while (busy()) w.Step();
//
// Thread-safety: a SpinWait belongs to one thread (one wait).
#ifndef DETDB_STORAGE_SPIN_WAIT_H_
#define DETDB_STORAGE_SPIN_WAIT_H_

#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace detdb {

// One pause: tells the core (and its hyperthread sibling) that this is a
// spin-wait loop. A no-op where there is no such instruction.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

class SpinWait {
 public:
  // Pause-spins before every further step yields.
  static constexpr int kSpinsBeforeYield = 256;

  void Step() {
    if (spins_ < kSpinsBeforeYield) {
      ++spins_;
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }

 private:
  int spins_ = 0;
};

}  // namespace detdb

#endif  // DETDB_STORAGE_SPIN_WAIT_H_
