// ElidedLatch: a short-term latch for structural changes of in-memory
// indexes, after seed 001 (lock elision with Intel TSX).
//
// Where the CPU has RTM (Restricted Transactional Memory, detected once at
// run time), Lock() first tries to run the critical section as a hardware
// transaction without writing the latch: the latch word is only read inside
// the transaction, so it joins the read set and a thread that really takes
// the latch aborts every elided section at once. Two elided sections that
// touch different cache lines run in parallel, as if there were no latch.
// After an abort Lock() waits until the latch is free before it retries
// elision (the paper's cure for the lemming effect: retrying while the latch
// is held only burns the retry budget and sends every thread to the lock);
// after kMaxElisionAttempts failed attempts it takes the latch for real.
//
// Without RTM (the usual case today: most CPUs ship with TSX disabled) and
// under ThreadSanitizer (which cannot see a hardware transaction as
// synchronisation) the latch is a plain test-and-test-and-set spin lock.
// Waiting spins with a pause instruction and yields the CPU after a while,
// so a waiter never burns a core for long.
//
//   ElidedLatch latch;
//   { ElidedLatchGuard g(&latch); ...short critical section... }
//
// A critical section must be short, must not block and should not make
// system calls or allocate (those abort a hardware transaction every time,
// which is correct but wastes the attempts). It must not depend on seeing
// the latch as held: inside an elided section the latch word reads as free.
//
// Thread-safety: Lock()/Unlock() are safe from any thread. The latch is not
// recursive. Unlock() must be called by the thread that called Lock(), with
// no other ElidedLatch locked or unlocked in between unless properly nested
// (hardware transactions nest by flattening).
#ifndef DETDB_STORAGE_ELIDED_LATCH_H_
#define DETDB_STORAGE_ELIDED_LATCH_H_

#include <atomic>
#include <cstdint>

namespace detdb {

class ElidedLatch {
 public:
  // Elision attempts (hardware transactions) before taking the latch.
  static constexpr int kMaxElisionAttempts = 8;
  // Pause-spins while waiting before every further wait step yields.
  static constexpr int kSpinsBeforeYield = 256;

  ElidedLatch() = default;
  ElidedLatch(const ElidedLatch&) = delete;
  ElidedLatch& operator=(const ElidedLatch&) = delete;

  // Enters the critical section: elided, or with the latch held.
  void Lock() {
    if (ElisionEnabled()) {
      LockElided();
      return;
    }
    if (word_.exchange(1, std::memory_order_acquire) == 0) return;
    LockSlow();
  }

  // Leaves the critical section entered by the last Lock() of this thread.
  void Unlock() {
    if (ElisionEnabled() && UnlockElided()) return;
    word_.store(0, std::memory_order_release);
  }

  // Takes the latch for real, never eliding: for critical sections that
  // conflict every time (e.g. a bump allocator), where elision only wastes
  // attempts. Unlock() releases it.
  void LockNoElision() {
    if (word_.exchange(1, std::memory_order_acquire) == 0) return;
    LockSlow();
  }

  // Takes the latch for real if it is free right now; never elides.
  bool TryLock() {
    return word_.load(std::memory_order_relaxed) == 0 &&
           word_.exchange(1, std::memory_order_acquire) == 0;
  }

  // True iff some thread holds the latch for real (elided sections do not
  // count). For tests and assertions only.
  bool IsHeld() const { return word_.load(std::memory_order_relaxed) != 0; }

  // Whether the CPU supports RTM and the OS/microcode lets it commit:
  // CPUID leaf 7 EBX bit 11 set and EDX bit 11 (RTM_ALWAYS_ABORT) clear.
  // Detected once; false on non-x86 targets.
  static bool RtmAvailable();

  // Whether Lock() tries elision: RtmAvailable() and not built with
  // ThreadSanitizer and not disabled with SetElisionForTesting(false).
  static bool ElisionEnabled() {
    const int8_t state = elision_state_.load(std::memory_order_relaxed);
    return state < 0 ? InitElisionState() : state != 0;
  }

  // Turns elision off (or back on where RtmAvailable()) for every latch of
  // the process, e.g. to compare with a plain spin lock in benchmarks.
  // REQUIRES: no ElidedLatch is locked by any thread.
  static void SetElisionForTesting(bool enabled);

  // Counters of the calling thread over all latches (thread-local, so that
  // counting costs no shared cache line). Only the elision path counts.
  struct Stats {
    uint64_t elided = 0;    // critical sections that committed elided
    uint64_t aborts = 0;    // hardware transactions that aborted
    uint64_t fallback = 0;  // Lock() calls that took the latch after aborts
  };
  static Stats ThreadStats();

 private:
  void LockSlow();
  void LockElided();
  bool UnlockElided();  // true iff it committed an elided section
  void WaitUntilFree() const;

  static bool InitElisionState();

  // -1: not yet detected, 0: off, 1: on. Constant-initialised, so latches
  // used during static initialisation of other files work too.
  static std::atomic<int8_t> elision_state_;

  // 0: free, 1: held for real.
  std::atomic<uint32_t> word_{0};
};

// Holds an ElidedLatch for the guard's scope.
class ElidedLatchGuard {
 public:
  explicit ElidedLatchGuard(ElidedLatch* latch) : latch_(latch) { latch_->Lock(); }
  ~ElidedLatchGuard() { latch_->Unlock(); }
  ElidedLatchGuard(const ElidedLatchGuard&) = delete;
  ElidedLatchGuard& operator=(const ElidedLatchGuard&) = delete;

 private:
  ElidedLatch* const latch_;
};

}  // namespace detdb

#endif  // DETDB_STORAGE_ELIDED_LATCH_H_
