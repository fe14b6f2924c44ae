// End-to-end determinism: seeded random workloads (hot keys, reads and
// writes mixed, blind writes, read-only and multi-partition txns) run through
// the engine under every lock manager with 1, 2 and 4 workers and 1 and 3
// partitions, and with 2 workers also with the lock thread releasing
// (release_on_workers = false), and with staged allocation of the txn
// states (staged_states.h) on 2 and 4 workers. Every txn's result and the final state
// digest must equal the serial executor's on the same global order (G3 of
// LOCKING.md).
//
// DETDB_E2E_TXNS sets txns per run (default 3000).
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "scheduler/engine.h"
#include "scheduler/serial_executor.h"
#include "glog/logging.h"
#include "scheduler/engine_test_util.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

struct Case {
  std::string lock_manager;
  uint32_t workers;
  uint32_t partitions;
  bool release_on_workers = true;
  bool staged_alloc = false;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.lock_manager << ", " << c.workers << " workers, " << c.partitions << " partitions, "
      << (c.release_on_workers ? "workers release" : "lock thread releases")
      << (c.staged_alloc ? ", staged allocation" : "");
}

class EngineDeterminismTest : public ::testing::TestWithParam<Case> {};

TEST_P(EngineDeterminismTest, ResultsAndDigestEqualTheSerialExecutor) {
  const Case c = GetParam();
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ASSERT_TRUE(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
  ModPartitioner parts(c.partitions);
  EngineOptions o;
  o.workers = c.workers;
  o.release_on_workers = c.release_on_workers;
  o.staged_alloc = c.staged_alloc;
  o.lock_manager = c.lock_manager;
  o.lock.table_size = 64;  // hash collisions on purpose
  o.lock.max_active = 50;
  o.epoch_us = 200;
  o.record_history = true;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (PartitionId p = 0; p < c.partitions; ++p)
    ASSERT_TRUE(LoadCounterTable((*engine)->store(p), parts, p, kRecordsPerPartition).ok());
  ResultCollector client;
  const uint64_t client_id = (*engine)->RegisterClient(&client);
  const int n = TxnsPerRun();
  std::vector<pb::Txn> txns = RandomTxns(42 + c.partitions, n, c.partitions, client_id);
  ASSERT_TRUE((*engine)->Start().ok());
  for (size_t i = 0; i < txns.size(); i += 37) {  // submit in small groups
    std::vector<pb::Txn> group(txns.begin() + i, txns.begin() + std::min(txns.size(), i + 37));
    ASSERT_TRUE((*engine)->SubmitMany(&group).ok());
  }
  ASSERT_TRUE((*engine)->Stop().ok());
  ASSERT_EQ(client.count, n) << "every txn answered exactly once";
  ASSERT_FALSE(client.duplicate);

  // The oracle: the same global order, one txn at a time.
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < c.partitions; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(stores.back().get(), parts, p, kRecordsPerPartition).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int executed = 0, aborted = 0;
  for (const auto& batch : (*engine)->history()) {
    for (const pb::Txn& t : batch->txns()) {
      pb::TxnResult want = serial.Execute(t);
      const pb::TxnResult& got = client.by_seq.at(t.client_seq());
      ASSERT_EQ(got.txn_id(), t.id());
      ASSERT_EQ(got.status(), want.status()) << "txn " << t.id();
      ASSERT_EQ(got.result(), want.result()) << "txn " << t.id();
      aborted += want.status() != pb::STATUS_OK;
      ++executed;
    }
  }
  EXPECT_EQ(executed, n);
  EXPECT_GT(aborted, 0) << "the workload should exercise deterministic aborts";
  for (PartitionId p = 0; p < c.partitions; ++p)
    EXPECT_EQ((*engine)->store(p)->Digest(), raw[p]->Digest()) << "partition " << p;
}

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (const std::string& lm : LockManagerNames()) {
    for (uint32_t w : {1u, 2u, 4u})
      for (uint32_t p : {1u, 3u}) out.push_back({lm, w, p, true});
    for (uint32_t p : {1u, 3u}) out.push_back({lm, 2, p, false});
    for (uint32_t p : {1u, 3u}) out.push_back({lm, 2, p, true, true});
    out.push_back({lm, 4, 3, true, true});
    out.push_back({lm, 2, 3, false, true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, EngineDeterminismTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) {
                           return info.param.lock_manager + "_w" + std::to_string(info.param.workers) +
                                  "_p" + std::to_string(info.param.partitions) +
                                  (info.param.release_on_workers ? "" : "_lock_thread_releases") +
                                  (info.param.staged_alloc ? "_staged" : "");
                         });

TEST(Engine, RejectsBadInputBeforeSequencing) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ModPartitioner parts(1);
  auto engine = Engine::Create(EngineOptions{}, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE(LoadCounterTable((*engine)->store(0), parts, 0, 100).ok());
  ResultCollector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  ASSERT_TRUE((*engine)->Start().ok());
  pb::Txn bad_type;
  bad_type.set_type(999);
  bad_type.set_client_id(id);
  bad_type.add_read_set(MakeKey(kCounterTable, 1));
  EXPECT_EQ((*engine)->Submit(bad_type).code(), absl::StatusCode::kInvalidArgument);
  pb::Txn bad_table;
  bad_table.set_type(kRmwTxnType);
  bad_table.set_client_id(id);
  bad_table.add_read_set(MakeKey(77, 1));
  EXPECT_EQ((*engine)->Submit(bad_table).code(), absl::StatusCode::kInvalidArgument);
  pb::Txn bad_client;
  bad_client.set_type(kRmwTxnType);
  bad_client.set_client_id(id + 5);
  EXPECT_EQ((*engine)->Submit(bad_client).code(), absl::StatusCode::kInvalidArgument);
  pb::Txn good;
  good.set_type(kRmwTxnType);
  good.set_client_id(id);
  good.add_read_set(MakeKey(kCounterTable, 3));
  good.add_write_set(MakeKey(kCounterTable, 3));
  EXPECT_TRUE((*engine)->Submit(good).ok());
  ASSERT_TRUE((*engine)->Stop().ok());
  EXPECT_EQ(client.count, 1) << "only the valid txn ran";
  EXPECT_EQ((*engine)->stats().rejected, 3u);
  EXPECT_FALSE((*engine)->Submit(good).ok()) << "refused after stop";
}

}  // namespace
}  // namespace detdb

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

