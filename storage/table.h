// Table: one in-memory table of one partition, holding fixed-size records
// in a chained hash index that grows online.
//
//   Table t({.id = 1, .name = "micro", .value_size = 8, .expected_records = 1000});
//   Record* r = t.Insert(MakeKey(1, 42));   // zero-filled if new
//   memcpy(r->value(), &v, 8);
//   Record* same = t.Get(MakeKey(1, 42));   // == r
//
// A record is a 16-byte header (key, chain link) followed by value_size
// bytes. Records are carved out of large slabs (RecordArena) and never move
// once created, so a Record* stays valid until the record is erased and
// reclaimed (below). The index is a power-of-two array of buckets
// (at first at least expected_records of them) with records chained
// through Record::next, the newest first. Each bucket also keeps a 64-bit
// key filter: one bit (from hash bits the bucket number does not use) per
// key of its chain, so a lookup of an absent key, and the uniqueness check
// of an insert, usually skip the chain walk.
//
// Online growth (docs/STORAGE.md). When the records pass kGrowLoad per
// bucket, the Insert that notices allocates an array of twice the buckets
// (lazily zeroed memory: no pass over it) and makes it current; the old
// array is then migrated incrementally: every later Insert and Erase moves
// kMigratePerWrite old buckets (each into the two buckets it splits into),
// so no txn ever waits for a whole rehash. A key lives in its old bucket
// until that bucket is marked moved, then in its new one. Migration relinks
// records in place (they never move in memory); readers stay lock-free:
//  - a lookup that FINDS its key is right whatever happens meanwhile (a
//    record is found only by its key, and records do not move);
//  - a lookup that does not find it validates against its stripe's
//    sequence count (a VersionLatch that only migration bumps; every bucket a
//    key can ever live in belongs to one stripe, since stripe = hash mod a
//    stripe count that never exceeds the bucket count) and looks again if
//    a migration of its stripe ran meanwhile. So a reader never misses a
//    record that was present throughout its lookup.
// Old bucket arrays are retired, not freed (a reader may still be in one),
// until reclamation (below) frees them.
//
// Ordered tables (TableOptions::ordered). Instead of the hash index, the
// records are indexed by a B+tree (storage/ordered_index.h): Get, Insert and
// Erase keep their contracts, and Scan visits a key range in order. Suited to
// tables whose keys are inserted roughly in order and read by range (TPC-C's
// ORDER_LINE, NEW_ORDER, ORDER, HISTORY): an insert lands in the leaf the
// previous one warmed, where a hash index touches a random bucket. Tree nodes
// unlinked by erases are reclaimed like erased records.
//
// Reclamation. Erased records and retired bucket arrays are freed either at
// a quiescent point (ReclaimErased: nobody uses the table), or while txns
// run by epochs (storage/epoch.h): SealRetired labels what was retired so
// far with an epoch, FreeSealed frees the batches whose epoch every reader
// has passed. A PartitionStore drives both for its tables.
//
// Thread-safety: Get, Insert and Erase may run concurrently on DIFFERENT
// keys, from any threads; that is how the database's workers use a table
// (deterministic locking guarantees no two threads touch one key at once).
//  - Get is lock-free and writes nothing: it reads the bucket's filter,
//    then follows the chain with acquire loads (and, only when the key is
//    absent, reads the stripe's sequence count twice).
//  - Insert, Erase and the migration of a bucket change chains under one
//    of up to 1024 striped ElidedLatches (stripe = hash mod the stripe
//    count) and publish with release stores, so a concurrent Get of another
//    key of the same bucket sees either the old or the new chain, both well
//    formed. Insert sets the key's filter bit before it links the record;
//    Erase recomputes the filter from the remaining chain after it unlinks
//    one, so the filter always covers every key a reader can find.
//  - Erase unlinks a record but does not reuse its memory: a concurrent
//    reader of another key may be standing on it. ReclaimErased(), called by
//    the owner when no thread is inside Get/Insert/Erase, or FreeSealed()
//    once every reader has passed the batch's epoch, makes the memory of
//    erased records (and retired bucket arrays) reusable.
//  - A record's value bytes are plain memory. They belong to the thread that
//    holds the key's lock; the table never touches them after Insert.
//  - ForEachInKeyOrder, ReclaimErased and the destructor must not run
//    concurrently with writers (Insert, Erase); nor may size() of an
//    ordered table, nor ForFirstInKeyOrder (a scan holds S on the table's
//    intent lock). Clear and Reserve need the table to themselves (an X
//    intent lock).
//  - Scan (ordered tables) is lock-free like Get; see OrderedIndex for what
//    it sees of concurrent writes to its range.
//  - Concurrent Insert of the SAME key is still correct (one record wins and
//    both callers get it), but a concurrent Insert and Erase of one key, or
//    any use of a key's value bytes by two threads, is the caller's race.
#ifndef DETDB_STORAGE_TABLE_H_
#define DETDB_STORAGE_TABLE_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/hash.h"
#include "common/types.h"
#include "storage/elided_latch.h"
#include "storage/ordered_index.h"
#include "storage/version_latch.h"

