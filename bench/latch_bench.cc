#include "bench/latch_bench.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/bench_btree.h"
#include "common/thread_cpu.h"
#include "storage/spin_wait.h"
#include "storage/version_latch.h"

namespace detdb {
namespace {

// A spinning reader-writer latch with writer preference, after TBB's
// spin_rw_mutex (the paper's "RW Lock"): readers add to a shared count, a
// waiting writer sets a pending bit that keeps new readers out.
class RwSpinLatch {
 public:
  void LockShared() {
    SpinWait w;
    for (;;) {
      if ((state_.load(std::memory_order_relaxed) & (kWriter | kPending)) == 0) {
        if ((state_.fetch_add(kReader, std::memory_order_acquire) & kWriter) == 0) return;
        state_.fetch_sub(kReader, std::memory_order_relaxed);
      }
      w.Step();
    }
  }
  void UnlockShared() { state_.fetch_sub(kReader, std::memory_order_release); }
  void Lock() {
    SpinWait w;
    for (;;) {
      uint32_t s = state_.load(std::memory_order_relaxed);
      if ((s & ~kPending) == 0) {  // no writer, no reader: take it (and clear pending)
        if (state_.compare_exchange_weak(s, kWriter, std::memory_order_acquire)) return;
        continue;
      }
      if ((s & kPending) == 0) state_.fetch_or(kPending, std::memory_order_relaxed);
      w.Step();
    }
  }
  void Unlock() { state_.fetch_and(~(kWriter | kPending), std::memory_order_release); }

 private:
  static constexpr uint32_t kWriter = 1, kPending = 2, kReader = 4;
  std::atomic<uint32_t> state_{0};
};

// Per worker thread.
struct WorkerCounters {
  uint64_t lookups = 0, inserts = 0, inserted = 0, misses = 0, retries = 0;
  double cpu_seconds = 0;
  std::chrono::steady_clock::time_point start, end;
  ElidedLatch::Stats elision;
};

// The schemes: Read(f) runs a lookup, Write(f) an insert, under the latch.
struct alignas(64) RwScheme {
  RwSpinLatch latch;
  template <typename F>
  auto Read(F f, WorkerCounters*) {
    latch.LockShared();
    auto r = f();
    latch.UnlockShared();
    return r;
  }
  template <typename F>
  auto Write(F f) {
    latch.Lock();
    auto r = f();
    latch.Unlock();
    return r;
  }
};

struct alignas(64) SpinScheme {
  ElidedLatch latch;
  template <typename F>
  auto Read(F f, WorkerCounters*) {
    return Write(f);
  }
  template <typename F>
  auto Write(F f) {
    latch.LockNoElision();
    auto r = f();
    latch.Unlock();
    return r;
  }
};

struct alignas(64) OptimisticScheme {
  VersionLatch latch;
  template <typename F>
  auto Read(F f, WorkerCounters* c) {
    return latch.ReadOptimistic(f, &c->retries);
  }
  template <typename F>
  auto Write(F f) {
    latch.WriteLock();
    auto r = f();
    latch.WriteUnlock();
    return r;
  }
};

struct alignas(64) ElidedScheme {
  ElidedLatch latch;
  template <typename F>
  auto Read(F f, WorkerCounters*) {
    return Write(f);
  }
  template <typename F>
  auto Write(F f) {
    latch.Lock();
    auto r = f();
    latch.Unlock();
    return r;
  }
};

inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Found {
  bool found;
  uint64_t value;
};

template <typename Scheme>
void Work(Scheme* scheme, BenchBTree* tree, const LatchBenchOptions& o, uint32_t t,
          const std::atomic<bool>& go, std::atomic<uint32_t>* ready, WorkerCounters* c) {
  uint64_t rng = o.seed * 0x100000001B3ull + t;
  // An insert when the next 53 random bits are below this.
  const uint64_t insert_below = static_cast<uint64_t>(o.insert_share * 9007199254740992.0);  // 2^53
  ready->fetch_add(1);
  while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
  const ElidedLatch::Stats elision0 = ElidedLatch::ThreadStats();
  const uint64_t cpu0 = SelfThreadCpuNs();
  c->start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < o.ops_per_thread; ++i) {
    const uint64_t r = SplitMix64(&rng);
    const uint64_t k = SplitMix64(&rng) % o.keys;
    if ((r >> 11) < insert_below) {
      const uint64_t key = 2 * k + 1;
      c->inserted += scheme->Write([&] { return tree->Insert(key); }) ? 1 : 0;
      ++c->inserts;
    } else {
      const uint64_t key = 2 * k;
      const Found f = scheme->Read(
          [&] {
            Found x{false, 0};
            x.found = tree->Lookup(key, &x.value);
            return x;
          },
          c);
      if (!f.found || f.value != BenchBTree::ValueOf(key)) ++c->misses;
      ++c->lookups;
    }
  }
  c->end = std::chrono::steady_clock::now();
  c->cpu_seconds = (SelfThreadCpuNs() - cpu0) * 1e-9;
  c->elision = ElidedLatch::ThreadStats() - elision0;
}

template <typename Scheme>
absl::StatusOr<LatchBenchResult> Run(const LatchBenchOptions& o) {
  // Inserts a run may make: the expected share and a margin.
  const double insert_bound = std::min(1.0, o.insert_share * 1.1 + 0.01);
  const uint64_t max_inserts = static_cast<uint64_t>(o.threads * o.ops_per_thread * insert_bound);
  BenchBTree tree(BenchBTree::NodesFor(o.keys, max_inserts));
  tree.BulkLoad(o.keys, [](uint64_t i) { return 2 * i; });
  auto scheme = std::make_unique<Scheme>();
  std::vector<WorkerCounters> counters(o.threads);
  std::atomic<bool> go{false};
  std::atomic<uint32_t> ready{0};
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < o.threads; ++t)
    workers.emplace_back(Work<Scheme>, scheme.get(), &tree, std::cref(o), t, std::cref(go), &ready, &counters[t]);
  while (ready.load() < o.threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& w : workers) w.join();

