// Table: one in-memory table of one partition, holding fixed-size records
// in a chained hash index.
//
//   Table t({.id = 1, .name = "micro", .value_size = 8, .expected_records = 1000});
//   Record* r = t.Insert(MakeKey(1, 42));   // zero-filled if new
//   memcpy(r->value(), &v, 8);
//   Record* same = t.Get(MakeKey(1, 42));   // == r
//
// A record is a 16-byte header (key, chain link) followed by value_size
// bytes. Records are carved out of large slabs (RecordArena) and never move
// once created, so a Record* stays valid until the record is erased and the
// owner calls ReclaimErased(). The index is a power-of-two array of buckets
// (at least expected_records of them, so chains stay short) with records
// chained through Record::next, the newest first. Each bucket also keeps a
// 64-bit key filter: one bit (from hash bits the bucket number does not
// use) per key of its chain, so a lookup of an absent key, and the
// uniqueness check of an insert, usually skip the chain walk. The index
// does NOT grow: a table that ends up with many more records than
// expected_records still works but its chains get long (Insert logs a
// warning once average chains pass 8); the filter keeps inserts of new
// keys cheap, lookups of present keys walk. Record memory does grow (more
// slabs).
//
// Thread-safety: Get, Insert and Erase may run concurrently on DIFFERENT
// keys, from any threads; that is how the database's workers use a table
// (deterministic locking guarantees no two threads touch one key at once).
//  - Get is lock-free: it reads the bucket's filter, then follows the chain
//    with acquire loads.
//  - Insert and Erase change a chain under one of up to 1024 striped
//    ElidedLatches (stripe = bucket mod the stripe count) and publish with
//    release stores, so a concurrent Get of another key of the same bucket
//    sees either the old or the new chain, both well formed. Insert sets
//    the key's filter bit before it links the record; Erase recomputes the
//    filter from the remaining chain after it unlinks one, so the filter
//    always covers every key a reader can find.
//  - Erase unlinks a record but does not reuse its memory: a concurrent
//    reader of another key may be standing on it. ReclaimErased(), called by
//    the owner when no thread is inside Get/Insert/Erase, makes the memory
//    of every erased record reusable.
//  - A record's value bytes are plain memory. They belong to the thread that
//    holds the key's lock; the table never touches them after Insert.
//  - ForEachInKeyOrder, ReclaimErased and the destructor must not run
//    concurrently with writers (Insert, Erase).
//  - Concurrent Insert of the SAME key is still correct (one record wins and
//    both callers get it), but a concurrent Insert and Erase of one key, or
//    any use of a key's value bytes by two threads, is the caller's race.
#ifndef DETDB_STORAGE_TABLE_H_
#define DETDB_STORAGE_TABLE_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/hash.h"
#include "common/types.h"
#include "storage/elided_latch.h"

namespace detdb {

struct TableOptions {
  // The table id, the top 8 bits of its keys (KeyTable). < 256.
  uint32_t id = 0;
  std::string name;
  // Bytes of every record's value, <= Table::kMaxValueSize.
  uint32_t value_size = 0;
  // Sizes the hash index (buckets) and the first slab of records; the table
  // grows past it. <= Table::kMaxExpectedRecords.
  uint64_t expected_records = 0;
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
  // Makes every retired block reusable; returns how many there were.
  // REQUIRES: no other thread uses the arena or reads a retired block.
  size_t ReclaimRetired();

  size_t block_bytes() const { return block_bytes_; }
  // Heap bytes held: slabs (used or not) and the retired list.
  size_t bytes_reserved() const;

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

  // InvalidArgument unless the options are within the limits above.
  static absl::Status ValidateOptions(const TableOptions& options);

  // REQUIRES: ValidateOptions(options).ok() (CHECKed).
  explicit Table(const TableOptions& options);
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;

  uint32_t id() const { return options_.id; }
  const std::string& name() const { return options_.name; }
  uint32_t value_size() const { return options_.value_size; }
  const TableOptions& options() const { return options_; }