namespace detdb {

struct TableOptions {
  // The table id, the top 8 bits of its keys (KeyTable). < 256.
  uint32_t id = 0;
  std::string name;
  // Bytes of every record's value, <= Table::kMaxValueSize.
  uint32_t value_size = 0;
  // Sizes the hash index (Table::kBucketsPerExpectedRecord buckets per
  // record) and the first slab of records; the table grows past it.
  // <= Table::kMaxExpectedRecords.
  uint64_t expected_records = 0;
  // Whether the hash index doubles online when records pass kGrowLoad per
  // bucket. false keeps the first bucket count (long chains; for tests).
  bool grow_index = true;
  // Index the records by a B+tree instead of the hash index: Scan works, and
  // keys inserted in order stay together (see the file comment).
  // expected_records then only sizes the first slab of records.
  bool ordered = false;
};

// One record: this header, then value_size bytes of value.
struct Record {
  Key key;
  // The next record of the same bucket chain. Owned by the table.
  std::atomic<Record*> next;

  char* value() { return reinterpret_cast<char*>(this + 1); }
  const char* value() const { return reinterpret_cast<const char*>(this + 1); }
};
static_assert(sizeof(Record) == 16, "the record header is a key and a link");

// Fixed-size blocks of bytes carved out of large slabs, for records whose
// size is only known at run time (a byte-slab StagedPool). Blocks never
// move; slabs go back to the heap only when the arena is destroyed.
//
// Thread-safety: Allocate, Release and Retire are safe from any thread (one
// short non-elided latch: every allocation writes the same cursor, so
// eliding it would only abort). ReclaimRetired must run while no other
// thread uses the arena.
class RecordArena {
 public:
  // block_bytes: a multiple of 8, > 0. first_slab_blocks: blocks of the
  // first slab (later slabs grow with the arena).
  RecordArena(size_t block_bytes, uint64_t first_slab_blocks);
  ~RecordArena();
  RecordArena(const RecordArena&) = delete;
  RecordArena& operator=(const RecordArena&) = delete;

  // A block of block_bytes bytes, 8-aligned, contents unspecified.
  void* Allocate();
  // Gives back a block that no other thread has ever seen: reusable at once.
  void Release(void* block);
  // Gives back a block that other threads may still read: its bytes stay
  // untouched until ReclaimRetired().
  void Retire(void* block);
  // Retire() of every block, under one latch.
  void RetireMany(const std::vector<void*>& blocks);
  // Makes every retired block reusable; returns how many there were.
  // REQUIRES: no other thread uses the arena or reads a retired block.
  size_t ReclaimRetired();
  // Hands the retired blocks to the caller (to free later with
  // ReleaseMany, once no reader can stand on them). Thread-safe.
  std::vector<void*> TakeRetired();
  // Release() of every block. Thread-safe.
  void ReleaseMany(const std::vector<void*>& blocks);

  size_t block_bytes() const { return block_bytes_; }
  // Heap bytes held: slabs (used or not) and the retired list.
  size_t bytes_reserved() const;
  // Blocks retired and not yet taken or reclaimed; blocks free for reuse.
  size_t retired_blocks() const;
  size_t free_blocks() const;

 private:
  void Grow();  // REQUIRES: latch_ held

