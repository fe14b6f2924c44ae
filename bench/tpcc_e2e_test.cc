// TPC-C end to end on an in-process detdb: the full mix under every lock
// manager with 1 and 3 partitions; afterwards the consistency checker must
// pass, and the recorded global order must give the same state digest when
// replayed one txn at a time by the serial executor and when replayed
// through the engine under every other lock manager.
//
// DETDB_TPCC_TXNS sets the txns per run (default 3000).
#include <cstdio>
#include <cstdlib>
#include <map>

#include <gtest/gtest.h>

#include "workloads/tpcc/checker.h"
#include "workloads/tpcc/loader.h"
#include "workloads/tpcc/procedures.h"
#include "bench/tpcc_runner.h"
#include "scheduler/engine.h"
#include "scheduler/serial_executor.h"
#include "storage/elided_latch.h"

namespace detdb {
namespace tpcc {
namespace {

uint64_t TxnsPerRun() {
  const char* v = std::getenv("DETDB_TPCC_TXNS");
  return v != nullptr ? std::strtoull(v, nullptr, 10) : 3000;
}

struct Case {
  std::string lock_manager;
  uint32_t partitions;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.lock_manager << ", " << c.partitions << " partitions"; }

class TpccEndToEnd : public ::testing::TestWithParam<Case> {};

TEST(TpccDefaults, OutstandingDependsOnReconnaissanceInTheMix) {
  const auto with = [](const std::string& text) {
    absl::StatusOr<Mix> m = Mix::Parse(text);
    EXPECT_TRUE(m.ok()) << text;
    return DefaultOutstanding(*m);
  };
  EXPECT_EQ(with("full"), 200u);
  EXPECT_EQ(with("no+payment"), 400u);
  EXPECT_EQ(with("50,46,4,0,0"), 400u);  // Order-Status has no reconnaissance
  EXPECT_EQ(with("50,46,0,4,0"), 200u);  // Delivery
  EXPECT_EQ(with("50,46,0,0,4"), 200u);  // Stock-Level
}

// The client submits each txn by moving it out of its request and rebuilds
// it (Generator::Redraw) when a reconnaissance no longer holds. Many txns in
// flight make Delivery and Stock-Level restart often. Every restart must
// resubmit the logical txn's reconnaissance, and its real txn must follow:
// in the sequenced history each Delivery (Stock-Level) that committed or
// restarted has exactly one reconnaissance and one real txn.
TEST(TpccClient, RestartedReconnaissanceIsResubmittedFromItsDraw) {
  TpccRunOptions o;
  o.scale = Scale::Small(2);
  o.load_seed = 5;
  o.seed = 9;
  o.workers = 2;
  o.epoch_us = 500;
  o.lock.check_invariants = false;
  o.outstanding = 500;
  o.txns = 4000;
  o.record_history = true;
  auto r = RunTpcc(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->consistency_ok) << (r->consistency_failures.empty() ? "" : r->consistency_failures[0]);
  uint64_t restarts = 0;
  for (int k = 0; k < kNumKinds; ++k) {
    EXPECT_GT(r->kinds[k].committed, 0u) << KindName(static_cast<TxnKind>(k)) << " never committed";
    restarts += r->kinds[k].restarts;
  }
  EXPECT_GT(restarts, 0u) << "no reconnaissance restarted: the resubmission path was not taken";
  EXPECT_GE(r->committed, o.txns);
  std::map<uint32_t, uint64_t> sequenced;  // by txn type
  for (const auto& b : r->history)
    for (const pb::Txn& t : b->txns()) ++sequenced[t.type()];
  const KindResult& delivery = r->kinds[static_cast<int>(TxnKind::kDelivery)];
  const KindResult& stock = r->kinds[static_cast<int>(TxnKind::kStockLevel)];
  EXPECT_EQ(sequenced[kReconDeliveryType], delivery.committed + delivery.restarts);
  EXPECT_EQ(sequenced[kDeliveryType], delivery.committed + delivery.restarts);
  EXPECT_EQ(sequenced[kReconStockLevelType], stock.committed + stock.restarts);
  EXPECT_EQ(sequenced[kStockLevelType], stock.committed + stock.restarts);
}

// Storage latches elided with RTM or taken for real reach the same state:
// one client's New-Order + Payment txns are sequenced in the order it draws
// them (no reconnaissance restarts), so two runs of the same seeds commit
// the same txns in the same order. Where RTM runs, the first run's inserts
// and erases must have been elided (counted by TpccRunResult::latches).
TEST(TpccLatches, ElisionChangesNoStateAndIsCounted) {
  TpccRunOptions o;
  o.scale = Scale::Small(2);
  o.load_seed = 3;
  o.seed = 4;
  auto mix = Mix::Parse("no+payment");
  ASSERT_TRUE(mix.ok());
  o.mix = *mix;
  o.workers = 2;
  o.epoch_us = 500;
  o.lock.check_invariants = false;
  o.outstanding = 200;
  o.txns = 6000;
  const bool rtm = ElidedLatch::ElisionEnabled();
  auto elided = RunTpcc(o);
  ElidedLatch::SetElisionForTesting(false);  // no engine runs now: no latch is held
  auto spun = RunTpcc(o);
  ElidedLatch::SetElisionForTesting(true);
  ASSERT_TRUE(elided.ok()) << elided.status();
  ASSERT_TRUE(spun.ok()) << spun.status();
  EXPECT_TRUE(elided->consistency_ok && spun->consistency_ok);
  EXPECT_EQ(elided->committed, spun->committed);
  EXPECT_EQ(elided->digest, spun->digest);
  ASSERT_TRUE(elided->in_process && spun->in_process);  // latches are counted
  EXPECT_FALSE(spun->elision);
  EXPECT_EQ(spun->latches.elided, 0u);
  std::printf("latches: %s; elided %lu sections in %lu txns, fallback %lu\n", ElidedLatch::ElisionStatus().c_str(),
              static_cast<unsigned long>(elided->latches.elided), static_cast<unsigned long>(elided->committed),
              static_cast<unsigned long>(elided->latches.fallback));
  if (rtm) {
    EXPECT_TRUE(elided->elision);
    EXPECT_GT(elided->latches.elided, elided->committed) << "New-Order inserts several rows under stripe latches";
  } else {
    std::printf("RTM path not run: %s (both runs used spin latches)\n", ElidedLatch::ElisionStatus().c_str());
  }
}

TEST_P(TpccEndToEnd, ConsistentAndEqualToTheSerialExecutorAndEveryLockManager) {
  const Case c = GetParam();
  TpccRunOptions o;
  o.scale = Scale::Small(3);
  o.load_seed = 7;
  o.seed = 11;
  o.lock_manager = c.lock_manager;
  o.partitions = c.partitions;
  o.workers = 2;
  o.epoch_us = 500;
  o.lock.max_active = 300;
  o.lock.check_invariants = false;  // lock-manager invariants have their own tests; this one is about TPC-C
  o.outstanding = 100;
  o.txns = TxnsPerRun();
  o.record_history = true;
  o.remote_line = 0.05;  // more multi-partition New-Orders than the spec's 1%
  auto r = RunTpcc(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->consistency_checked);
  EXPECT_TRUE(r->consistency_ok) << (r->consistency_failures.empty() ? "" : r->consistency_failures[0]);
  for (int k = 0; k < kNumKinds; ++k)
    EXPECT_GT(r->kinds[k].committed, 0u) << KindName(static_cast<TxnKind>(k)) << " never committed";
  EXPECT_GT(r->kinds[static_cast<int>(TxnKind::kNewOrder)].rolled_back, 0u) << "the 1% rollback happens";

  // The serial executor on the same global order.
  WarehousePartitioner parts(c.partitions);
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterProcedures(&procs).ok());
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  std::vector<const PartitionStore*> craw;
  for (PartitionId p = 0; p < c.partitions; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadPartition(stores.back().get(), parts, p, o.scale, o.load_seed).ok());
    raw.push_back(stores.back().get());
    craw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  uint64_t txns = 0, multi = 0;
  for (const auto& b : r->history)
    for (const pb::Txn& t : b->txns()) {
      serial.Execute(t);
      ++txns;
      multi += t.readers_size() + t.writers_size() > 2 || t.writers_size() > 1;
    }
  EXPECT_GE(txns, o.txns);
  if (c.partitions > 1) {
    EXPECT_GT(multi, 0u) << "remote lines and payments cross partitions";
  }
  std::vector<uint64_t> digests;
  for (PartitionId p = 0; p < c.partitions; ++p) digests.push_back(raw[p]->Digest());
  EXPECT_TRUE(CheckConsistency(craw, o.scale, true).ok);

