// The key-value workload's typed requests, for programs: builders of the
// pb::Txn of each procedure (type, arguments, read and write sets; the caller
// sets client_id and client_seq) and the parser of their results. No
// network here: send the txn with client/client.h (Client::Run) or submit it
// to an Engine; deploy/kv_client.h wraps both for a cluster.
//
//   absl::StatusOr<pb::Txn> t = KvPutRequest("alice", KvInt(100));
//   ... result = client->Run(*t, timeout) ...
//   absl::StatusOr<KvReply> r = ParseKvReply(*t, result);   // r->value, r->outcome
//
// Builders return InvalidArgument for what the node would refuse (key or
// value sizes, a non-positive amount, ...), with the node's message.
//
// Thread-safety: pure functions.
#ifndef DETDB_WORKLOADS_KV_KV_REQUEST_H_
#define DETDB_WORKLOADS_KV_KV_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/detdb.pb.h"
#include "proto/kv.pb.h"
#include "workloads/kv/kv.h"

namespace detdb {

pb::KvValue KvBytes(std::string_view bytes);
pb::KvValue KvInt(int64_t value);
pb::KvValue KvList(const std::vector<std::string>& items);

absl::StatusOr<pb::Txn> KvGetRequest(std::string_view key);
absl::StatusOr<pb::Txn> KvPutRequest(std::string_view key, const pb::KvValue& value);
absl::StatusOr<pb::Txn> KvDeleteRequest(std::string_view key);
// expected: nullopt means "only if the key is absent".
absl::StatusOr<pb::Txn> KvCasRequest(std::string_view key, const std::optional<pb::KvValue>& expected,
                                     const pb::KvValue& value);
absl::StatusOr<pb::Txn> KvTransferRequest(std::string_view from, std::string_view to, int64_t amount);
absl::StatusOr<pb::Txn> KvAppendRequest(std::string_view key, std::string_view element);

// A kv txn's outcome as a program sees it.
struct KvReply {
  // Committed: true for every OK txn (a get of an absent key and a failed cas
  // commit too; see outcome).
  pb::KvResult::Outcome outcome = pb::KvResult::OK;
  std::optional<pb::KvValue> value;  // get: the value; cas mismatch: the current one
  int64_t from_balance = 0, to_balance = 0;  // transfer
  uint64_t count = 0;                        // append: list length after it
};

// The reply to txn. OK for a committed txn; otherwise the txn's error as a
// Status: Aborted (the procedure refused it: wrong type, insufficient
// funds, ...), InvalidArgument (refused before sequencing), Unavailable,
// NotFound (an outcome query for a txn the node never accepted), Internal.
absl::StatusOr<KvReply> ParseKvReply(const pb::Txn& txn, const pb::TxnResult& result);

// "hello" / 42 / ["a", "b"]: a value as one line, bytes C-escaped.
std::string KvValueToString(const pb::KvValue& value);
// The type's name: KvValueType in kv.h.

}  // namespace detdb

#endif  // DETDB_WORKLOADS_KV_KV_REQUEST_H_
