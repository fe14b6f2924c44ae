// The simulated runner (sim.h): it runs the real scheduler logic and lock
// managers, deterministically, and its G1 check catches a lock manager that
// grants conflicting txns together. Costs are fixed here (not calibrated), so
// results do not depend on the host.
#include "bench/sim.h"

#include <string>

#include "gtest/gtest.h"

namespace detdb {
namespace {


SimCosts TestCosts() {
  SimCosts c;
  for (const std::string& name : LockManagerNames()) c.lock[name] = {.txn_ns = 300, .key_ns = 60};
  c.exec_txn_ns = 800;
  c.exec_key_ns = 150;
  c.handoff_ns = 4000;
  c.net_ns = 40000;
  return c;
}

SimOptions Contended(const std::string& lm) {
  SimOptions o;
  o.lock_manager = lm;
  // The lock managers' own CheckInvariants after every operation (on by
  // default in builds without NDEBUG, i.e. under the sanitizers) costs
  // O(active txns) per operation: with thousands of txns admitted it made
  // these runs thousands of times slower under ASan (216 s and > 600 s
  // against 0.1-0.4 s). The simulation checks G1 at every start and release
  // itself; the invariants have their own tests in lockmgr/.
  o.lock.check_invariants = false;
  o.workload.partitions = 2;
  o.workload.records_per_partition = 100000;
  o.workload.contention = 0.1;  // 10 hot records per partition
  o.workload.multipartition = 0.3;
  o.nodes = 2;
  o.workers = 4;
  o.outstanding = 2000;
  o.duration_s = 0.05;
  o.warmup_s = 0.01;
  return o;
}

class SimTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SimTest, EveryLockManagerPassesG1AndCommitsUnderContention) {
  auto r = RunSim(Contended(GetParam()), TestCosts());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->committed, 100u);
  EXPECT_GT(r->parked, 0u);  // multi-partition txns waited for remote reads
  EXPECT_GT(r->blocked_at_admission, 0.0);
}

TEST_P(SimTest, SameOptionsSameResultBitForBit) {
  SimOptions o = Contended(GetParam());
  o.workload.partitions = 1;
  o.nodes = 1;
  o.workload.multipartition = 0;
  auto a = RunSim(o, TestCosts());
  auto b = RunSim(o, TestCosts());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->committed, b->committed);
  EXPECT_EQ(a->events, b->events);
  EXPECT_EQ(a->p99_us, b->p99_us);
}

// TPC-C (fig. 10): the real generator's New-Orders and Payments; no remote
// warehouse, no multi-partition txn; remote orders make them, about the
// share asked for (half the txns are New-Orders; a remote warehouse is on
// another partition 6 times in 7 with 8 warehouses on 4 partitions).
TEST_P(SimTest, TpccPassesG1AndRemoteOrdersSpanPartitions) {
  SimOptions o = Contended(GetParam());
  o.workload.partitions = 4;
  o.nodes = 2;
  o.workers = 2;
  o.tpcc.warehouses = 8;
  o.tpcc.remote_payment = 0;
  o.outstanding = 500;
  o.duration_s = 0.01;
  o.warmup_s = 0.005;
  auto local = RunSim(o, TestCosts());
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_GT(local->committed, 100u);
  EXPECT_EQ(local->multipartition, 0.0);
  EXPECT_GT(local->blocked_at_admission, 0.0);  // district and warehouse rows are hot
  o.tpcc.remote_order = 0.5;
  auto remote = RunSim(o, TestCosts());
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_GT(remote->committed, 100u);
  EXPECT_GT(remote->multipartition, 0.1);
  EXPECT_LT(remote->multipartition, 0.35);
  EXPECT_GT(remote->parked, 0u);
}

TEST(SimOptionsTest, TpccRejectsFewerWarehousesThanPartitions) {
  SimOptions o = Contended("dclp");
  o.workload.partitions = 4;
  o.tpcc.warehouses = 2;
  EXPECT_TRUE(absl::IsInvalidArgument(RunSim(o, TestCosts()).status()));
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, SimTest, ::testing::ValuesIn(LockManagerNames()),
                         [](const auto& info) { return info.param; });

// Grants every txn at once, whatever it conflicts with: a lock manager that
// forgot its lock table.
class GrantAllLockManager final : public LockManager {
 public:
  std::string_view name() const override { return "grant_all"; }
  bool CanAdmit() const override { return true; }
  bool Lock(LockTxn* t, ReadyList* ready) override {
    ++active_;
    ready->push_back(t);
    return true;
  }
  void Release(LockTxn*, ReadyList*) override { --active_; }
  void Poll(bool, ReadyList*) override {}
  bool IsQuiescent() const override { return active_ == 0; }
  absl::Status CheckInvariants() const override { return absl::OkStatus(); }
  LockStats stats() const override { return {}; }

 private:
  uint64_t active_ = 0;
};

TEST(SimBrokenLockManager, FailsTheG1Check) {
  SimOptions o = Contended("dclp");
  o.make_lock_manager = [] { return std::make_unique<GrantAllLockManager>(); };
  auto r = RunSim(o, TestCosts());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("G1 violated"), std::string::npos) << r.status();
}

