// The key-value procedures against the serial executor (semantics, typed
// errors, deterministic aborts), the check before sequencing, and a random
// stream of kv txns on the threaded engine under every lock manager: results
// and partition digests equal the serial executor's replay of its order.
#include "workloads/kv/kv.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "common/partitioner.h"
#include "lockmgr/lock_manager.h"
#include "scheduler/engine.h"
#include "scheduler/serial_executor.h"
#include "workloads/kv/kv_request.h"

namespace detdb {
namespace {

class KvSerial {
 public:
  explicit KvSerial(uint32_t partitions) : parts_(partitions) {
    EXPECT_TRUE(RegisterKvProcedures(&procs_).ok());
    for (uint32_t p = 0; p < partitions; ++p) {
      stores_.push_back(std::make_unique<PartitionStore>());
      EXPECT_TRUE(CreateKvTable(stores_.back().get()).ok());
      raw_.push_back(stores_.back().get());
    }
    serial_ = std::make_unique<SerialExecutor>(&parts_, &procs_, raw_);
  }
  // Runs the txn (which must build); returns the parsed reply.
  absl::StatusOr<KvReply> Run(const absl::StatusOr<pb::Txn>& t) {
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return t.status();
    EXPECT_TRUE(ValidateKvTxn(*t).ok());
    pb::Txn txn = *t;
    txn.set_id(++id_);
    return ParseKvReply(txn, serial_->Execute(txn));
  }
  std::vector<PartitionStore*>& stores() { return raw_; }
  const ModPartitioner& parts() const { return parts_; }

