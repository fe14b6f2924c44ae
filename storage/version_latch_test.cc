#include "storage/version_latch.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/elided_latch.h"
#include "storage/spin_wait.h"

namespace detdb {
namespace {

TEST(StorageVersionLatch, WritersMakeTheVersionOddThenEven) {
  VersionLatch v;
  const uint64_t s = v.ReadBegin();
  EXPECT_EQ(s % 2, 0u);
  EXPECT_TRUE(v.ReadValidate(s));
  v.WriteBegin();
  EXPECT_TRUE(v.IsWriting());
  EXPECT_FALSE(v.ReadValidate(s));
  v.WriteEnd();
  EXPECT_FALSE(v.IsWriting());
  EXPECT_FALSE(v.ReadValidate(s));  // a writer ran since s
  EXPECT_EQ(v.version(), s + 2);
  const uint64_t s2 = v.ReadBegin();
  EXPECT_TRUE(v.ReadValidate(s2));
}

TEST(StorageVersionLatch, TryUpgradeOnlyFromAnUnchangedSnapshot) {
  VersionLatch v;
  const uint64_t s = v.ReadBegin();
  EXPECT_TRUE(v.TryUpgrade(s));
  EXPECT_TRUE(v.IsWriting());
  EXPECT_FALSE(v.TryUpgrade(s + 1));  // a writer is inside
  v.WriteUnlock();
  EXPECT_FALSE(v.TryUpgrade(s));  // stale
  v.WriteLock();
  EXPECT_TRUE(v.IsWriting());
  v.WriteUnlock();
  EXPECT_EQ(v.version(), s + 4);
}

// ReadBegin does not return while a writer is inside.
TEST(StorageVersionLatch, ReadBeginWaitsForTheWriter) {
  VersionLatch v;
  v.WriteLock();
  std::atomic<bool> started{false}, done{false};
  uint64_t seen = 1;
  std::thread reader([&] {
    started.store(true);
    seen = v.ReadBegin();
    done.store(true);
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(done.load());
  v.WriteUnlock();
  reader.join();
  EXPECT_EQ(seen, 2u);
}

// The protected state: kWords atomics that a writer sets to one value, word
// by word (yielding midway now and then, so readers meet half-written
// states). A validated read must see all words equal.
constexpr int kWords = 8;
struct Shared {
  std::atomic<uint64_t> words[kWords] = {};
};

// Threads run until the race was met this often (or a cap of iterations
// was reached: on a loaded machine threads may seldom overlap).
constexpr uint64_t kRacesWanted = 200;
constexpr uint64_t kMaxIterations = 2000000;

struct ReaderCounts {
  uint64_t validated = 0, retries = 0, torn_seen = 0, torn_accepted = 0;
};

// Reads until `stop`; a validated read must not be torn.
void ReadLoop(const VersionLatch& latch, const Shared& s, const std::atomic<bool>& stop,
              std::atomic<uint64_t>* torn_total, ReaderCounts* c) {
  for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
    uint64_t got[kWords];
    const bool torn_run_accepted = latch.ReadOptimistic(
        [&] {
          for (int w = 0; w < kWords; ++w) {
            got[w] = s.words[w].load(std::memory_order_relaxed);
            if (w == kWords / 2 && i % 4 == 0)
              for (int p = 0; p < 64; ++p) CpuRelax();  // a slow reader now and then
          }
          bool torn = false;
          for (int w = 1; w < kWords; ++w) torn |= got[w] != got[0];
          if (torn) {
            ++c->torn_seen;
            torn_total->fetch_add(1, std::memory_order_relaxed);
          }
          return torn;
        },
        &c->retries);
    c->torn_accepted += torn_run_accepted;
    ++c->validated;
  }
}

void WriteValue(Shared* s, uint64_t value, std::mt19937_64& rng) {
  for (int w = 0; w < kWords; ++w) {
    s->words[w].store(value, std::memory_order_relaxed);
    if (w == kWords / 2)  // a slow writer, now and then
      for (int p = 0, n = static_cast<int>(rng() % 32); p < n; ++p) CpuRelax();
  }
}

void Report(const char* what, uint64_t writes, const std::vector<ReaderCounts>& counts) {
  ReaderCounts sum;
  for (const ReaderCounts& c : counts) {
    sum.validated += c.validated;
    sum.retries += c.retries;
    sum.torn_seen += c.torn_seen;
    sum.torn_accepted += c.torn_accepted;
  }
  std::printf("%s: %lu writes, %lu validated reads, %lu retried, %lu torn states seen (all rejected: %s)\n", what,
              static_cast<unsigned long>(writes), static_cast<unsigned long>(sum.validated),
              static_cast<unsigned long>(sum.retries), static_cast<unsigned long>(sum.torn_seen),
              sum.torn_accepted == 0 ? "yes" : "NO");
  EXPECT_EQ(sum.torn_accepted, 0u);
  // Every torn state a reader saw was retried.
  EXPECT_GE(sum.retries, sum.torn_seen);
}

// Randomized: 2 writers and 2 readers until the readers met kRacesWanted
// torn states; a reader never accepts one. `under_latch`: writers excluded
// by an ElidedLatch taken for real, with WriteBegin/WriteEnd (the Table's
// way); else by WriteLock.
void RunTornTest(const char* what, bool under_latch) {
  ElidedLatch writers;
  VersionLatch latch;
  Shared s;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0}, writes{0};
  std::vector<ReaderCounts> counts(2);
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      for (uint64_t i = 0; i < kMaxIterations && torn.load(std::memory_order_relaxed) < kRacesWanted; ++i) {
        if (under_latch) {
          writers.LockNoElision();
          latch.WriteBegin();
        } else {
          latch.WriteLock();
        }
        WriteValue(&s, rng(), rng);
        if (under_latch) {
          latch.WriteEnd();
          writers.Unlock();
        } else {
          latch.WriteUnlock();
        }
        writes.fetch_add(1, std::memory_order_relaxed);
        for (int p = 0; p < 256; ++p) CpuRelax();  // room for the readers
      }
    });
    ts.emplace_back([&, t] { ReadLoop(latch, s, stop, &torn, &counts[t]); });
  }
  ts[0].join();
  ts[2].join();  // the writers
  stop.store(true);
  ts[1].join();
  ts[3].join();
  EXPECT_EQ(latch.version(), 2 * writes.load());
  Report(what, writes.load(), counts);
}

