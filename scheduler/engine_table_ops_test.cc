// Whole-table operations while txns run (issue 14, point 1): truncates and
// bulk loads sequenced like txns (pb::Txn::table_op) among ordinary txns,
// single- and multi-partition; scans (Engine::ScanTable) under S intent
// locks meanwhile. Every result and the final digests equal the serial
// executor's on the same order, under every intent lock implementation;
// no scan ever sees a torn record (every value the txns write is 64 copies
// of one word). The wide table is also run as an ordered table (a B+tree:
// truncate retires the tree, bulk load inserts into it, the scan walks it).
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"
#include "scheduler/serial_executor.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

constexpr uint32_t kWideTable = 2;
constexpr uint32_t kWideBytes = 512;  // 64 words: a torn copy shows as unequal words
constexpr uint64_t kWideRows = 2000;  // all partitions
constexpr uint32_t kWideTxnType = 4;

std::string Uniform(uint64_t word, uint32_t bytes = kWideBytes) {
  std::string v(bytes, '\0');
  for (uint32_t i = 0; i < bytes; i += 8) std::memcpy(&v[i], &word, 8);
  return v;
}
bool IsUniform(std::string_view v) {
  for (size_t i = 8; i < v.size(); i += 8)
    if (std::memcmp(v.data(), v.data() + i, 8) != 0) return false;
  return true;
}

// Reads the wide rows of its read set (absent ones count as 0) and writes
// each key of its write set as 64 copies of a word of the reads, key and id.
absl::Status WideProcedure(TxnContext* ctx, std::string* result) {
  uint64_t acc = ctx->txn().id();
  for (Key k : ctx->txn().read_set()) {
    auto v = ctx->Read(k);
    if (v.ok()) {
      if (!IsUniform(*v)) return absl::InternalError("torn read");
      acc = Mix64(acc + LoadCounter(*v));
    }
  }
  for (Key k : ctx->txn().write_set())
    if (absl::Status s = ctx->Write(k, Uniform(Mix64(acc ^ k))); !s.ok()) return s;
  result->assign(reinterpret_cast<const char*>(&acc), 8);
  return absl::OkStatus();
}

absl::Status LoadTables(PartitionStore* store, const Partitioner& parts, PartitionId p, bool ordered = false) {
  if (absl::Status s = LoadCounterTable(store, parts, p, kRecordsPerPartition); !s.ok()) return s;
  auto t = store->CreateTable(
      {.id = kWideTable, .name = "wide", .value_size = kWideBytes, .expected_records = 64, .ordered = ordered});
  if (!t.ok()) return t.status();
  for (uint64_t r = 0; r < kWideRows / 2; ++r) {
    const Key k = MakeKey(kWideTable, r);
    if (parts.PartitionOf(k) == p) std::memcpy((*t)->Insert(k)->value(), Uniform(r).data(), kWideBytes);
  }
  return absl::OkStatus();
}

// Txns over both tables (RandomTxns' counters, wide reads and writes, some
// on two partitions), with a table operation every ~150 txns: truncates
// and bulk loads of either table.
std::vector<pb::Txn> MixedTxns(uint64_t seed, int n, uint32_t partitions, uint64_t client) {
  std::mt19937_64 rng(seed);
  std::vector<pb::Txn> out = RandomTxns(seed, n, partitions, client);
  for (pb::Txn& t : out) {
    const uint64_t r = rng() % 150;
    if (r == 0 || r == 1) {
      const uint32_t table = rng() % 3 == 0 ? kCounterTable : kWideTable;
      const uint64_t seq = t.client_seq();
      t = pb::Txn();
      t.set_client_id(client);
      t.set_client_seq(seq);
      pb::TableOp* op = t.mutable_table_op();
      op->set_table(table);
      if (r == 0) {
        op->set_kind(pb::TableOp::TRUNCATE);
      } else {
        op->set_kind(pb::TableOp::BULK_LOAD);
        const int rows = 1 + static_cast<int>(rng() % 300);
        for (int i = 0; i < rows; ++i) {
          pb::KeyValue* kv = op->add_rows();
          const uint64_t row = rng() % (table == kWideTable ? kWideRows : kRecordsPerPartition * partitions);
          kv->set_key(MakeKey(table, row));
          const uint64_t word = Mix64(seed + row);
          kv->set_value(table == kWideTable ? Uniform(word) : std::string(reinterpret_cast<const char*>(&word), 8));
        }
      }
    } else if (r < 60) {
      t.clear_read_set();
      t.clear_write_set();
      t.set_type(kWideTxnType);
      for (int j = static_cast<int>(rng() % 3); j > 0; --j) t.add_read_set(MakeKey(kWideTable, rng() % kWideRows));
      for (int j = 1 + static_cast<int>(rng() % 4); j > 0; --j)
        t.add_write_set(MakeKey(kWideTable, rng() % kWideRows));
    }
  }
  return out;
}

