#include "scheduler/scheduler.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/thread_name.h"
#include "glog/logging.h"

namespace detdb {

std::vector<PartitionId> ParticipantsOf(const pb::Txn& txn) {
  std::vector<PartitionId> out(txn.readers().begin(), txn.readers().end());
  out.insert(out.end(), txn.writers().begin(), txn.writers().end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty()) out.push_back(0);
  return out;
}

std::vector<PartitionId> ExecutorsOf(const pb::Txn& txn) {
  if (txn.writers_size() > 0) return {txn.writers().begin(), txn.writers().end()};
  if (txn.readers_size() > 0) return {txn.readers(0)};
  return {0};
}

namespace {
template <typename C>
bool Has(const C& c, PartitionId p) {
  return std::find(c.begin(), c.end(), p) != c.end();
}
}  // namespace

// Everything one partition knows about one admitted txn. Pooled by the lock
// thread; between dispatch and done it belongs to one worker at a time (or
// to the parked map).
struct Scheduler::TxnState {
  // A read: local ones point into the store (the txn's lock keeps the record
  // in place and unchanged until release; its own writes are buffered),
  // remote ones own their bytes.
  struct Value {
    Key key;
    bool found;
    const char* data;  // local: the record's value; nullptr for a remote read
    uint32_t size;
    std::string bytes;  // remote reads only
    std::string_view view() const { return data != nullptr ? std::string_view(data, size) : std::string_view(bytes); }
  };
  LockTxn lt;
  const pb::Txn* txn = nullptr;
  std::shared_ptr<const void> owner;  // keeps *txn alive until the txn is released
  std::vector<Key> local_reads, local_writes;
  std::vector<PartitionId> executors;  // ExecutorsOf(*txn)
  bool reader = false, executor = false, coordinator = false, resumed = false;
  uint32_t remote_expected = 0, remote_received = 0;
  std::vector<Value> reads;                            // local, then remote
  struct BufferedWrite {
    Key key;
    char* value;  // value_size bytes in `arena`
    uint32_t size;
    bool erase;   // a Delete
  };
  std::vector<BufferedWrite> writes;                   // buffered by the procedure
  ByteArena arena;                                     // the buffered values
  // Large txns only (see kIndexAbove): reads sorted by key, declared write
  // keys sorted, and buffered writes by key, so Read/Write stay O(log n).
  bool indexed = false;
  std::vector<Key> declared_writes;
  absl::flat_hash_map<Key, uint32_t> write_index;
};

namespace {
// Txns with more keys than this get indexed reads and writes; smaller ones
// use linear scans, which are faster at that size.
constexpr size_t kIndexAbove = 16;
}  // namespace

char* Scheduler::ByteArena::Allocate(size_t n) {
  n = (n + 7) & ~size_t{7};
  if (n > kBlock) {  // a large value: a block of its own
    large_.push_back(std::make_unique<char[]>(n));
    return large_.back().get();
  }
  if (blocks_.empty()) {
    blocks_.push_back(std::make_unique<char[]>(kBlock));
    current_ = used_ = 0;
  } else if (used_ + n > kBlock) {
    if (++current_ == blocks_.size()) blocks_.push_back(std::make_unique<char[]>(kBlock));
    used_ = 0;
  }
  char* p = blocks_[current_].get() + used_;
  used_ += n;
  return p;
}

void Scheduler::ByteArena::Reset() {
  current_ = used_ = 0;
  if (blocks_.size() > 4) blocks_.resize(4);  // keep a few blocks for the next txn
  large_.clear();
}

// The TxnContext a procedure runs against at this partition.
class Scheduler::ExecContext final : public TxnContext {
 public:
  ExecContext(TxnState* st, PartitionStore* store, KeyCover cover, const Partitioner* partitioner, PartitionId self)
      : st_(st), store_(store), cover_(cover), partitioner_(partitioner), self_(self) {}
  const pb::Txn& txn() const override { return *st_->txn; }