  const size_t block_bytes_;
  const uint64_t min_slab_blocks_;
  const uint64_t max_slab_blocks_;
  const uint64_t first_slab_blocks_;
  mutable ElidedLatch latch_;
  // Guarded by latch_. Free blocks are linked through their first 8 bytes.
  char* cursor_ = nullptr;  // next never-used block of the newest slab
  char* slab_end_ = nullptr;
  void* free_ = nullptr;
  size_t free_count_ = 0;
  std::vector<std::pair<char*, size_t>> slabs_;  // (memory, bytes)
  std::vector<void*> retired_;
  size_t slab_bytes_ = 0;
  uint64_t slab_blocks_ = 0;
};

class Table {
 public:
  static constexpr uint32_t kMaxTableId = 255;
  static constexpr uint32_t kMaxValueSize = 1u << 20;
  static constexpr uint64_t kMaxExpectedRecords = uint64_t{1} << 28;
  static constexpr size_t kMaxStripes = 1024;
  // The index doubles when records pass kGrowLoad per bucket, up to
  // kMaxBuckets buckets (bucket numbers must leave the filter's 6 top hash
  // bits alone).
  static constexpr uint64_t kGrowLoad = 1;
  // Buckets per record of a new index (the first one, of expected_records;
  // Clear's; Reserve's): short chains while the table is within its size.
  // A lookup that finds its key walks on average 1 + load/2 records, each
  // a likely cache miss that the prefetch of the bucket's first record
  // does not cover: at 2 (load <= 0.5) the record lookups of TPC-C's
  // workers fell from 7.9% to 5.8% of the process's samples
  // (docs/STORAGE.md, "Bucket sizing"), for 16 more bytes of index per
  // expected record.
  static constexpr uint64_t kBucketsPerExpectedRecord = 2;
  static constexpr uint64_t kMaxBuckets = uint64_t{1} << 32;
  // Old buckets every Insert and Erase migrates while the index grows: a
  // migration ends after (old buckets / kMigratePerWrite) writes, well
  // before the next doubling is due.
  static constexpr int kMigratePerWrite = 2;

  // InvalidArgument unless the options are within the limits above.
  static absl::Status ValidateOptions(const TableOptions& options);

  // REQUIRES: ValidateOptions(options).ok() (CHECKed).
  explicit Table(const TableOptions& options);
  ~Table();
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  uint32_t id() const { return options_.id; }
  const std::string& name() const { return options_.name; }
  uint32_t value_size() const { return options_.value_size; }
  const TableOptions& options() const { return options_; }

  // Hints that k will be looked up soon: prefetches its bucket head, so a
  // txn can overlap the cache misses of all its keys. Never blocks.
  void Prefetch(Key k) const {
    if (tree_ != nullptr) return;
    const Index* ix = current_.load(std::memory_order_acquire);
    __builtin_prefetch(&ix->buckets[Mix64(k) & ix->mask], 0);
  }
  // Prefetches the first record of k's bucket (call after Prefetch).
  void PrefetchRecord(Key k) const {
    if (tree_ != nullptr) return;
    const Index* ix = current_.load(std::memory_order_acquire);
    const Record* r = ix->buckets[Mix64(k) & ix->mask].head.load(std::memory_order_relaxed);
    if (r != nullptr) __builtin_prefetch(r, 0);
  }

  // The record of k, or nullptr if absent. Lock-free.
  Record* Get(Key k) const {
    if (tree_ != nullptr) return tree_->Find(k);
    const uint64_t h = Mix64(k);
    if (Record* r = Find(BucketFor(h), k, h)) return r;
    return GetAbsent(k, h);
  }

  // The record of k: the existing one, or a new one with a zero-filled
  // value. Never fails (throws std::bad_alloc only when the heap is
  // exhausted). hint (ordered tables; ignored by hash tables): where the
  // caller's previous insert into this table went, for a series of
  // adjacent keys (OrderedIndex::Hint, with its REQUIRES).
  Record* Insert(Key k, OrderedIndex::Hint* hint = nullptr);

  // Unlinks the record of k; false if absent. The record's memory stays
  // readable (and unchanged) until ReclaimErased() or FreeSealed() frees it.
  bool Erase(Key k);

  // Makes the memory of every record erased so far, and of every bucket
  // array retired by growth, reusable (sealed batches included); returns
  // how many records that was.
  // REQUIRES: a quiescent point: no thread is inside Get/Insert/Erase of
  // this table and nobody holds a pointer to an erased record.
  size_t ReclaimErased();

  // Epoch-based reclamation while txns run (storage/epoch.h; a
  // PartitionStore drives it: PartitionStore::ReclaimSafe).
  // SealRetired moves everything retired so far (erased records, the bucket
  // arrays and migrations of finished growths) into a batch labelled
  // `epoch`; false if there was nothing. Call it, then EpochDomain::Advance()
  // (which must return `epoch`). Thread-safe with Get/Insert/Erase.
  bool SealRetired(uint64_t epoch);
  // Frees every sealed batch labelled <= safe_epoch: its records become
  // reusable by Insert, its bucket arrays go back to the heap. Returns the
  // records freed. Thread-safe with Get/Insert/Erase.
  // REQUIRES: no thread still holds a pointer into those batches
  // (EpochDomain::SafeEpoch() >= safe_epoch); one caller of SealRetired /
  // FreeSealed at a time.
  size_t FreeSealed(uint64_t safe_epoch);

