#include "bench/tpcc_runner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/histogram.h"
#include "workloads/tpcc/checker.h"
#include "workloads/tpcc/loader.h"
#include "workloads/tpcc/procedures.h"
#include "common/notifier.h"
#include "common/thread_cpu.h"
#include "client/client.h"
#include "scheduler/engine.h"

namespace detdb {
namespace tpcc {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// CPU seconds of every thread of this process so far.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The process's kernel CPU seconds and minor page faults so far.
struct KernelUse {
  double sys_secs = 0;
  uint64_t minor_faults = 0;
};
KernelUse ProcessKernelUse() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return {static_cast<double>(ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_stime.tv_usec),
          static_cast<uint64_t>(ru.ru_minflt)};
}

uint64_t Ns(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Where txns go and results come from.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual uint64_t client_id() const = 0;
  // All or nothing; Unavailable: overloaded, try again later (txns kept).
  virtual absl::Status Submit(std::vector<pb::Txn>* txns) = 0;
  // Appends the results that arrived, waiting up to timeout for one. A
  // backend may wait (within timeout) until `batch` results are there, to
  // wake the client once per batch instead of once per result.
  virtual absl::Status Poll(std::vector<pb::TxnResult>* out, milliseconds timeout, size_t batch) = 0;
};

class InProcessBackend final : public Backend, public TxnClient {
 public:
  void Attach(Engine* engine) {
    engine_ = engine;
    id_ = engine->RegisterClient(this);
  }
  uint64_t client_id() const override { return id_; }
  void OnResult(pb::TxnResult&& r) override {
    size_t n;
    {
      std::lock_guard<std::mutex> l(mu_);
      results_.push_back(std::move(r));
      n = results_.size();
    }
    // Waking the client costs a futex call on each side: once per batch.
    if (n >= batch_.load(std::memory_order_relaxed)) notifier_.Notify();
  }
  absl::Status Submit(std::vector<pb::Txn>* txns) override { return engine_->SubmitMany(txns); }
  absl::Status Poll(std::vector<pb::TxnResult>* out, milliseconds timeout, size_t batch) override {
    batch_.store(std::max<size_t>(batch, 1), std::memory_order_relaxed);
    for (int round = 0; round < 2; ++round) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (!results_.empty()) {
          if (out->empty()) {
            out->swap(results_);  // no move per result; results_ gets out's capacity
          } else {
            for (pb::TxnResult& r : results_) out->push_back(std::move(r));
            results_.clear();
          }
          return absl::OkStatus();
        }
      }
      if (round == 0 && timeout.count() > 0) notifier_.Wait(timeout);
    }
    return absl::OkStatus();
  }

 private:
  Engine* engine_ = nullptr;
  uint64_t id_ = 0;
  std::mutex mu_;
  std::vector<pb::TxnResult> results_;  // guarded by mu_
  std::atomic<size_t> batch_{1};
  Notifier notifier_;
};

class ClusterBackend final : public Backend {
 public:
  ClusterBackend(std::unique_ptr<ClusterClient> client, uint32_t partitions)
      : client_(std::move(client)), parts_(partitions), groups_(client_->num_nodes()) {
    std::random_device rd;
    id_ = ((static_cast<uint64_t>(rd()) << 32 | rd()) ^ static_cast<uint64_t>(getpid())) | 1;
  }
  uint64_t client_id() const override { return id_; }
  absl::Status Submit(std::vector<pb::Txn>* txns) override {
    for (pb::Txn& t : *txns) {
      const Key home = t.read_set_size() > 0 ? t.read_set(0) : t.write_set(0);
      groups_[client_->NodeOfPartition(parts_.PartitionOf(home))].push_back(std::move(t));
    }
    txns->clear();
    for (uint32_t n = 0; n < groups_.size(); ++n) {
      if (groups_[n].empty()) continue;
      absl::Status s = client_->node(n)->SubmitTxns(groups_[n]);
      groups_[n].clear();
      if (!s.ok()) return absl::InternalError(absl::StrCat("node ", n, ": ", s.message()));
    }
    return absl::OkStatus();
  }
  absl::Status Poll(std::vector<pb::TxnResult>* out, milliseconds timeout, size_t /*batch*/) override {
    for (bool first = true;; first = false) {
      auto r = client_->Receive(first ? timeout : milliseconds(0));
      if (!r.ok()) return r.status();
      if (!r->has_value()) return absl::OkStatus();
      const pb::ClientReply& reply = (*r)->second;
      if (reply.status() != pb::STATUS_OK) return absl::InternalError(absl::StrCat("node: ", reply.error()));
      for (const pb::TxnResult& res : reply.results()) out->push_back(res);
    }
  }
  ClusterClient* client() { return client_.get(); }