  // The record of k, or nullptr if absent. Lock-free.
  // Hints that k will be looked up soon: prefetches its bucket head, so a
  // txn can overlap the cache misses of all its keys. Never blocks.
  void Prefetch(Key k) const { __builtin_prefetch(&buckets_[BucketOf(k)], 0); }
  // Prefetches the first record of k's bucket (call after Prefetch).
  void PrefetchRecord(Key k) const {
    const Record* r = buckets_[BucketOf(k)].head.load(std::memory_order_relaxed);
    if (r != nullptr) __builtin_prefetch(r, 0);
  }

  Record* Get(Key k) const {
    const uint64_t h = Mix64(k);
    const Bucket& b = buckets_[h & bucket_mask_];
    if ((b.filter.load(std::memory_order_acquire) & FilterBit(h)) == 0) return nullptr;
    for (Record* r = b.head.load(std::memory_order_acquire); r != nullptr;
         r = r->next.load(std::memory_order_acquire)) {
      if (r->key == k) return r;
    }
    return nullptr;
  }

  // The record of k: the existing one, or a new one with a zero-filled
  // value. Never fails (throws std::bad_alloc only when the heap is
  // exhausted).
  Record* Insert(Key k);

  // Unlinks the record of k; false if absent. The record's memory stays
  // readable (and unchanged) until ReclaimErased().
  bool Erase(Key k);

  // Makes the memory of every record erased so far reusable by Insert;
  // returns how many records that was.
  // REQUIRES: a quiescent point: no thread is inside Get/Insert/Erase of
  // this table and nobody holds a pointer to an erased record.
  size_t ReclaimErased();

  // Records in the table. Exact when no writer runs.
  uint64_t size() const;

  // Calls f(const Record&) for every record in increasing key order
  // (collects, sorts, visits). Used for digests and dumps.
  // REQUIRES: no concurrent Insert or Erase.
  template <typename F>
  void ForEachInKeyOrder(F f) const {
    std::vector<const Record*> records;
    records.reserve(size());
    for (uint64_t b = 0; b <= bucket_mask_; ++b) {
      for (const Record* r = buckets_[b].head.load(std::memory_order_acquire); r != nullptr;
           r = r->next.load(std::memory_order_acquire)) {
        records.push_back(r);
      }
    }
    std::sort(records.begin(), records.end(),
              [](const Record* a, const Record* b) { return a->key < b->key; });
    for (const Record* r : records) f(*r);
  }

  // Heap bytes held: buckets, latches, record slabs, the table itself.
  size_t memory_bytes() const;

  uint64_t bucket_count() const { return bucket_mask_ + 1; }
  // Bytes one record takes in a slab: header + value, rounded up to 8.
  size_t record_bytes() const { return arena_.block_bytes(); }

 private:
  // One latch and the record count of the buckets it guards. Each on a
  // cache line of its own: an elided section reads the latch word, so
  // neither a neighbour's latch taken for real nor a count update may share
  // its line (the count is updated after the critical section).
  struct alignas(64) Stripe {
    ElidedLatch latch;
    alignas(64) std::atomic<int64_t> records{0};  // may dip below 0 briefly
  };

  // A chain's head and the filter of its keys (see the file comment).
  struct Bucket {
    std::atomic<Record*> head{nullptr};
    std::atomic<uint64_t> filter{0};
  };
  static_assert(sizeof(Bucket) == 16, "four buckets per cache line");

  size_t BucketOf(Key k) const { return Mix64(k) & bucket_mask_; }
  // The key's filter bit: from the hash's top 6 bits (bucket numbers use
  // the low bits, at most 28 of them).
  static uint64_t FilterBit(uint64_t hash) { return uint64_t{1} << (hash >> 58); }
  Stripe& StripeOf(size_t bucket) const { return stripes_[bucket & stripe_mask_]; }

  const TableOptions options_;
  const uint64_t bucket_mask_;
  const size_t stripe_mask_;
  std::unique_ptr<Bucket[]> buckets_;
  std::unique_ptr<Stripe[]> stripes_;
  RecordArena arena_;
  const int64_t overload_records_per_stripe_;
  std::atomic<bool> overload_warned_{false};
};

}  // namespace detdb

#endif  // DETDB_STORAGE_TABLE_H_