  // What reclamation holds and has done.
  struct ReclaimStats {
    uint64_t retired_records = 0;  // erased, not yet sealed
    uint64_t sealed_records = 0;   // sealed, waiting for their epoch
    uint64_t sealed_batches = 0;
    uint64_t retired_index_bytes = 0;  // bucket arrays of finished growths, not freed
    uint64_t retired_nodes = 0;        // ordered tables: B+tree nodes unlinked, not freed
    uint64_t free_records = 0;         // reusable blocks in the slabs
    uint64_t reclaimed_records = 0;    // freed so far (FreeSealed, ReclaimErased)
  };
  ReclaimStats reclaim_stats() const;
  // Whether a sealed batch waits for its epoch.
  bool has_sealed() const {
    std::lock_guard<std::mutex> l(owned_mu_);
    return !sealed_.empty();
  }

  // Records in the table. Exact when no writer runs. REQUIRES for an
  // ordered table: no writer runs (it counts the tree's entries).
  uint64_t size() const;

  // Whether the records are in a B+tree (TableOptions::ordered).
  bool ordered() const { return tree_ != nullptr; }

  // Calls visit(Key, const Record*) for the records of keys in [lo, hi] in
  // increasing key order (decreasing if reverse) until it returns false.
  // Lock-free, like Get; a record that is neither inserted nor erased while
  // the scan runs is visited iff its key is in the range (OrderedIndex::Scan).
  // REQUIRES: ordered().
  template <typename F>
  void Scan(Key lo, Key hi, bool reverse, F&& visit) const {
    tree_->Scan(lo, hi, reverse, [&visit](Key k, Record* r) { return visit(k, static_cast<const Record*>(r)); });
  }

  // Whole-table operations (docs/STORAGE.md, "Intent locks"): the caller
  // holds X on the table's intent lock, so no other thread is inside Get,
  // Insert or Erase of this table.
  //
  // Removes every record; returns how many. Records and bucket arrays are
  // retired, and freed by reclamation as usual; the index goes back to its
  // first size. An ordered table retires every tree node the same way and
  // starts again from an empty root leaf. REQUIRES: exclusive use of the
  // table.
  uint64_t Clear();
  // Grows the index at once to hold `records` records: one rehash instead
  // of doublings migrated a few buckets per write; a migration under way
  // ends here. A bulk load calls it first. No-op if `records` would not
  // make online growth due (at most kGrowLoad per bucket) and no migration
  // is under way, and for an ordered table (a tree grows by splits);
  // otherwise the index is sized as a new one for `records` records
  // (kBucketsPerExpectedRecord each). REQUIRES: exclusive use of the table.
  void Reserve(uint64_t records);

  // Calls f(const Record&) for the first `limit` records with key >= from,
  // in increasing key order. An ordered table walks its tree and stops after
  // `limit`; a hash table collects the records >= from and sorts the first
  // `limit`. REQUIRES: no concurrent Insert or Erase (a scan holds S on the
  // table's intent lock).
  template <typename F>
  void ForFirstInKeyOrder(Key from, size_t limit, F f) const {
    if (tree_ != nullptr) {
      if (limit == 0) return;
      size_t seen = 0;
      tree_->Scan(from, ~Key{0}, /*reverse=*/false, [&](Key, const Record* r) {
        f(*r);
        return ++seen < limit;
      });
      return;
    }
    std::vector<const Record*> records;
    ForEachRecord([&](const Record* r) {
      if (r->key >= from) records.push_back(r);
    });
    auto by_key = [](const Record* a, const Record* b) { return a->key < b->key; };
    const size_t n = std::min(limit, records.size());
    std::partial_sort(records.begin(), records.begin() + static_cast<std::ptrdiff_t>(n), records.end(), by_key);
    for (size_t i = 0; i < n; ++i) f(*records[i]);
  }

