#include "scheduler/partition_txn.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
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

namespace {
template <typename C>
void AssignExecutors(const pb::Txn& txn, C* out) {
  if (txn.writers_size() > 0) {
    out->assign(txn.writers().begin(), txn.writers().end());
  } else {
    out->assign(1, txn.readers_size() > 0 ? txn.readers(0) : PartitionId{0});
  }
}
}  // namespace

std::vector<PartitionId> ExecutorsOf(const pb::Txn& txn) {
  std::vector<PartitionId> out;
  AssignExecutors(txn, &out);
  return out;
}

namespace {
template <typename C>
bool Has(const C& c, PartitionId p) {
  return std::find(c.begin(), c.end(), p) != c.end();
}

// Txns with more keys than this get indexed reads and writes; smaller ones
// use linear scans, which are faster at that size (at 16, New-Orders of 13+
// lines paid 2.6% of a txn's instructions for the index: docs/ENGINE.md).
constexpr size_t kIndexAbove = 32;
}  // namespace

char* ByteArena::AllocateOnHeap(size_t n) {
  if (n > kBlock) {  // a large value: a block of its own
    large_.push_back(std::make_unique_for_overwrite<char[]>(n));
    return large_.back().get();
  }
  // The block in use has too little room left (the rest stays unused until
  // Reset), or none is in use yet: the next one.
  if (cur_ != nullptr) ++current_;
  if (current_ == blocks_.size()) blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlock));
  cur_ = blocks_[current_].get();
  end_ = cur_ + kBlock;
  char* p = cur_;
  cur_ += n;
  return p;
}

void ByteArena::Reset() {
  if (staged_ != nullptr) return;  // freed in bulk
  current_ = 0;
  cur_ = end_ = nullptr;
  if (blocks_.size() > 4) blocks_.resize(4);  // keep a few blocks for the next txn
  large_.clear();
}

namespace {
constexpr uint32_t kPartitionLock = IntentLockTable::kPartitionLock;

// IS on the partition and on key's table, for a read the step's
// AcquireIntents did not cover (a covered or replicated key).
void IntentToRead(IntentAgent* agent, Key key) {
  agent->Acquire(kPartitionLock, IntentMode::kIS);
  agent->Acquire(IntentLockTable::TableLock(KeyTable(key)), IntentMode::kIS);
}

// A set of table ids (KeyTable: < 256) as a bitmap.
struct TableSet {
  uint64_t bits[4] = {0, 0, 0, 0};
  void Add(Key k) {
    const uint32_t t = KeyTable(k);
    bits[t >> 6] |= uint64_t{1} << (t & 63);
  }
  bool Has(uint32_t t) const { return (bits[t >> 6] >> (t & 63)) & 1; }
  bool Empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  // f(table) for every member, in increasing id.
  template <typename F>
  void ForEach(F f) const {
    for (uint32_t w = 0; w < 4; ++w)
      for (uint64_t b = bits[w]; b != 0; b &= b - 1) f(w * 64 + static_cast<uint32_t>(__builtin_ctzll(b)));
  }
};
}  // namespace

// The TxnContext a procedure runs against at this partition.
class TxnExecutor::ExecContext final : public TxnContext {
 public:
  ExecContext(PartitionTxn* st, PartitionStore* store, KeyCover cover, RangeCover range_cover,
              const Partitioner* partitioner, PartitionId self, IntentAgent* agent)
      : st_(st),
        store_(store),
        cover_(cover),
        range_cover_(range_cover),
        partitioner_(partitioner),
        self_(self),
        agent_(agent) {}
  const pb::Txn& txn() const override { return *st_->txn; }

  absl::StatusOr<std::string_view> Read(Key key) override {
    if (const PartitionTxn::Value* v = FindRead(key)) {
      if (!v->found) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      MutableRead(v)->viewed = true;
      return v->view();
    }
    if (Covered(key, /*for_write=*/false)) {
      if (const BufferedWrite* w = FindWrite(key)) {
        if (w->erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
        return std::string_view(w->value, w->size);
      }
      if (partitioner_->PartitionOf(key) != self_)
        return absl::FailedPreconditionError(absl::StrCat("covered key ", key, " is not on this partition"));
      IntentToRead(agent_, key);
      const Record* r = store_->Get(key);
      if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      return std::string_view(r->value(), store_->GetTable(KeyTable(key))->value_size());
    }
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
  }

  absl::Status Write(Key key, std::string_view value) override {
    absl::Status s = CheckWrite(key);
    if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
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
    if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
    if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, nullptr);
    if (!s.ok()) return s;
    BufferedWrite& w = Buffer(key);
    w.erase = true;
    return absl::OkStatus();
  }

