// StagedStates: staged allocation of a partition's txn states (seed 003,
// docs/STORAGE.md "Staged allocation"), PartitionCore's alternative to its
// pool of reused PartitionTxn objects (PartitionCoreOptions::staged_alloc).
//
// Every sub-batch the lock side takes opens a group (OpenGroup). Each txn of
// it gets its PartitionTxn, with a TxnArena and a first chunk for it, bump-
// allocated from the group's slabs (New, on the lock side). Everything the
// txn allocates at this partition while it runs (its key lists, its reads,
// remote reads' bytes, buffered writes and their values, a large txn's
// index) comes from that arena: first the chunk, then slabs the arena takes
// from the shared SlabPool (any worker; a mutex per slab, not per object).
// Nothing is freed one by one: when the last txn of a group is released
// here, every slab of the group and of its txns' arenas goes back to the
// pool in one step (Release).
//
// Lifetimes: a state and what it points to are valid from New until its own
// Release; the runner must not touch it after that (the scheduler drops the
// owner before and never looks at a released state; replies and remote
// reads leave as copies: TxnResult and RemoteReads messages on the heap).
// The first chunk is sized from the bytes per key the txns of the same
// procedure released before used, so that most txns never take a slab of
// their own.
//
// Thread-safety: not thread-safe. OpenGroup, New and Release are the lock
// side's (PartitionCore's, under the runner's lock-side mutex); the states'
// arenas are used by one thread at a time, like the states.
#ifndef DETDB_SCHEDULER_STAGED_STATES_H_
#define DETDB_SCHEDULER_STAGED_STATES_H_

#include <cstddef>
#include <cstdint>

#include "common/staged_arena.h"
#include "common/staged_pool.h"
#include "scheduler/partition_txn.h"

namespace detdb {

class StagedStates {
 public:
  static constexpr size_t kSlabBytes = 64 << 10;
  static constexpr size_t kMaxFreeSlabs = 1024;  // 64 MiB kept for reuse at most

  explicit StagedStates(size_t slab_bytes = kSlabBytes);
  StagedStates(const StagedStates&) = delete;
  StagedStates& operator=(const StagedStates&) = delete;
  // Destroys the states not released (their owners go) and frees every slab.
  ~StagedStates();

  // The next `txns` calls of New belong to one group. REQUIRES: txns > 0 and
  // every New of the group opened before already made.
  void OpenGroup(uint32_t txns);
  // A state for the next txn of the open group, constructed on its own
  // arena; keys: the txn's read and write set sizes together, type: its
  // procedure (the two size its first chunk). REQUIRES: a group open with
  // txns left to make.
  PartitionTxn* New(uint32_t keys, uint32_t type = 0);
  // Destroys st; the last of its group releases the group's memory.
  // REQUIRES: st from New of this object, not released before.
  void Release(PartitionTxn* st);

  struct Stats {
    uint64_t groups_open = 0;   // groups with txns not made or not released
    uint64_t states_live = 0;
    uint64_t overflow_slabs = 0;  // slabs txns took beyond their first chunk
    SlabPool::Stats pool;
  };
  Stats stats() const;

 private:
  struct Group;
  struct State;

  // Destroys s (its slabs join its group's); does not free the group.
  void Destroy(State* s);
  void FreeGroup(Group* g);

  SlabPool pool_;  // first: destroyed last
  StagedPool<Group> groups_{256};
  Group* open_ = nullptr;        // the group New takes from
  Group* groups_head_ = nullptr;  // every group not freed
  uint64_t groups_open_ = 0, states_live_ = 0, overflow_slabs_ = 0;
  // What a txn's arena used per key, by procedure type (modulo
  // kTypes; moving averages).
  static constexpr uint32_t kTypes = 32;
  double bytes_per_key_[kTypes];
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_STAGED_STATES_H_
