// PartitionTxn and TxnExecutor: one admitted txn as a partition sees it, and
// the worker-side logic that runs it (read the local records, send them to
// the txn's other executors, take the remote reads, run the stored procedure
// against buffered writes, apply them, reply). Pure logic: no threads, no
// clock, no mutexes. The threaded Scheduler runs it on its workers; the
// simulation (bench/sim) would run it on none.
//
// INPUT:  a PartitionTxn initialised by Init() and granted its locks;
//         remote reads given by AddRemote().
// OUTPUT: Transport::Send of the local reads (SendReads); the store's records
//         (Execute applies the writes); ReplySink::OnTxnResult for the txns
//         this partition coordinates.
//
// Thread-safety: a TxnExecutor is immutable and may be used from many
// threads at once on different txns. REQUIRES: the txn holds every local
// lock it declared (its reads and writes are then the only ones on its keys),
// and a PartitionTxn is used by one thread at a time.
#ifndef DETDB_SCHEDULER_PARTITION_TXN_H_
#define DETDB_SCHEDULER_PARTITION_TXN_H_

#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/partitioner.h"
#include "common/staged_arena.h"
#include "lockmgr/lock_manager.h"
#include "proto/detdb.pb.h"
#include "scheduler/procedure.h"
#include "scheduler/transport.h"
#include "storage/partition_store.h"

namespace detdb {

class ReplySink {
 public:
  virtual ~ReplySink() = default;
  // Called once per txn, by a worker of the txn's coordinating partition.
  virtual void OnTxnResult(const pb::Txn& txn, pb::TxnResult&& result) = 0;
};

// The partitions that take part in txn (readers and writers), and those that
// execute it: the writers, or for a read-only txn its first reader. A txn
// with no keys is run by partition 0.
std::vector<PartitionId> ParticipantsOf(const pb::Txn& txn);
std::vector<PartitionId> ExecutorsOf(const pb::Txn& txn);

// Bytes with stable addresses (a procedure may hold a view of a value it
// wrote while it writes more), reused after Reset without going back to the
// heap: a txn's remote reads, and the values its procedure buffers (each
// worker's own arena, reset per run: TxnExecutor::Run). With a staged
// resource, every value comes from it instead (freed in bulk, Reset a no-op).
class ByteArena {
 public:
  explicit ByteArena(TxnArena* staged = nullptr) : staged_(staged) {}
  // Not copyable or movable: cur_ and end_ point into blocks_.
  ByteArena(const ByteArena&) = delete;
  ByteArena& operator=(const ByteArena&) = delete;
  // 8-aligned, never null (an empty value too takes 8 bytes).
  char* Allocate(size_t n) {
    n = n == 0 ? 8 : (n + 7) & ~size_t{7};
    if (staged_ != nullptr) return static_cast<char*>(staged_->Allocate(n, 8));
    if (n <= static_cast<size_t>(end_ - cur_)) {  // inline: ~25 values per New-Order
      char* p = cur_;
      cur_ += n;
      return p;
    }
    return AllocateOnHeap(n);
  }
  void Reset();
  // p is in one of the arena's heap blocks (for tests; not with a staged
  // resource).
  bool Contains(const void* p) const;

 private:
  char* AllocateOnHeap(size_t n);

  TxnArena* const staged_;
  static constexpr size_t kBlock = 16 << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<std::unique_ptr<char[]>> large_;
  size_t current_ = 0;                          // blocks_[current_] is in use when cur_ is set
  char* cur_ = nullptr;
  char* end_ = nullptr;                         // its free bytes: [cur_, end_)
};

// Everything one partition knows about one admitted txn. Made by the
// partition's lock side (PartitionCore): pooled (reused by later txns, its
// containers keeping their heap capacity) or staged (constructed on the
// txn's TxnArena, common/staged_arena.h, and freed in bulk with its
// sub-batch; scheduler/staged_states.h). Between dispatch and release it
// belongs to one worker at a time (or to the parked table).
struct PartitionTxn {
  using WriteIndex = absl::flat_hash_map<Key, uint32_t, absl::Hash<Key>, std::equal_to<Key>,
                                         std::pmr::polymorphic_allocator<std::pair<const Key, uint32_t>>>;
  // Containers and remote reads' bytes on the heap (pooled); buffered
  // values on the run's value arena (TxnExecutor::Run).
  PartitionTxn() : PartitionTxn(nullptr) {}
  // staged: everything of this txn is allocated from it (and never freed
  // one by one); nullptr: the heap.
  explicit PartitionTxn(TxnArena* mr)
      : staged(mr),
        local_reads(Mr()),
        local_writes(Mr()),
        executors(Mr()),
        reads(Mr()),
        writes(Mr()),
        arena(mr),
        declared_writes(Mr()),
        write_index(WriteIndex::allocator_type(Mr())) {}
  PartitionTxn(const PartitionTxn&) = delete;
  PartitionTxn& operator=(const PartitionTxn&) = delete;