 private:
  ModPartitioner parts_;
  ProcedureRegistry procs_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;
  std::vector<PartitionStore*> raw_;
  std::unique_ptr<SerialExecutor> serial_;
  uint64_t id_ = 0;
};

TEST(KvProcedures, PutGetDeleteOfEveryType) {
  KvSerial kv(3);
  auto got = kv.Run(KvGetRequest("missing"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->outcome, pb::KvResult::NOT_FOUND);
  EXPECT_FALSE(got->value.has_value());
  const std::string binary("a\0b\xff", 4);
  ASSERT_TRUE(kv.Run(KvPutRequest("k1", KvBytes(binary))).ok());
  ASSERT_TRUE(kv.Run(KvPutRequest("k2", KvInt(-7))).ok());
  ASSERT_TRUE(kv.Run(KvPutRequest("k3", KvList({"x", "", "yz"}))).ok());
  got = kv.Run(KvGetRequest("k1"));
  ASSERT_TRUE(got.ok() && got->value.has_value());
  EXPECT_EQ(got->value->bytes(), binary);
  got = kv.Run(KvGetRequest("k2"));
  EXPECT_EQ(got->value->int_(), -7);
  got = kv.Run(KvGetRequest("k3"));
  ASSERT_EQ(got->value->list().items_size(), 3);
  EXPECT_EQ(got->value->list().items(2), "yz");
  EXPECT_EQ(KvValueToString(*got->value), "[\"x\", \"\", \"yz\"]");
  // Overwrite with another type.
  ASSERT_TRUE(kv.Run(KvPutRequest("k2", KvBytes("now bytes"))).ok());
  EXPECT_EQ(kv.Run(KvGetRequest("k2"))->value->bytes(), "now bytes");
  auto del = kv.Run(KvDeleteRequest("k1"));
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->outcome, pb::KvResult::OK);
  EXPECT_EQ(kv.Run(KvDeleteRequest("k1"))->outcome, pb::KvResult::NOT_FOUND);
  EXPECT_EQ(kv.Run(KvGetRequest("k1"))->outcome, pb::KvResult::NOT_FOUND);
  // The largest key and value fit.
  const std::string big_key(kKvMaxKeyBytes, 'k'), big_value(kKvMaxValueBytes, 'v');
  ASSERT_TRUE(kv.Run(KvPutRequest(big_key, KvBytes(big_value))).ok());
  EXPECT_EQ(kv.Run(KvGetRequest(big_key))->value->bytes(), big_value);
}

TEST(KvProcedures, CasSaysWhetherItSwapped) {
  KvSerial kv(2);
  auto r = kv.Run(KvCasRequest("c", std::nullopt, KvInt(1)));  // only if absent: it is
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, pb::KvResult::OK);
  r = kv.Run(KvCasRequest("c", std::nullopt, KvInt(2)));  // not absent any more
  EXPECT_EQ(r->outcome, pb::KvResult::CAS_MISMATCH);
  ASSERT_TRUE(r->value.has_value());
  EXPECT_EQ(r->value->int_(), 1);
  r = kv.Run(KvCasRequest("c", KvInt(5), KvInt(6)));
  EXPECT_EQ(r->outcome, pb::KvResult::CAS_MISMATCH);
  r = kv.Run(KvCasRequest("c", KvBytes("1"), KvInt(6)));  // same digits, other type: no match
  EXPECT_EQ(r->outcome, pb::KvResult::CAS_MISMATCH);
  r = kv.Run(KvCasRequest("c", KvInt(1), KvBytes("swapped")));
  EXPECT_EQ(r->outcome, pb::KvResult::OK);
  EXPECT_EQ(kv.Run(KvGetRequest("c"))->value->bytes(), "swapped");
  r = kv.Run(KvCasRequest("absent", KvBytes("x"), KvBytes("y")));
  EXPECT_EQ(r->outcome, pb::KvResult::CAS_MISMATCH);
  EXPECT_FALSE(r->value.has_value()) << "the current value: none";
}

// Keys that land on different partitions of n.
std::pair<std::string, std::string> KeysOnTwoPartitions(uint32_t n) {
  ModPartitioner parts(n);
  for (int i = 1;; ++i) {
    const std::string b = "acct" + std::to_string(i);
    if (parts.PartitionOf(KvKeyOf("acct0")) != parts.PartitionOf(KvKeyOf(b))) return {"acct0", b};
  }
}

TEST(KvProcedures, TransferMovesMoneyOrAbortsWithoutAnyWrite) {
  KvSerial kv(3);
  const auto [a, b] = KeysOnTwoPartitions(3);
  ASSERT_TRUE(kv.Run(KvPutRequest(a, KvInt(100))).ok());
  auto r = kv.Run(KvTransferRequest(a, b, 30));  // b absent: starts at 0
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from_balance, 70);
  EXPECT_EQ(r->to_balance, 30);
  r = kv.Run(KvTransferRequest(a, b, 71));
  EXPECT_TRUE(absl::IsAborted(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("insufficient funds"), std::string_view::npos) << r.status();
  EXPECT_EQ(kv.Run(KvGetRequest(a))->value->int_(), 70) << "an aborted transfer writes nothing";
  EXPECT_EQ(kv.Run(KvGetRequest(b))->value->int_(), 30);
  r = kv.Run(KvTransferRequest(b, a, 30));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->from_balance, 0);
  ASSERT_TRUE(kv.Run(KvPutRequest("text", KvBytes("100"))).ok());
  r = kv.Run(KvTransferRequest("text", a, 1));
  EXPECT_TRUE(absl::IsAborted(r.status()));
  EXPECT_NE(r.status().message().find("holds bytes, not int"), std::string_view::npos) << r.status();
  r = kv.Run(KvTransferRequest(a, "text", 1));
  EXPECT_TRUE(absl::IsAborted(r.status()));
  EXPECT_EQ(kv.Run(KvGetRequest(a))->value->int_(), 100);
  ASSERT_TRUE(kv.Run(KvPutRequest("rich", KvInt(std::numeric_limits<int64_t>::max()))).ok());
  ASSERT_TRUE(kv.Run(KvPutRequest("poor", KvInt(1))).ok());
  r = kv.Run(KvTransferRequest("poor", "rich", 1));
  EXPECT_TRUE(absl::IsAborted(r.status()));
  EXPECT_NE(r.status().message().find("overflow"), std::string_view::npos) << r.status();
  r = kv.Run(KvTransferRequest("nobody", a, 1));
  EXPECT_TRUE(absl::IsAborted(r.status())) << "an absent account has nothing";
}