struct Case {
  std::string intent_locks, lock_manager;
  uint32_t partitions;
  bool ordered = false;  // the wide table is a B+tree
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.intent_locks << ", " << c.lock_manager << ", " << c.partitions << " partitions"
      << (c.ordered ? ", ordered" : "");
}

class EngineTableOpsTest : public ::testing::TestWithParam<Case> {};

// Runs MixedTxns on 2 workers per partition while a thread scans the wide
// table over and over; checks every scanned record, every result and the
// digests against the serial executor.
TEST_P(EngineTableOpsTest, TableOpsAndScansWhileTxnsRunEqualTheSerialExecutor) {
  const Case& c = GetParam();
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ASSERT_TRUE(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
  ASSERT_TRUE(procs.Register(kWideTxnType, "wide", &WideProcedure).ok());
  ModPartitioner parts(c.partitions);
  EngineOptions o;
  o.workers = 2;
  o.lock_manager = c.lock_manager;
  o.intent_locks = c.intent_locks;
  o.allow_table_ops = true;
  o.lock.max_active = 100;
  o.epoch_us = 200;
  o.record_history = true;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (PartitionId p = 0; p < c.partitions; ++p)
    ASSERT_TRUE(LoadTables((*engine)->store(p), parts, p, c.ordered).ok());
  ASSERT_EQ((*engine)->store(0)->GetTable(kWideTable)->ordered(), c.ordered);
  ResultCollector client;
  const uint64_t client_id = (*engine)->RegisterClient(&client);
  const int n = TxnsPerRun();
  std::vector<pb::Txn> txns = MixedTxns(11 + c.partitions, n, c.partitions, client_id);
  ASSERT_TRUE((*engine)->Start().ok());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> scans{0}, rows_seen{0}, torn{0}, failed{0};
  std::thread scanner([&] {
    while (!done.load()) {
      auto s = (*engine)->ScanTable("wide", 0, kWideRows, std::chrono::seconds(20));
      if (!s.ok()) {
        failed.fetch_add(1);
        continue;
      }
      for (const Engine::ScanRow& r : s->rows) torn.fetch_add(!IsUniform(r.value));
      rows_seen.fetch_add(s->rows.size());
      scans.fetch_add(1);
    }
  });
  for (size_t i = 0; i < txns.size(); i += 50) {
    std::vector<pb::Txn> group(txns.begin() + i, txns.begin() + std::min(txns.size(), i + 50));
    ASSERT_TRUE((*engine)->SubmitMany(&group).ok());
  }
  ASSERT_TRUE((*engine)->Stop().ok());
  done.store(true);
  scanner.join();
  ASSERT_EQ(client.count, n);
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_GT(scans.load(), 0u);

  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < c.partitions; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadTables(stores.back().get(), parts, p, c.ordered).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int table_ops = 0, committed = 0;
  for (const auto& batch : (*engine)->history()) {
    for (const pb::Txn& t : batch->txns()) {
      const pb::TxnResult want = serial.Execute(t);
      const pb::TxnResult& got = client.by_seq.at(t.client_seq());
      ASSERT_EQ(got.status(), want.status()) << "txn " << t.id() << " " << got.error();
      ASSERT_EQ(got.result(), want.result()) << "txn " << t.id();
      table_ops += t.has_table_op();
      committed += want.status() == pb::STATUS_OK;
      if (t.has_table_op() && t.table_op().kind() == pb::TableOp::TRUNCATE) {
        for (PartitionStore* s : raw) {  // truncated means empty, by every way of looking
          const Table* table = s->GetTable(t.table_op().table());
          ASSERT_EQ(table->size(), 0u) << "txn " << t.id();
          uint64_t rows = 0;
          table->ForEachInKeyOrder([&rows](const Record&) { ++rows; });
          ASSERT_EQ(rows, 0u) << "txn " << t.id();
        }
      }
    }
  }
  EXPECT_GT(table_ops, n / 150);
  EXPECT_GT(committed, n / 2);
  for (PartitionId p = 0; p < c.partitions; ++p)
    EXPECT_EQ((*engine)->store(p)->Digest(), raw[p]->Digest()) << "partition " << p;
  const IntentLockStats st = (*engine)->store(0)->intents().stats();
  EXPECT_GT(st.absolute_grants, 0u);
  // Whatever the state, the last scan equals the serial executor's table.
  auto last = (*engine)->ScanTable("2", 0, kWideRows, std::chrono::seconds(5));
  ASSERT_TRUE(last.ok()) << last.status();
  uint64_t serial_rows = 0;
  for (PartitionStore* s : raw) serial_rows += s->GetTable(kWideTable)->size();
  EXPECT_EQ(last->rows.size(), serial_rows);
  for (const Engine::ScanRow& r : last->rows) {
    const Record* want = raw[r.partition]->Get(r.key);
    ASSERT_NE(want, nullptr);
    EXPECT_EQ(r.value, std::string_view(want->value(), kWideBytes));
  }
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const char* kind : {"lil", "sli", "queue"})
    for (const std::string& lm : LockManagerNames()) out.push_back({kind, lm, 2});
  for (const std::string& lm : LockManagerNames()) out.push_back({"lil", lm, 1});
  for (const std::string& lm : LockManagerNames()) out.push_back({"lil", lm, 2, /*ordered=*/true});
  out.push_back({"queue", LockManagerNames()[0], 2, /*ordered=*/true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(IntentLocksAndLockManagers, EngineTableOpsTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) {
                           return info.param.intent_locks + "_" + info.param.lock_manager + "_p" +
                                  std::to_string(info.param.partitions) + (info.param.ordered ? "_ordered" : "");
                         });

TEST(EngineTableOps, RefusedUnlessAllowedAndValidated) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ModPartitioner parts(2);
  for (bool allow : {false, true}) {
    EngineOptions o;
    o.allow_table_ops = allow;
    auto engine = Engine::Create(o, &parts, &procs);
    ASSERT_TRUE(engine.ok());
    for (PartitionId p = 0; p < 2; ++p) ASSERT_TRUE(LoadTables((*engine)->store(p), parts, p).ok());
    ResultCollector client;
    const uint64_t id = (*engine)->RegisterClient(&client);
    pb::Txn t;
    t.set_client_id(id);
    t.mutable_table_op()->set_kind(pb::TableOp::TRUNCATE);
    t.mutable_table_op()->set_table(kWideTable);
    EXPECT_EQ((*engine)->Check(t).ok(), allow);
    if (!allow) continue;
    auto bad = [&](auto change) {
      pb::Txn b = t;
      change(&b);
      return !(*engine)->Check(b).ok();
    };
    EXPECT_TRUE(bad([](pb::Txn* b) { b->mutable_table_op()->set_table(77); }));
    EXPECT_TRUE(bad([](pb::Txn* b) { b->add_write_set(MakeKey(kWideTable, 1)); }));
    EXPECT_TRUE(bad([](pb::Txn* b) { b->set_type(kRmwTxnType); }));
    EXPECT_TRUE(bad([](pb::Txn* b) { b->set_client_id(99); }));
    EXPECT_TRUE(bad([](pb::Txn* b) { b->mutable_table_op()->add_rows()->set_key(MakeKey(kWideTable, 1)); }));
    t.mutable_table_op()->set_kind(pb::TableOp::BULK_LOAD);
    pb::KeyValue* kv = t.mutable_table_op()->add_rows();
    kv->set_key(MakeKey(kWideTable, 1));
    kv->set_value(Uniform(1));
    EXPECT_TRUE((*engine)->Check(t).ok());
    EXPECT_TRUE(bad([](pb::Txn* b) { b->mutable_table_op()->mutable_rows(0)->set_value("short"); }));
    EXPECT_TRUE(bad([](pb::Txn* b) { b->mutable_table_op()->mutable_rows(0)->set_key(MakeKey(kCounterTable, 1)); }));
    EXPECT_TRUE(bad([](pb::Txn* b) { b->mutable_table_op()->set_kind(static_cast<pb::TableOp::Kind>(9)); }));
  }
}

// Few large records written over and over while a scan reads them all in
// a loop: without the scan's S lock, a scan copies a record while a worker
// writes it (and sees two values' words) many times per run.
constexpr uint32_t kBigTable = 3;
constexpr uint32_t kBigBytes = 32 << 10;
constexpr uint64_t kBigRows = 16;
constexpr uint32_t kBigTxnType = 5;

absl::Status BigProcedure(TxnContext* ctx, std::string* result) {
  for (Key k : ctx->txn().write_set())
    if (absl::Status s = ctx->Write(k, Uniform(Mix64(ctx->txn().id() ^ k), kBigBytes)); !s.ok()) return s;
  return absl::OkStatus();
}

class EngineScanTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineScanTest, NoTornRecordWhileWorkersWriteIt) {
  ProcedureRegistry procs;
  ASSERT_TRUE(procs.Register(kBigTxnType, "big", &BigProcedure).ok());
  ModPartitioner parts(1);
  EngineOptions o;
  o.workers = 2;
  o.intent_locks = GetParam();
  o.epoch_us = 200;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto t = (*engine)->store(0)->CreateTable({.id = kBigTable, .name = "big", .value_size = kBigBytes});
  ASSERT_TRUE(t.ok());
  for (uint64_t r = 0; r < kBigRows; ++r)
    std::memcpy((*t)->Insert(MakeKey(kBigTable, r))->value(), Uniform(r, kBigBytes).data(), kBigBytes);
  ResultCollector client;
  const uint64_t client_id = (*engine)->RegisterClient(&client);
  ASSERT_TRUE((*engine)->Start().ok());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> scans{0}, torn{0};
  std::thread scanner([&] {
    while (!done.load()) {
      auto s = (*engine)->ScanTable("big", 0, kBigRows, std::chrono::seconds(20));
      ASSERT_TRUE(s.ok()) << s.status();
      for (const Engine::ScanRow& r : s->rows) torn.fetch_add(!IsUniform(r.value));
      scans.fetch_add(1);
    }
  });
  const int n = std::max(200, TxnsPerRun() / 2);
  std::mt19937_64 rng(3);
  for (int i = 0; i < n; i += 20) {
    std::vector<pb::Txn> group;
    for (int j = i; j < i + 20; ++j) {
      pb::Txn tx;
      tx.set_client_id(client_id);
      tx.set_client_seq(j);
      tx.set_type(kBigTxnType);
      tx.add_write_set(MakeKey(kBigTable, rng() % kBigRows));
      group.push_back(std::move(tx));
    }
    ASSERT_TRUE((*engine)->SubmitMany(&group).ok());
  }
  ASSERT_TRUE((*engine)->Stop().ok());
  done.store(true);
  scanner.join();
  EXPECT_EQ(client.count, (n + 19) / 20 * 20);
  EXPECT_GT(scans.load(), 10u);
  EXPECT_EQ(torn.load(), 0u) << "of " << scans.load() << " scans";
}