  // Calls f(const Record&) for every record in increasing key order
  // (collects, sorts, visits). Used for digests and dumps.
  // REQUIRES: no concurrent Insert or Erase.
  template <typename F>
  void ForEachInKeyOrder(F f) const {
    if (tree_ != nullptr) {
      tree_->ForEach([&f](Key, const Record* r) { f(*r); });
      return;
    }
    std::vector<const Record*> records;
    records.reserve(size());
    ForEachRecord([&records](const Record* r) { records.push_back(r); });
    std::sort(records.begin(), records.end(),
              [](const Record* a, const Record* b) { return a->key < b->key; });
    for (const Record* r : records) f(*r);
  }
  // The same without allocating: sorts the record pointers in the caller's
  // scratch[0, capacity) (a forked checkpoint child must not call malloc).
  // Returns false, having visited nothing, if the table holds more than
  // capacity records (never for an ordered table, which needs no scratch).
  // Same REQUIRES.
  template <typename F>
  bool ForEachInKeyOrder(const Record** scratch, size_t capacity, F f) const {
    if (tree_ != nullptr) {  // in order already, and allocates nothing
      tree_->ForEach([&f](Key, const Record* r) { f(*r); });
      return true;
    }
    size_t n = 0;
    ForEachRecord([&](const Record* r) {
      if (n < capacity) scratch[n] = r;
      ++n;
    });
    if (n > capacity) return false;
    std::sort(scratch, scratch + n, [](const Record* a, const Record* b) { return a->key < b->key; });
    for (size_t i = 0; i < n; ++i) f(*scratch[i]);
    return true;
  }

  // Heap bytes held: buckets (current, migrating and retired), latches,
  // record slabs, the table itself.
  size_t memory_bytes() const;

  // Buckets of the current index (during a migration, the new array).
  uint64_t bucket_count() const { return current_.load(std::memory_order_acquire)->mask + 1; }
  // Times the index has doubled, and whether a migration is under way.
  uint64_t growths() const { return growths_.load(std::memory_order_relaxed); }
  bool migrating() const { return migration_.load(std::memory_order_acquire) != nullptr; }
  // Bytes one record takes in a slab: header + value, rounded up to 8.
  size_t record_bytes() const { return arena_.block_bytes(); }

  // Tests only: called in the middle of every bucket move, after each moved
  // record with its key (the stripe latched, its sequence count odd), so a
  // test can widen the window in which readers meet a half-moved bucket.
  // REQUIRES: set before any other thread uses the table.
  void SetMoveHookForTesting(std::function<void(Key)> hook) { move_hook_ = std::move(hook); }

 private:
  // Calls g(const Record*) for every record, in bucket order (key order for
  // an ordered table).
  template <typename G>
  void ForEachRecord(G g) const {
    if (tree_ != nullptr) {
      tree_->ForEach([&g](Key, const Record* r) { g(r); });
      return;
    }
    auto collect = [&g](const Bucket& b) {
      for (const Record* r = b.head.load(std::memory_order_acquire); r != nullptr;
           r = r->next.load(std::memory_order_acquire)) {
        g(r);
      }
    };
    const Index* cur = current_.load(std::memory_order_acquire);
    for (uint64_t b = 0; b <= cur->mask; ++b) collect(cur->buckets[b]);
    if (const Migration* m = migration_.load(std::memory_order_acquire)) {
      for (uint64_t b = 0; b <= m->from->mask; ++b)
        if (m->from->moved[b].load(std::memory_order_acquire) == 0) collect(m->from->buckets[b]);
    }
  }

  // One latch, the record count of the buckets it guards and the sequence
  // count of their migrations (a VersionLatch: odd while one runs; its
  // writers are excluded by the latch). Each on a cache line of
  // its own: an elided section reads the latch word, so neither a
  // neighbour's latch taken for real nor a count update may share its line
  // (the count is updated after the critical section); readers of absent
  // keys read seq, which only migration writes.
  struct alignas(64) Stripe {
    ElidedLatch latch;
    alignas(64) std::atomic<int64_t> records{0};  // may dip below 0 briefly
    alignas(64) VersionLatch seq;
  };

  // A chain's head and the filter of its keys (see the file comment).
  struct Bucket {
    std::atomic<Record*> head{nullptr};
    std::atomic<uint64_t> filter{0};
  };
  static_assert(sizeof(Bucket) == 16, "four buckets per cache line");

  // One generation of the bucket array. buckets and moved come from calloc
  // (zero bytes are empty buckets and "not moved"), so a new array of any
  // size costs no pass over its memory.
  struct Index {
    explicit Index(uint64_t buckets);
    ~Index();
    Index(const Index&) = delete;
    Index& operator=(const Index&) = delete;
    const uint64_t mask;
    Bucket* const buckets;
    // Per bucket: 1 once migrated to the next generation. Allocated when
    // this index becomes the source of a migration.
    std::atomic<uint8_t>* moved = nullptr;
  };

