#include "storage/elided_latch.h"

#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define DETDB_ELIDED_LATCH_X86 1
#endif

#if defined(__SANITIZE_THREAD__)
#define DETDB_ELIDED_LATCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DETDB_ELIDED_LATCH_TSAN 1
#endif
#endif

#ifdef DETDB_ELIDED_LATCH_X86
// Only the functions that execute RTM instructions are compiled for RTM, so
// the rest of the binary runs on CPUs without it.
#define DETDB_TARGET_RTM __attribute__((target("rtm")))
#else
#define DETDB_TARGET_RTM
#endif

namespace detdb {

std::atomic<int8_t> ElidedLatch::elision_state_{-1};

namespace {

#ifdef DETDB_ELIDED_LATCH_TSAN
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

// The abort code of a transaction that found the latch held.
[[maybe_unused]] constexpr unsigned kAbortLatchHeld = 0xff;

thread_local ElidedLatch::Stats t_stats;

bool DetectRtm() {
#ifdef DETDB_ELIDED_LATCH_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;  // no leaf 7
  const bool rtm = (ebx >> 11) & 1u;
  const bool rtm_always_abort = (edx >> 11) & 1u;  // microcode disabled TSX
  return rtm && !rtm_always_abort;
#else
  return false;
#endif
}

inline void CpuRelax() {
#ifdef DETDB_ELIDED_LATCH_X86
  _mm_pause();
#endif
}

// One step of waiting: pause-spin at first, then yield the CPU.
inline void Backoff(int* spins) {
  if (*spins < ElidedLatch::kSpinsBeforeYield) {
    ++*spins;
    CpuRelax();
  } else {
    std::this_thread::yield();
  }
}

// Detect at start-up rather than at the first Lock(), which may run inside
// a hardware transaction (where CPUID always aborts).
[[maybe_unused]] const bool kElisionDetectedAtStartup = ElidedLatch::ElisionEnabled();

}  // namespace

bool ElidedLatch::RtmAvailable() {
  static const bool available = DetectRtm();
  return available;
}

bool ElidedLatch::InitElisionState() {
  const int8_t on = (RtmAvailable() && !kThreadSanitizer) ? 1 : 0;
  int8_t expected = -1;
  elision_state_.compare_exchange_strong(expected, on, std::memory_order_relaxed);
  return elision_state_.load(std::memory_order_relaxed) != 0;
}

void ElidedLatch::SetElisionForTesting(bool enabled) {
  const bool on = enabled && RtmAvailable() && !kThreadSanitizer;
  elision_state_.store(on ? 1 : 0, std::memory_order_relaxed);
}

ElidedLatch::Stats ElidedLatch::ThreadStats() { return t_stats; }

void ElidedLatch::WaitUntilFree() const {
  int spins = 0;
  while (word_.load(std::memory_order_relaxed) != 0) Backoff(&spins);
}

void ElidedLatch::LockSlow() {
  int spins = 0;
  for (;;) {
    // Test, then test-and-set: spinning on a plain load keeps the cache
    // line shared until the holder releases it.
    while (word_.load(std::memory_order_relaxed) != 0) Backoff(&spins);
    if (word_.exchange(1, std::memory_order_acquire) == 0) return;
  }
}

DETDB_TARGET_RTM void ElidedLatch::LockElided() {
#ifdef DETDB_ELIDED_LATCH_X86
  for (int attempt = 0; attempt < kMaxElisionAttempts; ++attempt) {
    // Never start a transaction while the latch is held: it would abort at
    // once and waste an attempt (the lemming effect of seed 001, 3.3.2).
    WaitUntilFree();
    const unsigned status = _xbegin();
    if (status == _XBEGIN_STARTED) {
      // Reading the word puts it in the transaction's read set: a thread
      // that takes the latch for real from now on aborts this section.
      if (word_.load(std::memory_order_acquire) == 0) return;
      _xabort(kAbortLatchHeld);
    }
    // Aborted (conflict, capacity, interrupt, latch held, ...). Aborts are
    // often transient, so retry even without _XABORT_RETRY (seed 001, 5).
    ++t_stats.aborts;
  }
  ++t_stats.fallback;
#endif
  if (word_.exchange(1, std::memory_order_acquire) == 0) return;
  LockSlow();
}

DETDB_TARGET_RTM bool ElidedLatch::UnlockElided() {
#ifdef DETDB_ELIDED_LATCH_X86
  // An elided section sees the word free; a latch held for real (after the
  // fallback, or by TryLock inside another latch's elided section) reads 1
  // and is released by a store, even inside an enclosing transaction.
  if (word_.load(std::memory_order_relaxed) == 0 && _xtest()) {
    // Keep the compiler from moving the section's accesses past the commit.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    _xend();
    ++t_stats.elided;
    return true;
  }
#endif
  return false;
}

}  // namespace detdb