 private:
  std::unique_ptr<ClusterClient> client_;
  WarehousePartitioner parts_;
  std::vector<std::vector<pb::Txn>> groups_;
  uint64_t id_ = 0;
};

// The closed-loop client.
class Driver {
 public:
  Driver(const TpccRunOptions& o, const GeneratorOptions& g, Backend* backend)
      : o_(o), gen_(g), backend_(backend) {}

  absl::Status Run(TpccRunResult* r) {
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration<double>(o_.duration_s);
    auto next_report = start + std::chrono::seconds(1);
    auto last_progress = Clock::now();
    std::vector<pb::TxnResult> results;
    for (;;) {
      const auto now = Clock::now();
      bool reported = false;
      if (o_.progress && now >= next_report) {
        reported = true;
        ProgressSample sample;
        sample.t = std::chrono::duration<double>(now - start).count();
        sample.new_orders = r->kinds[static_cast<int>(TxnKind::kNewOrder)].committed;
        sample.committed = done_;
        for (const LatencyHistogram& h : hist_) h.AddTo(&sample.latency);
        o_.progress(sample);
        next_report += std::chrono::seconds(1);
      }
      const bool more = o_.txns != 0 ? started_ < o_.txns : now < end;
      if (!more && in_flight_.empty() && outbox_.empty()) break;
      // Fill the window with new logical txns. One clock reading stamps
      // them all (and, below, the results of one poll): they leave, and
      // come back, together. Read again after a progress report (it may
      // print or write a file).
      const uint64_t now_ns = Ns(reported ? Clock::now() : now);
      while (more && started_ < (o_.txns != 0 ? o_.txns : UINT64_MAX) &&
             in_flight_.size() + outbox_.size() < o_.outstanding) {
        Generator::Request req = gen_.Next();
        ++started_;
        Enqueue(std::move(req.txn), Pending{Logical::Of(req), req.recon, now_ns});
      }
      absl::Status s = Flush();
      if (!s.ok()) return s;
      const bool full = !more || in_flight_.size() + outbox_.size() >= o_.outstanding;
      results.clear();
      // Full window: sleep until an eighth of it has come back, or 1 ms.
      s = backend_->Poll(&results, milliseconds(full ? 1 : 0), full ? std::max<size_t>(1, in_flight_.size() / 8) : 1);
      if (!s.ok()) return s;
      const auto polled = Clock::now();
      if (!results.empty()) last_progress = polled;
      if (polled - last_progress > std::chrono::seconds(60))
        return absl::DeadlineExceededError(absl::StrCat("no result for 60 s; ", in_flight_.size(), " txns in flight"));
      const uint64_t polled_ns = Ns(polled);
      for (const pb::TxnResult& res : results) {
        s = Handle(res, polled_ns, r);
        if (!s.ok()) return s;
      }
    }
    r->seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (int k = 0; k < kNumKinds; ++k) {
      r->kinds[k].p50_us = hist_[k].Percentile(0.5) / 1000;
      r->kinds[k].p90_us = hist_[k].Percentile(0.9) / 1000;
      r->kinds[k].p99_us = hist_[k].Percentile(0.99) / 1000;
    }
    return absl::OkStatus();
  }

