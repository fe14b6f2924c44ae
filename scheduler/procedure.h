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
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
  // Sets the value of `key`, applied when the procedure returns OK.
  // InvalidArgument if key is not in the write set or the value size differs
  // from the table's record size.
  virtual absl::Status Write(Key key, std::string_view value) = 0;
};

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

 private:
  struct Entry {
    std::string name;
    Procedure proc = nullptr;
  };
  std::vector<Entry> procs_;  // indexed by type
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PROCEDURE_H_
