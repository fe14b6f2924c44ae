// VersionLatch: optimistic version validation (a seqlock) for readers that
// must not write a shared cache line, after seed 001: even a reader-writer
// latch's shared mode writes the latch word, and that line moving between
// cores is what limits read-mostly indexes.
//
// A writer makes the version odd before it changes the protected data and
// even (+2 in all) after. A reader takes a snapshot of an even version,
// reads the data, and validates: if the version is still the snapshot, no
// writer ran meanwhile and what it read is a consistent state; else it
// reads again. A reader writes nothing.
//
//   // Reader (any thread, no latch):
//   for (;;) {
//     const uint64_t v = latch.ReadBegin();
//     ... read the protected fields (relaxed atomic loads) ...
//     if (latch.ReadValidate(v)) break;  // consistent: use what was read
//   }
//   // Writer excluded from other writers by something else (e.g. an
//   // ElidedLatch held, as Table's stripes do):
//   latch.WriteBegin(); ... relaxed atomic stores ... latch.WriteEnd();
//   // Or excluded by this latch itself:
//   latch.WriteLock(); ... latch.WriteUnlock();
//
// REQUIRES of the protected data: every field a reader reads while a
// writer may run is a std::atomic, read with relaxed (or acquire) loads and
// written with relaxed (or release) stores. Plain fields would be a data
// race in C++ (and to ThreadSanitizer) even though validation throws the
// values away. Between ReadBegin and ReadValidate a reader may see a torn
// state: it must not trust it (bound every loop and index by the storage it
// has, follow only pointers that stay valid: memory a reader can reach is
// not freed while it may be there, e.g. by epochs), and must not act on it
// before validating.
//
// Memory order (Boehm, "Can seqlocks get along with programming language
// memory models?", 2012): WriteBegin stores the odd version and then a
// release fence, so a reader that sees any store of the section sees the
// odd version when it reloads after its acquire fence (ReadValidate);
// WriteEnd's release store of the even version publishes every store of the
// section to a reader whose ReadBegin's acquire load sees it.
// ThreadSanitizer does not model stand-alone fences: under it the protected
// fields being atomics is what keeps reports away; the ordering argument is
// the one above.
//
// With hardware lock elision (ElidedLatch under RTM) guarding the writers,
// the writer's two bumps happen inside the hardware transaction and commit
// together (readers never see the odd value), and a reader that reads the
// version while the transaction runs aborts it (a read of a line in a
// transaction's write set is a conflict): correct, but readers and elided
// writers of one version then contend like writers.
//
// Thread-safety: every method is safe from any thread. Writers must be
// excluded from each other (WriteLock/TryUpgrade do it; WriteBegin/WriteEnd
// REQUIRE the caller to). Not recursive.
#ifndef DETDB_STORAGE_VERSION_LATCH_H_
#define DETDB_STORAGE_VERSION_LATCH_H_

#include <atomic>
#include <cstdint>

namespace detdb {

class VersionLatch {
 public:
  VersionLatch() = default;
  VersionLatch(const VersionLatch&) = delete;
  VersionLatch& operator=(const VersionLatch&) = delete;

  // ------------------------------------------------------------ readers

  // A snapshot of the version once no writer is inside (even). Waits,
  // without writing anything, while a writer is inside.
  uint64_t ReadBegin() const {
    const uint64_t v = version_.load(std::memory_order_acquire);
    if ((v & 1) == 0) [[likely]]
      return v;
    return WaitEven();
  }

  // True iff no writer entered since ReadBegin() returned `snapshot`: every
  // protected field read in between belongs to one consistent state.
  bool ReadValidate(uint64_t snapshot) const {
    // Orders the protected loads before the reload (see the file comment).
    std::atomic_thread_fence(std::memory_order_acquire);
    return version_.load(std::memory_order_relaxed) == snapshot;
  }

  // Runs f() (which reads protected fields and returns a value) until a run
  // validates; returns that run's value. `retries`, if given, is increased
  // by the runs that did not validate.
  template <typename F>
  auto ReadOptimistic(F f, uint64_t* retries = nullptr) const {
    for (;;) {
      const uint64_t v = ReadBegin();
      auto result = f();
      if (ReadValidate(v)) return result;
      if (retries != nullptr) ++*retries;
    }
  }

  // ------------------------------------------------------------ writers

  // Makes the version odd. REQUIRES: the caller excludes other writers.
  void WriteBegin() {
    const uint64_t v = version_.load(std::memory_order_relaxed);
    version_.store(v + 1, std::memory_order_relaxed);
    // The odd version before any store of the section (file comment).
    std::atomic_thread_fence(std::memory_order_release);
  }

  // Makes the version even again, publishing the section's stores.
  // REQUIRES: after this thread's WriteBegin (or WriteLock, TryUpgrade).
  void WriteEnd() { version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // WriteBegin with writers excluded by this latch: waits until no writer is
  // inside, then makes the version odd (compare-and-swap).
  void WriteLock() {
    uint64_t v = version_.load(std::memory_order_relaxed);
    if ((v & 1) == 0 && version_.compare_exchange_strong(v, v + 1, std::memory_order_acquire)) [[likely]] {
      std::atomic_thread_fence(std::memory_order_release);
      return;
    }
    WriteLockSlow();
  }

  // A reader that wants to write what it read: becomes the writer iff the
  // version is still `snapshot` (nothing changed since ReadBegin).
  bool TryUpgrade(uint64_t snapshot) {
    if (snapshot & 1) return false;
    if (!version_.compare_exchange_strong(snapshot, snapshot + 1, std::memory_order_acquire)) return false;
    std::atomic_thread_fence(std::memory_order_release);
    return true;
  }

  // Leaves a section entered by WriteLock or TryUpgrade.
  void WriteUnlock() { WriteEnd(); }

  // -------------------------------------------------------- inspection

  // The version now (odd while a writer is inside). Writers so far: half.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  bool IsWriting() const { return (version() & 1) != 0; }

 private:
  uint64_t WaitEven() const;
  void WriteLockSlow();

  std::atomic<uint64_t> version_{0};
};

}  // namespace detdb

#endif  // DETDB_STORAGE_VERSION_LATCH_H_