TEST(SimBrokenLockManager, UncheckedItChangesTheResult) {
  // The simulation's throughput comes from the lock manager it runs: the
  // broken one, never blocking, reports more than the real one can.
  SimOptions o = Contended("dclp");
  o.workload.partitions = 1;
  o.nodes = 1;
  o.workload.multipartition = 0;
  o.workload.depth = 9;  // one hot record, written every 10 txns: a chain
  o.check_g1 = false;
  auto real = RunSim(o, TestCosts());
  o.make_lock_manager = [] { return std::make_unique<GrantAllLockManager>(); };
  auto broken = RunSim(o, TestCosts());
  ASSERT_TRUE(real.ok() && broken.ok());
  EXPECT_GT(broken->txns_per_sec, 1.3 * real->txns_per_sec)
      << "real " << real->txns_per_sec << " broken " << broken->txns_per_sec;
  EXPECT_EQ(broken->blocked_at_admission, 0.0);
  EXPECT_GT(real->blocked_at_admission, 0.0);
}

TEST(SimCores, SharingFewerCoresThanThreadsLowersThroughput) {
  SimOptions o = Contended("dclp");
  o.workload.partitions = 1;
  o.nodes = 1;
  o.workload.multipartition = 0;
  o.workload.contention = 0.0001;
  auto own = RunSim(o, TestCosts());
  o.cores = 2;  // 5 threads on 2 cores
  auto shared = RunSim(o, TestCosts());
  ASSERT_TRUE(own.ok() && shared.ok());
  EXPECT_LT(shared->txns_per_sec, 0.7 * own->txns_per_sec)
      << "own " << own->txns_per_sec << " shared " << shared->txns_per_sec;
}

// The front end (client + sequencer) is a thread per node that pays
// front_txn_ns per txn: it bounds a node's throughput at 1e9 / front_txn_ns,
// and with shared cores its busy thread slows the others down.
TEST(SimFront, TheClientsCostBoundsANodeAndCompetesForCores) {
  SimOptions o = Contended("dclp");
  o.workload.partitions = 1;
  o.nodes = 1;
  o.workers = 2;
  o.workload.multipartition = 0;
  o.workload.contention = 0.0001;
  o.outstanding = 1000;
  o.warmup_s = 0.01;
  o.duration_s = 0.02;
  SimCosts c = TestCosts();
  auto free_front = RunSim(o, c);
  c.front_txn_ns = 20000;  // at most 50K txns/s
  auto slow_front = RunSim(o, c);
  ASSERT_TRUE(free_front.ok() && slow_front.ok());
  EXPECT_GT(free_front->txns_per_sec, 100000) << "without a front-end cost the engine is the limit";
  EXPECT_LE(slow_front->txns_per_sec, 50000 * 1.01);
  EXPECT_GT(slow_front->txns_per_sec, 50000 * 0.9) << "the client is the bottleneck and always busy";
  EXPECT_GT(slow_front->client_busy, 0.95);
  // Extra lock-side and worker costs per txn slow the engine down.
  c.front_txn_ns = 0;
  c.lock_txn_extra_ns = 2000;
  c.worker_txn_extra_ns = 8000;
  auto heavier = RunSim(o, c);
  ASSERT_TRUE(heavier.ok());
  EXPECT_LT(heavier->txns_per_sec, 0.7 * free_front->txns_per_sec);
  // A front end sharing 2 cores with the engine's threads.
  c = TestCosts();
  c.front_txn_ns = 3000;
  o.cores = 2;
  auto shared = RunSim(o, c);
  c.front_txn_ns = 0;
  auto shared_free = RunSim(o, c);
  ASSERT_TRUE(shared.ok() && shared_free.ok());
  EXPECT_LT(shared->txns_per_sec, 0.9 * shared_free->txns_per_sec);
}

TEST(SimCostsTest, TextRoundTripAndBadInput) {
  const SimCosts c = TestCosts();
  auto back = SimCosts::FromText(c.ToText());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->exec_key_ns, c.exec_key_ns);
  EXPECT_EQ(back->net_ns, c.net_ns);
  EXPECT_EQ(back->lock.size(), c.lock.size());
  SimCosts with_overheads = c;
  with_overheads.front_txn_ns = 5;
  with_overheads.lock_txn_extra_ns = 6;
  with_overheads.worker_txn_extra_ns = 7;
  auto again = SimCosts::FromText(with_overheads.ToText());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->front_txn_ns, 5);
  EXPECT_EQ(again->lock_txn_extra_ns, 6);
  EXPECT_EQ(again->worker_txn_extra_ns, 7);
  // A file of an older calibration (without the overheads) still loads.
  std::string old = c.ToText();
  for (const char* name : {"lock_txn_extra_ns", "worker_txn_extra_ns", "front_txn_ns"}) {
    const size_t at = old.find(name);
    ASSERT_NE(at, std::string::npos);
    old.erase(at, old.find('\n', at) + 1 - at);
  }
  auto older = SimCosts::FromText(old);
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->front_txn_ns, 0);
  EXPECT_EQ(back->LockCosts("vll")->key_ns, 60);
  EXPECT_FALSE(back->LockCosts("nope").ok());
  EXPECT_FALSE(SimCosts::FromText("exec_txn_ns 1\n").ok());            // incomplete
  EXPECT_FALSE(SimCosts::FromText("exec_txn_ns -1\n").ok());           // negative
  EXPECT_FALSE(SimCosts::FromText(c.ToText() + "bogus 3\n").ok());    // unknown
  EXPECT_FALSE(SimCosts::Load("/nonexistent/costs.txt").ok());
}

TEST(SimOptionsTest, RejectsBadSetups) {
  SimOptions o = Contended("dclp");
  o.nodes = 3;  // 2 partitions over 3 nodes
  EXPECT_FALSE(RunSim(o, TestCosts()).ok());
  o = Contended("no_such_manager");
  EXPECT_FALSE(RunSim(o, TestCosts()).ok());
  o = Contended("dclp");
  o.workers = 0;
  EXPECT_FALSE(RunSim(o, TestCosts()).ok());
}

}  // namespace
}  // namespace detdb