 private:
  // A logical txn in flight: what its first submission was drawn from (the
  // txn itself left with its submission; Redraw rebuilds it).
  struct Logical {
    TxnKind kind;
    bool dependent;  // Delivery or Stock-Level: its first submission is the reconnaissance
    uint32_t w, d, param;
    uint64_t draw;
    static Logical Of(const Generator::Request& r) { return Logical{r.kind, r.recon, r.w, r.d, r.param, r.draw}; }
    // The request's fields FromRecon reads (the txn left empty).
    Generator::Request Request() const {
      Generator::Request r;
      r.kind = kind;
      r.recon = dependent;
      r.w = w;
      r.d = d;
      r.param = param;
      r.draw = draw;
      return r;
    }
  };
  struct Pending {
    Logical req;
    bool recon;         // this submission is the reconnaissance
    uint64_t start_ns;  // the logical txn's first submission
  };

  void Enqueue(pb::Txn t, Pending p) {
    t.set_client_id(backend_->client_id());
    t.set_client_seq(++seq_);
    in_flight_.emplace(seq_, p);
    outbox_.push_back(std::move(t));
  }
  // The logical txn's first submission again (a refusal or a restart).
  void Resubmit(const Pending& p) {
    Generator::Request again = gen_.Redraw(p.req.draw);
    Enqueue(std::move(again.txn), Pending{p.req, p.req.dependent, p.start_ns});
  }

  absl::Status Flush() {
    if (outbox_.empty()) return absl::OkStatus();
    absl::Status s = backend_->Submit(&outbox_);
    if (absl::IsUnavailable(s)) return absl::OkStatus();  // overloaded: retry after results came
    return s;
  }

  // now_ns: when res came back (Ns of Clock::now()).
  absl::Status Handle(const pb::TxnResult& res, uint64_t now_ns, TpccRunResult* r) {
    auto it = in_flight_.find(res.client_seq());
    if (it == in_flight_.end()) return absl::InternalError(absl::StrCat("unexpected result for seq ", res.client_seq()));
    const Pending p = it->second;
    in_flight_.erase(it);
    const int k = static_cast<int>(p.req.kind);
    KindResult& kr = r->kinds[k];
    switch (res.status()) {
      case pb::STATUS_OK:
        if (p.recon) {
          auto real = gen_.FromRecon(p.req.Request(), res.result());
          if (!real.ok()) return real.status();
          Enqueue(std::move(*real), Pending{p.req, false, p.start_ns});
          return absl::OkStatus();
        }
        ++kr.committed;
        ++done_;
        hist_[k].Record(now_ns - p.start_ns);
        return absl::OkStatus();
      case pb::STATUS_ABORTED:
        if (res.error().rfind(kRollback, 0) == 0) {
          ++kr.rolled_back;
          ++done_;
          return absl::OkStatus();
        }
        if (res.error().rfind(kOllpMismatch, 0) == 0) {
          ++kr.restarts;
          Resubmit(p);  // reconnaissance again
          return absl::OkStatus();
        }
        return absl::InternalError(absl::StrCat(KindName(p.req.kind), " aborted: ", res.error()));
      case pb::STATUS_UNAVAILABLE:
        // Overloaded: try again with a new seq (a dependent txn from its
        // reconnaissance, the first submission of every kind).
        ++kr.refused;
        Resubmit(p);
        return absl::OkStatus();
      default:
        return absl::InternalError(absl::StrCat(KindName(p.req.kind), " refused: ", res.error()));
    }
  }

  const TpccRunOptions& o_;
  Generator gen_;
  Backend* const backend_;
  uint64_t seq_ = 0, started_ = 0, done_ = 0;
  absl::flat_hash_map<uint64_t, Pending> in_flight_;  // by client seq
  std::vector<pb::Txn> outbox_;
  std::array<LatencyHistogram, kNumKinds> hist_;
};