  // A growth under way: every bucket b of `from` moves to b and
  // b + from->mask + 1 of `to` (the current index).
  struct Migration {
    Index* from;
    Index* to;
    std::atomic<uint64_t> next{0};  // next bucket of `from` to claim
    std::atomic<uint64_t> done{0};  // buckets of `from` moved
  };

  // Memory retired before the epoch `epoch` began (SealRetired).
  struct Sealed {
    uint64_t epoch = 0;
    std::vector<void*> records;
    std::vector<std::unique_ptr<Index>> indexes;
    std::vector<std::unique_ptr<Migration>> migrations;
    std::vector<void*> nodes;  // OrderedIndex nodes (freed by ~Table if still sealed)
  };

  // Where hash h lives: its bucket in the current index or, during a
  // migration, in the source while that bucket is not moved and in the
  // target after. Lock-free readers use it too: a stale answer can only
  // make them miss a key, which GetAbsent's validation catches.
  Bucket& BucketFor(uint64_t h) const {
    const Index* cur = current_.load(std::memory_order_acquire);
    if (const Migration* m = migration_.load(std::memory_order_acquire)) [[unlikely]] {
      const uint64_t ob = h & m->from->mask;
      if (m->from->moved[ob].load(std::memory_order_acquire) == 0) return m->from->buckets[ob];
      return m->to->buckets[h & m->to->mask];
    }
    return cur->buckets[h & cur->mask];
  }
  static Record* Find(const Bucket& b, Key k, uint64_t h) {
    if ((b.filter.load(std::memory_order_acquire) & FilterBit(h)) == 0) return nullptr;
    for (Record* r = b.head.load(std::memory_order_acquire); r != nullptr;
         r = r->next.load(std::memory_order_acquire)) {
      if (r->key == k) return r;
    }
    return nullptr;
  }
  // Insert, Erase and Clear of an ordered table (table_ordered.cc).
  Record* InsertOrdered(Key k, OrderedIndex::Hint* hint);
  bool EraseOrdered(Key k);
  uint64_t ClearOrdered();
  // Get's second look when the first did not find k: validated against the
  // stripe's migrations (see the file comment).
  Record* GetAbsent(Key k, uint64_t h) const;

  // Doubles the index if the stripe's records say it is due and no growth
  // is under way; then migrates up to kMigratePerWrite old buckets.
  // REQUIRES: no stripe latched by the caller.
  void MaybeGrow(int64_t stripe_records);
  void StartGrow();  // REQUIRES: this thread set growing_
  void MigrateSome();
  // Records per stripe past which an index of `buckets` buckets doubles.
  int64_t GrowThreshold(uint64_t buckets) const;
  // Moves bucket ob of m->from into m->to under ob's stripe latch.
  void MigrateBucket(Migration* m, uint64_t ob);

  // The key's filter bit: from the hash's top 6 bits (bucket numbers use
  // the low bits, at most 32 of them).
  static uint64_t FilterBit(uint64_t hash) { return uint64_t{1} << (hash >> 58); }
  Stripe& StripeOf(uint64_t hash) const { return stripes_[hash & stripe_mask_]; }

  const TableOptions options_;
  // <= the first bucket count - 1, so all buckets of a key share a stripe.
  const size_t stripe_mask_;
  std::unique_ptr<Stripe[]> stripes_;
  RecordArena arena_;
  std::atomic<Index*> current_;
  // The B+tree of an ordered table (then the hash index stays empty), else
  // nullptr.
  std::unique_ptr<OrderedIndex> tree_;
  std::atomic<Migration*> migration_{nullptr};
  // True from the start of a growth until its migration ends.
  std::atomic<bool> growing_{false};
  // Records per stripe past which the index doubles.
  std::atomic<int64_t> grow_records_per_stripe_;
  std::atomic<uint64_t> growths_{0};
  std::function<void(Key)> move_hook_;  // tests only
  // Every index and migration not yet freed (the current ones and those of
  // finished growths, which a reader may still be in): the rest are freed
  // at a quiescent point (ReclaimErased, destructor).
  mutable std::mutex owned_mu_;
  std::vector<std::unique_ptr<Index>> indexes_;
  std::vector<std::unique_ptr<Migration>> migrations_;
  std::deque<Sealed> sealed_;  // guarded by owned_mu_; increasing epochs
  std::atomic<uint64_t> reclaimed_records_{0};
};

}  // namespace detdb

#endif  // DETDB_STORAGE_TABLE_H_
