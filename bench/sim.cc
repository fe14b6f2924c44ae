#include "bench/sim.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <deque>
#include <queue>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "bench/metered_lock_manager.h"
#include "common/partitioner.h"
#include "scheduler/partition_txn.h"
#include "scheduler/scheduler_core.h"
#include "workloads/tpcc/generator.h"
#include "workloads/tpcc/schema.h"

namespace detdb {
namespace {

class SimInput final : public MergedInput {
 public:
  explicit SimInput(SubBatchMerger* m) : m_(m) {}
  bool TakeNext(SubBatchRef* out) override { return m_->TakeNext(out); }
  bool NextHasTxns() override { return m_->NextHasTxns(); }

 private:
  SubBatchMerger* const m_;
};

enum class Kind : uint8_t {
  kEpoch, kSubBatch, kLockIter, kLockIterEnd, kWorkerTake, kWorkerDone, kReads, kResult, kClientDone
};

struct Event {
  double t;
  uint64_t seq;  // ties in t: the order of scheduling (deterministic)
  Kind kind;
  uint32_t a = 0;  // node or partition
  uint32_t w = 0;  // worker
  uint64_t b = 0;  // payload: sub-batch slot, txn id, client seq
  PartitionTxn* st = nullptr;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

// Running txns per key of one partition, and the last ids that started on it.
struct KeyUse {
  TxnId writer = 0;          // running writer, 0: none
  uint32_t readers = 0;      // running readers
  TxnId last_writer = 0, last_reader = 0;  // highest ids started so far
};

struct Worker {
  bool busy = false;  // taken or reserved (a wake-up under way)
  PartitionTxn* next = nullptr;  // the first successor it released itself
  double busy_ns = 0;
};

// A node's front end: its client (and sequencer), one thread that spends
// front_txn_ns per result it turns into the next submission.
struct Front {
  bool busy = false;
  uint64_t queued = 0;  // results waiting for the client thread
  double busy_ns = 0;
};

struct Partition {
  uint32_t node = 0;
  std::unique_ptr<SubBatchMerger> merger;
  std::unique_ptr<SimInput> input;
  std::unique_ptr<TxnExecutor> exec;
  MeteredLockManager* lm = nullptr;
  std::unique_ptr<PartitionCore> core;
  RemoteReadsTable remote;
  std::deque<PartitionTxn*> ready_q;
  std::vector<PartitionTxn*> done;
  std::vector<PartitionTxn*> out;  // dispatched at the end of the lock iteration
  bool lock_sleeping = true, lock_notified = false, lock_progress = false;
  double core_busy_until = 0;
  double lock_busy_ns = 0;
  uint64_t starved = 0;
  std::vector<Worker> workers;
  absl::flat_hash_map<Key, KeyUse> keys;  // check_g1
  uint64_t admitted = 0, blocked = 0;
};

// Whether txn has more than one participant (reader or writer partition).
bool MultiPartition(const pb::Txn& txn) {
  const int first = txn.readers_size() > 0 ? static_cast<int>(txn.readers(0)) : -1;
  auto other = [first](const auto& parts) {
    for (PartitionId p : parts)
      if (first >= 0 && static_cast<int>(p) != first) return true;
    return false;
  };
  return other(txn.readers()) || (first >= 0 ? other(txn.writers()) : txn.writers_size() > 1);
}

class Sim {
 public:
  Sim(const SimOptions& o, const SimCosts& c, SimCosts::Lock lc)
      : o_(o), c_(c), lc_(lc), partitioner_(MakePartitioner(o)) {}

  absl::Status Init();
  absl::StatusOr<SimResult> Run();