  absl::StatusOr<std::string_view> Read(Key key) override {
    if (const TxnState::Value* v = FindRead(key)) {
      if (!v->found) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      return v->view();
    }
    if (Covered(key, /*for_write=*/false)) {
      if (const BufferedWrite* w = FindWrite(key)) {
        if (w->erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
        return std::string_view(w->value, w->size);
      }
      if (partitioner_->PartitionOf(key) != self_)
        return absl::FailedPreconditionError(absl::StrCat("covered key ", key, " is not on this partition"));
      const Record* r = store_->Get(key);
      if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      return std::string_view(r->value(), store_->GetTable(KeyTable(key))->value_size());
    }
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
  }

  absl::Status Write(Key key, std::string_view value) override {
    absl::Status s = CheckWrite(key);
    if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, &value);
    if (!s.ok()) return s;
    store_->Prefetch(key);  // its bucket, for applying the write after the procedure
    BufferedWrite& w = Buffer(key);
    if (w.value == nullptr || w.size != value.size()) {
      w.value = st_->arena.Allocate(value.size());
      w.size = static_cast<uint32_t>(value.size());
    }
    std::memmove(w.value, value.data(), value.size());  // value may be a view of w.value
    w.erase = false;
    return absl::OkStatus();
  }

  absl::Status Delete(Key key) override {
    absl::Status s = CheckWrite(key);
    if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, nullptr);
    if (!s.ok()) return s;
    BufferedWrite& w = Buffer(key);
    w.erase = true;
    return absl::OkStatus();
  }

  void Prefetch(std::span<const Key> keys) override {
    for (Key k : keys) store_->Prefetch(k);        // every bucket at once,
    for (Key k : keys) store_->PrefetchRecord(k);  // then every first record
  }

  absl::StatusOr<std::string_view> ReadReplicated(Key key) override {
    const Record* r = store_->Get(key);
    if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    return std::string_view(r->value(), store_->GetTable(KeyTable(key))->value_size());
  }

 private:
  using BufferedWrite = TxnState::BufferedWrite;

  const TxnState::Value* FindRead(Key key) const {
    if (st_->indexed) {
      auto it = std::lower_bound(st_->reads.begin(), st_->reads.end(), key,
                                 [](const TxnState::Value& a, Key k) { return a.key < k; });
      return it != st_->reads.end() && it->key == key ? &*it : nullptr;
    }
    for (const TxnState::Value& x : st_->reads)
      if (x.key == key) return &x;
    return nullptr;
  }
  bool DeclaredWrite(Key key) const {
    const auto& ws = st_->txn->write_set();
    return st_->indexed ? std::binary_search(st_->declared_writes.begin(), st_->declared_writes.end(), key)
                        : std::find(ws.begin(), ws.end(), key) != ws.end();
  }
  // Whether key is covered by a key the txn locked (for reading: in the read
  // or write set; for writing: in the write set).
  bool Covered(Key key, bool for_write) const {
    if (cover_ == nullptr) return false;
    const Key c = cover_(key);
    if (c == key) return false;
    return DeclaredWrite(c) || (!for_write && FindRead(c) != nullptr);
  }
  absl::Status CheckWrite(Key key) const {
    if (DeclaredWrite(key) || Covered(key, /*for_write=*/true)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's write set"));
  }
  BufferedWrite* FindWrite(Key key) {
    if (st_->indexed) {
      auto it = st_->write_index.find(key);
      return it == st_->write_index.end() ? nullptr : &st_->writes[it->second];
    }
    for (BufferedWrite& w : st_->writes)
      if (w.key == key) return &w;
    return nullptr;
  }
  BufferedWrite& Buffer(Key key) {
    if (BufferedWrite* w = FindWrite(key)) return *w;
    if (st_->indexed) st_->write_index.emplace(key, static_cast<uint32_t>(st_->writes.size()));
    st_->writes.push_back(BufferedWrite{key, nullptr, 0, false});
    return st_->writes.back();
  }

  TxnState* const st_;
  PartitionStore* const store_;
  const KeyCover cover_;
  const Partitioner* const partitioner_;
  const PartitionId self_;
};

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
  return std::unique_ptr<Scheduler>(new Scheduler(options, store, partitioner, procedures, transport,
                                                  replies, std::move(*lm)));
}

