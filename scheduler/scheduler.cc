#include "scheduler/scheduler.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/thread_name.h"
#include "glog/logging.h"

namespace detdb {

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerOptions& options,
                                                             PartitionStore* store,
                                                             const Partitioner* partitioner,
                                                             const ProcedureRegistry* procedures,
                                                             Transport* transport, ReplySink* replies) {
  if (options.workers == 0) return absl::InvalidArgumentError("a scheduler needs at least one worker");
  if (options.num_sequencers == 0) return absl::InvalidArgumentError("at least one sequencer");
  if (options.partition >= partitioner->num_partitions())
    return absl::InvalidArgumentError(absl::StrCat("partition ", options.partition, " out of range"));
  auto lm = NewLockManager(options.lock_manager, options.lock);
  if (!lm.ok()) return lm.status();
  return std::unique_ptr<Scheduler>(
      new Scheduler(options, partitioner, std::move(*lm), store, procedures, transport, replies));
}

Scheduler::Scheduler(const SchedulerOptions& options, const Partitioner* partitioner,
                     std::unique_ptr<LockManager> lm, PartitionStore* store, const ProcedureRegistry* procedures,
                     Transport* transport, ReplySink* replies)
    : options_(options),
      exec_(options.partition, store, partitioner, procedures, transport, replies),
      store_(store),
      core_({.workers = options.workers,
             .max_active = options.lock.max_active,
             .adaptive_admission = options.adaptive_admission,
             .staged_alloc = options.staged_alloc,
             .admission_trace = options.admission_trace,
             .trace_partition = options.partition},
            std::move(lm), &exec_, &input_, this),
      merger_(options.num_sequencers, options.first_epoch),
      remote_({.self = options.partition,
               .partitioner = partitioner,
               .value_size = [store](Key k) -> uint32_t {
                 const Table* t = store->GetTable(KeyTable(k));
                 return t == nullptr ? 0 : t->value_size();
               },
               .epoch_in_id = options.epoch_in_id,
               .window_epochs = options.window_epochs,
               .max_held_bytes = options.max_held_reads_bytes,
               .is_local = options.is_local}),
      merged_epoch_(options.first_epoch) {
  transport->RegisterReceiver(options_.partition, this);
  window_.store(core_.admission().window(), std::memory_order_relaxed);
  worker_cpu_.resize(options_.workers);  // before any thread reads stats()
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  CHECK(!lock_thread_.joinable()) << "scheduler started twice";
  const std::string p = std::to_string(options_.partition);
  lock_thread_ = std::thread([this, p] {
    SetThreadName("detdb-lock-" + p);
    lock_cpu_.Begin();
    LockThread();
    lock_cpu_.End();
  });
  for (uint32_t i = 0; i < options_.workers; ++i)
    workers_.emplace_back([this, p, cpu = &worker_cpu_[i]] {
      SetThreadName("detdb-work-" + p);
      cpu->Begin();
      WorkerThread();
      cpu->End();
    });
}

void Scheduler::Stop() {
  stop_.store(true);
  lock_notifier_.Notify();
  for (size_t i = 0; i < workers_.size(); ++i) ready_q_.WakeAll();
  if (lock_thread_.joinable()) lock_thread_.join();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
}

TxnId Scheduler::OldestAwaitingReads() const {
  std::lock_guard<std::mutex> l(remote_mu_);
  return remote_.oldest_expected();
}

bool Scheduler::IsQuiescent() const { return core_.IsQuiescent(); }

void Scheduler::Enqueue(SubBatchRef sub_batch) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    const auto key = std::make_pair(sub_batch.epoch, sub_batch.sequencer_id);
    const size_t n = sub_batch.txns.size();
    if (!merger_.Add(std::move(sub_batch))) {  // resent: normal once nodes rejoin
      duplicate_sub_batches_.fetch_add(1, std::memory_order_relaxed);
      VLOG(1) << "partition " << options_.partition << ": dropping duplicate sub-batch (epoch " << key.first
              << ", sequencer " << key.second << ")";
      return;
    }
    enqueued_.fetch_add(n, std::memory_order_release);
  }
  lock_notifier_.Notify();
}

bool Scheduler::LockedInput::TakeNext(SubBatchRef* out) {
  std::lock_guard<std::mutex> l(s_->in_mu_);
  if (!s_->merger_.TakeNext(out)) return false;
  s_->merged_txns_.fetch_add(out->txns.size(), std::memory_order_release);
  s_->merged_epoch_.store(s_->merger_.merged_epoch(), std::memory_order_release);
  return true;
}