 private:
  void Push(double t, Kind k, uint32_t a, uint64_t b = 0, PartitionTxn* st = nullptr, uint32_t w = 0) {
    q_.push(Event{t, seq_++, k, a, w, b, st});
  }
  double Net(uint32_t from_node, uint32_t to_node) const { return from_node == to_node ? 0 : c_.net_ns; }
  void Submit(uint32_t node, double t);
  void OnResult(uint32_t node, double t);
  void ClientDone(uint32_t node, double t);
  void CloseEpoch(uint32_t node, double t);
  void WakeLock(uint32_t p, double t);
  void LockIter(uint32_t p, double t);
  void LockIterEnd(uint32_t p, double t);
  void Dispatch(uint32_t p, PartitionTxn* st, double t);
  void WorkerTake(uint32_t p, uint32_t w, double t);
  void Start(uint32_t p, uint32_t w, PartitionTxn* st, double t);
  absl::Status WorkerDone(uint32_t p, uint32_t w, PartitionTxn* st, double t);
  absl::Status CheckStart(Partition& part, const PartitionTxn* st);
  void CheckEnd(Partition& part, const PartitionTxn* st);
  // With o_.cores set, threads share the cores: a step that starts while
  // more threads run than there are cores takes longer by their ratio.
  double Stretch() const {
    return o_.cores == 0 ? 1.0 : std::max(1.0, static_cast<double>(running_) / o_.cores);
  }
  double Busy(double from, double to) const {  // the part of [from, to) in the measured span
    return std::max(0.0, std::min(to, end_) - std::max(from, begin_));
  }

  const SimOptions& o_;
  const SimCosts& c_;
  static std::unique_ptr<Partitioner> MakePartitioner(const SimOptions& o) {
    if (o.tpcc.warehouses > 0) return std::make_unique<tpcc::WarehousePartitioner>(o.workload.partitions);
    return std::make_unique<ModPartitioner>(o.workload.partitions);
  }