  LatchBenchResult r;
  r.scheme = o.scheme;
  r.threads = o.threads;
  r.insert_share = o.insert_share;
  auto first = counters[0].start, last = counters[0].end;
  double cpu = 0;
  uint64_t misses = 0;
  for (const WorkerCounters& c : counters) {
    first = std::min(first, c.start);
    last = std::max(last, c.end);
    cpu += c.cpu_seconds;
    r.lookups += c.lookups;
    r.inserts += c.inserts;
    r.inserted += c.inserted;
    r.lookup_retries += c.retries;
    r.elision += c.elision;
    misses += c.misses;
  }
  r.ops = r.lookups + r.inserts;
  r.seconds = std::chrono::duration<double>(last - first).count();
  r.ops_per_sec = r.seconds > 0 ? r.ops / r.seconds : 0;
  r.cpu_ns_per_op = r.ops > 0 ? cpu * 1e9 / r.ops : 0;
  if (misses > 0)
    return absl::InternalError(absl::StrCat(o.scheme, ": ", misses, " lookups of present keys failed"));
  const std::string broken = tree.Check();
  if (!broken.empty()) return absl::InternalError(absl::StrCat(o.scheme, ": tree broken after the run: ", broken));
  if (tree.size() != o.keys + r.inserted)
    return absl::InternalError(absl::StrCat(o.scheme, ": ", tree.size(), " keys, expected ", o.keys + r.inserted));
  return r;
}

}  // namespace

const std::vector<std::string>& LatchSchemes() {
  static const std::vector<std::string> kSchemes = {"rw", "spin", "optimistic", "elided"};
  return kSchemes;
}

bool LatchSchemeAvailable(const std::string& scheme, std::string* why) {
  if (scheme == "elided" && !(ElidedLatch::RtmAvailable() && ElidedLatch::ElisionEnabled())) {
    *why = "not available: " + ElidedLatch::ElisionStatus();
    return false;
  }
  if (std::find(LatchSchemes().begin(), LatchSchemes().end(), scheme) == LatchSchemes().end()) {
    *why = "unknown scheme (rw, spin, optimistic, elided)";
    return false;
  }
  return true;
}

absl::StatusOr<LatchBenchResult> RunLatchBench(const LatchBenchOptions& o) {
  std::string why;
  if (!LatchSchemeAvailable(o.scheme, &why)) return absl::InvalidArgumentError(o.scheme + ": " + why);
  if (o.threads == 0 || o.keys == 0 || o.insert_share < 0 || o.insert_share > 1)
    return absl::InvalidArgumentError("threads and keys > 0, insert share in [0, 1]");
  if (o.scheme == "rw") return Run<RwScheme>(o);
  if (o.scheme == "spin") return Run<SpinScheme>(o);
  if (o.scheme == "optimistic") return Run<OptimisticScheme>(o);
  return Run<ElidedScheme>(o);
}

absl::StatusOr<std::vector<LatchCell>> RunLatchSweep(const LatchSweepOptions& o,
                                                     const std::function<void(const LatchBenchResult&)>& progress) {
  std::vector<LatchCell> cells;
  std::map<std::tuple<uint32_t, double, std::string>, std::vector<LatchBenchResult>> runs;
  for (uint32_t round = 0; round < std::max(1u, o.rounds); ++round) {
    for (uint32_t threads : o.threads) {
      for (double share : o.insert_shares) {
        for (const std::string& scheme : o.schemes) {
          std::string why;
          if (!LatchSchemeAvailable(scheme, &why)) continue;
          LatchBenchOptions b;
          b.scheme = scheme;
          b.threads = threads;
          b.insert_share = share;
          b.keys = o.keys;
          b.ops_per_thread = o.ops_per_thread;
          b.seed = o.seed + round;
          auto r = RunLatchBench(b);
          if (!r.ok()) return r.status();
          if (progress) progress(*r);
          runs[{threads, share, scheme}].push_back(*r);
        }
      }
    }
  }
  for (uint32_t threads : o.threads) {
    for (double share : o.insert_shares) {
      for (const std::string& scheme : o.schemes) {
        LatchCell c;
        c.scheme = scheme;
        c.threads = threads;
        c.insert_share = share;
        c.available = LatchSchemeAvailable(scheme, &c.why);
        if (c.available) {
          std::vector<LatchBenchResult>& rs = runs[{threads, share, scheme}];
          std::sort(rs.begin(), rs.end(),
                    [](const LatchBenchResult& a, const LatchBenchResult& b) { return a.ops_per_sec < b.ops_per_sec; });
          c.median = rs[rs.size() / 2];
        }
        cells.push_back(std::move(c));
      }
    }
  }
  return cells;
}