TEST(KvProcedures, AppendBuildsAListUpToTheValueLimit) {
  KvSerial kv(1);
  auto r = kv.Run(KvAppendRequest("l", "one"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->count, 1u);
  EXPECT_EQ(kv.Run(KvAppendRequest("l", "two"))->count, 2u);
  EXPECT_EQ(KvValueToString(*kv.Run(KvGetRequest("l"))->value), "[\"one\", \"two\"]");
  ASSERT_TRUE(kv.Run(KvPutRequest("n", KvInt(3))).ok());
  r = kv.Run(KvAppendRequest("n", "x"));
  EXPECT_TRUE(absl::IsAborted(r.status()));
  EXPECT_NE(r.status().message().find("holds int, not list"), std::string_view::npos) << r.status();
  // 2 + 8 bytes per element: the list is full after (1024 - 10) / 10 more.
  int appended = 2;
  while (true) {
    r = kv.Run(KvAppendRequest("l", "12345678"));
    if (!r.ok()) break;
    ++appended;
    ASSERT_LT(appended, 200);
  }
  EXPECT_TRUE(absl::IsAborted(r.status()));
  EXPECT_NE(r.status().message().find("would exceed"), std::string_view::npos) << r.status();
  EXPECT_EQ(kv.Run(KvGetRequest("l"))->value->list().items_size(), appended);
  EXPECT_EQ(appended, 2 + (1024 - 10) / 10);
}

TEST(KvProcedures, CollidingKeysAreDetectedNotConfused) {
  // Plant a record whose stored key differs from the key that hashes to it.
  KvSerial kv(1);
  ASSERT_TRUE(kv.Run(KvPutRequest("planted", KvBytes("v"))).ok());
  Table* t = kv.stores()[0]->GetTable(kKvTable);
  Record* rec = t->Get(KvKeyOf("planted"));
  ASSERT_NE(rec, nullptr);
  Record* other = t->Insert(KvKeyOf("victim"));
  std::memcpy(other->value(), rec->value(), kKvRecordBytes);  // claims to be "planted"
  auto r = kv.Run(KvGetRequest("victim"));
  EXPECT_TRUE(absl::IsAborted(r.status()));
  EXPECT_NE(r.status().message().find("hash collision"), std::string_view::npos) << r.status();
}

TEST(KvValidate, RefusesBadRequestsWithClearErrors) {
  auto expect_refused = [](const absl::StatusOr<pb::Txn>& t, const char* words) {
    EXPECT_TRUE(absl::IsInvalidArgument(t.status())) << t.status();
    EXPECT_NE(t.status().message().find(words), std::string_view::npos) << t.status();
  };
  expect_refused(KvGetRequest(""), "key is empty");
  expect_refused(KvGetRequest(std::string(kKvMaxKeyBytes + 1, 'k')), "key of 129 bytes; the limit is 128");
  expect_refused(KvPutRequest("k", KvBytes(std::string(kKvMaxValueBytes + 1, 'v'))),
                 "value of 1025 bytes (bytes); the limit is 1024");
  expect_refused(KvPutRequest("k", pb::KvValue()), "value has no type");
  expect_refused(KvTransferRequest("a", "b", 0), "amount must be positive");
  expect_refused(KvTransferRequest("a", "a", 5), "same key");
  expect_refused(KvAppendRequest("l", std::string(kKvMaxValueBytes, 'e')), "element of 1024 bytes");
  std::vector<std::string> many(400, "abc");  // 400 * 5 bytes
  expect_refused(KvPutRequest("k", KvList(many)), "(list); the limit is 1024");

  pb::Txn t = *KvPutRequest("k", KvBytes("v"));
  pb::Txn bad = t;
  bad.set_args("\xff\xff\xff");
  EXPECT_NE(ValidateKvTxn(bad).message().find("do not parse"), std::string_view::npos);
  bad = t;
  bad.set_read_set(0, KvKeyOf("other"));
  EXPECT_NE(ValidateKvTxn(bad).message().find("exactly the keys"), std::string_view::npos);
  bad = t;
  bad.clear_write_set();
  EXPECT_FALSE(ValidateKvTxn(bad).ok());
  bad = *KvGetRequest("k");
  bad.add_write_set(KvKeyOf("k"));
  EXPECT_FALSE(ValidateKvTxn(bad).ok()) << "a get writes nothing";
  bad = t;
  bad.set_args(std::string(kKvMaxArgsBytes + 1, '\0'));
  EXPECT_NE(ValidateKvTxn(bad).message().find("the limit is"), std::string_view::npos);
  pb::Txn other;
  other.set_type(1);
  EXPECT_TRUE(ValidateKvTxn(other).ok()) << "other workloads' txns are not the kv check's business";
}

TEST(KvValidate, ABadTxnThatSlipsInAbortsDeterministically) {
  KvSerial kv(1);
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterKvProcedures(&procs).ok());
  SerialExecutor serial(&kv.parts(), &procs, kv.stores());
  pb::Txn t = *KvPutRequest("k", KvBytes("v"));
  t.set_args("junk");
  t.set_id(1);
  pb::TxnResult r = serial.Execute(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("do not parse"), std::string::npos) << r.error();
}