  // The same history through the engine under every lock manager, with
  // staged allocation of the txn states (staged_states.h).
  for (const std::string& lm : LockManagerNames()) {
    EngineOptions eo;
    eo.lock_manager = lm;
    eo.workers = 2;
    eo.staged_alloc = true;
    eo.lock.max_active = 300;
    eo.lock.check_invariants = false;
    auto e = Engine::Create(eo, &parts, &procs);
    ASSERT_TRUE(e.ok());
    for (PartitionId p = 0; p < c.partitions; ++p)
      ASSERT_TRUE(LoadPartition((*e)->store(p), parts, p, o.scale, o.load_seed).ok());
    ASSERT_TRUE((*e)->Replay(r->history).ok()) << lm;
    for (PartitionId p = 0; p < c.partitions; ++p)
      EXPECT_EQ((*e)->store(p)->Digest(), digests[p]) << lm << ", partition " << p;
  }
  uint64_t combined = 0;
  {
    EngineOptions eo;
    eo.lock.check_invariants = false;
    auto e = Engine::Create(eo, &parts, &procs);
    ASSERT_TRUE(e.ok());
    for (PartitionId p = 0; p < c.partitions; ++p)
      ASSERT_TRUE(LoadPartition((*e)->store(p), parts, p, o.scale, o.load_seed).ok());
    ASSERT_TRUE((*e)->Replay(r->history).ok());
    combined = (*e)->Digest();
  }
  EXPECT_EQ(combined, r->digest) << "the run itself reached the replayed state";
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const std::string& lm : LockManagerNames())
    for (uint32_t p : {1u, 3u}) out.push_back({lm, p});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, TpccEndToEnd, ::testing::ValuesIn(Cases()), [](const auto& info) {
  return info.param.lock_manager + "_p" + std::to_string(info.param.partitions);
});

}  // namespace
}  // namespace tpcc
}  // namespace detdb
