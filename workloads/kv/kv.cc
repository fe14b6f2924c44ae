#include "workloads/kv/kv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace detdb {
namespace {

enum StoredType : uint8_t { kStoredBytes = 1, kStoredInt = 2, kStoredList = 3 };

std::string Quote(std::string_view s) {
  const std::string_view head = s.size() > 40 ? s.substr(0, 40) : s;
  return absl::StrCat("\"", absl::CHexEscape(absl::string_view(head.data(), head.size())),
                      s.size() > 40 ? "...\"" : "\"");
}

}  // namespace

const char* KvValueType(const pb::KvValue& v) {
  switch (v.v_case()) {
    case pb::KvValue::kBytes:
      return "bytes";
    case pb::KvValue::kInt:
      return "int";
    case pb::KvValue::kList:
      return "list";
    default:
      return "none";
  }
}

namespace {

void PutU16(char* p, size_t v) {
  p[0] = static_cast<char>(v & 0xff);
  p[1] = static_cast<char>((v >> 8) & 0xff);
}
size_t GetU16(const char* p) {
  return static_cast<unsigned char>(p[0]) | (static_cast<size_t>(static_cast<unsigned char>(p[1])) << 8);
}

// The record of key with value (zero-padded to kKvRecordBytes).
// REQUIRES: CheckKvKey(key), CheckKvValue(value) ok.
std::string EncodeRecord(std::string_view key, const pb::KvValue& value) {
  std::string r(kKvRecordBytes, '\0');
  char* v = r.data() + kKvRecordHeader + kKvMaxKeyBytes;
  size_t n = 0;
  switch (value.v_case()) {
    case pb::KvValue::kBytes:
      r[0] = static_cast<char>(kStoredBytes);
      std::memcpy(v, value.bytes().data(), value.bytes().size());
      n = value.bytes().size();
      break;
    case pb::KvValue::kInt: {
      r[0] = static_cast<char>(kStoredInt);
      const uint64_t x = static_cast<uint64_t>(value.int_());
      for (int i = 0; i < 8; ++i) v[i] = static_cast<char>((x >> (8 * i)) & 0xff);
      n = 8;
      break;
    }
    default:
      r[0] = static_cast<char>(kStoredList);
      for (const std::string& item : value.list().items()) {
        PutU16(v + n, item.size());
        std::memcpy(v + n + 2, item.data(), item.size());
        n += 2 + item.size();
      }
  }
  r[1] = static_cast<char>(key.size());
  PutU16(r.data() + 2, n);
  std::memcpy(r.data() + kKvRecordHeader, key.data(), key.size());
  return r;
}

// A key's current value: absent (nullopt inside), or its typed value.
struct Current {
  bool present = false;
  pb::KvValue value;
};

absl::StatusOr<Current> ReadCurrent(TxnContext* ctx, std::string_view key) {
  absl::StatusOr<std::string_view> rec = ctx->Read(KvKeyOf(key));
  Current c;
  if (absl::IsNotFound(rec.status())) return c;
  if (!rec.ok()) return rec.status();
  std::string stored_key;
  absl::StatusOr<pb::KvValue> v = DecodeKvRecord(*rec, &stored_key);
  if (!v.ok()) return v.status();
  if (stored_key != key)
    return absl::AbortedError(absl::StrCat("hash collision: key ", Quote(key), " and the stored key ",
                                           Quote(stored_key), " share a 56-bit hash; use another key"));
  c.present = true;
  c.value = std::move(*v);
  return c;
}

absl::Status WriteValue(TxnContext* ctx, std::string_view key, const pb::KvValue& value) {
  return ctx->Write(KvKeyOf(key), EncodeRecord(key, value));
}

absl::Status Reply(const pb::KvResult& r, std::string* result) {
  r.SerializeToString(result);
  return absl::OkStatus();
}

// Parses and checks txn's arguments for its type (not its key sets).
absl::StatusOr<pb::KvArgs> ParseArgs(const pb::Txn& txn) {
  const std::string name = KvTypeName(txn.type());
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("txn type ", txn.type(), " is not a kv procedure"));
  if (txn.args().size() > kKvMaxArgsBytes)
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": arguments of ", txn.args().size(), " bytes; the limit is ", kKvMaxArgsBytes));
  pb::KvArgs a;
  if (!a.ParseFromString(txn.args()))
    return absl::InvalidArgumentError(absl::StrCat(name, ": arguments do not parse as detdb.pb.KvArgs"));
  absl::Status s = CheckKvKey(a.key(), txn.type() == kKvTransfer ? "from key" : "key");
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
  switch (txn.type()) {
    case kKvPut:
      s = CheckKvValue(a.value());
      break;
    case kKvCas:
      s = CheckKvValue(a.value(), "new value");
      if (s.ok() && a.expect_absent() && a.has_expected())
        s = absl::InvalidArgumentError("give an expected value or expect_absent, not both");
      if (s.ok() && !a.expect_absent()) s = CheckKvValue(a.expected(), "expected value");
      break;
    case kKvTransfer:
      s = CheckKvKey(a.to(), "to key");
      if (s.ok() && a.to() == a.key()) s = absl::InvalidArgumentError("from and to are the same key");
      if (s.ok() && KvKeyOf(a.to()) == KvKeyOf(a.key()))
        s = absl::InvalidArgumentError("from and to keys share a hash (a collision); use other keys");
      if (s.ok() && a.amount() <= 0)
        s = absl::InvalidArgumentError(absl::StrCat("amount must be positive, not ", a.amount()));
      break;
    case kKvAppend:
      if (a.element().size() + 2 > kKvMaxValueBytes)
        s = absl::InvalidArgumentError(absl::StrCat("element of ", a.element().size(), " bytes; the limit is ",
                                                    kKvMaxValueBytes - 2));
      break;
    default:
      break;
  }
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
  return a;
}