  // A read: local ones point into the store (the txn's lock keeps the record
  // in place and unchanged until release but for the txn's own in-place
  // Updates, which first move the read's view to a copy: BufferedWrite),
  // remote ones into a copy on the txn's `arena`. 32 bytes, no destructor:
  // a txn's reads are made and cleared on every txn.
  struct Value {
    Key key;
    bool found;
    // The procedure holds a view of it (Read gave one): an Update of the key
    // then copies it out (BufferedWrite::in_place).
    bool viewed = false;
    uint32_t size;
    const char* data;  // the value's bytes (never nullptr if found; nullptr if not)
    // A local read's record (data == record->value() until an in-place
    // Update of the key moves data to a copy), else nullptr. Its
    // address holds until release, like `data`: a write through it needs no
    // second lookup (TxnContext::Update).
    Record* record = nullptr;
    std::string_view view() const { return std::string_view(data, size); }
  };
  static_assert(sizeof(Value) == 32);
  TxnArena* const staged;
  void* alloc_tag = nullptr;  // the allocator's (staged_states.h)
  LockTxn lt;
  const pb::Txn* txn = nullptr;
  std::shared_ptr<const void> owner;  // keeps *txn alive until the txn is released
  std::pmr::vector<Key> local_reads, local_writes;
  std::pmr::vector<PartitionId> executors;  // ExecutorsOf(*txn)
  bool reader = false, executor = false, coordinator = false, resumed = false;
  bool table_op = false;  // txn->has_table_op(): admitted alone (PartitionCore)
  uint32_t remote_expected = 0, remote_received = 0;
  std::pmr::vector<Value> reads;                       // local, then remote
  struct BufferedWrite {
    Key key;
    // value_size bytes: in the run's value arena (TxnExecutor::Run), or the
    // record's own (in_place()). Dead once Run returns.
    char* value;
    uint32_t size;
    bool erase;   // a Delete
    // The key's record when the value came from a local read of it
    // (TxnContext::Update): the apply writes into it without a lookup. The
    // txn's lock keeps the record in place, and its own Delete is buffered
    // in this same entry, so when the final state is a value the record is
    // still the key's. nullptr: the apply finds or inserts the record.
    Record* record = nullptr;
    // An Update of a declared read and write of a local record changes the
    // record itself, with no copy out and back: the stored value first
    // moves to a copy on the run's value arena, which the txn's read of the key views
    // from then on (so Read still sees the stored value) and which goes
    // back into the record if the procedure fails (ExecContext::Rollback).
    // The txn's lock keeps other txns off the record and its IX intent lock
    // keeps whole-table operations off the table (AcquireIntents takes it
    // for every declared write before the procedure runs), so nobody sees
    // the record between the change and the txn's release.
    bool in_place() const { return record != nullptr && value == record->value(); }
  };
  std::pmr::vector<BufferedWrite> writes;              // buffered by the procedure
  // One bit per buffered key (WriteBit): a key whose bit is clear has no
  // buffered write, so a new key's Write skips the search of `writes`.
  uint64_t write_filter = 0;
  // The remote reads' bytes; and the buffered values of a run given no
  // worker arena, or of a staged txn (TxnExecutor::Run).
  ByteArena arena;
  // Large txns only (see kIndexAbove): reads sorted by key, declared write
  // keys sorted, and buffered writes by key, so Read/Write stay O(log n).
  bool indexed = false;
  // PrefetchRecords (PrefetchBuckets) ran for this step: ReadLocal does
  // not hint the records (the buckets) again.
  bool prefetched = false;
  bool buckets_hinted = false;
  std::pmr::vector<Key> declared_writes;
  WriteIndex write_index;

  // An executor that still waits for another participant's reads.
  bool MissingRemoteReads() const { return remote_received < remote_expected; }

 private:
  std::pmr::memory_resource* Mr() const {
    return staged != nullptr ? static_cast<std::pmr::memory_resource*>(staged) : std::pmr::new_delete_resource();
  }
};

class TxnExecutor {
 public:
  // Everything passed must outlive the executor. transport and replies may
  // be null only if no txn needs them (no multi-partition txn, no
  // coordinator).
  TxnExecutor(PartitionId self, PartitionStore* store, const Partitioner* partitioner,
              const ProcedureRegistry* procedures, Transport* transport, ReplySink* replies)
      : self_(self),
        store_(store),
        partitioner_(partitioner),
        procedures_(procedures),
        transport_(transport),
        replies_(replies) {}