  absl::StatusOr<absl::Span<char>> Update(Key key) override {
    // Read's checks first, then Write's, as a Read and a Write would fail.
    const PartitionTxn::Value* v = FindRead(key);
    if (v == nullptr && !Covered(key, /*for_write=*/false))
      return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
    if (BufferedWrite* w = FindWrite(key)) {  // written before: go on from there
      if (scan_depth_ > 0) return WriteInScan();
      if (w->erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      return absl::Span<char>(w->value, w->size);
    }
    // The txn's view of the key, as Read sees it, and its record if local.
    std::string_view value;
    Record* record = nullptr;
    if (v != nullptr) {
      if (!v->found) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      value = v->view();
      record = v->record;
    } else {  // a covered key
      absl::StatusOr<std::string_view> r = Read(key);
      if (!r.ok()) return r.status();
      value = *r;
      // Read found it in this partition's store; the cover's lock keeps the
      // record in place until release.
      record = store_->Get(key);
    }
    // CheckWrite, declared keys first (an Update's usually are).
    const bool declared = DeclaredWrite(key);
    absl::Status s = declared ? absl::OkStatus() : CheckWrite(key);
    if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
    if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, &value);
    if (!s.ok()) return s;
    if (record == nullptr) store_->Prefetch(key);  // its bucket, for the apply (as Write)
    BufferedWrite& w = NewWrite(key);
    w.size = static_cast<uint32_t>(value.size());
    w.record = record;
    // Not if the procedure holds a view of the stored value (Read's, or
    // ReadReplicated's: the engine does not know which tables no txn
    // writes). A Scan's views need no such care: it visits covered keys
    // only, and a covered key is never declared (Engine::Validate; the
    // DCHECK in Scan).
    if (declared && v != nullptr && record != nullptr && !v->viewed && (replicated_views_ & WriteBit(key)) == 0) {
      // In place (see PartitionTxn::BufferedWrite): the stored value moves
      // to a copy, which the txn's read of the key now views (Read of a
      // declared key sees the stored value) and Rollback puts back.
      char* undo = st_->arena.Allocate(value.size());
      std::memcpy(undo, value.data(), value.size());
      MutableRead(v)->data = undo;
      w.value = record->value();
    } else {
      w.value = st_->arena.Allocate(value.size());
      std::memcpy(w.value, value.data(), value.size());
    }
    return absl::Span<char>(w.value, w.size);
  }

  // Puts back the stored values that in-place Updates changed (the
  // procedure failed: none of its writes may be applied). Procedures do
  // not throw: an exception out of one ends the process (nothing on the
  // worker's path catches it), so there is no unwinding to roll back on.
  void Rollback() {
    for (const BufferedWrite& w : st_->writes) {
      if (!w.in_place()) continue;
      const PartitionTxn::Value* v = FindRead(w.key);
      DCHECK(v != nullptr && v->record == w.record) << "an in-place write of key " << w.key << " has no read";
      std::memcpy(w.record->value(), v->data, w.size);
    }
  }

  void Prefetch(std::span<const Key> keys) override {
    for (Key k : keys) store_->Prefetch(k);        // every bucket at once,
    for (Key k : keys) store_->PrefetchRecord(k);  // then every first record
  }

  absl::StatusOr<std::string_view> ReadReplicated(Key key) override {
    replicated_views_ |= WriteBit(key);  // no in-place Update of it (BufferedWrite::in_place)
    IntentToRead(agent_, key);
    const Record* r = store_->Get(key);
    if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    return std::string_view(r->value(), store_->GetTable(KeyTable(key))->value_size());
  }

