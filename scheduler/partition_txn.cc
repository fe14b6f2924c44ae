#include "scheduler/partition_txn.h"

#include <algorithm>
#include <functional>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "scheduler/exec_context.h"

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

bool ByteArena::Contains(const void* p) const {
  const auto in = [p](const std::unique_ptr<char[]>& b, size_t n) {
    return std::less_equal<const void*>()(b.get(), p) && std::less<const void*>()(p, b.get() + n);
  };
  for (const auto& b : blocks_)
    if (in(b, kBlock)) return true;
  for (const auto& b : large_)
    if (in(b, 1)) return true;  // a large value's first byte (what Allocate returned)
  return false;
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
  if (partitioner_->num_partitions() == 1) {
    // Every key is this partition's (PartitionOf < num_partitions()): no
    // call per key.
    DCHECK_EQ(self, 0u);
    st->local_reads.assign(txn->read_set().begin(), txn->read_set().end());
    st->local_writes.assign(txn->write_set().begin(), txn->write_set().end());
  } else {
    for (Key k : txn->read_set())
      if (partitioner_->PartitionOf(k) == self) st->local_reads.push_back(k);
    for (Key k : txn->write_set())
      if (partitioner_->PartitionOf(k) == self) st->local_writes.push_back(k);
  }
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

bool TxnExecutor::Run(PartitionTxn* st, pb::TxnResult* reply, IntentAgent* agent, ByteArena* values) const {
  if (values == nullptr || st->staged != nullptr) {
    values = &st->arena;  // after the remote reads, which stay
  } else {
    values->Reset();
  }
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
    ExecContext ctx(st, values, store_, procedures_->key_cover(), procedures_->range_cover(), partitioner_, self_,
                    agent);
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
    const bool one_partition = partitioner_->num_partitions() == 1;  // every key local (Init)
    for (const auto& w : st->writes) {
      if (w.record != nullptr && !w.erase) {  // an Update of a record read here: no lookup
        DCHECK_EQ(w.record->key, w.key) << "the record read here changed its key: was it erased and reused?";
        if (!w.in_place()) std::memcpy(w.record->value(), w.value, w.size);
        continue;
      }
      if (!one_partition && partitioner_->PartitionOf(w.key) != self_) continue;
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