Scheduler::Scheduler(const SchedulerOptions& options, PartitionStore* store, const Partitioner* partitioner,
                     const ProcedureRegistry* procedures, Transport* transport, ReplySink* replies,
                     std::unique_ptr<LockManager> lm)
    : options_(options),
      store_(store),
      partitioner_(partitioner),
      procedures_(procedures),
      transport_(transport),
      replies_(replies),
      lm_(std::move(lm)),
      admission_({.workers = options.workers,
                  .max_active = options.lock.max_active,
                  .adaptive = options.adaptive_admission}),
      next_(options.first_epoch, 0),
      guard_({.self = options.partition,
              .partitioner = partitioner,
              .value_size = [store](Key k) -> uint32_t {
                const Table* t = store->GetTable(KeyTable(k));
                return t == nullptr ? 0 : t->value_size();
              },
              .epoch_in_id = options.epoch_in_id,
              .window_epochs = options.window_epochs,
              .max_held_bytes = options.max_held_reads_bytes}),
      merged_epoch_(options.first_epoch) {
  transport_->RegisterReceiver(options_.partition, this);
  window_.store(admission_.window(), std::memory_order_relaxed);
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  CHECK(!lock_thread_.joinable()) << "scheduler started twice";
  const std::string p = std::to_string(options_.partition);
  lock_thread_ = std::thread([this, p] {
    SetThreadName("detdb-lock-" + p);
    LockThread();
  });
  for (uint32_t i = 0; i < options_.workers; ++i)
    workers_.emplace_back([this, p] {
      SetThreadName("detdb-work-" + p);
      WorkerThread();
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

bool Scheduler::IsQuiescent() const { return active_ == 0 && lm_->IsQuiescent(); }

void Scheduler::Enqueue(SubBatchRef sub_batch) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    const auto key = std::make_pair(sub_batch.epoch, sub_batch.sequencer_id);
    if (key < next_ || pending_.contains(key)) {  // resent: normal once nodes rejoin
      duplicate_sub_batches_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    enqueued_.fetch_add(sub_batch.txns.size(), std::memory_order_release);
    pending_.emplace(key, std::move(sub_batch));
  }
  lock_notifier_.Notify();
}

bool Scheduler::InputAvailable() {
  if (lookahead_ != nullptr || cursor_ < current_.txns.size()) return true;
  std::lock_guard<std::mutex> l(in_mu_);
  if (next_.second == 0 && next_.first >= hold_epoch_) return false;
  auto it = pending_.find(next_);
  return it != pending_.end() && !it->second.txns.empty();
}

// The next txn in merge order, or nullptr if its sub-batch has not arrived.
// The txn stays valid while current_.owner (copied into its TxnState) lives.
const pb::Txn* Scheduler::NextInput() {
  while (cursor_ == current_.txns.size()) {
    std::lock_guard<std::mutex> l(in_mu_);
    if (next_.second == 0 && next_.first >= hold_epoch_) return nullptr;  // held at an epoch boundary
    auto it = pending_.find(next_);
    if (it == pending_.end()) return nullptr;  // wait for it: never skip
    current_ = std::move(it->second);
    pending_.erase(it);
    cursor_ = 0;
    merged_txns_.fetch_add(current_.txns.size(), std::memory_order_release);
    if (++next_.second == options_.num_sequencers) {
      next_ = {next_.first + 1, 0};
      merged_epoch_.store(next_.first, std::memory_order_release);
    }
  }
  return current_.txns[cursor_++];
}

bool Scheduler::HoldAt(uint64_t epoch) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    if (next_ > std::make_pair(epoch, 0u)) return false;  // already merging epoch or later
    hold_epoch_ = epoch;
  }
  return true;
}

void Scheduler::ReleaseHold() {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    hold_epoch_ = UINT64_MAX;
  }
  lock_notifier_.Notify();
}