  absl::Status Scan(Key lo, Key hi, bool reverse,
                    absl::FunctionRef<bool(Key key, std::string_view value)> visit) override {
    const Table* table = store_->GetTable(KeyTable(lo));
    Key cover;
    absl::Status s = CheckScanRange(range_cover_, table, lo, hi, &cover);
    if (!s.ok()) return s;
    if (!DeclaredWrite(cover) && FindRead(cover) == nullptr)
      return absl::InvalidArgumentError(
          absl::StrCat("scan of [", lo, ", ", hi, "]: its cover ", cover, " is not in the txn's read or write set"));
    // Covered keys live on their cover's partition; another executor of a
    // multi-partition txn has no copy (see Read).
    if (partitioner_->PartitionOf(lo) != self_)
      return absl::FailedPreconditionError(absl::StrCat("scanned range [", lo, ", ", hi, "] is not on this partition"));
    IntentToRead(agent_, lo);  // IS on the partition and the table, as a covered read takes
    std::vector<OwnWrite> own;
    for (const BufferedWrite& w : st_->writes)
      if (w.key >= lo && w.key <= hi) own.push_back(OwnWrite{w.key, std::string_view(w.value, w.size), w.erase});
    ++scan_depth_;  // a depth: a visit may scan again
    // Every visited key is covered by `cover` (the RangeCover's promise), so none is
    // declared or updated in place (see Update). Checked in debug builds only.
    if (DCHECK_IS_ON()) {
      auto checked = [&](Key k, std::string_view value) {
        CHECK(cover_ != nullptr && cover_(k) == cover && k != cover)
            << "scan of [" << lo << ", " << hi << "] visits key " << k << ", which its cover " << cover
            << " does not cover (the workload's RangeCover and KeyCover disagree)";
        return visit(k, value);
      };
      ScanWithOwnWrites(*table, lo, hi, reverse, &own, checked);
    } else {
      ScanWithOwnWrites(*table, lo, hi, reverse, &own, visit);
    }
    --scan_depth_;
    return absl::OkStatus();
  }

 private:
  using BufferedWrite = PartitionTxn::BufferedWrite;