// The client's input generation for a run (scale and load seed as the
// database was loaded).
GeneratorOptions GeneratorOptionsFor(const TpccRunOptions& o) {
  GeneratorOptions g;
  g.scale = o.scale;
  g.load_seed = o.load_seed;
  g.seed = o.seed;
  g.mix = o.mix;
  g.remote_line = o.remote_line;
  g.remote_payment = o.remote_payment;
  return g;
}

void Finish(TpccRunResult* r) {
  uint64_t dependent_done = 0, restarts = 0;
  for (int k = 0; k < kNumKinds; ++k) {
    r->committed += r->kinds[k].committed + r->kinds[k].rolled_back;
    restarts += r->kinds[k].restarts;
    if (k == static_cast<int>(TxnKind::kDelivery) || k == static_cast<int>(TxnKind::kStockLevel))
      dependent_done += r->kinds[k].committed;
  }
  r->txns_per_sec = r->seconds > 0 ? r->committed / r->seconds : 0;
  r->new_orders_per_min =
      r->seconds > 0 ? 60.0 * r->kinds[static_cast<int>(TxnKind::kNewOrder)].committed / r->seconds : 0;
  r->restart_rate = dependent_done + restarts > 0 ? static_cast<double>(restarts) / (dependent_done + restarts) : 0;
}