Scheduler::TxnState* Scheduler::NewState(const pb::Txn* txn) {
  TxnState* st;
  if (free_states_.empty()) {
    all_states_.push_back(std::make_unique<TxnState>());
    st = all_states_.back().get();
  } else {
    st = free_states_.back();
    free_states_.pop_back();
  }
  const PartitionId self = options_.partition;
  st->txn = txn;
  st->owner = current_.owner;
  st->local_reads.clear();
  st->local_writes.clear();
  for (Key k : txn->read_set())
    if (partitioner_->PartitionOf(k) == self) st->local_reads.push_back(k);
  for (Key k : txn->write_set())
    if (partitioner_->PartitionOf(k) == self) st->local_writes.push_back(k);
  st->executors = ExecutorsOf(*txn);
  st->reader = !st->local_reads.empty();
  st->executor = Has(st->executors, self);
  st->coordinator = st->executors[0] == self;
  st->resumed = false;
  st->remote_expected = 0;
  if (st->executor)
    for (PartitionId r : txn->readers()) st->remote_expected += r != self;
  if (st->remote_expected > 0) {  // from now on its reads are checked against it
    std::lock_guard<std::mutex> l(remote_mu_);
    guard_.Expect(*txn, merged_epoch_.load(std::memory_order_acquire));
  }
  st->remote_received = 0;
  st->reads.clear();
  st->writes.clear();
  st->arena.Reset();
  st->indexed = false;
  st->lt.id = txn->id();
  st->lt.reads = st->local_reads;
  st->lt.writes = st->local_writes;
  st->lt.user = st;
  return st;
}

void Scheduler::FreeState(TxnState* st) {
  st->txn = nullptr;
  DCHECK(st->owner == nullptr) << "the owner is dropped outside lm_mu_";
  free_states_.push_back(st);
}

void Scheduler::ReleaseLocked(TxnState* st, ReadyList* ready) {
  lm_->Release(&st->lt, ready);
  FreeState(st);
  --active_;
  active_now_.store(active_, std::memory_order_relaxed);
}

void Scheduler::AdjustAdmissionLocked(AdmissionSignals* sig) {
  const uint64_t starved = starved_.load(std::memory_order_relaxed);
  sig->starved = starved - starved_seen_;
  starved_seen_ = starved;
  admission_.Adjust(*sig);
  admission_blocked_ = !lm_->CanAdmit() || !admission_.MayAdmit(active_);
  window_bound_.store(sig->window_bound && !admission_.MayAdmit(active_), std::memory_order_relaxed);
  window_.store(admission_.window(), std::memory_order_relaxed);
  window_grows_.store(admission_.grows(), std::memory_order_relaxed);
  window_shrinks_.store(admission_.shrinks(), std::memory_order_relaxed);
}

