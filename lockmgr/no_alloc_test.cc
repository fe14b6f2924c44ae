// Checks the "no heap allocation per lock request" promise: a workload run
// once grows every pool to its peak; running the identical workload again
// (with fresh txn ids) on the same lock manager then performs no heap
// allocation at all, in every lock manager. This binary
// replaces the global operator new/delete to count allocations.
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "lockmgr/lock_manager.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocs{0};

void* CountedAlloc(size_t n, size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("DETDB_ABORT_ON_ALLOC") != nullptr) std::abort();  // for gdb
  }
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(n)
                                               : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return CountedAlloc(n, 0); }
void* operator new[](size_t n) { return CountedAlloc(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return CountedAlloc(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return CountedAlloc(n, static_cast<size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace detdb {
namespace {

class NoAllocTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NoAllocTest, SteadyStateLockAndReleaseDoNotAllocate) {
  constexpr int kTxns = 40000, kKeys = 10, kInflight = 8, kRing = 4096;
  // Pre-generated txns: one hot key of 20, nine of 5000; 30% reads.
  std::mt19937_64 rng(7);
  std::vector<Key> keys(size_t{kTxns} * kKeys);
  std::vector<uint8_t> nreads(kTxns);
  for (int i = 0; i < kTxns; ++i) {
    keys[static_cast<size_t>(i) * kKeys] = rng() % 20;
    for (int j = 1; j < kKeys; ++j) keys[static_cast<size_t>(i) * kKeys + j] = 20 + rng() % 5000;
    nreads[i] = static_cast<uint8_t>(rng() % 4);
  }
  LockManagerOptions o;
  o.check_invariants = false;
  o.table_size = 1 << 14;
  o.max_active = 500;
  auto lm = NewLockManager(GetParam(), o);
  ASSERT_TRUE(lm.ok());
  std::vector<LockTxn> records(kRing);
  std::vector<LockTxn*> running(kRing);
  ReadyList ready;
  ready.reserve(kRing);
  for (int pass = 0; pass < 2; ++pass) {
    g_allocs = 0;
    g_counting = pass == 1;  // pass 0 grows the pools to the workload's peak
    const TxnId base = TxnId{1} + pass * kTxns;
    size_t head = 0, tail = 0;
    int admitted = 0, released = 0;
    while (released < kTxns) {
      const bool can_admit = admitted < kTxns && (*lm)->CanAdmit() && admitted - released < kRing;
      if (tail > head && (tail - head >= kInflight || !can_admit)) {
        (*lm)->Release(running[head++ % kRing], &ready);
        ++released;
      } else if (can_admit) {
        LockTxn* t = &records[admitted % kRing];
        const Key* k = &keys[static_cast<size_t>(admitted) * kKeys];
        t->id = base + admitted;
        t->reads = std::span<const Key>(k, nreads[admitted]);
        t->writes = std::span<const Key>(k + nreads[admitted], kKeys - nreads[admitted]);
        (*lm)->Lock(t, &ready);
        ++admitted;
      }
      (*lm)->Poll(admitted == kTxns, &ready);
      for (LockTxn* t : ready) running[tail++ % kRing] = t;
      ready.clear();
    }
    g_counting = false;
    EXPECT_TRUE((*lm)->IsQuiescent());
  }
  EXPECT_EQ(g_allocs.load(), 0u) << GetParam() << " allocated on the hot path (rerun with "
                                 << "DETDB_ABORT_ON_ALLOC=1 under gdb to see where)";
  EXPECT_GT((*lm)->stats().blocked_at_admission, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, NoAllocTest, ::testing::ValuesIn(LockManagerNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace detdb