bool Scheduler::LockedInput::NextHasTxns() {
  std::lock_guard<std::mutex> l(s_->in_mu_);
  return s_->merger_.NextHasTxns();
}

bool Scheduler::HoldAt(uint64_t epoch) {
  std::lock_guard<std::mutex> l(in_mu_);
  return merger_.HoldAt(epoch);
}

void Scheduler::SkipTo(uint64_t epoch) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    const uint64_t dropped = merger_.SkipTo(epoch);
    enqueued_.fetch_sub(dropped, std::memory_order_acq_rel);
    merged_epoch_.store(merger_.merged_epoch(), std::memory_order_release);
  }
  lock_notifier_.Notify();
}

void Scheduler::ReleaseHold(uint64_t epoch) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    merger_.ReleaseHold(epoch);
  }
  lock_notifier_.Notify();
}

void Scheduler::PublishLocked(const AdmitResult& r) {
  admitted_.fetch_add(r.admitted, std::memory_order_relaxed);
  blocked_at_admission_.fetch_add(r.blocked, std::memory_order_relaxed);
  active_sum_.fetch_add(r.active_sum, std::memory_order_relaxed);
  window_bound_.store(core_.window_bound(), std::memory_order_relaxed);
  const AdmissionController& a = core_.admission();
  window_.store(a.window(), std::memory_order_relaxed);
  window_grows_.store(a.grows(), std::memory_order_relaxed);
  window_shrinks_.store(a.shrinks(), std::memory_order_relaxed);
  window_shrinks_undone_.store(a.shrinks_undone(), std::memory_order_relaxed);
  window_grows_undone_.store(a.grows_undone(), std::memory_order_relaxed);
  window_steps_back_up_.store(a.steps_back_up(), std::memory_order_relaxed);
}

namespace {
uint64_t NowMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
}  // namespace

void Scheduler::LockThread() {
  ReadyList ready;
  std::vector<PartitionTxn*> done, to_workers;
  std::vector<std::shared_ptr<const void>> owners;  // dropped outside lm_mu_
  const bool by_workers = options_.release_on_workers;
  while (!stop_.load(std::memory_order_acquire)) {
    bool progress = false;
    {  // txns handed back: all of them, or with release_on_workers those
       // finished while this thread was awake or held lm_mu_
      std::lock_guard<std::mutex> l(done_mu_);
      done.swap(done_);
    }
    for (PartitionTxn* st : done) owners.push_back(std::move(st->owner));
    {
      std::lock_guard<std::mutex> l(lm_mu_);
      for (PartitionTxn* st : done) core_.Release(st, &ready);  // releases first: they unblock work
      // Admit in slices, so that workers releasing under lm_mu_ wait little.
      const RunnerState rs{.starved_total = starved_.load(std::memory_order_relaxed),
                           .parked = parked_now_.load(std::memory_order_relaxed),
                           .now_us = NowMicros()};
      const AdmitResult r = core_.Admit(by_workers ? 64 : 512, rs, &ready);
      PublishLocked(r);
      progress |= r.progress;
    }
    released_.fetch_add(done.size(), std::memory_order_release);
    progress |= !done.empty();
    done.clear();
    owners.clear();
    if (!ready.empty()) {
      for (LockTxn* lt : ready) to_workers.push_back(static_cast<PartitionTxn*>(lt->user));
      ready.clear();
      ready_q_.PushBatch(&to_workers);
      progress = true;
    }
    if (!progress) {
      lock_thread_awake_.store(false, std::memory_order_relaxed);
      lock_notifier_.Wait();
      lock_thread_awake_.store(true, std::memory_order_relaxed);
    }
  }
}