void Scheduler::LockThread() {
  ReadyList ready;
  std::vector<TxnState*> done, to_workers;
  std::vector<std::shared_ptr<const void>> owners;  // dropped outside lm_mu_
  const bool by_workers = options_.release_on_workers;
  while (!stop_.load(std::memory_order_acquire)) {
    bool progress = false;
    {  // txns handed back: all of them, or with release_on_workers those
       // finished while this thread was awake or held lm_mu_
      std::lock_guard<std::mutex> l(done_mu_);
      done.swap(done_);
    }
    for (TxnState* st : done) owners.push_back(std::move(st->owner));
    {
      std::lock_guard<std::mutex> l(lm_mu_);
      for (TxnState* st : done) ReleaseLocked(st, &ready);  // releases first: they unblock work
      // Admit in slices, so that workers releasing under lm_mu_ wait little.
      const int slice = by_workers ? 64 : 512;
      AdmissionSignals sig;
      for (int n = 0; n < slice && lm_->CanAdmit() && admission_.MayAdmit(active_); ++n) {
        TxnState* st = lookahead_;
        lookahead_ = nullptr;
        if (st == nullptr) {
          const pb::Txn* txn = NextInput();
          input_idle_ = txn == nullptr;
          if (input_idle_) break;
          st = NewState(txn);
        }
        input_idle_ = false;
        // Take the txn after it too, and let the lock manager start loading
        // its lock state (LockManager::Prefetch) while this one locks.
        if (const pb::Txn* next = NextInput(); next != nullptr) {
          lookahead_ = NewState(next);
          lm_->Prefetch(lookahead_->lt);
        }
        ++active_;
        active_now_.store(active_, std::memory_order_relaxed);
        const bool granted = lm_->Lock(&st->lt, &ready);
        admitted_.fetch_add(1, std::memory_order_relaxed);
        active_sum_.fetch_add(active_, std::memory_order_relaxed);
        ++sig.admitted;
        if (!granted) {
          blocked_at_admission_.fetch_add(1, std::memory_order_relaxed);
          ++sig.blocked;
        }
        progress = true;
      }
      if (lm_->CanAdmit() && !admission_.MayAdmit(active_)) {
        // The window stopped admission, if there is input to admit: look
        // without taking it (input_idle_ is stale once the window binds).
        input_idle_ = !InputAvailable();
        sig.window_bound = !input_idle_;
      }
      AdjustAdmissionLocked(&sig);
      if (sig.window_bound && admission_.MayAdmit(active_)) progress = true;  // it grew: admit at once
      lm_->Poll(input_idle_ || admission_blocked_, &ready);
    }
    released_.fetch_add(done.size(), std::memory_order_release);
    progress |= !done.empty();
    done.clear();
    owners.clear();
    if (!ready.empty()) {
      for (LockTxn* lt : ready) to_workers.push_back(static_cast<TxnState*>(lt->user));
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
  std::vector<TxnState*> items;
  ReadyList ready;
  std::vector<TxnState*> to_queue;
  const bool by_workers = options_.release_on_workers;
  while (!stop_.load(std::memory_order_acquire)) {
    items.clear();
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
      if (ready_q_.PopBatch(batch, &items) == 0) continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      TxnState* st = items[i];
      if (!Process(st)) continue;  // parked
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
      ReleaseLocked(st, &ready);
      // The same Poll as the lock thread's: with the lock thread asleep
      // because admission is blocked, this may be the idle pass (SCA) that
      // unblocks a txn.
      lm_->Poll(input_idle_ || admission_blocked_, &ready);
      const bool wake_lock_thread = admission_blocked_ && lm_->CanAdmit() && admission_.WorthResuming(active_);
      lm_lock.unlock();
      released_.fetch_add(1, std::memory_order_release);
      owner.reset();
      if (wake_lock_thread) lock_notifier_.Notify();
      if (ready.empty()) continue;
      // Run the first txn that became ready here, next (its predecessor's
      // writes are in this core's cache); the others go to the queue.
      items.insert(items.begin() + static_cast<std::ptrdiff_t>(i) + 1, static_cast<TxnState*>(ready[0]->user));
      for (size_t j = 1; j < ready.size(); ++j) to_queue.push_back(static_cast<TxnState*>(ready[j]->user));
      ready.clear();
      ready_q_.PushBatch(&to_queue);
    }
  }
}

bool Scheduler::Process(TxnState* st) {
  if (!st->resumed) {
    ReadLocal(st);
    if (st->reader) SendReads(st);
    if (!st->executor) {  // passive participant: release as soon as reads are sent
      passive_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (st->remote_received < st->remote_expected) {
      std::lock_guard<std::mutex> l(remote_mu_);
      std::vector<pb::RemoteReads> arrived;  // checked reads that came before the txn was dispatched
      guard_.Take(st->txn->id(), &arrived);
      for (pb::RemoteReads& msg : arrived) AddRemote(st, &msg);
      if (st->remote_received < st->remote_expected) {
        parked_.emplace(st->txn->id(), st);  // WAITING: the worker moves on
        parked_count_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    }
  }
  Execute(st);
  return true;
}

void Scheduler::ReadLocal(TxnState* st) {
  // Overlap the cache misses of all keys: buckets first, then records.
  for (Key k : st->local_reads) store_->Prefetch(k);
  for (Key k : st->local_reads) store_->PrefetchRecord(k);
  for (Key k : st->local_reads) {
    const Record* r = store_->Get(k);
    if (r == nullptr) {
      st->reads.push_back({k, false, nullptr, 0, std::string()});
    } else {
      const Table* t = store_->GetTable(KeyTable(k));
      // The procedure will read the value: start loading all its lines now.
      for (uint32_t off = 0; off < t->value_size(); off += 64) __builtin_prefetch(r->value() + off, 0);
      st->reads.push_back({k, true, r->value(), t->value_size(), std::string()});
    }
  }
}

void Scheduler::SendReads(TxnState* st) {
  const size_t n_local = st->reads.size();
  for (PartitionId to : st->executors) {
    if (to == options_.partition) continue;
    pb::RemoteReads msg;
    msg.set_txn_id(st->txn->id());
    msg.set_from_partition(options_.partition);
    for (size_t i = 0; i < n_local; ++i) {
      pb::KeyValue* kv = msg.add_reads();
      kv->set_key(st->reads[i].key);
      kv->set_found(st->reads[i].found);
      const std::string_view v = st->reads[i].view();
      kv->set_value(v.data(), v.size());
    }
    transport_->Send(to, std::move(msg));
  }
}

void Scheduler::AddRemote(TxnState* st, pb::RemoteReads* msg) {
  for (pb::KeyValue& kv : *msg->mutable_reads())
    st->reads.push_back({kv.key(), kv.found(), nullptr, 0, std::move(*kv.mutable_value())});
  ++st->remote_received;
}

void Scheduler::OnRemoteReads(pb::RemoteReads msg) {
  TxnState* resume = nullptr;
  {
    std::lock_guard<std::mutex> l(remote_mu_);
    std::string why;
    const RemoteReadsGuard::Verdict v = guard_.OnReads(&msg, merged_epoch_.load(std::memory_order_acquire), &why);
    if (v == RemoteReadsGuard::Verdict::kKept) return;  // the guard keeps it for its txn
    if (v != RemoteReadsGuard::Verdict::kDeliver) {     // refused and counted; the reader's real reads still count
      LOG_EVERY_N(WARNING, 1000) << "partition " << options_.partition << ": refusing remote reads ("
                                 << RemoteReadsGuard::Name(v) << "): " << why;
      return;
    }
    auto it = parked_.find(msg.txn_id());
    CHECK(it != parked_.end()) << "txn " << msg.txn_id() << " taken by a worker but not parked";
    TxnState* st = it->second;
    AddRemote(st, &msg);
    if (st->remote_received == st->remote_expected) {
      parked_.erase(it);
      st->resumed = true;
      resume = st;
    }
  }
  if (resume != nullptr) ready_q_.Push(resume);
}

void Scheduler::Execute(TxnState* st) {
  const pb::Txn& txn = *st->txn;
  std::string result;
  absl::Status s;
  Procedure proc = procedures_->Find(txn.type());
  if (proc == nullptr) {
    s = absl::InvalidArgumentError(absl::StrCat("unknown txn type ", txn.type()));
  } else {
    if (st->reads.size() > kIndexAbove || static_cast<size_t>(txn.write_set_size()) > kIndexAbove) {
      st->indexed = true;
      std::sort(st->reads.begin(), st->reads.end(),
                [](const TxnState::Value& a, const TxnState::Value& b) { return a.key < b.key; });
      st->declared_writes.assign(txn.write_set().begin(), txn.write_set().end());
      std::sort(st->declared_writes.begin(), st->declared_writes.end());
      st->write_index.clear();
    }
    ExecContext ctx(st, store_, procedures_->key_cover(), partitioner_, options_.partition);
    s = proc(&ctx, &result);
  }
  if (s.ok()) {
    // Apply the local writes (Write() prefetched their buckets; prefetching
    // their first records here as well measured no better).
    for (const auto& w : st->writes) {
      if (partitioner_->PartitionOf(w.key) != options_.partition) continue;
      if (w.erase) {
        store_->Erase(w.key);
        continue;
      }
      Record* r = store_->Insert(w.key);  // the existing record, or a new one
      CHECK(r != nullptr) << "insert of key " << w.key << " failed";
      std::memcpy(r->value(), w.value, w.size);
    }
    committed_.fetch_add(1, std::memory_order_relaxed);
  } else {
    aborted_.fetch_add(1, std::memory_order_relaxed);
  }
  if (st->coordinator) {
    pb::TxnResult r;
    r.set_txn_id(txn.id());
    r.set_client_id(txn.client_id());
    r.set_client_seq(txn.client_seq());
    if (s.ok()) {
      r.set_status(pb::STATUS_OK);
      r.set_result(std::move(result));
    } else {
      r.set_status(pb::STATUS_ABORTED);
      r.set_error(std::string(s.message()));
    }
    replies_->OnTxnResult(txn, std::move(r));
  }
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
  s.starved = starved_.load(std::memory_order_relaxed);
  s.duplicate_sub_batches = duplicate_sub_batches_.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> l(in_mu_);
    s.pending_sub_batches = pending_.size();
  }
  std::lock_guard<std::mutex> l(remote_mu_);
  s.remote_reads = guard_.stats();
  return s;
}

}  // namespace detdb