TEST(Engine, RefusesToStartWhenPartitionsHaveDifferentTables) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ModPartitioner parts(2);
  auto engine = Engine::Create(EngineOptions{}, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  for (PartitionId p = 0; p < 2; ++p) ASSERT_TRUE(LoadCounterTable((*engine)->store(p), parts, p, 10).ok());
  ASSERT_TRUE((*engine)->store(0)->CreateTable(TableOptions{2, "only_here", 8, 16}).ok());
  EXPECT_EQ((*engine)->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Engine, BoundsTxnsAcceptedButNotAnswered) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ModPartitioner parts(1);
  EngineOptions o;
  o.max_pending = 5;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE(LoadCounterTable((*engine)->store(0), parts, 0, 10).ok());
  ResultCollector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  pb::Txn t;
  t.set_type(kRmwTxnType);
  t.set_client_id(id);
  t.add_read_set(MakeKey(kCounterTable, 1));
  // Not started: nothing is answered, so the sixth txn exceeds the bound.
  for (int i = 0; i < 5; ++i) {
    t.set_client_seq(i);
    ASSERT_TRUE((*engine)->Submit(t).ok());
  }
  EXPECT_EQ((*engine)->Submit(t).code(), absl::StatusCode::kUnavailable);
  std::vector<pb::Txn> two(2, t);
  EXPECT_EQ((*engine)->SubmitMany(&two).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(two.size(), 2u) << "a refused group is left to the caller to retry";
  ASSERT_TRUE((*engine)->Start().ok());
  ASSERT_TRUE((*engine)->Stop().ok());
  EXPECT_EQ(client.count, 5);
}

// Txns far above the linear-scan size use indexed reads and writes; they must
// still equal the serial executor.
// Param: staged allocation.
class LargeTxnsTest : public ::testing::TestWithParam<bool> {};

TEST_P(LargeTxnsTest, LargeTxnsEqualTheSerialExecutor) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ModPartitioner parts(2);
  EngineOptions o;
  o.record_history = true;
  o.workers = 2;
  o.staged_alloc = GetParam();
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  constexpr uint64_t kRecords = 500;
  for (PartitionId p = 0; p < 2; ++p) ASSERT_TRUE(LoadCounterTable((*engine)->store(p), parts, p, kRecords).ok());
  ResultCollector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  ASSERT_TRUE((*engine)->Start().ok());
  std::mt19937_64 rng(5);
  for (int i = 0; i < 60; ++i) {
    pb::Txn t;
    t.set_type(kRmwTxnType);
    t.set_client_id(id);
    t.set_client_seq(i);
    for (int j = 0; j < 120; ++j) {
      const Key k = MakeKey(kCounterTable, rng() % (2 * kRecords));
      t.add_read_set(k);
      if (j % 3 == 0) t.add_write_set(k);
    }
    ASSERT_TRUE((*engine)->Submit(t).ok());
  }
  ASSERT_TRUE((*engine)->Stop().ok());
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < 2; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(stores.back().get(), parts, p, kRecords).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  for (const auto& batch : (*engine)->history())
    for (const pb::Txn& t : batch->txns()) {
      const pb::TxnResult want = serial.Execute(t);
      EXPECT_EQ(client.by_seq.at(t.client_seq()).result(), want.result());
      EXPECT_EQ(client.by_seq.at(t.client_seq()).status(), want.status());
    }
  for (PartitionId p = 0; p < 2; ++p) EXPECT_EQ((*engine)->store(p)->Digest(), raw[p]->Digest());
}