void PrintLatchTable(FILE* out, const LatchSweepOptions& o, const std::vector<LatchCell>& cells) {
  std::fprintf(out,
               "seed 001: B+tree (%u keys/node) of %lu keys, %lu ops per thread, lookups of present keys, inserts of "
               "new ones; medians of %u rounds\n",
               BenchBTree::kMaxKeys, static_cast<unsigned long>(o.keys), static_cast<unsigned long>(o.ops_per_thread),
               std::max(1u, o.rounds));
  std::fprintf(out, "RTM: %s; this host: %u cores\n", ElidedLatch::ElisionStatus().c_str(),
               std::thread::hardware_concurrency());
  std::fprintf(out, "%-11s %7s %7s %9s %10s %7s %13s %10s %11s\n", "scheme", "threads", "inserts", "Mops/s",
               "cpu_ns/op", "vs_rw", "retry/lookup", "aborts/op", "fallback/op");
  std::map<std::pair<uint32_t, double>, double> rw;
  for (const LatchCell& c : cells)
    if (c.available && c.scheme == "rw") rw[{c.threads, c.insert_share}] = c.median.ops_per_sec;
  for (const LatchCell& c : cells) {
    std::fprintf(out, "%-11s %7u %6.0f%%", c.scheme.c_str(), c.threads, 100 * c.insert_share);
    if (!c.available) {
      std::fprintf(out, "  %s\n", c.why.c_str());
      continue;
    }
    const LatchBenchResult& r = c.median;
    const auto base = rw.find({c.threads, c.insert_share});
    std::fprintf(out, " %9.3f %10.1f", r.ops_per_sec / 1e6, r.cpu_ns_per_op);
    if (base != rw.end() && base->second > 0) {
      std::fprintf(out, " %7.2f", r.ops_per_sec / base->second);
    } else {
      std::fprintf(out, " %7s", "-");
    }
    if (c.scheme == "optimistic" && r.lookups > 0) {
      std::fprintf(out, " %13.4f", static_cast<double>(r.lookup_retries) / r.lookups);
    } else {
      std::fprintf(out, " %13s", "-");
    }
    if (c.scheme == "elided" && r.ops > 0) {
      std::fprintf(out, " %10.4f %11.4f  (", static_cast<double>(r.elision.aborts) / r.ops,
                   static_cast<double>(r.elision.fallback) / r.ops);
      for (int i = 0; i < ElidedLatch::kNumAbortCauses; ++i)
        std::fprintf(out, "%s%s %lu", i ? ", " : "", ElidedLatch::AbortCauseName(ElidedLatch::AbortCause(i)),
                     static_cast<unsigned long>(r.elision.aborts_by_cause[i]));
      std::fprintf(out, ")\n");
    } else {
      std::fprintf(out, " %10s %11s\n", "-", "-");
    }
  }
}

std::string LatchCellJson(const LatchSweepOptions& o, const LatchCell& c) {
  std::string s = absl::StrFormat(
      "{\"benchmark\":\"seed001_latch\",\"scheme\":\"%s\",\"threads\":%u,\"insert_share\":%g,\"keys\":%u,"
      "\"ops_per_thread\":%u,\"rounds\":%u,\"available\":%s",
      c.scheme, c.threads, c.insert_share, o.keys, o.ops_per_thread, std::max(1u, o.rounds),
      c.available ? "true" : "false");
  if (!c.available) {
    std::string why;
    for (char ch : c.why) why += (ch == '"' || ch == '\\') ? '\'' : ch;
    return s + absl::StrFormat(",\"reason\":\"%s\"}", why);
  }
  const LatchBenchResult& r = c.median;
  absl::StrAppendFormat(&s,
                        ",\"ops_per_sec\":%.0f,\"cpu_ns_per_op\":%.2f,\"seconds\":%.4f,\"lookups\":%u,\"inserts\":%u,"
                        "\"inserted\":%u,\"lookup_retries\":%u,\"elided\":%u,\"fallback\":%u,\"aborts\":%u,"
                        "\"aborts_by_cause\":{",
                        r.ops_per_sec, r.cpu_ns_per_op, r.seconds, r.lookups, r.inserts, r.inserted, r.lookup_retries,
                        r.elision.elided, r.elision.fallback, r.elision.aborts);
  for (int i = 0; i < ElidedLatch::kNumAbortCauses; ++i)
    absl::StrAppendFormat(&s, "%s\"%s\":%u", i ? "," : "", ElidedLatch::AbortCauseName(ElidedLatch::AbortCause(i)),
                          r.elision.aborts_by_cause[i]);
  return s + "}}";
}

}  // namespace detdb