INSTANTIATE_TEST_SUITE_P(IntentLocks, EngineScanTest, ::testing::Values("lil", "sli", "queue"));

// A scan waits for a writer of its table (here an agent holding IX, as a
// worker applying writes does) and gives up at its deadline.
TEST(EngineTableOps, ScanWaitsForWritersOfItsTable) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterTestProcedures(&procs).ok());
  ModPartitioner parts(1);
  EngineOptions o;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE(LoadTables((*engine)->store(0), parts, 0).ok());
  auto writer = (*engine)->store(0)->intents().NewAgent();
  writer->Acquire(IntentLockTable::kPartitionLock, IntentMode::kIX);
  writer->Acquire(IntentLockTable::TableLock(kWideTable), IntentMode::kIX);
  auto s = (*engine)->ScanTable("wide", 0, 10, std::chrono::milliseconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s.status())) << s.status();
  auto other = (*engine)->ScanTable("counter", 0, 10, std::chrono::milliseconds(30));  // another table: no wait
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->rows.size(), 10u);
  EXPECT_TRUE(other->more);
  writer->EndTxn();  // the txn ends: LIL gives the cached IX back for the waiting S
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    writer->ReleaseAll();
  });
  s = (*engine)->ScanTable("wide", 100, 5, std::chrono::seconds(10));
  later.join();
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->rows.size(), 5u);
  EXPECT_EQ(KeyRow(s->rows[0].key), 100u);
  EXPECT_EQ(s->value_size, kWideBytes);
  EXPECT_TRUE(absl::IsNotFound((*engine)->ScanTable("nope", 0, 1, std::chrono::seconds(1)).status()));
}

}  // namespace
}  // namespace detdb