  const SimCosts::Lock lc_;
  const std::unique_ptr<Partitioner> partitioner_;
  std::vector<Partition> parts_;
  std::vector<Front> fronts_;                // by node
  std::vector<MicroGenerator> gens_;         // by node, the microbenchmark
  std::vector<tpcc::Generator> tpcc_gens_;  // by node, TPC-C
  uint64_t multi_committed_ = 0;
  std::vector<std::vector<pb::Txn>> pending_;  // by node: submitted, not yet sequenced
  std::vector<double> submit_t_;               // by client seq
  std::vector<double> latencies_;
  absl::flat_hash_map<uint64_t, SubBatchRef> in_flight_;  // sub-batches on their way
  uint64_t next_slot_ = 0, next_seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q_;
  uint64_t seq_ = 0;
  double begin_ = 0, end_ = 0;
  uint64_t committed_ = 0, parked_ = 0, events_ = 0;
  uint64_t running_ = 0;  // lock threads awake, workers and clients busy
};

absl::Status Sim::Init() {
  const uint32_t np = o_.workload.partitions;
  begin_ = o_.warmup_s * 1e9;
  end_ = begin_ + o_.duration_s * 1e9;
  parts_.resize(np);
  for (uint32_t p = 0; p < np; ++p) {
    Partition& part = parts_[p];
    part.node = p % o_.nodes;
    part.merger = std::make_unique<SubBatchMerger>(o_.nodes, 1);
    part.input = std::make_unique<SimInput>(part.merger.get());
    part.exec = std::make_unique<TxnExecutor>(p, nullptr, partitioner_.get(), nullptr, nullptr, nullptr);
    std::unique_ptr<LockManager> inner;
    if (o_.make_lock_manager) {
      inner = o_.make_lock_manager();
    } else {
      auto lm = NewLockManager(o_.lock_manager, o_.lock);
      if (!lm.ok()) return lm.status();
      inner = std::move(*lm);
    }
    auto metered = std::make_unique<MeteredLockManager>(std::move(inner));
    part.lm = metered.get();
    part.core = std::make_unique<PartitionCore>(
        PartitionCoreOptions{.workers = o_.workers, .max_active = o_.lock.max_active,
                             .adaptive_admission = o_.adaptive_admission, .admission_warmup_us = 0},
        std::move(metered), part.exec.get(), part.input.get());
    part.workers.resize(o_.workers);
  }
  pending_.resize(o_.nodes);
  fronts_.resize(o_.nodes);
  for (uint32_t n = 0; n < o_.nodes; ++n) {
    if (o_.tpcc.warehouses > 0) {
      tpcc::GeneratorOptions g;
      g.scale = tpcc::Scale::Spec(o_.tpcc.warehouses);
      g.seed = o_.workload.seed * 1000003 + n;
      g.mix.percent = {100 * (1 - o_.tpcc.payment_share), 100 * o_.tpcc.payment_share, 0, 0, 0};
      // An order has 5-15 lines (10 on average): each remote with p gives
      // 1 - (1 - p)^10 remote orders.
      g.remote_line = 1 - std::pow(1 - o_.tpcc.remote_order, 0.1);
      g.remote_payment = o_.tpcc.remote_payment;
      for (uint32_t w = 1; w <= o_.tpcc.warehouses; ++w)
        if (parts_[partitioner_->PartitionOf(tpcc::WarehouseKey(w))].node == n) g.home_warehouses.push_back(w);
      tpcc_gens_.emplace_back(g);
      continue;
    }
    MicroOptions mo = o_.workload;
    mo.seed = o_.workload.seed * 1000003 + n;
    gens_.emplace_back(mo);
  }
  for (uint32_t i = 0; i < o_.outstanding; ++i) Submit(i % o_.nodes, 0);
  for (uint32_t n = 0; n < o_.nodes; ++n) Push(o_.epoch_us * 1000.0, Kind::kEpoch, n);
  return absl::OkStatus();
}

void Sim::Submit(uint32_t node, double t) {
  pb::Txn& txn = pending_[node].emplace_back();
  if (o_.tpcc.warehouses > 0) {
    txn = std::move(tpcc_gens_[node].Next().txn);  // New-Order or Payment: never a reconnaissance
  } else {
    gens_[node].Next(&txn);
  }
  txn.set_client_id(node);
  txn.set_client_seq(next_seq_++);
  submit_t_.push_back(t);
}

// A result reached its node's client: it pays front_txn_ns before the next
// txn is submitted, one result at a time.
void Sim::OnResult(uint32_t node, double t) {
  if (!o_.model_front || c_.front_txn_ns <= 0) {
    Submit(node, t);
    return;
  }
  Front& f = fronts_[node];
  if (f.busy) {
    ++f.queued;
    return;
  }
  f.busy = true;
  ++running_;
  const double cost = c_.front_txn_ns * Stretch();
  f.busy_ns += Busy(t, t + cost);
  Push(t + cost, Kind::kClientDone, node);
}

void Sim::ClientDone(uint32_t node, double t) {
  Submit(node, t);
  Front& f = fronts_[node];
  if (f.queued == 0) {
    f.busy = false;
    --running_;
    return;
  }
  --f.queued;
  const double cost = c_.front_txn_ns * Stretch();
  f.busy_ns += Busy(t, t + cost);
  Push(t + cost, Kind::kClientDone, node);
}

// The node's sequencer closes the epoch: ids in (epoch, sequencer, index)
// order, reader and writer partitions, one sub-batch per partition (empty
// ones too), each reaching its partition after the network delay.
void Sim::CloseEpoch(uint32_t node, double t) {
  auto batch = std::make_shared<std::vector<pb::Txn>>(std::move(pending_[node]));
  pending_[node].clear();
  const uint64_t epoch = static_cast<uint64_t>(t / (o_.epoch_us * 1000.0) + 0.5);
  for (size_t i = 0; i < batch->size(); ++i) {
    pb::Txn& txn = (*batch)[i];
    txn.set_id((epoch << 28) | (uint64_t{node} << 20) | i);
    std::vector<PartitionId> r, w;
    for (Key k : txn.read_set()) r.push_back(partitioner_->PartitionOf(k));
    for (Key k : txn.write_set()) w.push_back(partitioner_->PartitionOf(k));
    for (auto* v : {&r, &w}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    for (PartitionId p : r) txn.add_readers(p);
    for (PartitionId p : w) txn.add_writers(p);
  }
  std::vector<SubBatchRef> subs(parts_.size());
  for (uint32_t p = 0; p < parts_.size(); ++p) {
    subs[p].epoch = epoch;
    subs[p].sequencer_id = node;
    subs[p].owner = batch;
  }
  for (const pb::Txn& txn : *batch)
    for (PartitionId p : ParticipantsOf(txn)) subs[p].txns.push_back(&txn);
  for (uint32_t p = 0; p < parts_.size(); ++p) {
    in_flight_.emplace(next_slot_, std::move(subs[p]));
    Push(t + Net(node, parts_[p].node), Kind::kSubBatch, p, next_slot_++);
  }
  Push(t + o_.epoch_us * 1000.0, Kind::kEpoch, node);
}

void Sim::WakeLock(uint32_t p, double t) {
  Partition& part = parts_[p];
  if (!part.lock_sleeping) {
    part.lock_notified = true;
    return;
  }
  part.lock_sleeping = false;
  ++running_;
  Push(t + c_.handoff_ns, Kind::kLockIter, p);
}

// One pass of Scheduler::LockThread: releases first, one admission slice;
// what it dispatches reaches the queue when the pass ends.
void Sim::LockIter(uint32_t p, double t) {
  Partition& part = parts_[p];
  part.lock_notified = false;
  ReadyList ready;
  for (PartitionTxn* st : part.done) {
    CheckEnd(part, st);
    st->owner.reset();
    part.core->Release(st, &ready);
  }
  const bool released = !part.done.empty();
  part.done.clear();
  const AdmitResult r = part.core->Admit(o_.release_on_workers ? 64 : 512,
                                          {.starved_total = part.starved,
                                           .parked = part.remote.parked(),
                                           .now_us = static_cast<uint64_t>(t / 1000)},
                                          &ready);
  if (t >= begin_) {
    part.admitted += r.admitted;
    part.blocked += r.blocked;
  }
  for (LockTxn* lt : ready) part.out.push_back(static_cast<PartitionTxn*>(lt->user));
  part.lock_progress = released || r.progress || !ready.empty();
  double cost = part.lm->TakeCost(lc_, c_.lock_txn_extra_ns);
  if (part.lock_progress) cost = std::max(cost, 50.0);  // a pass is never free
  cost *= Stretch();
  part.lock_busy_ns += Busy(t, t + cost);
  part.core_busy_until = t + cost;
  Push(t + cost, Kind::kLockIterEnd, p);
}

void Sim::LockIterEnd(uint32_t p, double t) {
  Partition& part = parts_[p];
  for (PartitionTxn* st : part.out) Dispatch(p, st, t);
  part.out.clear();
  if (part.lock_progress || part.lock_notified || !part.done.empty()) {
    LockIter(p, t);
  } else {
    part.lock_sleeping = true;
    --running_;
  }
}

// A txn reaches the worker queue; a sleeping worker is woken (one hand-off).
void Sim::Dispatch(uint32_t p, PartitionTxn* st, double t) {
  Partition& part = parts_[p];
  part.ready_q.push_back(st);
  for (uint32_t w = 0; w < part.workers.size(); ++w) {
    if (part.workers[w].busy) continue;
    part.workers[w].busy = true;
    ++running_;
    Push(t + c_.handoff_ns, Kind::kWorkerTake, p, 0, nullptr, w);
    return;
  }
}

void Sim::WorkerTake(uint32_t p, uint32_t w, double t) {
  Partition& part = parts_[p];
  Worker& wk = part.workers[w];
  PartitionTxn* st = wk.next;
  wk.next = nullptr;
  if (st == nullptr && !part.ready_q.empty()) {
    st = part.ready_q.front();
    part.ready_q.pop_front();
  }
  if (st == nullptr) {  // starving: Scheduler::WorkerThread's window signal
    wk.busy = false;
    --running_;
    if (part.core->window_bound()) {
      if (part.core->active() >= part.core->admission().window()) ++part.starved;
      WakeLock(p, t);
    }
    return;
  }
  Start(p, w, st, t);
}

void Sim::Start(uint32_t p, uint32_t w, PartitionTxn* st, double t) {
  Partition& part = parts_[p];
  const pb::Txn& txn = *st->txn;
  double cost = 0;
  // The worker's own overhead per txn (queue, hand-back), paid once.
  const double extra = st->resumed ? 0 : c_.worker_txn_extra_ns * Stretch();
  if (!st->resumed) {
    const double read_ns = c_.exec_key_ns * st->local_reads.size() * Stretch();
    if (st->reader) {  // the local reads go to the other executors
      for (PartitionId q : st->executors) {
        if (q == p) continue;
        Push(t + read_ns + Net(part.node, parts_[q].node), Kind::kReads, q, txn.id(), nullptr, p);
      }
    }
    std::vector<pb::RemoteReads> spent;
    if (!st->executor) {
      cost = read_ns + extra;
    } else if (st->MissingRemoteReads() && !part.remote.TakeEarlyOrPark(st, &spent)) {
      ++parked_;  // WAITING: the worker moves on
      part.workers[w].busy_ns += Busy(t, t + read_ns + extra);
      Push(t + read_ns + extra, Kind::kWorkerTake, p, 0, nullptr, w);
      return;
    }
  }
  if (st->executor) {
    cost = (c_.exec_txn_ns + c_.exec_key_ns * txn.read_set_size() +
            o_.workload.compute_us * 1000.0 * txn.read_set_size()) * Stretch() + extra;
  }
  part.workers[w].busy_ns += Busy(t, t + cost);
  Push(t + cost, Kind::kWorkerDone, p, 0, st, w);
}

absl::Status Sim::WorkerDone(uint32_t p, uint32_t w, PartitionTxn* st, double t) {
  Partition& part = parts_[p];
  if (st->executor && st->coordinator) {
    const pb::Txn& txn = *st->txn;
    if (t >= begin_ && t < end_) {
      ++committed_;
      if (MultiPartition(txn)) ++multi_committed_;
      latencies_.push_back(t - submit_t_[txn.client_seq()]);
    }
    Push(t + Net(part.node, txn.client_id()), Kind::kResult, txn.client_id());
  }
  double next_t = t;
  if (o_.release_on_workers && part.lock_sleeping && part.core_busy_until <= t) {
    // Scheduler::WorkerThread: the lock thread sleeps and lm_mu_ is free.
    CheckEnd(part, st);
    st->owner.reset();
    ReadyList ready;
    part.core->Release(st, &ready);
    part.core->Poll(&ready);
    const bool wake = part.core->AdmissionWorthResuming();
    const double cost = part.lm->TakeCost(lc_, c_.lock_txn_extra_ns) * Stretch();
    part.core_busy_until = t + cost;
    part.workers[w].busy_ns += Busy(t, t + cost);
    next_t = t + cost;
    if (wake) WakeLock(p, next_t);
    if (!ready.empty()) {
      part.workers[w].next = static_cast<PartitionTxn*>(ready[0]->user);
      for (size_t j = 1; j < ready.size(); ++j) Dispatch(p, static_cast<PartitionTxn*>(ready[j]->user), next_t);
    }
  } else {
    part.done.push_back(st);
    WakeLock(p, t);
  }
  Push(next_t, Kind::kWorkerTake, p, 0, nullptr, w);
  return absl::OkStatus();
}

absl::Status Sim::CheckStart(Partition& part, const PartitionTxn* st) {
  if (!o_.check_g1) return absl::OkStatus();
  const TxnId id = st->txn->id();
  auto fail = [&](Key k, TxnId other, const char* what) {
    return absl::InternalError(absl::StrCat("G1 violated: txn ", id, " started on key ", k, " ", what, " ", other,
                                            " (lock manager ", std::string(part.lm->name()), ")"));
  };
  for (Key k : st->local_writes) {
    KeyUse& u = part.keys[k];
    if (u.writer != 0) return fail(k, u.writer, "while it was written by running txn");
    if (u.readers != 0) return fail(k, u.last_reader, "while running readers held it, the last");
    if (u.last_writer > id || u.last_reader > id) return fail(k, std::max(u.last_writer, u.last_reader), "after the later txn");
  }
  for (Key k : st->local_reads) {
    if (std::find(st->local_writes.begin(), st->local_writes.end(), k) != st->local_writes.end()) continue;
    KeyUse& u = part.keys[k];
    if (u.writer != 0) return fail(k, u.writer, "while it was written by running txn");
    if (u.last_writer > id) return fail(k, u.last_writer, "after the later writer");
  }
  for (Key k : st->local_writes) {
    KeyUse& u = part.keys[k];
    u.writer = id;
    u.last_writer = id;
  }
  for (Key k : st->local_reads) {
    if (std::find(st->local_writes.begin(), st->local_writes.end(), k) != st->local_writes.end()) continue;
    KeyUse& u = part.keys[k];
    ++u.readers;
    u.last_reader = std::max(u.last_reader, id);
  }
  return absl::OkStatus();
}

void Sim::CheckEnd(Partition& part, const PartitionTxn* st) {
  if (!o_.check_g1) return;
  for (Key k : st->local_writes) part.keys[k].writer = 0;
  for (Key k : st->local_reads)
    if (std::find(st->local_writes.begin(), st->local_writes.end(), k) == st->local_writes.end())
      --part.keys[k].readers;
}

absl::StatusOr<SimResult> Sim::Run() {
  const auto wall0 = std::chrono::steady_clock::now();
  while (!q_.empty()) {
    const Event e = q_.top();
    if (e.t >= end_) break;
    q_.pop();
    ++events_;
    switch (e.kind) {
      case Kind::kEpoch: CloseEpoch(e.a, e.t); break;
      case Kind::kSubBatch: {
        auto it = in_flight_.find(e.b);
        parts_[e.a].merger->Add(std::move(it->second));
        in_flight_.erase(it);
        WakeLock(e.a, e.t);
        break;
      }
      case Kind::kLockIter: LockIter(e.a, e.t); break;
      case Kind::kLockIterEnd: LockIterEnd(e.a, e.t); break;
      case Kind::kWorkerTake: {
        Partition& part = parts_[e.a];
        PartitionTxn* st = part.workers[e.w].next;
        if (st == nullptr && !part.ready_q.empty()) st = part.ready_q.front();
        if (st != nullptr && !st->resumed) {
          absl::Status s = CheckStart(part, st);
          if (!s.ok()) return s;
        }
        WorkerTake(e.a, e.w, e.t);
        break;
      }
      case Kind::kWorkerDone: {
        absl::Status s = WorkerDone(e.a, e.w, e.st, e.t);
        if (!s.ok()) return s;
        break;
      }
      case Kind::kReads: {
        pb::RemoteReads msg;
        msg.set_txn_id(e.b);
        msg.set_from_partition(e.w);
        if (PartitionTxn* st = parts_[e.a].remote.OnRemoteReads(std::move(msg))) Dispatch(e.a, st, e.t);
        break;
      }
      case Kind::kResult: OnResult(e.a, e.t); break;
      case Kind::kClientDone: ClientDone(e.a, e.t); break;
    }
  }
  SimResult r;
  r.committed = committed_;
  r.txns_per_sec = committed_ / o_.duration_s;
  if (!latencies_.empty()) {
    std::sort(latencies_.begin(), latencies_.end());
    r.p50_us = latencies_[latencies_.size() / 2] / 1000;
    r.p99_us = latencies_[latencies_.size() * 99 / 100] / 1000;
  }
  uint64_t admitted = 0, blocked = 0;
  const double span = end_ - begin_;
  for (const Partition& part : parts_) {
    admitted += part.admitted;
    blocked += part.blocked;
    r.lock_thread_busy += part.lock_busy_ns / span / parts_.size();
    for (const Worker& w : part.workers) r.worker_busy += w.busy_ns / span / (parts_.size() * part.workers.size());
  }
  r.blocked_at_admission = admitted == 0 ? 0 : static_cast<double>(blocked) / admitted;
  for (const Front& f : fronts_) r.client_busy += f.busy_ns / span / fronts_.size();
  r.parked = parked_;
  r.multipartition = committed_ == 0 ? 0 : static_cast<double>(multi_committed_) / committed_;
  r.events = events_;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

}  // namespace

absl::StatusOr<SimResult> RunSim(const SimOptions& o, const SimCosts& costs) {
  if (o.tpcc.warehouses > 0) {
    if (o.tpcc.warehouses < o.workload.partitions)
      return absl::InvalidArgumentError("TPC-C: at least one warehouse per partition");
    absl::Status scale = tpcc::Scale::Spec(o.tpcc.warehouses).Validate();
    if (!scale.ok()) return scale;
    for (double share : {o.tpcc.remote_order, o.tpcc.remote_payment, o.tpcc.payment_share})
      if (!(share >= 0 && share <= 1)) return absl::InvalidArgumentError("TPC-C: shares must be in [0, 1]");
  } else {
    absl::Status valid = MicroGenerator::Validate(o.workload);
    if (!valid.ok()) return valid;
  }
  if (o.nodes == 0 || o.workers == 0 || o.outstanding == 0 || o.epoch_us == 0)
    return absl::InvalidArgumentError("nodes, workers, outstanding and epoch_us must be positive");
  if (o.workload.partitions % o.nodes != 0)
    return absl::InvalidArgumentError("partitions must be a multiple of nodes");
  if (!(o.duration_s > 0) || o.warmup_s < 0) return absl::InvalidArgumentError("duration must be positive");
  SimCosts::Lock lc;
  if (!o.make_lock_manager) {
    auto c = costs.LockCosts(o.lock_manager);
    if (!c.ok()) return c.status();
    lc = *c;
  } else if (auto c = costs.LockCosts("dclp"); c.ok()) {
    lc = *c;
  }
  Sim sim(o, costs, lc);
  absl::Status s = sim.Init();
  if (!s.ok()) return s;
  return sim.Run();
}

}  // namespace detdb
