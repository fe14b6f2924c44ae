#include "storage/version_latch.h"

#include "storage/spin_wait.h"

namespace detdb {

uint64_t VersionLatch::WaitEven() const {
  SpinWait w;
  for (;;) {
    const uint64_t v = version_.load(std::memory_order_acquire);
    if ((v & 1) == 0) return v;
    w.Step();
  }
}

void VersionLatch::WriteLockSlow() {
  SpinWait w;
  for (;;) {
    uint64_t v = version_.load(std::memory_order_relaxed);
    if ((v & 1) == 0 && version_.compare_exchange_weak(v, v + 1, std::memory_order_acquire)) {
      std::atomic_thread_fence(std::memory_order_release);
      return;
    }
    w.Step();
  }
}

}  // namespace detdb
