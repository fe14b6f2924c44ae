#include "storage/elided_latch.h"

#include <cstdio>
#include <mutex>
#include <vector>

#include "storage/spin_wait.h"

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
// Only the functions that execute RTM instructions are compiled for RTM, and
// they run only once RTM was detected, so the binary runs on CPUs without it.
#define DETDB_TARGET_RTM __attribute__((target("rtm")))
#define DETDB_INLINE_RTM __attribute__((always_inline, target("rtm"))) inline
#else
#define DETDB_TARGET_RTM
#endif

namespace detdb {

std::atomic<int8_t> ElidedLatch::mode_{-1};

#ifdef DETDB_ELIDED_LATCH_X86
static_assert(ElidedLatch::kTxStarted == _XBEGIN_STARTED);
static_assert(ElidedLatch::kTxExplicit == _XABORT_EXPLICIT && ElidedLatch::kTxRetry == _XABORT_RETRY &&
              ElidedLatch::kTxConflict == _XABORT_CONFLICT && ElidedLatch::kTxCapacity == _XABORT_CAPACITY &&
              ElidedLatch::kTxDebug == _XABORT_DEBUG && ElidedLatch::kTxNested == _XABORT_NESTED);
#endif
static_assert(ElidedLatch::kSpinsBeforeYield == SpinWait::kSpinsBeforeYield);

namespace {

#ifdef DETDB_ELIDED_LATCH_TSAN
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

// ------------------------------------------------------------ counters

// One thread's counters. Only the owner writes them (a relaxed load and
// store: no locked instruction); GlobalStats reads them.
struct ThreadCounters {
  std::atomic<uint64_t> elided{0};
  std::atomic<uint64_t> fallback{0};
  std::atomic<uint64_t> aborts[ElidedLatch::kNumAbortCauses] = {};

  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  ElidedLatch::Stats Read() const {
    ElidedLatch::Stats s;
    s.elided = elided.load(std::memory_order_relaxed);
    s.fallback = fallback.load(std::memory_order_relaxed);
    for (int i = 0; i < ElidedLatch::kNumAbortCauses; ++i) {
      s.aborts_by_cause[i] = aborts[i].load(std::memory_order_relaxed);
      s.aborts += s.aborts_by_cause[i];
    }
    return s;
  }
};

// Every live thread's counters, and the sum of those that exited. Leaked:
// threads may exit during static destruction.
struct Registry {
  std::mutex mu;
  std::vector<const ThreadCounters*> live;
  ElidedLatch::Stats exited;
};

Registry& GetRegistry() {
  static Registry* const registry = new Registry;
  return *registry;
}

struct ThreadSlot {
  ThreadCounters counters;
  ThreadSlot() {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> l(r.mu);
    r.live.push_back(&counters);
  }
  ~ThreadSlot() {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> l(r.mu);
    r.exited += counters.Read();
    std::erase(r.live, &counters);
  }
};

// Touched only outside hardware transactions (after the commit, in the
// abort handler), except in a latch nested inside another's elided section,
// where a thread's very first touch (registration) aborts that transaction
// once, harmlessly.
thread_local ThreadSlot t_slot;

// ------------------------------------------------------------ detection

struct Detection {
  bool rtm = false;
  std::string status;
};

#ifdef DETDB_ELIDED_LATCH_X86
// One transaction that does nothing: kTxStarted if it committed, else the
// abort status. REQUIRES: CPUID reports RTM (else XBEGIN faults).
DETDB_TARGET_RTM unsigned ProbeTransaction() {
  const unsigned status = _xbegin();
  if (status == _XBEGIN_STARTED) {
    _xend();
    return ElidedLatch::kTxStarted;
  }
  return status;
}
#endif

Detection Detect() {
  Detection d;
#ifdef DETDB_ELIDED_LATCH_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) {
    d.status = "no RTM: this CPU has no CPUID leaf 7";
    return d;
  }
  if (((ebx >> 11) & 1u) == 0) {
    d.status = "no RTM: CPUID leaf 7 EBX bit 11 is clear (no TSX, or TSX turned off)";
    return d;
  }
  if ((edx >> 11) & 1u) {
    d.status = "RTM off: CPUID leaf 7 EDX bit 11 (RTM_ALWAYS_ABORT) is set (microcode aborts every transaction)";
    return d;
  }
  // A transaction can abort for passing reasons (an interrupt), so a few
  // tries; one that never commits means RTM is there but disabled.
  constexpr int kProbes = 64;
  unsigned last = 0;
  for (int i = 0; i < kProbes; ++i) {
    last = ProbeTransaction();
    if (last == ElidedLatch::kTxStarted) {
      d.rtm = true;
      d.status = "RTM: CPUID reports it and a probe transaction committed";
      if (i > 0) d.status += " (after " + std::to_string(i) + " aborts)";
      return d;
    }
  }
  char buf[160];
  std::snprintf(buf, sizeof(buf), "RTM off: CPUID reports RTM but %d probe transactions aborted (last status 0x%x)",
                kProbes, last);
  d.status = buf;
#else
  d.status = "no RTM: not an x86 CPU";
#endif
  return d;
}

const Detection& Detected() {
  static const Detection d = Detect();
  return d;
}

std::atomic<ElidedLatch::Speculation*> g_injected{nullptr};

// Detect at start-up rather than at the first Lock(), which may run inside
// a hardware transaction (where CPUID always aborts).
[[maybe_unused]] const bool kElisionDetectedAtStartup = ElidedLatch::ElisionEnabled();

// ------------------------------------------------------------ transactions

#ifdef DETDB_ELIDED_LATCH_X86
// The hardware's transaction.
struct RtmTx {
  static DETDB_INLINE_RTM unsigned Begin() { return _xbegin(); }
  // Aborts the running transaction: execution resumes at Begin(), which
  // returns the abort status. (Outside a transaction XABORT is a no-op and
  // the status below is what the caller sees.)
  static DETDB_INLINE_RTM unsigned AbortLatchHeld() {
    _xabort(ElidedLatch::kAbortLatchHeld);
    return ElidedLatch::kTxExplicit | (ElidedLatch::kAbortLatchHeld << 24);
  }
};
#endif

// A test's Speculation.
struct InjectedTx {
  static unsigned Begin() { return g_injected.load(std::memory_order_relaxed)->Begin(); }
  static unsigned AbortLatchHeld() { return g_injected.load(std::memory_order_relaxed)->AbortLatchHeld(); }
};

}  // namespace