// Empty iff txn's read and write sets are exactly the keys its arguments a
// name (a get writes nothing); else what is wrong.
std::string KeySetError(const pb::Txn& txn, const pb::KvArgs& a) {
  std::vector<Key> want = {KvKeyOf(a.key())};
  if (txn.type() == kKvTransfer) want.push_back(KvKeyOf(a.to()));
  auto same = [&](const google::protobuf::RepeatedField<uint64_t>& set) {
    return static_cast<size_t>(set.size()) == want.size() && std::equal(want.begin(), want.end(), set.begin());
  };
  const bool writes = txn.type() != kKvGet;
  if (same(txn.read_set()) && (writes ? same(txn.write_set()) : txn.write_set_size() == 0)) return "";
  return absl::StrCat(KvTypeName(txn.type()),
                      ": the read and write sets must be exactly the keys of the arguments (build the txn with "
                      "workloads/kv/kv_request.h)");
}

// A procedure's arguments: parsed and checked as ValidateKvTxn does, so a
// bad txn that got past it (it should not) aborts the same way everywhere.
absl::StatusOr<pb::KvArgs> ProcArgs(TxnContext* ctx) {
  absl::StatusOr<pb::KvArgs> a = ParseArgs(ctx->txn());
  if (!a.ok()) return a.status();
  if (std::string e = KeySetError(ctx->txn(), *a); !e.empty()) return absl::AbortedError(e);
  return a;
}

absl::Status Get(TxnContext* ctx, std::string* result) {
  absl::StatusOr<pb::KvArgs> a = ProcArgs(ctx);
  if (!a.ok()) return a.status();
  absl::StatusOr<Current> c = ReadCurrent(ctx, a->key());
  if (!c.ok()) return c.status();
  pb::KvResult r;
  if (!c->present) {
    r.set_outcome(pb::KvResult::NOT_FOUND);
  } else {
    *r.mutable_value() = std::move(c->value);
  }
  return Reply(r, result);
}

absl::Status Put(TxnContext* ctx, std::string* result) {
  absl::StatusOr<pb::KvArgs> a = ProcArgs(ctx);
  if (!a.ok()) return a.status();
  absl::StatusOr<Current> c = ReadCurrent(ctx, a->key());  // detects a collision
  if (!c.ok()) return c.status();
  absl::Status s = WriteValue(ctx, a->key(), a->value());
  if (!s.ok()) return s;
  return Reply(pb::KvResult(), result);
}

absl::Status Delete(TxnContext* ctx, std::string* result) {
  absl::StatusOr<pb::KvArgs> a = ProcArgs(ctx);
  if (!a.ok()) return a.status();
  absl::StatusOr<Current> c = ReadCurrent(ctx, a->key());
  if (!c.ok()) return c.status();
  pb::KvResult r;
  if (!c->present) {
    r.set_outcome(pb::KvResult::NOT_FOUND);
    return Reply(r, result);
  }
  absl::Status s = ctx->Delete(KvKeyOf(a->key()));
  if (!s.ok()) return s;
  return Reply(r, result);
}