void Scheduler::WorkerThread() {
  std::vector<PartitionTxn*> items;
  ReadyList ready;
  std::vector<PartitionTxn*> to_queue;
  const bool by_workers = options_.release_on_workers;
  // Workers read the store's tables lock-free: each is an epoch participant
  // (docs/STORAGE.md, Reclamation), quiescent between txns (a parked txn's
  // reads point only at records it holds locked, which nobody erases),
  // offline while it sleeps, and frees what is safe every
  // kReclaimEveryTxns txns and before it sleeps.
  EpochParticipant epoch(&store_->epochs());
  // Intent locks (docs/STORAGE.md, "Intent locks"): taken per txn step
  // through this worker's agent (TxnExecutor::AcquireIntents), the step
  // ended with EndTxn where the worker turns quiescent, everything given
  // back before it sleeps (nobody waits for an idle worker).
  const std::unique_ptr<IntentAgent> intents = store_->intents().NewAgent();
  // The bytes of the procedures' buffered writes and undo copies: one
  // arena for all this worker's txns, so they stay in its core's cache
  // (TxnExecutor::Run).
  ByteArena values;
  uint32_t since_reclaim = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    items.clear();
    if (since_reclaim >= kReclaimEveryTxns) {  // here no txn (and no lock) waits for it
      since_reclaim = 0;
      store_->ReclaimSafe(&epoch);
    }
    const size_t batch = by_workers ? 4 : 8;
    if (ready_q_.TryPopBatch(batch, &items) == 0) {
      // No runnable txn: if the admission window is what holds txns back,
      // the lock thread should hear of it (the window may grow). Starving
      // for want of input (between epochs) says nothing about the window.
      // Only a full window counts: with room in it, the lock thread is just
      // asleep until a batch of slots is free (WorthResuming), and waking it
      // is the remedy, not a larger window.
      if (window_bound_.load(std::memory_order_relaxed)) {
        if (active_now_.load(std::memory_order_relaxed) >= window_.load(std::memory_order_relaxed))
          starved_.fetch_add(1, std::memory_order_relaxed);
        lock_notifier_.Notify();
      }
      store_->ReclaimSafe(&epoch);
      intents->ReleaseAll();
      epoch.Offline();
      const size_t popped = ready_q_.PopBatch(batch, &items);
      epoch.Online();
      if (popped == 0) continue;
    }
    // The batch's lookups, pipelined across its txns (docs/ENGINE.md,
    // "Prefetching"): the buckets of all of them now, the first records of
    // the next txn while this one runs. (A successor run next, inserted
    // below, gets its buckets hinted as its predecessor's release makes it
    // ready, and its ReadLocal hints its records.)
    for (PartitionTxn* st : items) exec_.PrefetchBuckets(st);
    if (!items.empty()) exec_.PrefetchRecords(items[0]);
    for (size_t i = 0; i < items.size(); ++i) {
      PartitionTxn* st = items[i];
      if (i + 1 < items.size() && !items[i + 1]->prefetched) exec_.PrefetchRecords(items[i + 1]);
      const bool finished = Process(st, intents.get(), &values);
      intents->EndTxn();
      epoch.Quiescent();
      ++since_reclaim;
      if (!finished) continue;  // parked
      std::unique_lock<std::mutex> lm_lock(lm_mu_, std::defer_lock);
      if (!by_workers || lock_thread_awake_.load(std::memory_order_relaxed) || !lm_lock.try_lock()) {
        // Hand the txn back to the lock thread: always, or when it is awake
        // anyway (then it releases the txn at no cost of a wake-up, and this
        // worker does not make it wait for lm_mu_), or busy. At once,
        // not per batch: under contention its successors wait for this
        // release, and the lock thread can grant them while this worker
        // runs the rest of its batch.
        {
          std::lock_guard<std::mutex> l(done_mu_);
          done_.push_back(st);
        }
        lock_notifier_.Notify();
        continue;
      }
      std::shared_ptr<const void> owner = std::move(st->owner);  // may free a batch: after unlocking
      core_.Release(st, &ready);
      // The same Poll as the lock thread's: with the lock thread asleep
      // because admission is blocked, this may be the idle pass (SCA) that
      // unblocks a txn.
      core_.Poll(&ready);
      const bool wake_lock_thread = core_.AdmissionWorthResuming();
      lm_lock.unlock();
      // The successor to run next (below): its buckets start loading now,
      // while this worker finishes the release (outside lm_mu_: ready is
      // this worker's).
      if (!ready.empty()) exec_.PrefetchBuckets(static_cast<PartitionTxn*>(ready[0]->user));
      released_.fetch_add(1, std::memory_order_release);
      owner.reset();
      if (wake_lock_thread) lock_notifier_.Notify();
      if (ready.empty()) continue;
      // Run the first txn that became ready here, next (its predecessor's
      // writes are in this core's cache); the others go to the queue.
      items.insert(items.begin() + static_cast<std::ptrdiff_t>(i) + 1, static_cast<PartitionTxn*>(ready[0]->user));
      for (size_t j = 1; j < ready.size(); ++j) to_queue.push_back(static_cast<PartitionTxn*>(ready[j]->user));
      ready.clear();
      ready_q_.PushBatch(&to_queue);
    }
  }
}