  const PartitionTxn::Value* FindRead(Key key) const {
    if (st_->indexed) {
      auto it = std::lower_bound(st_->reads.begin(), st_->reads.end(), key,
                                 [](const PartitionTxn::Value& a, Key k) { return a.key < k; });
      return it != st_->reads.end() && it->key == key ? &*it : nullptr;
    }
    for (const PartitionTxn::Value& x : st_->reads)
      if (x.key == key) return &x;
    return nullptr;
  }
  // The txn's own read entry behind v (a pointer FindRead gave).
  PartitionTxn::Value* MutableRead(const PartitionTxn::Value* v) {
    return &st_->reads[static_cast<size_t>(v - st_->reads.data())];
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
    return DeclaredWriteCover(c) || (!for_write && FindRead(c) != nullptr);
  }
  // DeclaredWrite of a cover, remembering the last one found: a txn's
  // covered writes mostly share one cover (New-Order's order rows).
  bool DeclaredWriteCover(Key c) const {
    if (has_write_cover_ && c == write_cover_) return true;
    if (!DeclaredWrite(c)) return false;
    has_write_cover_ = true;
    write_cover_ = c;
    return true;
  }
  absl::Status CheckWrite(Key key) const {
    // The cover first: covered keys are rarely declared themselves.
    if (Covered(key, /*for_write=*/true) || DeclaredWrite(key)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's write set"));
  }
  static uint64_t WriteBit(Key key) { return uint64_t{1} << ((key * 0x9E3779B97F4A7C15ull) >> 58); }
  BufferedWrite* FindWrite(Key key) {
    if ((st_->write_filter & WriteBit(key)) == 0) return nullptr;
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
    return NewWrite(key);
  }
  // REQUIRES: FindWrite(key) == nullptr.
  BufferedWrite& NewWrite(Key key) {
    st_->write_filter |= WriteBit(key);
    if (st_->indexed) st_->write_index.emplace(key, static_cast<uint32_t>(st_->writes.size()));
    st_->writes.push_back(BufferedWrite{key, nullptr, 0, false, nullptr});
    return st_->writes.back();
  }

  PartitionTxn* const st_;
  PartitionStore* const store_;
  const KeyCover cover_;
  const RangeCover range_cover_;
  const Partitioner* const partitioner_;
  const PartitionId self_;
  IntentAgent* const agent_;
  mutable bool has_write_cover_ = false;
  mutable Key write_cover_ = 0;
  int scan_depth_ = 0;  // Scans whose visits run now (nested ones too): no Write or Delete
  uint64_t replicated_views_ = 0;  // WriteBit of every key ReadReplicated gave a view of
};

void TxnExecutor::Init(PartitionTxn* st, const pb::Txn* txn, std::shared_ptr<const void> owner) const {
  const PartitionId self = self_;
  st->txn = txn;
  st->owner = std::move(owner);
  st->local_reads.clear();
  st->local_writes.clear();
  if (st->staged != nullptr) {  // one allocation each (no regrowth on the arena)
    st->local_reads.reserve(txn->read_set_size());
    st->local_writes.reserve(txn->write_set_size());
    st->reads.reserve(txn->read_set_size());
    st->writes.reserve(txn->write_set_size());
  }
  for (Key k : txn->read_set())
    if (partitioner_->PartitionOf(k) == self) st->local_reads.push_back(k);
  for (Key k : txn->write_set())
    if (partitioner_->PartitionOf(k) == self) st->local_writes.push_back(k);
  AssignExecutors(*txn, &st->executors);
  st->reader = !st->local_reads.empty();
  st->executor = Has(st->executors, self);
  st->coordinator = st->executors[0] == self;
  st->resumed = false;
  st->remote_expected = 0;
  if (st->executor)
    for (PartitionId r : txn->readers()) st->remote_expected += r != self;
  st->remote_received = 0;
  st->reads.clear();
  st->writes.clear();
  st->arena.Reset();
  st->indexed = false;
  st->prefetched = false;
  st->buckets_hinted = false;
  st->write_filter = 0;
  st->table_op = txn->has_table_op();
  st->lt.id = txn->id();
  st->lt.reads = st->local_reads;
  st->lt.writes = st->local_writes;
  st->lt.user = st;
}

void TxnExecutor::AcquireIntents(const PartitionTxn* st, IntentAgent* agent) const {
  if (st->local_reads.empty() && st->local_writes.empty()) return;
  // The common case: every local key is of one table (the top 8 bits).
  const Key k0 = st->local_writes.empty() ? st->local_reads[0] : st->local_writes[0];
  Key diff = 0;
  for (Key k : st->local_writes) diff |= k ^ k0;
  for (Key k : st->local_reads) diff |= k ^ k0;
  if (KeyTable(diff) == 0) {
    const IntentMode m = st->local_writes.empty() ? IntentMode::kIS : IntentMode::kIX;
    agent->Acquire(kPartitionLock, m);
    agent->Acquire(IntentLockTable::TableLock(KeyTable(k0)), m);
    return;
  }
  TableSet written, read;
  for (Key k : st->local_writes) written.Add(k);
  for (Key k : st->local_reads) read.Add(k);
  agent->Acquire(kPartitionLock, written.Empty() ? IntentMode::kIS : IntentMode::kIX);
  TableSet all = read;
  for (int w = 0; w < 4; ++w) all.bits[w] |= written.bits[w];
  all.ForEach([&](uint32_t t) {
    agent->Acquire(IntentLockTable::TableLock(t), written.Has(t) ? IntentMode::kIX : IntentMode::kIS);
  });
}

void TxnExecutor::PrefetchBuckets(PartitionTxn* st) const {
  if (st->resumed || st->table_op) return;  // no ReadLocal ahead
  for (Key k : st->local_reads) store_->Prefetch(k);
  st->buckets_hinted = true;
}

void TxnExecutor::PrefetchRecords(PartitionTxn* st) const {
  if (st->resumed || st->table_op) return;
  for (Key k : st->local_reads) store_->PrefetchRecord(k);
  st->prefetched = true;
}

void TxnExecutor::ReadLocal(PartitionTxn* st) const {
  // Overlap the cache misses of all keys: buckets first, then records
  // (unless the worker's pipeline did, PrefetchRecords).
  if (!st->prefetched) {
    if (!st->buckets_hinted) PrefetchBuckets(st);
    PrefetchRecords(st);
  }
  for (Key k : st->local_reads) {
    Record* r = store_->Get(k);
    if (r == nullptr) {
      st->reads.push_back({.key = k, .found = false, .size = 0, .data = nullptr});
    } else {
      const Table* t = store_->GetTable(KeyTable(k));
      // The procedure will read the value: start loading all its lines now.
      for (uint32_t off = 0; off < t->value_size(); off += 64) __builtin_prefetch(r->value() + off, 0);
      st->reads.push_back({.key = k, .found = true, .size = t->value_size(), .data = r->value(), .record = r});
    }
  }
}

void TxnExecutor::SendReads(PartitionTxn* st) const {
  const size_t n_local = st->reads.size();
  for (PartitionId to : st->executors) {
    if (to == self_) continue;
    pb::RemoteReads msg;
    msg.set_txn_id(st->txn->id());
    msg.set_from_partition(self_);
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

void TxnExecutor::AddRemote(PartitionTxn* st, const pb::RemoteReads& msg) {
  for (const pb::KeyValue& kv : msg.reads()) {  // a copy on the txn's arena: the caller frees msg
    const std::string& v = kv.value();
    const char* data = nullptr;  // a found value points somewhere, even if empty (as a local read's does)
    if (kv.found() && v.empty()) {
      data = "";
    } else if (kv.found()) {
      char* p = st->arena.Allocate(v.size());
      std::memcpy(p, v.data(), v.size());
      data = p;
    }
    st->reads.push_back(
        {.key = kv.key(), .found = kv.found(), .size = kv.found() ? static_cast<uint32_t>(v.size()) : 0u, .data = data});
  }
  ++st->remote_received;
}

bool TxnExecutor::Run(PartitionTxn* st, pb::TxnResult* reply, IntentAgent* agent) const {
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
                [](const PartitionTxn::Value& a, const PartitionTxn::Value& b) { return a.key < b.key; });
      st->declared_writes.assign(txn.write_set().begin(), txn.write_set().end());
      std::sort(st->declared_writes.begin(), st->declared_writes.end());
      st->write_index.clear();
    }
    ExecContext ctx(st, store_, procedures_->key_cover(), procedures_->range_cover(), partitioner_, self_, agent);
    s = proc(&ctx, &result);
    if (!s.ok()) ctx.Rollback();
  }
  if (s.ok() && procedures_->key_cover() != nullptr) {
    // IX on the tables of covered keys written, all before the first write
    // (AcquireIntents took the declared writes' tables: those calls hit the
    // agent's own entries). Keys of other partitions are not written here;
    // taking IX for their tables too is harmless and saves a lookup.
    TableSet written;
    for (const auto& w : st->writes) written.Add(w.key);
    if (!written.Empty()) {
      agent->Acquire(kPartitionLock, IntentMode::kIX);
      written.ForEach([&](uint32_t t) { agent->Acquire(IntentLockTable::TableLock(t), IntentMode::kIX); });
    }
  }
  if (s.ok()) {
    // Apply the local writes (an Update of a local read carries its record;
    // Write() prefetched the others' buckets; prefetching their first
    // records here as well measured no better). A txn's rows of
    // an ordered table are often adjacent (New-Order's lines): a hint per
    // table lets each insert start at the leaf of the one before.
    struct TableHint {
      uint32_t table = ~0u;
      OrderedIndex::Hint hint;
    };
    TableHint hints[4];
    auto hint_for = [&hints](Key k) -> OrderedIndex::Hint* {
      for (TableHint& h : hints) {
        if (h.table == KeyTable(k)) return &h.hint;
        if (h.table == ~0u) {
          h.table = KeyTable(k);
          return &h.hint;
        }
      }
      return nullptr;
    };
    for (const auto& w : st->writes) {
      if (w.record != nullptr && !w.erase) {  // an Update of a record read here: no lookup
        DCHECK_EQ(w.record->key, w.key) << "the record read here changed its key: was it erased and reused?";
        if (!w.in_place()) std::memcpy(w.record->value(), w.value, w.size);
        continue;
      }
      if (partitioner_->PartitionOf(w.key) != self_) continue;
      if (w.erase) {
        store_->Erase(w.key);
        continue;
      }
      const Table* t = store_->GetTable(KeyTable(w.key));
      // The existing record, or a new one.
      Record* r = store_->Insert(w.key, t != nullptr && t->ordered() ? hint_for(w.key) : nullptr);
      CHECK(r != nullptr) << "insert of key " << w.key << " failed";
      std::memcpy(r->value(), w.value, w.size);
    }
  }
  FillReply(st, s, std::move(result), reply);
  return s.ok();
}

bool TxnExecutor::RunTableOp(PartitionTxn* st, pb::TxnResult* reply, IntentAgent* agent) const {
  const pb::TableOp& op = st->txn->table_op();
  agent->Acquire(kPartitionLock, IntentMode::kIX);
  agent->Acquire(IntentLockTable::TableLock(op.table()), IntentMode::kX);
  absl::Status s;
  if (op.kind() == pb::TableOp::TRUNCATE) {
    s = store_->Truncate(op.table()).status();
  } else {
    std::vector<std::pair<Key, std::string_view>> rows;
    for (const pb::KeyValue& kv : op.rows())
      if (partitioner_->PartitionOf(kv.key()) == self_) rows.emplace_back(kv.key(), kv.value());
    s = store_->BulkLoad(op.table(), rows);
  }
  CHECK(s.ok()) << "table operation of txn " << st->txn->id() << " (validated before sequencing): " << s;
  FillReply(st, s, std::string(), reply);
  return true;
}

void TxnExecutor::FillReply(const PartitionTxn* st, const absl::Status& s, std::string result,
                            pb::TxnResult* reply) const {
  const pb::Txn& txn = *st->txn;
  if (st->coordinator) {
    pb::TxnResult& r = *reply;
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
  }
}

}  // namespace detdb