// A seeded random mix of every procedure over a few hot keys.
std::vector<pb::Txn> RandomKvTxns(uint64_t seed, int n, uint64_t client) {
  std::mt19937_64 rng(seed);
  auto key = [&] { return "k" + std::to_string(rng() % 12); };
  std::vector<pb::Txn> out;
  while (static_cast<int>(out.size()) < n) {
    absl::StatusOr<pb::Txn> t;
    switch (rng() % 7) {
      case 0:
        t = KvGetRequest(key());
        break;
      case 1:
        t = KvPutRequest(key(), rng() % 2 ? KvInt(static_cast<int64_t>(rng() % 50)) : KvBytes(key()));
        break;
      case 2:
        t = KvDeleteRequest(key());
        break;
      case 3:
        t = KvCasRequest(key(), rng() % 3 == 0 ? std::nullopt : std::optional(KvInt(rng() % 50)),
                         KvInt(rng() % 50));
        break;
      case 4:
        t = KvAppendRequest(key(), std::to_string(out.size()));
        break;
      default:
        t = KvTransferRequest(key(), key(), 1 + static_cast<int64_t>(rng() % 20));
    }
    if (!t.ok()) continue;  // a transfer to itself
    t->set_client_id(client);
    t->set_client_seq(out.size() + 1);
    out.push_back(std::move(*t));
  }
  return out;
}

class Collector : public TxnClient {
 public:
  void OnResult(pb::TxnResult&& r) override {
    std::lock_guard<std::mutex> l(mu);
    by_seq.emplace(r.client_seq(), r);
  }
  std::mutex mu;
  std::map<uint64_t, pb::TxnResult> by_seq;
};

// A txn whose write set does not match its transfer's arguments: the engine
// refuses it on submission (EngineOptions::txn_check runs in Validate, on
// every path in), and the procedure alone aborts it with the same reason.
TEST(KvValidate, KeySetsThatDoNotMatchTheArgumentsAreRefusedAndAborted) {
  pb::Txn bad = *KvTransferRequest("a", "b", 5);
  ASSERT_EQ(bad.write_set_size(), 2);
  bad.set_write_set(1, KvKeyOf("c"));  // writes c, but the arguments say b

  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterKvProcedures(&procs).ok());
  ModPartitioner parts(2);
  EngineOptions o;
  o.epoch_us = 200;
  o.txn_check = &ValidateKvTxn;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (PartitionId p = 0; p < 2; ++p) ASSERT_TRUE(CreateKvTable((*engine)->store(p)).ok());
  Collector client;
  bad.set_client_id((*engine)->RegisterClient(&client));
  bad.set_client_seq(1);
  ASSERT_TRUE((*engine)->Start().ok());
  absl::Status s = (*engine)->Submit(bad);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("exactly the keys"), std::string_view::npos) << s;
  std::vector<pb::Txn> group = {bad};
  s = (*engine)->SubmitMany(&group);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE((*engine)->Check(bad).code() == absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*engine)->Stop().ok());
  EXPECT_TRUE(client.by_seq.empty()) << "nothing was sequenced";

  KvSerial kv(2);
  ASSERT_TRUE(kv.Run(KvPutRequest("a", KvInt(10))).ok());
  SerialExecutor serial(&kv.parts(), &procs, kv.stores());
  bad.set_id(100);
  pb::TxnResult r = serial.Execute(bad);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("transfer: the read and write sets must be exactly the keys"), std::string::npos)
      << r.error();
  auto a = kv.Run(KvGetRequest("a"));
  ASSERT_TRUE(a.ok() && a->value.has_value());
  EXPECT_EQ(a->value->int_(), 10) << "the aborted transfer wrote nothing";
  EXPECT_EQ(kv.Run(KvGetRequest("c"))->outcome, pb::KvResult::NOT_FOUND);
}

