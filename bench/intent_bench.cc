#include "bench/intent_bench.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/thread_cpu.h"

namespace detdb {

absl::StatusOr<IntentBenchResult> RunIntentBench(const IntentBenchOptions& o) {
  if (o.agents == 0 || o.tables == 0 || o.tables > 255)
    return absl::InvalidArgumentError("at least one agent; 1 to 255 tables");
  if (o.absolute_share < 0 || o.absolute_share > 1)
    return absl::InvalidArgumentError(absl::StrCat("absolute share ", o.absolute_share, " not in [0, 1]"));
  auto locks = IntentLockTable::Create({.kind = o.kind, .locks = 1 + o.tables});
  constexpr uint32_t kVolume = IntentLockTable::kPartitionLock;
  std::atomic<bool> go{false}, stop{false};
  std::atomic<uint32_t> ready{0};
  std::vector<uint64_t> txns(o.agents), absolute(o.agents), timeouts(o.agents), cpu_ns(o.agents);
  std::vector<std::thread> threads;
  for (uint32_t a = 0; a < o.agents; ++a) {
    threads.emplace_back([&, a] {
      // One cheap draw per txn, whatever the share (so that the harness
      // costs every cell the same): xorshift64*.
      uint64_t x = (o.seed * 1000003 + a) * 0x9E3779B97F4A7C15ull | 1;
      auto rng = [&x] {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        return x * 0x2545F4914F6CDD1Dull;
      };
      const uint64_t threshold = o.absolute_share >= 1 ? ~uint64_t{0}
                                 : static_cast<uint64_t>(o.absolute_share * 18446744073709551616.0);
      auto me = locks->NewAgent();
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      const uint64_t cpu0 = SelfThreadCpuNs();
      uint64_t n = 0, abs = 0, late = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        // Locks in increasing id, the volume first (intent_lock.h).
        const uint64_t draw = rng();
        if (draw < threshold) {
          ++abs;
          const auto deadline = IntentAgent::Clock::now() + std::chrono::seconds(10);
          absl::Status s;
          if (rng() % 4 == 0) {
            s = me->AcquireUntil(kVolume, IntentMode::kX, deadline);
          } else {
            s = me->AcquireUntil(kVolume, IntentMode::kIX, deadline);
            if (s.ok())
              s = me->AcquireUntil(IntentLockTable::TableLock(static_cast<uint32_t>(rng() % o.tables)),
                                   IntentMode::kX, deadline);
          }
          late += !s.ok();
        } else {
          const IntentMode m = (draw >> 3) & 1 ? IntentMode::kIX : IntentMode::kIS;
          me->Acquire(kVolume, m);
          for (uint32_t t = 0; t < o.tables; ++t) me->Acquire(IntentLockTable::TableLock(t), m);
        }
        me->EndTxn();
        ++n;
      }
      cpu_ns[a] = SelfThreadCpuNs() - cpu0;
      txns[a] = n;
      absolute[a] = abs;
      timeouts[a] = late;
    });
  }
  while (ready.load() < o.agents) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration_s));
  stop.store(true);
  for (std::thread& t : threads) t.join();
  IntentBenchResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t cpu = 0;
  for (uint32_t a = 0; a < o.agents; ++a) {
    r.txns += txns[a];
    r.absolute += absolute[a];
    r.timeouts += timeouts[a];
    cpu += cpu_ns[a];
  }
  r.txns_per_sec = r.seconds > 0 ? r.txns / r.seconds : 0;
  r.cpu_ns_per_txn = r.txns > 0 ? static_cast<double>(cpu) / r.txns : 0;
  r.stats = locks->stats();
  return r;
}

}  // namespace detdb
