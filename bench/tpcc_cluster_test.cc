// TPC-C on a real 3-node cluster (`detdb --workload=tpcc` processes on
// 127.0.0.1): the full mix from a network client under every lock manager,
// with remote New-Order lines and Payments crossing nodes; afterwards every
// node runs the consistency checker at one epoch boundary and all pass.
#include <gtest/gtest.h>

#include "bench/tpcc_runner.h"
#include "deploy/test_cluster.h"
#include "lockmgr/lock_manager.h"

namespace detdb {
namespace tpcc {
namespace {

class TpccCluster : public ::testing::TestWithParam<std::string> {};

TEST_P(TpccCluster, FullMixIsConsistentOnEveryNode) {
  TestClusterOptions c;
  c.nodes = 3;
  c.flags = {"--workload=tpcc", "--tpcc_small", "--warehouses=3", "--workers=2", "--lock_manager=" + GetParam(),
             "--max_active=300"};
  TestCluster cluster(c);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  TpccRunOptions o;
  o.cluster = cluster.config();
  o.seed = 5;
  o.outstanding = 100;
  o.txns = 1500;
  o.remote_line = 0.05;
  auto r = RunTpcc(o);
  ASSERT_TRUE(r.ok()) << r.status() << "\n" << cluster.Logs();
  EXPECT_EQ(r->nodes, 3u);
  EXPECT_EQ(r->warehouses, 3u);
  EXPECT_TRUE(r->consistency_checked);
  EXPECT_TRUE(r->consistency_ok) << (r->consistency_failures.empty() ? "" : r->consistency_failures[0]);
  for (int k = 0; k < kNumKinds; ++k)
    EXPECT_GT(r->kinds[k].committed, 0u) << KindName(static_cast<TxnKind>(k));
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, TpccCluster, ::testing::ValuesIn(LockManagerNames()));

}  // namespace
}  // namespace tpcc
}  // namespace detdb
