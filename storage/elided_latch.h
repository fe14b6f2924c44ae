// ElidedLatch: a short-term latch for structural changes of in-memory
// indexes, after seed 001 (lock elision with Intel TSX).
//
// Where the CPU has RTM (Restricted Transactional Memory) and it works,
// Lock() first tries to run the critical section as a hardware transaction
// without writing the latch: the latch word is only read inside the
// transaction, so it joins the read set and a thread that really takes the
// latch aborts every elided section at once. Two elided sections that touch
// different cache lines run in parallel, as if there were no latch.
//
// RTM is detected once, at start-up: CPUID leaf 7 EBX bit 11 (RTM) set, EDX
// bit 11 (RTM_ALWAYS_ABORT) clear, and a probe transaction that commits
// (microcode can leave RTM reported but abort every transaction). Without
// it no RTM instruction ever runs (they would fault), and the latch is a
// test-and-test-and-set spin lock. Under ThreadSanitizer (which cannot see
// a hardware transaction as synchronisation) too.
//
// The retry policy (seed 001, 3.3): after an abort, Lock() looks at its
// cause. A conflict, an abort the hardware marks as worth retrying, or the
// latch found held (explicit abort) are transient: Lock() waits until the
// latch is free and tries elision again, at most kMaxElisionAttempts times
// in all. A capacity overflow (the section touches too many lines) and the
// rest (debug, an abort inside a nested transaction, interrupts and
// instructions a transaction cannot run) would abort again: Lock() takes
// the latch at once. No lemming effect: a thread waits for the latch to be
// free BEFORE every attempt, so a thread that took the latch for real does
// not make the others burn their attempts on a held latch and take it in
// turn, and every Lock() starts with elision again (nothing is sticky).
//
// Counters (Stats): sections elided, Lock()s that fell back to the latch
// after aborts, aborts by cause. Per thread (no shared cache line is
// written to count), summed over every thread by GlobalStats().
//
//   ElidedLatch latch;
//   { ElidedLatchGuard g(&latch); ...short critical section... }
//
// A critical section must be short, must not block and should not make
// system calls or allocate (those abort a hardware transaction every time,
// which is correct but wastes an attempt). It must not depend on seeing the
// latch as held: inside an elided section the latch word reads as free.
// Readers that must not write the latch's line use optimistic validation
// instead (storage/version_latch.h) where there is no RTM.
//
// Thread-safety: Lock()/Unlock() are safe from any thread. The latch is not
// recursive. Unlock() must be called by the thread that called Lock(), with
// no other ElidedLatch locked or unlocked in between unless properly nested
// (hardware transactions nest by flattening).
#ifndef DETDB_STORAGE_ELIDED_LATCH_H_
#define DETDB_STORAGE_ELIDED_LATCH_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace detdb {

class ElidedLatch {
 public:
  // Elision attempts (hardware transactions) before taking the latch.
  static constexpr int kMaxElisionAttempts = 8;
  // Pause-spins while waiting before every further wait step yields.
  static constexpr int kSpinsBeforeYield = 256;

  // The status word of a hardware transaction (RTM's EAX after XBEGIN; the
  // same bits as <immintrin.h>'s _XBEGIN_STARTED and _XABORT_*).
  static constexpr unsigned kTxStarted = ~0u;
  static constexpr unsigned kTxExplicit = 1u << 0;  // XABORT; code in bits 31:24
  static constexpr unsigned kTxRetry = 1u << 1;     // may succeed on a retry
  static constexpr unsigned kTxConflict = 1u << 2;  // another core touched the read/write set
  static constexpr unsigned kTxCapacity = 1u << 3;  // the read/write set overflowed
  static constexpr unsigned kTxDebug = 1u << 4;     // a debug breakpoint
  static constexpr unsigned kTxNested = 1u << 5;    // aborted inside a nested transaction
  // The explicit abort code of an elided section that found the latch held.
  static constexpr unsigned kAbortLatchHeld = 0xff;
  static constexpr unsigned TxAbortCode(unsigned status) { return status >> 24; }

  // What an abort is counted as: the first its status shows, in the order
  // explicit, capacity, conflict, retry, debug, nested (ClassifyAbort);
  // other when it shows none.
  enum class AbortCause : uint8_t { kExplicit = 0, kRetry, kConflict, kCapacity, kDebug, kNested, kOther };
  static constexpr int kNumAbortCauses = 7;
  static AbortCause ClassifyAbort(unsigned status);
  // "explicit", "retry", "conflict", "capacity", "debug", "nested", "other".
  static const char* AbortCauseName(AbortCause cause);
  // The retry policy: whether an abort with this status is worth another
  // attempt (after waiting for the latch to be free). Yes for the latch
  // found held, a conflict or the hardware's retry hint; never on capacity.
  static bool RetryAfterAbort(unsigned status);