absl::StatusOr<TpccRunResult> RunInProcess(const TpccRunOptions& o) {
  absl::Status s = o.scale.Validate();
  if (!s.ok()) return s;
  WarehousePartitioner parts(o.partitions);
  ProcedureRegistry procs;
  s = RegisterProcedures(&procs);
  if (!s.ok()) return s;
  InProcessBackend backend;  // outlives the engine
  EngineOptions eo;
  eo.workers = o.workers;
  eo.release_on_workers = o.release_on_workers;
  eo.adaptive_admission = o.adaptive_admission;
  eo.staged_alloc = o.staged_alloc;
  eo.lock_manager = o.lock_manager;
  eo.lock = o.lock;
  eo.epoch_us = o.epoch_us;
  eo.record_history = o.record_history;
  auto engine = Engine::Create(eo, &parts, &procs);
  if (!engine.ok()) return engine.status();
  for (PartitionId p = 0; p < o.partitions; ++p) {
    s = LoadPartition((*engine)->store(p), parts, p, o.scale, o.load_seed);
    if (!s.ok()) return s;
  }
  backend.Attach(engine->get());
  s = (*engine)->Start();
  if (!s.ok()) return s;
  const GeneratorOptions g = GeneratorOptionsFor(o);
  TpccRunResult r;
  r.lock_manager = o.lock_manager;
  r.warehouses = o.scale.warehouses;
  r.partitions = o.partitions;
  r.nodes = 1;
  r.in_process = true;
  Driver driver(o, g, &backend);
  // The partitions' workers' and lock threads' CPU so far, from one stats().
  struct StageCpu {
    uint64_t workers_ns = 0, lock_ns = 0;
  };
  const auto stage_cpu = [&engine] {
    StageCpu cpu;
    for (const SchedulerStats& p : (*engine)->stats().partitions) {
      cpu.workers_ns += p.workers_cpu_ns;
      cpu.lock_ns += p.lock_thread_cpu_ns;
    }
    return cpu;
  };
  const StageCpu stage_start = stage_cpu();
  const uint64_t client_ns_start = SelfThreadCpuNs();  // the driver runs on this thread
  const double cpu_start = ProcessCpuSeconds();
  const KernelUse kernel_start = ProcessKernelUse();
  const ElidedLatch::Stats latches_start = ElidedLatch::GlobalStats();
  s = driver.Run(&r);
  r.latches = ElidedLatch::GlobalStats() - latches_start;
  r.elision = ElidedLatch::ElisionEnabled();
  const double cpu_secs = ProcessCpuSeconds() - cpu_start;
  const KernelUse kernel_end = ProcessKernelUse();
  const StageCpu stage_end = stage_cpu();
  const uint64_t workers_ns_run = stage_end.workers_ns - stage_start.workers_ns;
  const uint64_t lock_ns_run = stage_end.lock_ns - stage_start.lock_ns;
  const uint64_t client_ns_run = SelfThreadCpuNs() - client_ns_start;
  absl::Status stop = (*engine)->Stop(std::chrono::seconds(60));
  if (!s.ok()) return s;
  if (!stop.ok()) return stop;
  Finish(&r);
  if (r.committed > 0) {
    r.cpu_us_per_txn = 1e6 * cpu_secs / static_cast<double>(r.committed);
    r.worker_us_per_txn = 1e-3 * static_cast<double>(workers_ns_run) / static_cast<double>(r.committed);
    r.lock_us_per_txn = 1e-3 * static_cast<double>(lock_ns_run) / static_cast<double>(r.committed);
    r.client_us_per_txn = 1e-3 * static_cast<double>(client_ns_run) / static_cast<double>(r.committed);
    r.kernel_us_per_txn = 1e6 * (kernel_end.sys_secs - kernel_start.sys_secs) / static_cast<double>(r.committed);
    r.page_faults_per_txn =
        static_cast<double>(kernel_end.minor_faults - kernel_start.minor_faults) / static_cast<double>(r.committed);
  }
  const EngineStats es = (*engine)->stats();
  for (const SchedulerStats& p : es.partitions) {
    const double n = static_cast<double>(es.partitions.size());
    r.blocked_at_admission +=
        p.admitted == 0 ? 0 : static_cast<double>(p.blocked_at_admission) / p.admitted / n;
    r.avg_active += p.avg_active / n;
    r.window += static_cast<double>(p.window) / n;
    r.window_grows += p.window_grows;
    r.window_shrinks += p.window_shrinks;
    r.window_grows_undone += p.window_grows_undone;
    r.window_steps_back_up += p.window_steps_back_up;
    r.window_shrinks_undone += p.window_shrinks_undone;
    r.starved += p.starved;
  }
  if (o.check) {
    std::vector<const PartitionStore*> stores;
    for (PartitionId p = 0; p < o.partitions; ++p) stores.push_back((*engine)->store(p));
    const CheckReport report = CheckConsistency(stores, o.scale, /*all_warehouses=*/true);
    r.consistency_checked = true;
    r.consistency_ok = report.ok;
    r.consistency_failures = report.failures;
  }
  r.digest = (*engine)->Digest();
  for (PartitionId p = 0; p < o.partitions; ++p) {
    const PartitionStore* store = (*engine)->store(p);
    const std::vector<uint32_t> ids = store->table_ids();
    if (r.tables.empty()) r.tables.resize(ids.size());
    for (size_t i = 0; i < ids.size() && i < r.tables.size(); ++i) {
      const Table* t = store->GetTable(ids[i]);
      const Table::ReclaimStats st = t->reclaim_stats();
      TpccRunResult::TableMemory& m = r.tables[i];
      m.name = t->name();
      m.records += t->size();
      m.bytes += t->memory_bytes();
      m.reclaimed_records += st.reclaimed_records;
      m.retired_index_bytes += st.retired_index_bytes;
    }
  }
  if (o.record_history) r.history = (*engine)->history();
  return r;
}