class KvEngineTest : public ::testing::TestWithParam<std::string> {};

TEST_P(KvEngineTest, ResultsAndDigestsEqualTheSerialExecutor) {
  constexpr uint32_t kPartitions = 3;
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterKvProcedures(&procs).ok());
  ModPartitioner parts(kPartitions);
  EngineOptions o;
  o.workers = 2;
  o.lock_manager = GetParam();
  o.lock.table_size = 64;
  o.lock.max_active = 50;
  o.epoch_us = 200;
  o.record_history = true;
  o.txn_check = &ValidateKvTxn;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (PartitionId p = 0; p < kPartitions; ++p) ASSERT_TRUE(CreateKvTable((*engine)->store(p)).ok());
  Collector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  constexpr int kTxns = 3000;
  std::vector<pb::Txn> txns = RandomKvTxns(7, kTxns, id);
  ASSERT_TRUE((*engine)->Start().ok());
  for (size_t i = 0; i < txns.size(); i += 29) {
    std::vector<pb::Txn> group(txns.begin() + i, txns.begin() + std::min(txns.size(), i + 29));
    ASSERT_TRUE((*engine)->SubmitMany(&group).ok());
  }
  ASSERT_TRUE((*engine)->Stop().ok());
  ASSERT_EQ(client.by_seq.size(), static_cast<size_t>(kTxns));

  KvSerial oracle(kPartitions);
  SerialExecutor serial(&parts, &procs, oracle.stores());
  std::map<int, int> outcomes;  // status * 10 + kv outcome
  int multi = 0;
  for (const auto& batch : (*engine)->history()) {
    for (const pb::Txn& t : batch->txns()) {
      const pb::TxnResult want = serial.Execute(t);
      const pb::TxnResult& got = client.by_seq.at(t.client_seq());
      ASSERT_EQ(got.status(), want.status()) << "txn " << t.id();
      ASSERT_EQ(got.result(), want.result()) << "txn " << t.id();
      ASSERT_EQ(got.error(), want.error()) << "txn " << t.id();
      pb::KvResult kr;
      kr.ParseFromString(got.result());
      ++outcomes[got.status() * 10 + kr.outcome()];
      multi += t.writers_size() > 1;
    }
  }
  for (PartitionId p = 0; p < kPartitions; ++p)
    EXPECT_EQ((*engine)->store(p)->Digest(), oracle.stores()[p]->Digest()) << "partition " << p;
  EXPECT_GT(multi, 100) << "transfers between partitions";
  EXPECT_GT(outcomes[pb::STATUS_ABORTED * 10], 50) << "type errors and insufficient funds";
  EXPECT_GT(outcomes[pb::KvResult::CAS_MISMATCH], 10);
  EXPECT_GT(outcomes[pb::KvResult::NOT_FOUND], 10);
  EXPECT_GT(outcomes[pb::KvResult::OK], 500);
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, KvEngineTest, ::testing::ValuesIn(LockManagerNames()));

}  // namespace
}  // namespace detdb