  ElidedLatch() = default;
  ElidedLatch(const ElidedLatch&) = delete;
  ElidedLatch& operator=(const ElidedLatch&) = delete;

  // Enters the critical section: elided, or with the latch held.
  void Lock() {
    if (Mode() == kModeSpin) [[likely]] {
      if (word_.exchange(1, std::memory_order_acquire) == 0) return;
      LockSlow();
      return;
    }
    LockElided();
  }

  // Leaves the critical section entered by the last Lock() of this thread.
  void Unlock() {
    if (Mode() != kModeSpin && UnlockElided()) return;
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

  // Whether the CPU has RTM that commits (CPUID and the probe, above).
  // Detected once; false on non-x86 targets.
  static bool RtmAvailable();
  // One line on the detection: why elision is off ("no RTM: CPUID leaf 7
  // EBX bit 11 is clear", "... the probe transaction never committed", "...
  // ThreadSanitizer build"), or that it is on. For benchmark and test output.
  static std::string ElisionStatus();

  // Whether Lock() tries elision: RtmAvailable() and not built with
  // ThreadSanitizer and not disabled with SetElisionForTesting(false), or a
  // Speculation is injected.
  static bool ElisionEnabled() { return Mode() != kModeSpin; }

  // Turns elision off (or back on where RtmAvailable()) for every latch of
  // the process, e.g. to compare with a plain spin lock in benchmarks.
  // REQUIRES: no ElidedLatch is locked by any thread.
  static void SetElisionForTesting(bool enabled);

  // Counters of elision (only the elision path counts).
  struct Stats {
    uint64_t elided = 0;    // critical sections that committed elided
    uint64_t aborts = 0;    // hardware transactions that aborted (all causes)
    uint64_t fallback = 0;  // Lock() calls that took the latch after aborts
    uint64_t aborts_by_cause[kNumAbortCauses] = {};  // indexed by AbortCause

    uint64_t by(AbortCause c) const { return aborts_by_cause[static_cast<int>(c)]; }
    Stats& operator+=(const Stats& o);
    Stats operator-(const Stats& o) const;  // for deltas of one counter set
  };
  // The calling thread's counters over all latches.
  static Stats ThreadStats();
  // Every thread's counters (live and exited) over all latches. Each thread
  // writes only its own counters (relaxed), so a sum taken while threads run
  // is a little behind, never torn per counter.
  static Stats GlobalStats();

  // Tests only: stands in for the hardware transaction, so that the retry
  // policy and the lemming cure run (and are tested) on CPUs without RTM.
  // Lock() asks Begin() for a transaction's status: kTxStarted runs the
  // section "elided" (NOT isolated: it runs concurrently with everything,
  // so a test's sections must be race-free by themselves) and the section
  // ends with End(); an abort status is handled as the hardware's would be.
  // A started section that finds the latch held calls AbortLatchHeld(),
  // which returns the status the hardware would report (explicit,
  // kAbortLatchHeld). InTransaction() is RTM's XTEST; Unlock() ends an
  // injected section iff it is true (injected sections do not nest).
  // Called from any thread that locks a latch.
  class Speculation {
   public:
    virtual ~Speculation() = default;
    virtual unsigned Begin() = 0;
    virtual unsigned AbortLatchHeld() = 0;
    virtual void End() = 0;
    virtual bool InTransaction() = 0;
  };
  // Every latch of the process elides through `s` (nullptr: back to what
  // was detected). REQUIRES: no ElidedLatch is locked by any thread; `s`
  // outlives its use.
  static void SetSpeculationForTesting(Speculation* s);

 private:
  // Mode(): -1 not yet detected, then one of these.
  static constexpr int8_t kModeSpin = 0;      // no elision
  static constexpr int8_t kModeRtm = 1;       // RTM
  static constexpr int8_t kModeInjected = 2;  // a test's Speculation

  static int8_t Mode() {
    const int8_t mode = mode_.load(std::memory_order_relaxed);
    return mode >= 0 ? mode : InitMode();
  }
  static int8_t InitMode();
  static int8_t ModeFor(bool enabled);  // the mode when elision is (not) wanted

  void LockSlow();
  void LockElided();
  bool UnlockElided();  // true iff it ended an elided section
  void WaitUntilFree() const;
  // The elision loop over one kind of transaction (RTM or injected).
  template <typename Tx>
  void LockSpeculating();

  // Constant-initialised, so latches used during static initialisation of
  // other files work too.
  static std::atomic<int8_t> mode_;

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