INSTANTIATE_TEST_SUITE_P(PooledAndStaged, LargeTxnsTest, ::testing::Bool());

}  // namespace
}  // namespace detdb

namespace detdb {
namespace {

// Covered keys, deletes and replicated reads (procedure.h): parent rows
// (table 5, locked) cover their children (table 6, row = parent << 8 | n),
// which txns insert, read and delete without naming them; table 7 is
// replicated on every partition and read without a lock.
constexpr uint32_t kParent = 5, kChild = 6, kReplicated = 7, kCoverTxnType = 3;

Key CoverOf(Key k) { return KeyTable(k) == kChild ? MakeKey(kParent, KeyRow(k) >> 8) : k; }

class CoverPartitioner final : public Partitioner {
 public:
  explicit CoverPartitioner(uint32_t n) : n_(n) {}
  uint32_t num_partitions() const override { return n_; }
  PartitionId PartitionOf(Key k) const override {
    const uint64_t row = KeyTable(k) == kChild ? KeyRow(k) >> 8 : KeyRow(k);
    return static_cast<PartitionId>(row % n_);
  }

 private:
  const uint32_t n_;
};

uint64_t U64(std::string_view v) {
  uint64_t x = 0;
  std::memcpy(&x, v.data(), 8);
  return x;
}
std::string_view Bytes8(const uint64_t& x) { return std::string_view(reinterpret_cast<const char*>(&x), 8); }

// The parent (read+write set) holds a counter n. The txn adds child n with a
// value from the replicated table, deletes child n - 3 if it exists, and
// returns the sum of the surviving children 0 .. n (covered reads). A txn
// naming a parent it did not lock fails.
absl::Status CoverProcedure(TxnContext* ctx, std::string* result) {
  const Key parent = ctx->txn().write_set(0);
  auto pv = ctx->Read(parent);
  if (!pv.ok()) return pv.status();
  const uint64_t n = U64(*pv) % 200;
  auto rep = ctx->ReadReplicated(MakeKey(kReplicated, ctx->txn().id() % 10));
  if (!rep.ok()) return rep.status();
  const uint64_t child_value = U64(*rep) + ctx->txn().id();
  const Key child = MakeKey(kChild, KeyRow(parent) << 8 | n);
  absl::Status s = ctx->Write(child, Bytes8(child_value));
  if (!s.ok()) return s;
  if (n >= 3) {
    s = ctx->Delete(MakeKey(kChild, KeyRow(parent) << 8 | (n - 3)));
    if (!s.ok()) return s;
  }
  uint64_t sum = 0;
  for (uint64_t i = 0; i <= n; ++i) {
    auto v = ctx->Read(MakeKey(kChild, KeyRow(parent) << 8 | i));
    if (v.ok()) sum += U64(*v);
    else if (!absl::IsNotFound(v.status())) return v.status();
  }
  const uint64_t next = n + 1;
  s = ctx->Write(parent, Bytes8(next));
  if (!s.ok()) return s;
  result->assign(Bytes8(sum));
  return absl::OkStatus();
}

absl::Status LoadCoverTables(PartitionStore* store, const Partitioner& parts, PartitionId p) {
  for (uint32_t t : {kParent, kChild, kReplicated}) {
    auto table = store->CreateTable(TableOptions{t, "t" + std::to_string(t), 8, 4096});
    if (!table.ok()) return table.status();
  }
  for (uint64_t r = 0; r < 16; ++r)
    if (parts.PartitionOf(MakeKey(kParent, r)) == p) store->Insert(MakeKey(kParent, r));
  for (uint64_t r = 0; r < 10; ++r) {  // replicated: every partition
    const uint64_t v = 1000 * r;
    std::memcpy(store->Insert(MakeKey(kReplicated, r))->value(), &v, 8);
  }
  return absl::OkStatus();
}

class CoverTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CoverTest, CoveredKeysDeletesAndReplicatedReadsEqualTheSerialExecutorAndReplay) {
  ProcedureRegistry procs;
  ASSERT_TRUE(procs.Register(kCoverTxnType, "cover", &CoverProcedure).ok());
  procs.SetKeyCover(&CoverOf);
  CoverPartitioner parts(2);
  auto make = [&](const std::string& lm, bool staged_alloc) {
    EngineOptions o;
    o.lock_manager = lm;
    o.workers = 2;
    o.staged_alloc = staged_alloc;
    o.record_history = true;
    auto e = Engine::Create(o, &parts, &procs);
    CHECK(e.ok());
    for (PartitionId p = 0; p < 2; ++p) CHECK(LoadCoverTables((*e)->store(p), parts, p).ok());
    return std::move(*e);
  };
  auto engine = make(GetParam(), false);
  ResultCollector client;
  const uint64_t id = engine->RegisterClient(&client);
  ASSERT_TRUE(engine->Start().ok());
  std::mt19937_64 rng(3);
  constexpr int kN = 2000;
  for (int i = 0; i < kN; ++i) {
    pb::Txn t;
    t.set_type(kCoverTxnType);
    t.set_client_id(id);
    t.set_client_seq(i);
    const Key parent = MakeKey(kParent, rng() % 16);
    t.add_read_set(parent);
    t.add_write_set(parent);
    ASSERT_TRUE(engine->Submit(t).ok());
  }
  ASSERT_TRUE(engine->Stop().ok());
  ASSERT_EQ(client.count, kN);

  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < 2; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCoverTables(stores.back().get(), parts, p).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int ok = 0;
  for (const auto& b : engine->history())
    for (const pb::Txn& t : b->txns()) {
      const pb::TxnResult want = serial.Execute(t);
      ASSERT_EQ(client.by_seq.at(t.client_seq()).status(), want.status()) << want.error();
      ASSERT_EQ(client.by_seq.at(t.client_seq()).result(), want.result());
      ok += want.status() == pb::STATUS_OK;
    }
  EXPECT_EQ(ok, kN);
  for (PartitionId p = 0; p < 2; ++p) EXPECT_EQ(engine->store(p)->Digest(), raw[p]->Digest());
  EXPECT_GT(engine->store(0)->GetTable(kChild)->size(), 0u);