  PartitionId partition() const { return self_; }
  const Partitioner* partitioner() const { return partitioner_; }

  // Makes st describe txn at this partition (local keys, executors, the
  // remote reads to expect) and readies st->lt for LockManager::Lock.
  void Init(PartitionTxn* st, const pb::Txn* txn, std::shared_ptr<const void> owner) const;

  // Worker side, in this order: (optionally, as cache hints, PrefetchBuckets
  // and then PrefetchRecords, see below); AcquireIntents; ReadLocal; SendReads if
  // st->reader; then a passive participant (!st->executor) is done, an
  // executor runs Execute once !MissingRemoteReads() (AcquireIntents again
  // first if that is a later step, e.g. resumed after parking). A table
  // operation (st->txn->has_table_op()) runs RunTableOp instead of all that.
  //
  // Intent locks (storage/intent_lock.h) through the worker's agent, for
  // the step: IS on the partition and on the tables of the local reads, IX
  // instead where a local key is written (in increasing lock id, so that a
  // scan's S waiting for them cannot close a cycle). Covered reads and
  // replicated reads take IS as they go, writes to covered keys' tables IX
  // before the writes are applied. The agent's fast path touches only its
  // own memory; the worker ends the step with IntentAgent::EndTxn.
  void AcquireIntents(const PartitionTxn* st, IntentAgent* agent) const;
  // Cache hints for a txn this worker will run soon, so that its lookups'
  // misses overlap the txns before it: PrefetchBuckets starts loading the
  // index buckets of st's local reads, PrefetchRecords (later: it reads
  // those buckets) their first records. No store or lock state changes
  // (PrefetchRecords marks st prefetched, so that ReadLocal does not hint
  // the same lines again); the hinted memory may be stale by the time st
  // runs (it only costs the hint). Both do nothing for a resumed txn (its
  // ReadLocal ran) or a table operation. REQUIRES: the caller is an epoch
  // participant, online, and the only user of st.
  void PrefetchBuckets(PartitionTxn* st) const;
  void PrefetchRecords(PartitionTxn* st) const;
  void ReadLocal(PartitionTxn* st) const;
  void SendReads(PartitionTxn* st) const;
  // Copies msg's reads onto st's arena (msg stays the caller's).
  static void AddRemote(PartitionTxn* st, const pb::RemoteReads& msg);
  // Runs the procedure and applies its writes if it returned OK; if st
  // coordinates, fills *result with the reply (else leaves it untouched).
  // Returns whether it committed (false: a deterministic abort). A runner
  // that counts outcomes counts them before it calls Reply, so that a client
  // that has its reply never sees a count without its txn.
  // The procedure's buffered values and undo copies live only until Run
  // returns: `values`, if given, holds them (Reset here first), so a worker
  // passes one arena of its own for all its txns, whose bytes stay in its
  // core's cache; a pooled state's own arena was last touched a whole
  // window of txns ago (docs/ENGINE.md, "The worker's value arena").
  // nullptr, or a staged st: st's own arena.
  // REQUIRES: no other thread uses `values` during the call.
  bool Run(PartitionTxn* st, pb::TxnResult* result, IntentAgent* agent, ByteArena* values = nullptr) const;
  // A table operation's part on this partition: IX on the partition, X on
  // the table (waiting for scans, revoking the workers' cached intents),
  // then the truncate or this partition's rows of the bulk load. Fills
  // *result if st coordinates; always commits. REQUIRES: no other txn of
  // the partition in flight (PartitionCore runs a table operation alone).
  bool RunTableOp(PartitionTxn* st, pb::TxnResult* result, IntentAgent* agent) const;
  // Sends the coordinator's reply that Run filled. REQUIRES: st->coordinator.
  void Reply(const PartitionTxn* st, pb::TxnResult&& result) const { replies_->OnTxnResult(*st->txn, std::move(result)); }
  // Run, then Reply if st coordinates.
  bool Execute(PartitionTxn* st, IntentAgent* agent, ByteArena* values = nullptr) const {
    pb::TxnResult r;
    const bool ok = Run(st, &r, agent, values);
    if (st->coordinator) Reply(st, std::move(r));
    return ok;
  }

 private:
  class ExecContext;  // scheduler/exec_context.h
  // Fills *reply (if st coordinates) with s and result.
  void FillReply(const PartitionTxn* st, const absl::Status& s, std::string result, pb::TxnResult* reply) const;

  const PartitionId self_;
  PartitionStore* const store_;
  const Partitioner* const partitioner_;
  const ProcedureRegistry* const procedures_;
  Transport* const transport_;
  ReplySink* const replies_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PARTITION_TXN_H_
