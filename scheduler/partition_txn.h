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
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/partitioner.h"
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
  virtual void OnTxnResult(const pb::Txn& txn, pb::TxnResult result) = 0;
};

// The partitions that take part in txn (readers and writers), and those that
// execute it: the writers, or for a read-only txn its first reader. A txn
// with no keys is run by partition 0.
std::vector<PartitionId> ParticipantsOf(const pb::Txn& txn);
std::vector<PartitionId> ExecutorsOf(const pb::Txn& txn);

// Bytes for one txn's buffered writes: stable addresses (a procedure may
// hold a view of a value it wrote while it writes more), reused by the next
// txn of the PartitionTxn without going back to the heap.
class ByteArena {
 public:
  char* Allocate(size_t n);
  void Reset();

 private:
  static constexpr size_t kBlock = 16 << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<std::unique_ptr<char[]>> large_;
  size_t current_ = 0, used_ = 0;
};

// Everything one partition knows about one admitted txn. Pooled by the
// partition's lock side (PartitionCore); between dispatch and release it
// belongs to one worker at a time (or to the parked table).
struct PartitionTxn {
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
  // One bit per buffered key (WriteBit): a key whose bit is clear has no
  // buffered write, so a new key's Write skips the search of `writes`.
  uint64_t write_filter = 0;
  ByteArena arena;                                     // the buffered values
  // Large txns only (see kIndexAbove): reads sorted by key, declared write
  // keys sorted, and buffered writes by key, so Read/Write stay O(log n).
  bool indexed = false;
  std::vector<Key> declared_writes;
  absl::flat_hash_map<Key, uint32_t> write_index;

  // An executor that still waits for another participant's reads.
  bool MissingRemoteReads() const { return remote_received < remote_expected; }
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

  // Worker side, in this order: ReadLocal; SendReads if st->reader; then a
  // passive participant (!st->executor) is done, an executor runs Execute
  // once !MissingRemoteReads().
  void ReadLocal(PartitionTxn* st) const;
  void SendReads(PartitionTxn* st) const;
  static void AddRemote(PartitionTxn* st, pb::RemoteReads* msg);
  // Runs the procedure and applies its writes if it returned OK; if st
  // coordinates, fills *result with the reply (else leaves it untouched).
  // Returns whether it committed (false: a deterministic abort). A runner
  // that counts outcomes counts them before it calls Reply, so that a client
  // that has its reply never sees a count without its txn.
  bool Run(PartitionTxn* st, pb::TxnResult* result) const;
  // Sends the coordinator's reply that Run filled. REQUIRES: st->coordinator.
  void Reply(const PartitionTxn* st, pb::TxnResult result) const { replies_->OnTxnResult(*st->txn, std::move(result)); }
  // Run, then Reply if st coordinates.
  bool Execute(PartitionTxn* st) const {
    pb::TxnResult r;
    const bool ok = Run(st, &r);
    if (st->coordinator) Reply(st, std::move(r));
    return ok;
  }

 private:
  class ExecContext;

  const PartitionId self_;
  PartitionStore* const store_;
  const Partitioner* const partitioner_;
  const ProcedureRegistry* const procedures_;
  Transport* const transport_;
  ReplySink* const replies_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PARTITION_TXN_H_
