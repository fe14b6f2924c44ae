#include "bench/lockbench.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"

namespace detdb {

absl::StatusOr<LockBenchResult> RunLockBench(LockManager* lm, const MicroTxnSet& txns,
                                             const LockBenchOptions& options) {
  const uint64_t n = txns.size();
  const uint32_t inflight = std::max<uint32_t>(1, options.inflight);
  // LockTxn records are recycled through a free list, as a scheduler would.
  std::vector<LockTxn> records;
  std::vector<LockTxn*> free_records;
  std::vector<std::unique_ptr<LockTxn[]>> chunks;
  auto alloc = [&]() -> LockTxn* {
    if (free_records.empty()) {
      chunks.emplace_back(new LockTxn[1024]);
      for (int i = 1023; i >= 0; --i) free_records.push_back(&chunks.back()[i]);
    }
    LockTxn* t = free_records.back();
    free_records.pop_back();
    return t;
  };
  // Dispatched txns in dispatch order: a ring buffer the workers drain FIFO.
  std::vector<LockTxn*> ring(1 << 12);
  uint64_t ring_head = 0, ring_tail = 0;
  auto push_ready = [&](ReadyList* ready) {
    for (LockTxn* t : *ready) {
      if (ring_tail - ring_head == ring.size()) {  // grow (rare)
        std::vector<LockTxn*> bigger(ring.size() * 2);
        for (uint64_t i = ring_head; i < ring_tail; ++i) bigger[i - ring_head] = ring[i % ring.size()];
        ring_tail -= ring_head;
        ring_head = 0;
        ring.swap(bigger);
      }
      ring[ring_tail++ % ring.size()] = t;
    }
    ready->clear();
  };
  ReadyList ready;
  ready.reserve(1024);

  LockTxn next;  // the txn after the one being admitted, for Prefetch
  uint64_t admitted = 0, released = 0;
  const auto start = std::chrono::steady_clock::now();
  while (released < n) {
    const uint64_t running = ring_tail - ring_head;
    const bool can_admit = admitted < n && lm->CanAdmit();
    if (running > 0 && (running >= inflight || !can_admit)) {
      LockTxn* t = ring[ring_head++ % ring.size()];
      lm->Release(t, &ready);
      free_records.push_back(t);
      ++released;
    } else if (can_admit) {
      LockTxn* t = alloc();
      t->id = admitted + 1;
      t->reads = txns.reads(admitted);
      t->writes = txns.writes(admitted);
      if (options.prefetch_next && admitted + 1 < n) {
        next.reads = txns.reads(admitted + 1);
        next.writes = txns.writes(admitted + 1);
        lm->Prefetch(next);
      }
      lm->Lock(t, &ready);
      ++admitted;
    }
    lm->Poll(/*input_idle=*/admitted == n, &ready);
    if (!ready.empty()) {
      push_ready(&ready);
    } else if (running == 0 && !can_admit && ring_tail == ring_head) {
      return absl::InternalError(absl::StrCat(std::string(lm->name()), " stalled after ", released,
                                              " releases: nothing running or admissible"));
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!lm->IsQuiescent())
    return absl::InternalError(absl::StrCat(std::string(lm->name()), " not quiescent after the run"));
  LockBenchResult r;
  r.txns = n;
  r.seconds = secs;
  r.txns_per_sec = n / secs;
  r.ns_per_txn = secs * 1e9 / n;
  r.stats = lm->stats();
  return r;
}

}  // namespace detdb
