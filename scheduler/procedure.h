// Stored procedures: a registry from txn type to a deterministic C++
// function. A procedure reads only keys of its txn's read set, writes only
// keys of its write set, and returns a result; it must not use clocks,
// unseeded randomness, or the iteration order of unordered containers
// (ARCHITECTURE.md, contract 2). Randomness it needs derives from txn().id().
//
// A procedure that returns an error aborts the txn deterministically: the
// same error on every participant, no write applied.
//
// Thread-safety: a ProcedureRegistry is immutable once the engine starts;
// procedures are called concurrently from many workers (on different txns).
#ifndef DETDB_SCHEDULER_PROCEDURE_H_
#define DETDB_SCHEDULER_PROCEDURE_H_

#include <cstdint>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "proto/detdb.pb.h"

namespace detdb {

// What a procedure sees of its txn and the database.
class TxnContext {
 public:
  virtual ~TxnContext() = default;
  virtual const pb::Txn& txn() const = 0;
  // The value of `key`. InvalidArgument if key is not in the read set;
  // NotFound if there is no record. Valid until the procedure returns.
  virtual absl::StatusOr<std::string_view> Read(Key key) = 0;
  // Sets the value of `key` (creating the record if absent), applied when
  // the procedure returns OK. InvalidArgument if key is not in the write set
  // or the value size differs from the table's record size.
  virtual absl::Status Write(Key key, std::string_view value) = 0;
  // Removes `key`'s record (if any) when the procedure returns OK; a later
  // Write of the key in the same txn puts it back. Same rules as Write.
  virtual absl::Status Delete(Key key) = 0;
  // A read-modify-write of a whole record without copying it out and back:
  // the key's buffered write, writable in place (8-byte aligned, the
  // table's record size), applied when the procedure returns OK as a Write
  // would be. The first Update of a key fills the buffer with the txn's
  // view of it (Read's: the stored value of a declared read, or a covered
  // key's); a later Update of the same key, or one after a Write of it,
  // returns the same buffer with what the txn has put there so far (unlike
  // Read of a declared key, which always sees the stored value). The
  // bytes are valid until the procedure returns; a later Write of the key
  // overwrites its bytes, and after a Delete of the key they are no longer
  // the key's value. Errors, in the order a Read then a Write would give
  // them: Read's (InvalidArgument if the key is not readable,
  // FailedPrecondition for a covered key of another partition, NotFound if
  // there is no record or the txn deleted it), then Write's (the key must
  // be written: declared or covered; not during a Scan's visit). (The
  // engine may hand out the record's own bytes, keeping a copy to read and
  // to roll back to: nothing a procedure can observe differs; docs/ENGINE.md,
  // "In-place Update".)
  virtual absl::StatusOr<absl::Span<char>> Update(Key key) = 0;
  // The value of `key` in a replicated, read-only table (loaded on every
  // partition, never written afterwards: e.g. TPC-C's ITEM), from this
  // partition's copy, without a lock. NotFound if there is no record.
  virtual absl::StatusOr<std::string_view> ReadReplicated(Key key) = 0;
  // A hint that these keys (of any tables) will be read soon: an
  // implementation may start loading them, so that a procedure overlaps the
  // cache misses of several reads. No effect on results.
  virtual void Prefetch(std::span<const Key> keys) {}
  // Visits the records of the keys in [lo, hi] of one ordered table
  // (TableOptions::ordered) in increasing key order (decreasing if reverse)
  // until visit(key, value) returns false. Like a covered read it sees the
  // txn's own earlier writes and deletes in the range, and its views are
  // valid until the procedure returns. The range must be covered (see
  // RangeCover below) by a key of the txn's read or write set: that lock
  // keeps every other txn out of the range while this one runs, so the
  // scan sees what it would see in a serial execution. InvalidArgument if
  // it is not, if lo > hi or the keys are of two tables, or if the table is
  // not ordered; FailedPrecondition on an executor of another partition
  // than the range's (as for a covered read, see below). visit may Read and
  // Scan again, but a Write or Delete while any scan's visit runs fails with
  // InvalidArgument, a bug in the procedure that aborts the txn (collect
  // what to write, then write after the scan).
  virtual absl::Status Scan(Key lo, Key hi, bool reverse,
                            absl::FunctionRef<bool(Key key, std::string_view value)> visit) = 0;
};

// Covered keys. A workload may say that the lock of one key covers other
// keys (e.g. TPC-C: a district's key covers its orders, new orders and
// order lines, whose ids are only known inside the txn). cover(k) is the
// covering key of k, or k itself. A procedure may then
//  - Write/Delete a covered key if its cover is in the write set, and
//  - Read a covered key if its cover is in the read or write set; the read
//    sees the txn's own earlier writes and deletes of covered keys.
// Covered keys must live on the partition of their cover. Covered reads are
// not exchanged as remote reads: on an executor of another partition (a
// multi-partition txn runs its procedure on every writing partition) a
// covered read fails with FailedPrecondition, and the procedure may then
// skip work whose writes would not be applied there anyway, provided its
// outcome and result do not depend on it (TPC-C's Payment of a remote
// customer skips the HISTORY insert on the customer's partition). Every txn
// touching a covered key must lock its cover, and only the cover: the engine
// refuses a txn that declares a covered key itself (Engine::Validate), whose
// lock would not keep out the txns that hold the cover (a scan of the
// cover's range would see its write or not, depending on timing).
using KeyCover = Key (*)(Key key);

// Covered ranges, for TxnContext::Scan: true, with *cover set, if one key's
// lock covers every key of [lo, hi], i.e. KeyCover(k) == *cover != k for
// every k in the range (the workload's keys must make that hold for the
// whole interval, not just its ends: e.g. the range lies within one
// district's rows of one table, and those are contiguous keys). Every txn
// that inserts or deletes a key of the range locks *cover for writing
// (the KeyCover rule), so a txn that holds *cover, even for reading, sees
// the range change only by its own writes.
using RangeCover = bool (*)(Key lo, Key hi, Key* cover);

class Table;

// For TxnContext implementations: Write's and Delete's check of the target
// table (value == nullptr for a Delete). InvalidArgument if table is null
// (no table KeyTable(key)) or the value has another size than its records.
absl::Status CheckWriteTarget(const Table* table, Key key, const std::string_view* value);

// For TxnContext implementations: Scan's checks of its arguments but the
// lock (lo <= hi, one table, which exists and is ordered, and a covered
// range); *cover: the key whose lock the txn must hold.
absl::Status CheckScanRange(RangeCover range_cover, const Table* table, Key lo, Key hi, Key* cover);

// For TxnContext implementations: the body of Scan once its checks passed.
// Visits table's records of [lo, hi] (Table::Scan) merged with the txn's
// own writes to the range (`own`, in any order; it is sorted here): a
// buffered write replaces the stored value, a buffered delete hides it.
struct OwnWrite {
  Key key;
  std::string_view value;  // ignored for a delete
  bool erase;
};
void ScanWithOwnWrites(const Table& table, Key lo, Key hi, bool reverse, std::vector<OwnWrite>* own,
                       absl::FunctionRef<bool(Key key, std::string_view value)> visit);
// For TxnContext implementations: Write's and Delete's error while a Scan
// visits (InvalidArgument).
absl::Status WriteInScan();

// result: what the client receives on commit.
using Procedure = absl::Status (*)(TxnContext* ctx, std::string* result);

class ProcedureRegistry {
 public:
  // InvalidArgument if type is taken or proc is null.
  absl::Status Register(uint32_t type, std::string name, Procedure proc);
  // nullptr if no procedure has this type.
  Procedure Find(uint32_t type) const {
    return type < procs_.size() ? procs_[type].proc : nullptr;
  }
  std::string_view NameOf(uint32_t type) const;
  // The workload's key cover (nullptr: no key covers another).
  void SetKeyCover(KeyCover cover) { cover_ = cover; }
  KeyCover key_cover() const { return cover_; }
  // The workload's range cover (nullptr: no range may be scanned).
  void SetRangeCover(RangeCover cover) { range_cover_ = cover; }
  RangeCover range_cover() const { return range_cover_; }

 private:
  struct Entry {
    std::string name;
    Procedure proc = nullptr;
  };
  std::vector<Entry> procs_;  // indexed by type
  KeyCover cover_ = nullptr;
  RangeCover range_cover_ = nullptr;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PROCEDURE_H_
