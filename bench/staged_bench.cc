#include "bench/staged_bench.h"

#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/partitioner.h"
#include "scheduler/partition_txn.h"
#include "scheduler/staged_states.h"

namespace detdb {
namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::vector<pb::Txn> MakeTxns(const StagedBenchOptions& o, uint64_t seed) {
  std::vector<pb::Txn> out(4096);
  uint64_t x = seed;
  for (pb::Txn& t : out) {
    t.set_id(++x);
    for (uint32_t k = 0; k < o.keys; ++k) {
      const Key key = MakeKey(1, Mix64(x * 64 + k) % 1000000);
      t.add_read_set(key);
      t.add_write_set(key);
    }
    t.add_writers(0);
    t.add_readers(0);
  }
  return out;
}

struct ThreadResult {
  double cpu_seconds = 0;
};

// One partition's life of n txns (after a warm-up), as the bench header says.
void RunThread(const StagedBenchOptions& o, uint64_t seed, std::atomic<uint32_t>* ready, ThreadResult* out) {
  const std::vector<pb::Txn> txns = MakeTxns(o, seed);
  ModPartitioner partitioner(1);
  const TxnExecutor exec(0, nullptr, &partitioner, nullptr, nullptr, nullptr);
  const bool staged = o.mode == "staged", heap = o.mode == "heap";
  std::unique_ptr<StagedStates> states = staged ? std::make_unique<StagedStates>() : nullptr;
  std::vector<std::unique_ptr<PartitionTxn>> all;  // pooled
  std::vector<PartitionTxn*> free_list;
  std::vector<PartitionTxn*> active;
  active.reserve(o.window);
  std::vector<char> record(o.value_bytes, 'r');  // the "store's" value every read points at
  uint64_t rng = Mix64(seed) | 1;

  auto make = [&](uint64_t i) {
    const pb::Txn& t = txns[i % txns.size()];
    PartitionTxn* st;
    if (staged) {
      if (i % o.txns_per_epoch == 0) states->OpenGroup(o.txns_per_epoch);
      st = states->New(static_cast<uint32_t>(t.read_set_size() + t.write_set_size()));
    } else if (heap) {
      st = new PartitionTxn;
    } else if (free_list.empty()) {
      all.push_back(std::make_unique<PartitionTxn>());
      st = all.back().get();
    } else {
      st = free_list.back();
      free_list.pop_back();
    }
    exec.Init(st, &t, nullptr);  // the lock side
    for (Key k : st->local_reads)  // the worker: ReadLocal, then the procedure's writes
      st->reads.push_back({.key = k, .found = true, .size = o.value_bytes, .data = record.data()});
    for (Key k : st->local_writes) {
      char* v = st->arena.Allocate(o.value_bytes);
      std::memcpy(v, record.data(), o.value_bytes);
      st->writes.push_back({k, v, o.value_bytes, false, nullptr});
    }
    active.push_back(st);
  };
  auto release = [&](size_t j) {
    PartitionTxn* st = active[j];
    active[j] = active.back();
    active.pop_back();
    if (staged) {
      states->Release(st);
    } else if (heap) {
      delete st;
    } else {
      st->txn = nullptr;
      free_list.push_back(st);
    }
  };
  auto step = [&](uint64_t i) {
    make(i);
    if (active.size() >= o.window) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      release(rng % active.size());
    }
  };

  const uint64_t warm = o.txns / 10 / o.txns_per_epoch * o.txns_per_epoch;
  const uint64_t n = (o.txns + o.txns_per_epoch - 1) / o.txns_per_epoch * o.txns_per_epoch;
  for (uint64_t i = 0; i < warm; ++i) step(i);
  ready->fetch_add(1);
  while (ready->load() < o.threads) {
  }
  const double cpu0 = ThreadCpuSeconds();
  for (uint64_t i = warm; i < warm + n; ++i) step(i);
  while (!active.empty()) release(active.size() - 1);
  out->cpu_seconds = ThreadCpuSeconds() - cpu0;
}

}  // namespace

const std::vector<std::string>& StagedBenchModes() {
  static const std::vector<std::string> kModes = {"staged", "pooled", "heap"};
  return kModes;
}

std::string MallocName() {
  // gperftools' tcmalloc exports tc_malloc; glibc does not.
  return dlsym(RTLD_DEFAULT, "tc_malloc") != nullptr ? "tcmalloc" : "glibc";
}

absl::StatusOr<StagedBenchResult> RunStagedBench(const StagedBenchOptions& o) {
  bool known = false;
  for (const std::string& m : StagedBenchModes()) known |= m == o.mode;
  if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown mode ", o.mode, " (staged, pooled, heap)"));
  if (o.threads == 0 || o.txns == 0 || o.txns_per_epoch == 0 || o.window == 0 || o.keys == 0)
    return absl::InvalidArgumentError("threads, txns, txns_per_epoch, window and keys must be positive");
  std::atomic<uint32_t> ready{0};
  std::vector<ThreadResult> results(o.threads);
  std::vector<std::thread> threads;
  auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < o.threads; ++i)
    threads.emplace_back([&, i] { RunThread(o, 1000003 * (i + 1), &ready, &results[i]); });
  // Wall time from the moment every thread finished its warm-up.
  while (ready.load() < o.threads) std::this_thread::yield();
  t0 = std::chrono::steady_clock::now();
  for (std::thread& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  StagedBenchResult r;
  r.options = o;
  r.allocator = MallocName();
  const uint64_t per_thread = (o.txns + o.txns_per_epoch - 1) / o.txns_per_epoch * o.txns_per_epoch;
  const double total = static_cast<double>(per_thread) * o.threads;
  double cpu = 0;
  for (const ThreadResult& t : results) cpu += t.cpu_seconds;
  r.txns_per_sec = secs > 0 ? total / secs : 0;
  r.cpu_ns_per_txn = 1e9 * cpu / total;
  return r;
}

absl::StatusOr<std::vector<StagedBenchResult>> RunStagedSweep(const StagedBenchOptions& base,
                                                               const std::vector<std::string>& modes,
                                                               const std::vector<uint32_t>& threads, uint32_t rounds) {
  std::vector<std::vector<StagedBenchResult>> runs(modes.size() * threads.size());
  for (uint32_t round = 0; round < std::max(1u, rounds); ++round) {
    for (size_t t = 0; t < threads.size(); ++t) {
      for (size_t m = 0; m < modes.size(); ++m) {
        StagedBenchOptions o = base;
        o.mode = modes[m];
        o.threads = threads[t];
        auto r = RunStagedBench(o);
        if (!r.ok()) return r.status();
        runs[t * modes.size() + m].push_back(*r);
      }
    }
  }
  std::vector<StagedBenchResult> out;
  for (std::vector<StagedBenchResult>& v : runs) {
    std::sort(v.begin(), v.end(), [](const StagedBenchResult& a, const StagedBenchResult& b) {
      return a.cpu_ns_per_txn < b.cpu_ns_per_txn;
    });
    StagedBenchResult median = v[v.size() / 2];
    std::vector<double> tps;
    for (const StagedBenchResult& r : v) tps.push_back(r.txns_per_sec);
    std::sort(tps.begin(), tps.end());
    median.txns_per_sec = tps[tps.size() / 2];
    out.push_back(median);
  }
  return out;
}

}  // namespace detdb
