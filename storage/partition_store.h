// PartitionStore: every table of one partition, by table id.
//
//   PartitionStore store;
//   Table* t = store.CreateTable({.id = 1, .name = "micro", .value_size = 8}).value();
//   Record* r = store.Insert(MakeKey(1, 7));   // dispatches on KeyTable(k)
//   uint64_t d = store.Digest();               // same contents, same digest
//
// Tables are kept in a 256-entry array indexed by table id (the top 8 bits
// of a key), so finding a key's table costs one load.
//
// Thread-safety: CreateTable must not run concurrently with anything else
// on the store (tables are created when a partition is set up, before its
// workers start). After that, Get/Insert/Erase (and the same calls on the
// tables) follow Table's rules: concurrent on different keys from any
// thread. Digest, ReclaimErased and the destructor require that no writer
// runs. ReclaimSafe is thread-safe.
//
// Reclamation while txns run (docs/STORAGE.md, "Reclamation"): every
// thread that uses the tables while writers may run holds an
// EpochParticipant of epochs() and calls Quiescent() whenever it holds no
// pointer into them (a worker: between txns); any of them may call
// ReclaimSafe() now and then, which frees what no participant can still
// see.
//
// Intent locks (storage/intent_lock.h, docs/STORAGE.md "Intent locks"):
// intents() is the partition's lock hierarchy (the partition, then each
// table). Workers take IS/IX through their agents; whole-table operations
// (Truncate, BulkLoad, a scan, a checkpoint capture) take absolute locks.
// The store does not take them itself: Truncate and BulkLoad say what
// their caller must hold.
#ifndef DETDB_STORAGE_PARTITION_STORE_H_
#define DETDB_STORAGE_PARTITION_STORE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "storage/epoch.h"
#include "storage/intent_lock.h"
#include "storage/table.h"

namespace detdb {

struct PartitionStoreOptions {
  // Which intent lock implementation guards whole-table operations.
  IntentLockKind intent_locks = IntentLockKind::kLil;
};

class PartitionStore {
 public:
  explicit PartitionStore(const PartitionStoreOptions& options = {})
      : intents_(IntentLockTable::Create({.kind = options.intent_locks, .locks = Table::kMaxTableId + 2})) {}
  PartitionStore(const PartitionStore&) = delete;
  PartitionStore& operator=(const PartitionStore&) = delete;

  // Creates an empty table. AlreadyExists if a table has options.id;
  // InvalidArgument for options Table::ValidateOptions rejects. On error
  // the store is unchanged. The table lives as long as the store.
  absl::StatusOr<Table*> CreateTable(const TableOptions& options);

  // The table with this id, or nullptr.
  Table* GetTable(uint32_t id) const { return id < tables_.size() ? tables_[id].get() : nullptr; }

  // Ids of the tables, increasing.
  std::vector<uint32_t> table_ids() const;

  // The record of k, or nullptr if it or its table (KeyTable(k)) is absent.
  Record* Get(Key k) const {
    const Table* t = tables_[KeyTable(k)].get();
    return t == nullptr ? nullptr : t->Get(k);
  }

  // Table::Prefetch / PrefetchRecord on the table of k (no-ops if none).
  void Prefetch(Key k) const {
    if (const Table* t = tables_[KeyTable(k)].get()) t->Prefetch(k);
  }
  void PrefetchRecord(Key k) const {
    if (const Table* t = tables_[KeyTable(k)].get()) t->PrefetchRecord(k);
  }

  // Table::Insert on the table of k; nullptr if that table does not exist.
  Record* Insert(Key k, OrderedIndex::Hint* hint = nullptr) {
    Table* t = tables_[KeyTable(k)].get();
    return t == nullptr ? nullptr : t->Insert(k, hint);
  }

  // Table::Erase on the table of k; false if that table does not exist.
  bool Erase(Key k) {
    Table* t = tables_[KeyTable(k)].get();
    return t != nullptr && t->Erase(k);
  }

  // Table::ReclaimErased on every table; returns the records reclaimed.
  // REQUIRES: a quiescent point (see Table::ReclaimErased).
  size_t ReclaimErased();

  // The epochs of this store's readers (storage/epoch.h).
  EpochDomain& epochs() { return epochs_; }
  // The partition's intent locks: IntentLockTable::kPartitionLock and
  // TableLock(id) for table id.
  IntentLockTable& intents() { return *intents_; }

  // Whole-table operations. The caller holds IX on the partition and X on
  // the table's lock (and is an epoch participant or no reader of this
  // store runs). NotFound if there is no such table.
  // Truncate: removes every record of the table; returns how many.
  absl::StatusOr<uint64_t> Truncate(uint32_t table);
  // BulkLoad: inserts (or overwrites) every row, after growing the index
  // once for all of them (Table::Reserve). InvalidArgument, having changed
  // nothing, if a key is not of the table or a value has another size than
  // its records.
  absl::Status BulkLoad(uint32_t table, const std::vector<std::pair<Key, std::string_view>>& rows);

  // One round of epoch-based reclamation: seals what every table retired
  // since the last round under a new epoch, then frees the sealed batches
  // whose epoch every online participant has passed. Returns the records
  // freed. Cheap when there is nothing to do; returns 0 at once if another
  // thread is in it. Thread-safe; the caller, if a participant, should be
  // at a quiescent point (it is treated as one: pass it as `self`).
  // REQUIRES: every thread that may hold a pointer into the tables is an
  // online participant of epochs().
  size_t ReclaimSafe(EpochParticipant* self = nullptr);

  // While a hold is on, ReclaimSafe seals but frees nothing (it returns 0):
  // a forked checkpoint child shares the store's pages, and freeing writes
  // free-list links into old record blocks, each write a copy-on-write
  // fault. What was sealed is freed by the first round after the last
  // release. Thread-safe; holds nest.
  void HoldFrees() { free_holds_.fetch_add(1, std::memory_order_acq_rel); }
  void ReleaseFrees() { free_holds_.fetch_sub(1, std::memory_order_acq_rel); }

  // A 64-bit XXH3 hash of the contents: for every table in increasing id
  // order its id, value size and record count, then for every record in
  // increasing key order its key and value bytes (integers little-endian).
  // Equal for equal contents whatever the order of inserts, bucket counts
  // or memory layout; an empty table counts as content.
  // REQUIRES: no concurrent Insert or Erase.
  uint64_t Digest() const;

  // Records in all tables.
  uint64_t size() const;

  // Heap bytes held by the store and its tables.
  size_t memory_bytes() const;

 private:
  // KeyTable(k) < 256 for every key, so lookups need no bounds check.
  std::array<std::unique_ptr<Table>, Table::kMaxTableId + 1> tables_;
  std::unique_ptr<IntentLockTable> intents_;  // REQUIRES: its agents go before the store
  EpochDomain epochs_;  // REQUIRES: its participants go before the store
  std::mutex reclaim_mu_;     // one ReclaimSafe at a time
  bool has_sealed_ = false;   // guarded by reclaim_mu_: some table holds a sealed batch
  std::atomic<uint32_t> free_holds_{0};  // HoldFrees - ReleaseFrees
};

}  // namespace detdb

#endif  // DETDB_STORAGE_PARTITION_STORE_H_