bool SameValue(const pb::KvValue& a, const pb::KvValue& b) {
  if (a.v_case() != b.v_case()) return false;
  switch (a.v_case()) {
    case pb::KvValue::kBytes:
      return a.bytes() == b.bytes();
    case pb::KvValue::kInt:
      return a.int_() == b.int_();
    case pb::KvValue::kList:
      if (a.list().items_size() != b.list().items_size()) return false;
      for (int i = 0; i < a.list().items_size(); ++i)
        if (a.list().items(i) != b.list().items(i)) return false;
      return true;
    default:
      return true;
  }
}

absl::Status Cas(TxnContext* ctx, std::string* result) {
  absl::StatusOr<pb::KvArgs> a = ProcArgs(ctx);
  if (!a.ok()) return a.status();
  absl::StatusOr<Current> c = ReadCurrent(ctx, a->key());
  if (!c.ok()) return c.status();
  const bool match = a->expect_absent() ? !c->present : c->present && SameValue(c->value, a->expected());
  pb::KvResult r;
  if (!match) {
    r.set_outcome(pb::KvResult::CAS_MISMATCH);
    if (c->present) {
      *r.mutable_value() = std::move(c->value);
    }
    return Reply(r, result);
  }
  absl::Status s = WriteValue(ctx, a->key(), a->value());
  if (!s.ok()) return s;
  return Reply(r, result);
}

absl::Status Transfer(TxnContext* ctx, std::string* result) {
  absl::StatusOr<pb::KvArgs> a = ProcArgs(ctx);
  if (!a.ok()) return a.status();
  absl::StatusOr<Current> from = ReadCurrent(ctx, a->key());
  if (!from.ok()) return from.status();
  absl::StatusOr<Current> to = ReadCurrent(ctx, a->to());
  if (!to.ok()) return to.status();
  if (from->present && from->value.v_case() != pb::KvValue::kInt)
    return absl::AbortedError(absl::StrCat(Quote(a->key()), " holds ", KvValueType(from->value),
                                           ", not int"));
  if (to->present && to->value.v_case() != pb::KvValue::kInt)
    return absl::AbortedError(absl::StrCat(Quote(a->to()), " holds ", KvValueType(to->value), ", not int"));
  const int64_t have = from->present ? from->value.int_() : 0;
  const int64_t dest = to->present ? to->value.int_() : 0;
  if (have < a->amount())
    return absl::AbortedError(absl::StrCat("insufficient funds: ", Quote(a->key()), " has ", have, ", transfer of ",
                                           a->amount()));
  if (dest > std::numeric_limits<int64_t>::max() - a->amount())
    return absl::AbortedError(absl::StrCat("the balance of ", Quote(a->to()), " would overflow"));
  pb::KvValue nf, nt;
  nf.set_int_(have - a->amount());
  nt.set_int_(dest + a->amount());
  absl::Status s = WriteValue(ctx, a->key(), nf);
  if (s.ok()) s = WriteValue(ctx, a->to(), nt);
  if (!s.ok()) return s;
  pb::KvResult r;
  r.set_from_balance(nf.int_());
  r.set_to_balance(nt.int_());
  return Reply(r, result);
}

absl::Status Append(TxnContext* ctx, std::string* result) {
  absl::StatusOr<pb::KvArgs> a = ProcArgs(ctx);
  if (!a.ok()) return a.status();
  absl::StatusOr<Current> c = ReadCurrent(ctx, a->key());
  if (!c.ok()) return c.status();
  pb::KvValue list;
  if (c->present) {
    if (c->value.v_case() != pb::KvValue::kList)
      return absl::AbortedError(absl::StrCat(Quote(a->key()), " holds ", KvValueType(c->value), ", not list"));
    list = std::move(c->value);
  } else {
    list.mutable_list();
  }
  if (KvEncodedSize(list) + 2 + a->element().size() > kKvMaxValueBytes)
    return absl::AbortedError(absl::StrCat("the list ", Quote(a->key()), " would exceed ", kKvMaxValueBytes,
                                           " bytes"));
  list.mutable_list()->add_items(a->element());
  absl::Status s = WriteValue(ctx, a->key(), list);
  if (!s.ok()) return s;
  pb::KvResult r;
  r.set_count(list.list().items_size());
  return Reply(r, result);
}

}  // namespace

const char* KvTypeName(uint32_t type) {
  switch (type) {
    case kKvGet:
      return "get";
    case kKvPut:
      return "put";
    case kKvDelete:
      return "delete";
    case kKvCas:
      return "cas";
    case kKvTransfer:
      return "transfer";
    case kKvAppend:
      return "append";
    default:
      return "";
  }
}

