#include "bench/micro_runner.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/histogram.h"
#include "common/notifier.h"
#include "scheduler/engine.h"
#include "workloads/micro/micro_table.h"

namespace detdb {
namespace {

using Clock = std::chrono::steady_clock;

// CPU seconds of every thread of this process so far.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// The closed-loop client: results arrive on worker threads.
class MicroClient final : public TxnClient {
 public:
  explicit MicroClient(uint64_t outstanding) : submit_ns_(2 * outstanding) {}

  void OnResult(pb::TxnResult&& r) override {
    hist_.Record(NowNs() - submit_ns_[r.client_seq() % submit_ns_.size()].load(std::memory_order_relaxed));
    (r.status() == pb::STATUS_OK ? committed_ : aborted_).fetch_add(1, std::memory_order_relaxed);
    done_.fetch_add(1, std::memory_order_release);
    notifier_.Notify();
  }

  void Stamp(uint64_t seq, uint64_t ns) { submit_ns_[seq % submit_ns_.size()].store(ns, std::memory_order_relaxed); }
  uint64_t done() const { return done_.load(std::memory_order_acquire); }
  ProgressSample Sample(double t) const {
    ProgressSample s;
    s.t = t;
    s.committed = committed_.load(std::memory_order_relaxed);
    hist_.AddTo(&s.latency);
    return s;
  }
  void WaitForResults() { notifier_.Wait(std::chrono::milliseconds(5)); }

  LatencyHistogram hist_;
  std::atomic<uint64_t> committed_{0}, aborted_{0};