TEST(StorageVersionLatch, ConcurrentReadersNeverAcceptATornState) { RunTornTest("WriteLock writers", false); }

TEST(StorageVersionLatch, WritersUnderAnotherLatch) { RunTornTest("writers under an ElidedLatch", true); }

// Optimistic read-modify-write: read a counter, upgrade if unchanged, else
// read again. No increment is lost.
TEST(StorageVersionLatch, TryUpgradeLosesNoUpdate) {
  VersionLatch latch;
  std::atomic<uint64_t> counter{0}, failed_upgrades{0};
  constexpr int kThreads = 3;
  std::vector<uint64_t> increments(kThreads, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t i = 0; i < kMaxIterations / 4 && failed_upgrades.load(std::memory_order_relaxed) < kRacesWanted;
           ++i) {
        for (;;) {
          const uint64_t v = latch.ReadBegin();
          const uint64_t c = counter.load(std::memory_order_relaxed);
          for (int p = 0; p < 16; ++p) CpuRelax();  // widen the window
          if (latch.TryUpgrade(v)) {
            counter.store(c + 1, std::memory_order_relaxed);
            latch.WriteUnlock();
            ++increments[t];
            break;
          }
          failed_upgrades.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(counter.load(), increments[0] + increments[1] + increments[2]);
  std::printf("%lu increments, %lu upgrades failed and were retried\n", static_cast<unsigned long>(counter.load()),
              static_cast<unsigned long>(failed_upgrades.load()));
}

}  // namespace
}  // namespace detdb