Key KvKeyOf(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then a mix: stable across builds and machines
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ULL;
  return MakeKey(kKvTable, Mix64(h ^ key.size()) & kRowMask);
}

absl::Status RegisterKvProcedures(ProcedureRegistry* registry) {
  const std::pair<uint32_t, Procedure> procs[] = {{kKvGet, &Get},           {kKvPut, &Put},
                                                  {kKvDelete, &Delete},     {kKvCas, &Cas},
                                                  {kKvTransfer, &Transfer}, {kKvAppend, &Append}};
  for (const auto& [type, proc] : procs) {
    absl::Status s = registry->Register(type, absl::StrCat("kv_", KvTypeName(type)), proc);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CreateKvTable(PartitionStore* store) {
  if (store == nullptr) return absl::InvalidArgumentError("CreateKvTable: null store");
  absl::StatusOr<Table*> t = store->CreateTable(
      {.id = kKvTable, .name = "kv", .value_size = kKvRecordBytes, .expected_records = kKvInitialRecords});
  return t.status();
}

absl::Status CheckKvKey(std::string_view key, const char* what) {
  if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (key.size() > kKvMaxKeyBytes)
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of ", key.size(), " bytes; the limit is ", kKvMaxKeyBytes));
  return absl::OkStatus();
}

size_t KvEncodedSize(const pb::KvValue& value) {
  switch (value.v_case()) {
    case pb::KvValue::kBytes:
      return value.bytes().size();
    case pb::KvValue::kInt:
      return 8;
    default: {
      size_t n = 0;
      for (const std::string& item : value.list().items()) n += 2 + item.size();
      return n;
    }
  }
}

absl::Status CheckKvValue(const pb::KvValue& value, const char* what) {
  if (value.v_case() == pb::KvValue::V_NOT_SET)
    return absl::InvalidArgumentError(absl::StrCat(what, " has no type (bytes, int or list)"));
  const size_t n = KvEncodedSize(value);
  if (n > kKvMaxValueBytes)
    return absl::InvalidArgumentError(absl::StrCat(what, " of ", n, " bytes (", KvValueType(value),
                                                   "); the limit is ", kKvMaxValueBytes));
  return absl::OkStatus();
}

absl::Status ValidateKvTxn(const pb::Txn& txn) {
  if (!IsKvType(txn.type())) return absl::OkStatus();
  absl::StatusOr<pb::KvArgs> a = ParseArgs(txn);
  if (!a.ok()) return a.status();
  if (std::string e = KeySetError(txn, *a); !e.empty()) return absl::InvalidArgumentError(e);
  return absl::OkStatus();
}

absl::StatusOr<pb::KvValue> DecodeKvRecord(std::string_view record, std::string* key) {
  if (record.size() != kKvRecordBytes)
    return absl::DataLossError(absl::StrCat("kv record of ", record.size(), " bytes"));
  const size_t klen = static_cast<unsigned char>(record[1]);
  const size_t vlen = GetU16(record.data() + 2);
  if (klen == 0 || klen > kKvMaxKeyBytes || vlen > kKvMaxValueBytes)
    return absl::DataLossError("kv record with bad lengths");
  key->assign(record.data() + kKvRecordHeader, klen);
  const char* v = record.data() + kKvRecordHeader + kKvMaxKeyBytes;
  pb::KvValue out;
  switch (static_cast<unsigned char>(record[0])) {
    case kStoredBytes:
      out.set_bytes(std::string(v, vlen));
      break;
    case kStoredInt: {
      if (vlen != 8) return absl::DataLossError("kv int record of bad length");
      uint64_t x = 0;
      for (int i = 0; i < 8; ++i) x |= static_cast<uint64_t>(static_cast<unsigned char>(v[i])) << (8 * i);
      out.set_int_(static_cast<int64_t>(x));
      break;
    }
    case kStoredList: {
      pb::KvList* list = out.mutable_list();
      for (size_t at = 0; at < vlen;) {
        if (at + 2 > vlen) return absl::DataLossError("kv list record truncated");
        const size_t n = GetU16(v + at);
        if (at + 2 + n > vlen) return absl::DataLossError("kv list record truncated");
        list->add_items(std::string(v + at + 2, n));
        at += 2 + n;
      }
      break;
    }
    default:
      return absl::DataLossError("kv record of unknown type");
  }
  return out;
}

}  // namespace detdb