// ---------------------------------------------------------------- policy

ElidedLatch::AbortCause ElidedLatch::ClassifyAbort(unsigned status) {
  if (status & kTxExplicit) return AbortCause::kExplicit;
  if (status & kTxCapacity) return AbortCause::kCapacity;
  if (status & kTxConflict) return AbortCause::kConflict;
  if (status & kTxRetry) return AbortCause::kRetry;
  if (status & kTxDebug) return AbortCause::kDebug;
  if (status & kTxNested) return AbortCause::kNested;
  return AbortCause::kOther;
}

const char* ElidedLatch::AbortCauseName(AbortCause cause) {
  static const char* const kNames[kNumAbortCauses] = {"explicit", "retry", "conflict", "capacity",
                                                      "debug",    "nested", "other"};
  return kNames[static_cast<int>(cause)];
}

bool ElidedLatch::RetryAfterAbort(unsigned status) {
  // The latch was held when the section looked (it is free again once the
  // caller has waited). Other explicit codes are not ours: no retry.
  if (status & kTxExplicit) return TxAbortCode(status) == kAbortLatchHeld;
  // The section does not fit in the transactional buffers: it never will.
  if (status & kTxCapacity) return false;
  // Another thread touched a line of the section: transient.
  if (status & (kTxConflict | kTxRetry)) return true;
  // Debug, nested and everything without a hint (interrupts, page faults,
  // instructions a transaction cannot run: status 0): the latch.
  return false;
}

// ---------------------------------------------------------------- stats

ElidedLatch::Stats& ElidedLatch::Stats::operator+=(const Stats& o) {
  elided += o.elided;
  aborts += o.aborts;
  fallback += o.fallback;
  for (int i = 0; i < kNumAbortCauses; ++i) aborts_by_cause[i] += o.aborts_by_cause[i];
  return *this;
}

ElidedLatch::Stats ElidedLatch::Stats::operator-(const Stats& o) const {
  Stats d = *this;
  d.elided -= o.elided;
  d.aborts -= o.aborts;
  d.fallback -= o.fallback;
  for (int i = 0; i < kNumAbortCauses; ++i) d.aborts_by_cause[i] -= o.aborts_by_cause[i];
  return d;
}

ElidedLatch::Stats ElidedLatch::ThreadStats() { return t_slot.counters.Read(); }

ElidedLatch::Stats ElidedLatch::GlobalStats() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> l(r.mu);
  Stats sum = r.exited;
  for (const ThreadCounters* c : r.live) sum += c->Read();
  return sum;
}