absl::StatusOr<TpccRunResult> RunOnCluster(const TpccRunOptions& o) {
  auto cc = ClusterClient::Connect(*o.cluster, o.cluster_curve);
  if (!cc.ok()) return cc.status();
  absl::Status s = (*cc)->WaitReady(std::chrono::seconds(10));
  if (!s.ok()) return s;
  auto infos = (*cc)->InfoAll(std::chrono::seconds(5));
  if (!infos.ok()) return infos.status();
  const pb::NodeInfo& i0 = (*infos)[0];
  for (const auto& i : *infos)
    if (i.workload() != "tpcc") return absl::FailedPreconditionError("the cluster did not load TPC-C (--workload=tpcc)");
  TpccRunOptions opts = o;
  opts.scale.warehouses = i0.tpcc_warehouses();
  opts.scale.items = i0.tpcc_items();
  opts.scale.customers_per_district = i0.tpcc_customers_per_district();
  opts.scale.orders_per_district = i0.tpcc_customers_per_district();
  opts.scale.new_orders_per_district = i0.tpcc_new_orders_per_district();
  opts.load_seed = i0.tpcc_load_seed();
  s = opts.scale.Validate();
  if (!s.ok()) return s;
  TpccRunResult r;
  r.lock_manager = i0.lock_manager();
  for (const auto& i : *infos)
    if (i.lock_manager() != r.lock_manager) r.lock_manager = "mixed";
  r.warehouses = opts.scale.warehouses;
  r.partitions = i0.num_partitions();
  r.nodes = (*cc)->num_nodes();
  auto conn = ClusterClient::Connect(*o.cluster, o.cluster_curve);
  if (!conn.ok()) return conn.status();
  ClusterBackend backend(std::move(*conn), i0.num_partitions());
  const GeneratorOptions g = GeneratorOptionsFor(opts);
  Driver driver(opts, g, &backend);
  s = driver.Run(&r);
  if (!s.ok()) return s;
  Finish(&r);
  if (o.check) {
    // Every node checks its partitions at one epoch boundary well ahead.
    uint64_t epoch = 0;
    auto now = (*cc)->InfoAll(std::chrono::seconds(5));
    if (!now.ok()) return now.status();
    for (const auto& i : *now) epoch = std::max<uint64_t>(epoch, i.epoch());
    epoch += 300;
    // Asked of all nodes at once: each pauses at the boundary to check.
    const uint32_t nodes = (*cc)->num_nodes();
    std::vector<absl::StatusOr<pb::ClientReply>> replies(nodes, absl::UnknownError("not asked"));
    std::vector<std::thread> threads;
    for (uint32_t n = 0; n < nodes; ++n)
      threads.emplace_back([&, n] {
        auto c = ClusterClient::Connect(*o.cluster, o.cluster_curve);
        replies[n] = c.ok() ? (*c)->node(n)->Check(epoch, std::chrono::seconds(120)) : c.status();
      });
    for (std::thread& t : threads) t.join();
    r.consistency_checked = true;
    r.consistency_ok = true;
    for (uint32_t n = 0; n < nodes; ++n) {
      if (!replies[n].ok()) return replies[n].status();
      r.consistency_ok = r.consistency_ok && replies[n]->consistency_ok();
      for (const std::string& f : replies[n]->consistency_failures())
        r.consistency_failures.push_back(absl::StrCat("node ", n, ": ", f));
    }
  }
  return r;
}

}  // namespace

uint32_t DefaultOutstanding(const Mix& mix) {
  const bool recon = mix.percent[static_cast<int>(TxnKind::kDelivery)] > 0 ||
                     mix.percent[static_cast<int>(TxnKind::kStockLevel)] > 0;
  return recon ? 200 : 400;
}

absl::StatusOr<TpccRunResult> RunTpcc(const TpccRunOptions& o) {
  if (o.outstanding == 0) return absl::InvalidArgumentError("--outstanding must be positive");
  if (o.txns == 0 && !(o.duration_s > 0)) return absl::InvalidArgumentError("give --txns or a positive --duration");
  return o.cluster.has_value() ? RunOnCluster(o) : RunInProcess(o);
}

}  // namespace tpcc
}  // namespace detdb
