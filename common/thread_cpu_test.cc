#include "common/thread_cpu.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace detdb {
namespace {

TEST(ThreadCpuSlot, ReadsAThreadsCpuWhileItRunsAndAfterItEnded) {
  ThreadCpuSlot slot;
  EXPECT_EQ(slot.Read(), 0u) << "before Begin";
  std::atomic<bool> spun{false}, stop{false};
  std::thread t([&] {
    slot.Begin();
    volatile uint64_t x = 0;
    const uint64_t start = SelfThreadCpuNs();
    while (SelfThreadCpuNs() - start < 20'000'000) x = x + 1;  // 20 ms of CPU
    spun.store(true);
    while (!stop.load()) std::this_thread::yield();
    slot.End();
  });
  while (!spun.load()) std::this_thread::yield();
  const uint64_t live = slot.Read();
  EXPECT_GE(live, 20'000'000u) << "read from another thread while it runs";
  stop.store(true);
  t.join();
  const uint64_t after = slot.Read();
  EXPECT_GE(after, live) << "after End: its final time";
  EXPECT_EQ(slot.Read(), after) << "a thread that ended uses no more";
}

}  // namespace
}  // namespace detdb