// ---------------------------------------------------------------- modes

bool ElidedLatch::RtmAvailable() { return Detected().rtm; }

std::string ElidedLatch::ElisionStatus() {
  const int8_t mode = Mode();
  if (mode == kModeInjected) return "elision through an injected Speculation (tests)";
  std::string s = Detected().status;
  if (Detected().rtm && kThreadSanitizer) s += "; elision off: ThreadSanitizer build";
  if (Detected().rtm && !kThreadSanitizer && mode == kModeSpin) s += "; elision off: SetElisionForTesting(false)";
  return s;
}

int8_t ElidedLatch::ModeFor(bool enabled) {
  if (!enabled) return kModeSpin;
  if (g_injected.load(std::memory_order_relaxed) != nullptr) return kModeInjected;
  return Detected().rtm && !kThreadSanitizer ? kModeRtm : kModeSpin;
}

int8_t ElidedLatch::InitMode() {
  int8_t expected = -1;
  mode_.compare_exchange_strong(expected, ModeFor(true), std::memory_order_relaxed);
  return mode_.load(std::memory_order_relaxed);
}

void ElidedLatch::SetElisionForTesting(bool enabled) { mode_.store(ModeFor(enabled), std::memory_order_relaxed); }

void ElidedLatch::SetSpeculationForTesting(Speculation* s) {
  g_injected.store(s, std::memory_order_relaxed);
  mode_.store(ModeFor(true), std::memory_order_relaxed);
}

// ---------------------------------------------------------------- locking

void ElidedLatch::WaitUntilFree() const {
  SpinWait w;
  while (word_.load(std::memory_order_relaxed) != 0) w.Step();
}

void ElidedLatch::LockSlow() {
  SpinWait w;
  for (;;) {
    // Test, then test-and-set: spinning on a plain load keeps the cache
    // line shared until the holder releases it.
    while (word_.load(std::memory_order_relaxed) != 0) w.Step();
    if (word_.exchange(1, std::memory_order_acquire) == 0) return;
  }
}

template <typename Tx>
DETDB_TARGET_RTM void ElidedLatch::LockSpeculating() {
  for (int attempt = 0; attempt < kMaxElisionAttempts; ++attempt) {
    // Never start a transaction while the latch is held: it would abort at
    // once and waste an attempt, and threads that run out of attempts that
    // way take the latch in turn and keep it busy (the lemming effect of
    // seed 001, 3.3.2).
    WaitUntilFree();
    unsigned status = Tx::Begin();
    if (status == kTxStarted) {
      // Reading the word puts it in the transaction's read set: a thread
      // that takes the latch for real from now on aborts this section.
      if (word_.load(std::memory_order_acquire) == 0) return;
      status = Tx::AbortLatchHeld();  // RTM: resumes at Begin() above
    }
    ThreadCounters& c = t_slot.counters;
    ThreadCounters::Bump(c.aborts[static_cast<int>(ClassifyAbort(status))]);
    if (!RetryAfterAbort(status)) break;
  }
  ThreadCounters::Bump(t_slot.counters.fallback);
  LockNoElision();
}

void ElidedLatch::LockElided() {
#ifdef DETDB_ELIDED_LATCH_X86
  if (Mode() == kModeRtm) {
    LockSpeculating<RtmTx>();
    return;
  }
#endif
  LockSpeculating<InjectedTx>();
}

DETDB_TARGET_RTM bool ElidedLatch::UnlockElided() {
#ifdef DETDB_ELIDED_LATCH_X86
  if (Mode() == kModeRtm) {
    // An elided section sees the word free; a latch held for real (after
    // the fallback, or by TryLock inside another latch's elided section)
    // reads 1 and is released by a store, even inside an enclosing
    // transaction.
    if (word_.load(std::memory_order_relaxed) != 0 || !_xtest()) return false;
    // Keep the compiler from moving the section's accesses past the commit.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    _xend();
    ThreadCounters::Bump(t_slot.counters.elided);
    return true;
  }
#endif
  // An injected section is not isolated: another thread may hold the latch
  // for real while it runs, so only the Speculation knows whether this
  // thread's section is elided (injected sections do not nest).
  Speculation* s = g_injected.load(std::memory_order_relaxed);
  if (s == nullptr || !s->InTransaction()) return false;
  s->End();
  ThreadCounters::Bump(t_slot.counters.elided);
  return true;
}

}  // namespace detdb