 private:
  std::vector<std::atomic<uint64_t>> submit_ns_;  // by client_seq modulo size
  std::atomic<uint64_t> done_{0};
  Notifier notifier_;
};

}  // namespace

absl::StatusOr<MicroRunResult> RunMicro(const MicroRunOptions& o) {
  absl::Status valid = MicroGenerator::Validate(o.workload);
  if (!valid.ok()) return valid;
  if (o.outstanding == 0) return absl::InvalidArgumentError("--outstanding must be positive");
  if (o.txns == 0 && !(o.duration_s > 0)) return absl::InvalidArgumentError("give --txns or a positive --duration");
  // The client outlives the engine: workers may answer until the engine stops.
  MicroClient client(o.outstanding);
  ModPartitioner partitioner(o.workload.partitions);
  ProcedureRegistry procedures;
  absl::Status s = RegisterMicroProcedures(&procedures);
  if (!s.ok()) return s;
  EngineOptions eo;
  eo.workers = o.workers;
  eo.release_on_workers = o.release_on_workers;
  eo.adaptive_admission = o.adaptive_admission;
  eo.staged_alloc = o.staged_alloc;
  eo.admission_trace = o.admission_trace;
  eo.lock_manager = o.lock_manager;
  eo.intent_locks = o.intent_locks;
  eo.lock = o.lock;
  eo.epoch_us = o.epoch_us;
  eo.log = o.log;
  if (!o.log.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(o.log.dir, ec);
    if (ec) return absl::InternalError(absl::StrCat("cannot empty ", o.log.dir, ": ", ec.message()));
  }
  auto engine = Engine::Create(eo, &partitioner, &procedures);
  if (!engine.ok()) return engine.status();
  for (PartitionId p = 0; p < o.workload.partitions; ++p) {
    s = LoadMicroTable((*engine)->store(p), partitioner, p, o.workload.records_per_partition);
    if (!s.ok()) return s;
  }
  const uint64_t client_id = (*engine)->RegisterClient(&client);
  MicroGenerator gen(o.workload);
  s = (*engine)->Start();
  if (!s.ok()) return s;

  const auto start = Clock::now();
  const double cpu_start = ProcessCpuSeconds();
  const auto thread_cpu = [&engine](uint64_t* lock_ns, uint64_t* worker_ns) {
    *lock_ns = *worker_ns = 0;
    for (const SchedulerStats& p : (*engine)->stats().partitions) {
      *lock_ns += p.lock_thread_cpu_ns;
      *worker_ns += p.workers_cpu_ns;
    }
  };
  uint64_t lock_ns_start, worker_ns_start;
  thread_cpu(&lock_ns_start, &worker_ns_start);
  const auto end = start + std::chrono::duration<double>(o.duration_s);
  auto next_report = start + std::chrono::seconds(1);
  uint64_t submitted = 0;
  double busy_s = 0;
  std::vector<pb::Txn> group;
  constexpr uint64_t kGroup = 64;
  for (;;) {
    const auto now = Clock::now();
    if (o.progress && now >= next_report) {
      o.progress(client.Sample(std::chrono::duration<double>(now - start).count()));
      next_report += std::chrono::seconds(1);
    }
    const bool more = o.txns != 0 ? submitted < o.txns : now < end;
    if (!more) break;
    const uint64_t in_flight = submitted - client.done();
    if (in_flight >= o.outstanding) {
      client.WaitForResults();
      continue;
    }
    const auto t0 = Clock::now();
    if (group.empty()) {  // else: a group refused earlier, retried as it was
      uint64_t n = std::min<uint64_t>(kGroup, o.outstanding - in_flight);
      if (o.txns != 0) n = std::min(n, o.txns - submitted);
      group.resize(n);
      for (uint64_t i = 0; i < n; ++i) {
        gen.Next(&group[i]);
        group[i].set_client_id(client_id);
        group[i].set_client_seq(submitted + i);
      }
    }
    const uint64_t n = group.size();
    const uint64_t stamp = NowNs();
    for (uint64_t i = 0; i < n; ++i) client.Stamp(submitted + i, stamp);
    s = (*engine)->SubmitMany(&group);  // clears group on success
    if (absl::IsUnavailable(s)) {       // backpressure: wait for answers, retry
      client.WaitForResults();
      continue;
    }
    if (!s.ok()) {
      (void)(*engine)->Stop(std::chrono::seconds(10));
      return s;
    }
    submitted += n;
    busy_s += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  // Wait for the answers, still reporting progress.
  while (client.done() < submitted) {
    client.WaitForResults();
    const auto now = Clock::now();
    if (o.progress && now >= next_report) {
      o.progress(client.Sample(std::chrono::duration<double>(now - start).count()));
      next_report += std::chrono::seconds(1);
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu_secs = ProcessCpuSeconds() - cpu_start;
  uint64_t lock_ns_end, worker_ns_end;
  thread_cpu(&lock_ns_end, &worker_ns_end);
  s = (*engine)->Stop();
  if (!s.ok()) return s;

  MicroRunResult r;
  r.lock_manager = o.lock_manager;
  r.committed = client.committed_.load();
  r.aborted = client.aborted_.load();
  r.seconds = secs;
  r.txns_per_sec = r.committed / secs;
  r.p50_us = client.hist_.Percentile(0.50) / 1000;
  r.p90_us = client.hist_.Percentile(0.90) / 1000;
  r.p99_us = client.hist_.Percentile(0.99) / 1000;
  r.p999_us = client.hist_.Percentile(0.999) / 1000;
  const EngineStats es = (*engine)->stats();
  uint64_t admitted = 0, blocked = 0;
  for (const SchedulerStats& p : es.partitions) {
    admitted += p.admitted;
    blocked += p.blocked_at_admission;
    r.avg_active += p.avg_active / es.partitions.size();
    r.window += static_cast<double>(p.window) / es.partitions.size();
    r.window_grows += p.window_grows;
    r.window_shrinks += p.window_shrinks;
    r.window_shrinks_undone += p.window_shrinks_undone;
    r.window_grows_undone += p.window_grows_undone;
    r.window_steps_back_up += p.window_steps_back_up;
    r.starved += p.starved;
    r.parked += p.parked;
  }
  r.blocked_at_admission = admitted == 0 ? 0 : static_cast<double>(blocked) / admitted;
  for (const LockStats& ls : (*engine)->lock_stats()) r.peak_lock_bytes += ls.peak_memory_bytes;
  r.digest = (*engine)->Digest();
  r.client_busy = busy_s / secs;
  r.cpu_us_per_txn = r.committed == 0 ? 0 : 1e6 * cpu_secs / static_cast<double>(r.committed);
  if (r.committed != 0) {
    r.lock_us_per_txn = 1e-3 * static_cast<double>(lock_ns_end - lock_ns_start) / static_cast<double>(r.committed);
    r.worker_us_per_txn =
        1e-3 * static_cast<double>(worker_ns_end - worker_ns_start) / static_cast<double>(r.committed);
  }
  if (o.measure_replay && !o.log.dir.empty()) {
    // A restart on the log: load the tables (not timed), then Start replays.
    engine->reset();
    MicroClient sink(1);
    eo.admission_trace = nullptr;  // the trace is of the measured run only
    auto again = Engine::Create(eo, &partitioner, &procedures);
    if (!again.ok()) return again.status();
    for (PartitionId p = 0; p < o.workload.partitions; ++p) {
      s = LoadMicroTable((*again)->store(p), partitioner, p, o.workload.records_per_partition);
      if (!s.ok()) return s;
    }
    (*again)->RegisterClient(&sink);
    const auto t0 = Clock::now();
    s = (*again)->Start();
    if (!s.ok()) return s;
    r.replay_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.replayed = (*again)->stats().replayed_txns;
    s = (*again)->Stop();
    if (!s.ok()) return s;
    if ((*again)->Digest() != r.digest) return absl::InternalError("the replayed state differs from the run's");
  }
  return r;
}

}  // namespace detdb
