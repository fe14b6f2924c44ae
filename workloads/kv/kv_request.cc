#include "workloads/kv/kv_request.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace detdb {
namespace {

// Fills the txn's type, args and key sets, then checks it as the node will.
absl::StatusOr<pb::Txn> Build(uint32_t type, const pb::KvArgs& args) {
  pb::Txn t;
  t.set_type(type);
  args.SerializeToString(t.mutable_args());
  // Key sets first from what parses; ValidateKvTxn then checks everything.
  t.add_read_set(KvKeyOf(args.key()));
  if (type == kKvTransfer) t.add_read_set(KvKeyOf(args.to()));
  if (type != kKvGet) *t.mutable_write_set() = t.read_set();
  absl::Status s = ValidateKvTxn(t);
  if (!s.ok()) return s;
  return t;
}

}  // namespace

pb::KvValue KvBytes(std::string_view bytes) {
  pb::KvValue v;
  v.set_bytes(std::string(bytes));
  return v;
}

pb::KvValue KvInt(int64_t value) {
  pb::KvValue v;
  v.set_int_(value);
  return v;
}

pb::KvValue KvList(const std::vector<std::string>& items) {
  pb::KvValue v;
  for (const std::string& i : items) v.mutable_list()->add_items(i);
  if (items.empty()) v.mutable_list();
  return v;
}

absl::StatusOr<pb::Txn> KvGetRequest(std::string_view key) {
  pb::KvArgs a;
  a.set_key(std::string(key));
  return Build(kKvGet, a);
}

absl::StatusOr<pb::Txn> KvPutRequest(std::string_view key, const pb::KvValue& value) {
  pb::KvArgs a;
  a.set_key(std::string(key));
  *a.mutable_value() = value;
  return Build(kKvPut, a);
}

absl::StatusOr<pb::Txn> KvDeleteRequest(std::string_view key) {
  pb::KvArgs a;
  a.set_key(std::string(key));
  return Build(kKvDelete, a);
}

absl::StatusOr<pb::Txn> KvCasRequest(std::string_view key, const std::optional<pb::KvValue>& expected,
                                     const pb::KvValue& value) {
  pb::KvArgs a;
  a.set_key(std::string(key));
  if (expected.has_value()) {
    *a.mutable_expected() = *expected;
  } else {
    a.set_expect_absent(true);
  }
  *a.mutable_value() = value;
  return Build(kKvCas, a);
}

absl::StatusOr<pb::Txn> KvTransferRequest(std::string_view from, std::string_view to, int64_t amount) {
  pb::KvArgs a;
  a.set_key(std::string(from));
  a.set_to(std::string(to));
  a.set_amount(amount);
  return Build(kKvTransfer, a);
}

absl::StatusOr<pb::Txn> KvAppendRequest(std::string_view key, std::string_view element) {
  pb::KvArgs a;
  a.set_key(std::string(key));
  a.set_element(std::string(element));
  return Build(kKvAppend, a);
}

absl::StatusOr<KvReply> ParseKvReply(const pb::Txn& txn, const pb::TxnResult& result) {
  const std::string what = IsKvType(txn.type()) ? KvTypeName(txn.type()) : "txn";
  switch (result.status()) {
    case pb::STATUS_OK:
      break;
    case pb::STATUS_ABORTED:
      return absl::AbortedError(absl::StrCat(what, " aborted: ", result.error()));
    case pb::STATUS_INVALID_ARGUMENT:
      return absl::InvalidArgumentError(absl::StrCat(what, " refused: ", result.error()));
    case pb::STATUS_UNAVAILABLE:
      return absl::UnavailableError(absl::StrCat(what, ": node unavailable: ", result.error()));
    case pb::STATUS_NOT_FOUND:
      return absl::NotFoundError(absl::StrCat(what, ": ", result.error()));
    default:
      return absl::InternalError(absl::StrCat(what, ": ", result.error()));
  }
  pb::KvResult r;
  if (!r.ParseFromString(result.result()))
    return absl::InternalError(absl::StrCat(what, ": the result does not parse as detdb.pb.KvResult"));
  KvReply out;
  out.outcome = r.outcome();
  if (r.has_value()) out.value = r.value();
  out.from_balance = r.from_balance();
  out.to_balance = r.to_balance();
  out.count = r.count();
  return out;
}

std::string KvValueToString(const pb::KvValue& value) {
  switch (value.v_case()) {
    case pb::KvValue::kBytes:
      return absl::StrCat("\"", absl::CHexEscape(value.bytes()), "\"");
    case pb::KvValue::kInt:
      return absl::StrCat(value.int_());
    case pb::KvValue::kList: {
      std::string s = "[";
      for (int i = 0; i < value.list().items_size(); ++i)
        absl::StrAppend(&s, i == 0 ? "" : ", ", "\"", absl::CHexEscape(value.list().items(i)), "\"");
      return s + "]";
    }
    default:
      return "(none)";
  }
}

}  // namespace detdb