  // The same history replayed under every other lock manager, with staged
  // allocation: same state.
  for (const std::string& lm : LockManagerNames()) {
    auto other = make(lm, true);
    ResultCollector c2;
    other->RegisterClient(&c2);
    ASSERT_TRUE(other->Replay(engine->history()).ok());
    EXPECT_EQ(c2.count, kN);
    EXPECT_EQ(other->Digest(), engine->Digest()) << lm;
  }
}

TEST(CoverTest, UndeclaredCoversAreRefused) {
  ProcedureRegistry procs;
  ASSERT_TRUE(procs.Register(kCoverTxnType, "cover", &CoverProcedure).ok());
  // No key cover registered: the child writes are undeclared.
  CoverPartitioner parts(1);
  std::vector<std::unique_ptr<PartitionStore>> stores;
  stores.push_back(std::make_unique<PartitionStore>());
  ASSERT_TRUE(LoadCoverTables(stores[0].get(), parts, 0).ok());
  SerialExecutor serial(&parts, &procs, {stores[0].get()});
  pb::Txn t;
  t.set_type(kCoverTxnType);
  t.set_id(1);
  t.add_read_set(MakeKey(kParent, 1));
  t.add_write_set(MakeKey(kParent, 1));
  const pb::TxnResult r = serial.Execute(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("not in the txn's write set"), std::string::npos) << r.error();
}


// Buffered writes of large values (procedure.h: a value read back stays
// valid until the procedure returns, however much it writes after): a
// 40,000-byte record (more than a block of the scheduler's write arena)
// and 6,000-byte children, one of which is read back, outlives five more
// writes and is then written from its own view.
constexpr uint32_t kBig = 8, kMid = 9, kMidChild = 10, kBigTxnType = 4;
constexpr uint32_t kBigSize = 40000, kMidSize = 6000;

Key MidCoverOf(Key k) { return KeyTable(k) == kMidChild ? MakeKey(kMid, KeyRow(k) >> 8) : k; }

absl::Status BigProcedure(TxnContext* ctx, std::string* result) {
  const Key mid = ctx->txn().write_set(0), big = ctx->txn().write_set(1);
  auto mv = ctx->Read(mid);
  if (!mv.ok()) return mv.status();
  auto bv = ctx->Read(big);
  if (!bv.ok()) return bv.status();
  std::string next_big(*bv);
  for (char& ch : next_big) ch = static_cast<char>(ch + 1);
  if (absl::Status s = ctx->Write(big, next_big); !s.ok()) return s;
  const char seed = static_cast<char>((*mv)[0] + ctx->txn().id());
  const Key first = MakeKey(kMidChild, KeyRow(mid) << 8 | 1);
  if (absl::Status s = ctx->Write(first, std::string(kMidSize, seed)); !s.ok()) return s;
  auto view = ctx->Read(first);  // a view of the buffered value
  if (!view.ok()) return view.status();
  for (uint64_t i = 2; i <= 6; ++i) {
    absl::Status s = ctx->Write(MakeKey(kMidChild, KeyRow(mid) << 8 | i), std::string(kMidSize, static_cast<char>(seed + i)));
    if (!s.ok()) return s;
  }
  if (*view != std::string(kMidSize, seed)) return absl::InternalError("a buffered value moved or changed");
  if (absl::Status s = ctx->Write(first, *view); !s.ok()) return s;  // from its own bytes
  std::string next_mid(*mv);
  next_mid[0] = static_cast<char>(next_mid[0] + 1);
  if (absl::Status s = ctx->Write(mid, next_mid); !s.ok()) return s;
  result->assign(std::to_string(Mix64(static_cast<uint64_t>(static_cast<unsigned char>((*view)[17])) ^ KeyRow(big))) +
                 "/" + std::to_string(static_cast<unsigned char>(next_big[kBigSize - 1])));
  return absl::OkStatus();
}

absl::Status LoadBigTables(PartitionStore* store) {
  for (auto [t, size] : {std::pair{kBig, kBigSize}, std::pair{kMid, kMidSize}, std::pair{kMidChild, kMidSize}}) {
    auto table = store->CreateTable(TableOptions{t, "t" + std::to_string(t), size, 64});
    if (!table.ok()) return table.status();
  }
  for (uint64_t r = 0; r < 4; ++r) {
    std::memset(store->Insert(MakeKey(kBig, r))->value(), static_cast<int>(r), kBigSize);
    std::memset(store->Insert(MakeKey(kMid, r))->value(), static_cast<int>(7 * r), kMidSize);
  }
  return absl::OkStatus();
}

TEST(Engine, LargeBufferedValuesEqualTheSerialExecutor) {
  ProcedureRegistry procs;
  ASSERT_TRUE(procs.Register(kBigTxnType, "big", &BigProcedure).ok());
  procs.SetKeyCover(&MidCoverOf);
  ModPartitioner parts(1);
  for (int mode = 0; mode < 4; ++mode) {
    const bool release_on_workers = mode % 2 == 0, staged_alloc = mode >= 2;
    EngineOptions o;
    o.workers = 2;
    o.release_on_workers = release_on_workers;
    o.staged_alloc = staged_alloc;
    o.record_history = true;
    auto engine = Engine::Create(o, &parts, &procs);
    ASSERT_TRUE(engine.ok());
    ASSERT_TRUE(LoadBigTables((*engine)->store(0)).ok());
    ResultCollector client;
    const uint64_t id = (*engine)->RegisterClient(&client);
    ASSERT_TRUE((*engine)->Start().ok());
    std::mt19937_64 rng(11);
    constexpr int kN = 300;
    for (int i = 0; i < kN; ++i) {
      pb::Txn t;
      t.set_type(kBigTxnType);
      t.set_client_id(id);
      t.set_client_seq(i);
      t.add_write_set(MakeKey(kMid, rng() % 4));
      t.add_write_set(MakeKey(kBig, rng() % 4));
      t.add_read_set(t.write_set(0));
      t.add_read_set(t.write_set(1));
      ASSERT_TRUE((*engine)->Submit(t).ok());
    }
    ASSERT_TRUE((*engine)->Stop().ok());
    ASSERT_EQ(client.count, kN);
    PartitionStore oracle;
    ASSERT_TRUE(LoadBigTables(&oracle).ok());
    SerialExecutor serial(&parts, &procs, {&oracle});
    for (const auto& b : (*engine)->history())
      for (const pb::Txn& t : b->txns()) {
        const pb::TxnResult want = serial.Execute(t);
        ASSERT_EQ(want.status(), pb::STATUS_OK) << want.error();
        const pb::TxnResult& got = client.by_seq.at(t.client_seq());
        ASSERT_EQ(got.status(), pb::STATUS_OK) << got.error();
        ASSERT_EQ(got.result(), want.result());
      }
    EXPECT_EQ((*engine)->store(0)->Digest(), oracle.Digest())
        << "release_on_workers " << release_on_workers << ", staged_alloc " << staged_alloc;
  }
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, CoverTest, ::testing::ValuesIn(LockManagerNames()));

}  // namespace
}  // namespace detdb
