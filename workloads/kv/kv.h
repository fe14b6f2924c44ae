// The key-value workload (docs/KV.md): one table of byte-string keys and
// typed values (bytes, a signed 64-bit integer, or a list of byte strings)
// and six stored procedures: get, put, delete, cas (compare and set),
// transfer (between two integer balances) and append (to a list).
//
// Keys. A key of 1..kKvMaxKeyBytes bytes is stored under the detdb key
// KvKeyOf(key) = MakeKey(kKvTable, Mix64(FNV-1a(key)) & kRowMask): its
// partition (ModPartitioner: row mod partitions) is a hash of the bytes, so
// a transfer between two keys is a multi-partition txn when they hash to
// different partitions. The record keeps the key's bytes: two keys with the
// same 56-bit hash are detected (the later one's txns abort with "hash
// collision"), never confused.
//
// Records (table kKvTable, fixed kKvRecordBytes each, unused bytes zero so
// digests depend on contents only):
//   [0] type (1 bytes, 2 int, 3 list)  [1] key length  [2..3] value length (LE)
//   [4 .. 4+kKvMaxKeyBytes) key bytes  [132 .. 132+kKvMaxValueBytes) value:
//   bytes: as is; int: 8 bytes LE two's complement; list: per element a
//   2-byte LE length and its bytes. The encoded value is at most
//   kKvMaxValueBytes (a list of n elements: sum of lengths + 2n).
//
// Arguments and results are pb::KvArgs / pb::KvResult (proto/kv.proto).
// ValidateKvTxn checks a txn before sequencing (arguments parse, sizes,
// types, and read/write sets exactly the keys the arguments name); the
// procedures check the same again and abort deterministically otherwise, so
// a bad txn that slipped in (e.g. from a peer) cannot make replicas differ.
// Deterministic aborts (STATUS_ABORTED, with the reason as the error): a
// value of the wrong type (transfer on bytes, append to an int), insufficient
// funds, a balance overflow, a list that would outgrow kKvMaxValueBytes, a
// hash collision.
//
// Thread-safety: the procedures are pure functions of their txn and reads;
// everything else here is a pure function too.
#ifndef DETDB_WORKLOADS_KV_KV_H_
#define DETDB_WORKLOADS_KV_KV_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"
#include "proto/detdb.pb.h"
#include "proto/kv.pb.h"
#include "scheduler/procedure.h"
#include "storage/partition_store.h"

namespace detdb {

// A value's type name: "bytes", "int", "list", or "none" (unset).
const char* KvValueType(const pb::KvValue& value);

inline constexpr uint32_t kKvTable = 40;
inline constexpr uint32_t kKvGet = 40, kKvPut = 41, kKvDelete = 42, kKvCas = 43, kKvTransfer = 44, kKvAppend = 45;
inline constexpr uint32_t kKvFirstType = kKvGet, kKvLastType = kKvAppend;

inline constexpr size_t kKvMaxKeyBytes = 128;
inline constexpr size_t kKvMaxValueBytes = 1024;
inline constexpr size_t kKvRecordHeader = 4;
inline constexpr size_t kKvRecordBytes = kKvRecordHeader + kKvMaxKeyBytes + kKvMaxValueBytes;
// Arguments larger than this cannot be valid (a cas carries two values).
inline constexpr size_t kKvMaxArgsBytes = 4 * (kKvMaxKeyBytes + kKvMaxValueBytes);
// Records each partition's table is sized for at first (it grows online).
inline constexpr uint64_t kKvInitialRecords = 4096;

inline bool IsKvType(uint32_t type) { return type >= kKvFirstType && type <= kKvLastType; }
// "get", "put", ...; "" for another type.
const char* KvTypeName(uint32_t type);

// The detdb key of a key's bytes (see above).
Key KvKeyOf(std::string_view key);

// Registers the six procedures under kKvGet .. kKvAppend.
absl::Status RegisterKvProcedures(ProcedureRegistry* registry);

// Creates table kKvTable ("kv", empty) in *store. AlreadyExists if present.
absl::Status CreateKvTable(PartitionStore* store);

// OK iff key is 1..kKvMaxKeyBytes bytes; else InvalidArgument naming what.
absl::Status CheckKvKey(std::string_view key, const char* what = "key");
// OK iff value has exactly one type and encodes in kKvMaxValueBytes.
absl::Status CheckKvValue(const pb::KvValue& value, const char* what = "value");
// Bytes value's record encoding takes (see above). REQUIRES: a type is set.
size_t KvEncodedSize(const pb::KvValue& value);

// What a node checks before sequencing a txn of a kv type: the arguments
// parse and are valid for the type, and the read and write sets are exactly
// the keys they name. InvalidArgument with a clear message otherwise; OK
// (nothing checked) for a txn of another type.
absl::Status ValidateKvTxn(const pb::Txn& txn);

// The typed value of a record of table kKvTable (for tests and tools):
// *key gets the key's bytes. DataLoss if the record is malformed.
absl::StatusOr<pb::KvValue> DecodeKvRecord(std::string_view record, std::string* key);

}  // namespace detdb

#endif  // DETDB_WORKLOADS_KV_KV_H_