bool Scheduler::Process(PartitionTxn* st, IntentAgent* intents, ByteArena* values) {
  if (st->table_op) {  // admitted alone (PartitionCore)
    pb::TxnResult reply;
    exec_.RunTableOp(st, &reply, intents);
    committed_.fetch_add(1, std::memory_order_relaxed);
    if (st->coordinator) exec_.Reply(st, std::move(reply));
    return true;
  }
  exec_.AcquireIntents(st, intents);
  if (!st->resumed) {
    exec_.ReadLocal(st);
    // Counted before the reads leave: the executor may reply as soon as it
    // has them, and a client holding that reply must find this count.
    if (!st->executor) passive_.fetch_add(1, std::memory_order_relaxed);
    if (st->reader) exec_.SendReads(st);
    if (!st->executor) return true;  // passive participant: release as soon as reads are sent
    if (st->MissingRemoteReads()) {
      std::vector<pb::RemoteReads> spent;  // freed after remote_mu_ is released
      std::lock_guard<std::mutex> l(remote_mu_);
      if (!remote_.TakeEarlyOrPark(st, &spent)) {  // WAITING: the worker moves on
        parked_count_.fetch_add(1, std::memory_order_relaxed);
        parked_now_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    }
  }
  // Counted before the reply leaves: a client holding its reply must find
  // its txn in stats().
  pb::TxnResult reply;
  if (exec_.Run(st, &reply, intents, values)) {
    committed_.fetch_add(1, std::memory_order_relaxed);
  } else {
    aborted_.fetch_add(1, std::memory_order_relaxed);
  }
  if (st->coordinator) exec_.Reply(st, std::move(reply));
  return true;
}

void Scheduler::OnTaken(const PartitionTxn& st) {
  if (!st.executor || st.remote_expected == 0) return;
  std::lock_guard<std::mutex> l(remote_mu_);
  remote_.Expect(st, merged_epoch_.load(std::memory_order_acquire));
}

void Scheduler::OnRemoteReads(pb::RemoteReads msg) {
  const uint64_t clock_epoch = options_.clock_epoch ? options_.clock_epoch() : 0;
  PartitionTxn* resume = nullptr;
  RemoteReadsGuard::Verdict v;
  std::string why;
  {
    std::lock_guard<std::mutex> l(remote_mu_);
    // Kept by the guard until the txn is dispatched if it is not parked yet.
    resume = remote_.OnRemoteReads(std::move(msg), merged_epoch_.load(std::memory_order_acquire), clock_epoch, &v,
                                   &why);
    if (resume != nullptr) parked_now_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (v != RemoteReadsGuard::Verdict::kDeliver && v != RemoteReadsGuard::Verdict::kKept) {
    LOG_EVERY_N(WARNING, 1000) << "partition " << options_.partition << ": refusing remote reads ("
                               << RemoteReadsGuard::Name(v) << "): " << why;
  }
  if (resume != nullptr) ready_q_.Push(resume);
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.admitted = admitted_.load();
  s.blocked_at_admission = blocked_at_admission_.load();
  s.committed = committed_.load();
  s.aborted = aborted_.load();
  s.passive = passive_.load();
  s.parked = parked_count_.load();
  s.avg_active = s.admitted == 0 ? 0 : static_cast<double>(active_sum_.load()) / s.admitted;
  s.window = window_.load(std::memory_order_relaxed);
  s.window_grows = window_grows_.load(std::memory_order_relaxed);
  s.window_shrinks = window_shrinks_.load(std::memory_order_relaxed);
  s.window_shrinks_undone = window_shrinks_undone_.load(std::memory_order_relaxed);
  s.window_grows_undone = window_grows_undone_.load(std::memory_order_relaxed);
  s.window_steps_back_up = window_steps_back_up_.load(std::memory_order_relaxed);
  s.starved = starved_.load(std::memory_order_relaxed);
  s.active_now = active_now_.load(std::memory_order_relaxed);
  s.ready_queue = ready_q_.size();
  s.parked_now = parked_now_.load(std::memory_order_relaxed);
  s.duplicate_sub_batches = duplicate_sub_batches_.load(std::memory_order_relaxed);
  s.lock_thread_cpu_ns = lock_cpu_.Read();
  for (const ThreadCpuSlot& w : worker_cpu_) s.workers_cpu_ns += w.Read();
  {
    std::lock_guard<std::mutex> l(in_mu_);
    s.pending_sub_batches = merger_.pending();
  }
  std::lock_guard<std::mutex> l(remote_mu_);
  s.remote_reads = remote_.stats();
  return s;
}

}  // namespace detdb
