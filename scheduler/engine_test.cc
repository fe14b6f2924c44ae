// End-to-end determinism: seeded random workloads (hot keys, reads and
// writes mixed, blind writes, read-only and multi-partition txns) run through
// the engine under every lock manager with 1, 2 and 4 workers and 1 and 3
// partitions. Every txn's result and the final state digest must equal the
// serial executor's on the same global order (G3 of LOCKING.md).
//
// DETDB_E2E_TXNS sets txns per run (default 3000).
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

#include <gtest/gtest.h>

#include "bench/micro.h"
#include "common/hash.h"
#include "scheduler/engine.h"
#include "scheduler/serial_executor.h"
#include "scheduler/engine_test_util.h"
#include "storage/micro_table.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

struct Case {
  std::string lock_manager;
  uint32_t workers;
  uint32_t partitions;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.lock_manager << ", " << c.workers << " workers, " << c.partitions << " partitions";
}

class EngineDeterminismTest : public ::testing::TestWithParam<Case> {};

TEST_P(EngineDeterminismTest, ResultsAndDigestEqualTheSerialExecutor) {
  const Case c = GetParam();
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  ASSERT_TRUE(procs.Register(kRandomTxnType, "random", &RandomProcedure).ok());
  ModPartitioner parts(c.partitions);
  EngineOptions o;
  o.workers = c.workers;
  o.lock_manager = c.lock_manager;
  o.lock.table_size = 64;  // hash collisions on purpose
  o.lock.max_active = 50;
  o.epoch_us = 200;
  o.record_history = true;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (PartitionId p = 0; p < c.partitions; ++p)
    ASSERT_TRUE(LoadMicroTable((*engine)->store(p), parts, p, kRecordsPerPartition).ok());
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
    ASSERT_TRUE(LoadMicroTable(stores.back().get(), parts, p, kRecordsPerPartition).ok());
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
  for (const std::string& lm : LockManagerNames())
    for (uint32_t w : {1u, 2u, 4u})
      for (uint32_t p : {1u, 3u}) out.push_back({lm, w, p});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, EngineDeterminismTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) {
                           return info.param.lock_manager + "_w" + std::to_string(info.param.workers) +
                                  "_p" + std::to_string(info.param.partitions);
                         });

TEST(Engine, RejectsBadInputBeforeSequencing) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  ModPartitioner parts(1);
  auto engine = Engine::Create(EngineOptions{}, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE(LoadMicroTable((*engine)->store(0), parts, 0, 100).ok());
  ResultCollector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  ASSERT_TRUE((*engine)->Start().ok());
  pb::Txn bad_type;
  bad_type.set_type(999);
  bad_type.set_client_id(id);
  bad_type.add_read_set(MakeKey(kMicroTable, 1));
  EXPECT_EQ((*engine)->Submit(bad_type).code(), absl::StatusCode::kInvalidArgument);
  pb::Txn bad_table;
  bad_table.set_type(kMicroTxnType);
  bad_table.set_client_id(id);
  bad_table.add_read_set(MakeKey(77, 1));
  EXPECT_EQ((*engine)->Submit(bad_table).code(), absl::StatusCode::kInvalidArgument);
  pb::Txn bad_client;
  bad_client.set_type(kMicroTxnType);
  bad_client.set_client_id(id + 5);
  EXPECT_EQ((*engine)->Submit(bad_client).code(), absl::StatusCode::kInvalidArgument);
  pb::Txn good;
  good.set_type(kMicroTxnType);
  good.set_client_id(id);
  good.add_read_set(MakeKey(kMicroTable, 3));
  good.add_write_set(MakeKey(kMicroTable, 3));
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
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  ModPartitioner parts(2);
  auto engine = Engine::Create(EngineOptions{}, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  for (PartitionId p = 0; p < 2; ++p) ASSERT_TRUE(LoadMicroTable((*engine)->store(p), parts, p, 10).ok());
  ASSERT_TRUE((*engine)->store(0)->CreateTable(TableOptions{2, "only_here", 8, 16}).ok());
  EXPECT_EQ((*engine)->Start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Engine, BoundsTxnsAcceptedButNotAnswered) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  ModPartitioner parts(1);
  EngineOptions o;
  o.max_pending = 5;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE(LoadMicroTable((*engine)->store(0), parts, 0, 10).ok());
  ResultCollector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  pb::Txn t;
  t.set_type(kMicroTxnType);
  t.set_client_id(id);
  t.add_read_set(MakeKey(kMicroTable, 1));
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
TEST(Engine, LargeTxnsEqualTheSerialExecutor) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  ModPartitioner parts(2);
  EngineOptions o;
  o.record_history = true;
  o.workers = 2;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok());
  constexpr uint64_t kRecords = 500;
  for (PartitionId p = 0; p < 2; ++p) ASSERT_TRUE(LoadMicroTable((*engine)->store(p), parts, p, kRecords).ok());
  ResultCollector client;
  const uint64_t id = (*engine)->RegisterClient(&client);
  ASSERT_TRUE((*engine)->Start().ok());
  std::mt19937_64 rng(5);
  for (int i = 0; i < 60; ++i) {
    pb::Txn t;
    t.set_type(kMicroTxnType);
    t.set_client_id(id);
    t.set_client_seq(i);
    for (int j = 0; j < 120; ++j) {
      const Key k = MakeKey(kMicroTable, rng() % (2 * kRecords));
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
    ASSERT_TRUE(LoadMicroTable(stores.back().get(), parts, p, kRecords).ok());
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

}  // namespace
}  // namespace detdb
