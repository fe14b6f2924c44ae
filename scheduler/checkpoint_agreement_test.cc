// CheckpointAgreement: in one process the plan is "keep the newest two, cut
// behind the older"; in a cluster a node never prunes a checkpoint every node
// holds before a newer one is held by every node (also when the nodes take
// checkpoints at different epochs, or one misses some), never cuts its log
// before one; peers' reports are checked against their durable epochs and
// must not go down.
#include "scheduler/checkpoint_agreement.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

using Epochs = std::vector<uint64_t>;

TEST(CheckpointAgreement, AloneKeepsTheNewestTwoAndCutsBehindTheOlder) {
  CheckpointAgreement a(1, 0);
  EXPECT_EQ(a.OnPublished(10), 10u);
  CheckpointPlan p = a.Plan({10}, 2);
  EXPECT_EQ(p.keep, Epochs({10}));
  EXPECT_EQ(p.cut_before, 0u) << "no fallback yet: the log stays whole";
  a.OnPublished(20);
  p = a.Plan({10, 20}, 2);
  EXPECT_EQ(p.keep, Epochs({10, 20}));
  EXPECT_EQ(p.cut_before, 10u);
  a.OnPublished(30);
  p = a.Plan({30, 10, 20}, 2);
  EXPECT_EQ(p.keep, Epochs({20, 30}));
  EXPECT_EQ(p.cut_before, 20u);
  p = a.Plan({10, 20, 30}, 1);
  EXPECT_EQ(p.keep, Epochs({30}));
  EXPECT_EQ(p.cut_before, 30u);
}

TEST(CheckpointAgreement, AloneAfterARestartEveryValidCheckpointCounts) {
  CheckpointAgreement a(1, 0);
  a.Start({90, 50, 80}, 90);
  EXPECT_EQ(a.newest(), 90u);
  EXPECT_EQ(a.anchor(), 90u);
  const CheckpointPlan p = a.Plan({50, 80, 90}, 2);
  EXPECT_EQ(p.keep, Epochs({80, 90}));
  EXPECT_EQ(p.cut_before, 80u);
}

// Node 0 checkpoints at 100, 200, 300, 400; node 1 only at 100 and 400 (it
// missed two, or runs with a longer interval). Pruning by "the newest of
// mine at or below the smallest newest of all" would keep 300 and 200 on
// node 0 once node 1 reported 400, dropping 100, the only one both hold.
TEST(CheckpointAgreement, ACheckpointEveryNodeHoldsIsKeptUntilANewerOneIs) {
  CheckpointAgreement a(2, 0);
  a.OnPeerDurable(1, 1000);
  a.OnPublished(100);
  EXPECT_EQ(a.anchor(), 0u) << "node 1 has not reported 100 yet";
  CheckpointPlan p = a.Plan({100}, 2);
  EXPECT_EQ(p.keep, Epochs({100}));
  EXPECT_EQ(p.cut_before, 0u);
  EXPECT_TRUE(a.OnPeerCheckpoint(1, 100));
  EXPECT_EQ(a.anchor(), 100u);
  a.OnPublished(200);
  a.OnPublished(300);
  EXPECT_TRUE(a.OnPeerCheckpoint(1, 400));
  EXPECT_EQ(a.anchor(), 100u);
  p = a.Plan({100, 200, 300}, 2);
  EXPECT_EQ(p.keep, Epochs({100, 200, 300}));
  EXPECT_EQ(p.cut_before, 0u) << "only one common checkpoint: no fallback, no cut";
  EXPECT_EQ(a.OnPublished(400), 400u);
  EXPECT_EQ(a.anchor(), 400u);
  p = a.Plan({100, 200, 300, 400}, 2);
  EXPECT_EQ(p.keep, Epochs({100, 400})) << "200 and 300 are held by node 0 only";
  EXPECT_EQ(p.cut_before, 100u);
}

TEST(CheckpointAgreement, InLockstepTheNewestTwoCommonOnesAreKept) {
  CheckpointAgreement a(3, 1);
  for (uint64_t e = 10; e <= 50; e += 10) {
    a.OnPeerDurable(0, e);
    a.OnPeerDurable(2, e);
    a.OnPublished(e);
    EXPECT_TRUE(a.OnPeerCheckpoint(0, e));
    EXPECT_EQ(a.anchor(), e - 10) << "node 2 has not reported " << e;
    EXPECT_TRUE(a.OnPeerCheckpoint(2, e));
    EXPECT_EQ(a.anchor(), e);
  }
  const CheckpointPlan p = a.Plan({10, 20, 30, 40, 50}, 2);
  EXPECT_EQ(p.keep, Epochs({40, 50}));
  EXPECT_EQ(p.cut_before, 40u);
}

TEST(CheckpointAgreement, NodesWithDifferentIntervalsAgreeOnTheSharedEpochs) {
  // This node every 10 epochs, its peer every 20.
  CheckpointAgreement a(2, 0);
  Epochs mine;
  for (uint64_t e = 10; e <= 60; e += 10) {
    a.OnPeerDurable(1, e);
    a.OnPublished(e);
    mine.push_back(e);
    if (e % 20 == 0) EXPECT_TRUE(a.OnPeerCheckpoint(1, e));
  }
  EXPECT_EQ(a.anchor(), 60u);
  const CheckpointPlan p = a.Plan(mine, 2);
  EXPECT_EQ(p.keep, Epochs({40, 60}));
  EXPECT_EQ(p.cut_before, 40u);
}

TEST(CheckpointAgreement, APeersReportIsCheckedAndOnlyAddsWhatItMust) {
  CheckpointAgreement a(2, 0);
  a.OnPublished(100);
  EXPECT_FALSE(a.OnPeerCheckpoint(1, 100)) << "above node 1's durable epoch (0)";
  EXPECT_EQ(a.anchor(), 0u);
  a.OnPeerDurable(1, 150);
  EXPECT_FALSE(a.OnPeerCheckpoint(1, 200)) << "above its durable epoch 150";
  EXPECT_FALSE(a.OnPeerCheckpoint(0, 100)) << "this node's own id";
  EXPECT_FALSE(a.OnPeerCheckpoint(7, 100)) << "no such node";
  EXPECT_EQ(a.anchor(), 0u);
  EXPECT_TRUE(a.OnPeerCheckpoint(1, 120));
  EXPECT_FALSE(a.OnPeerCheckpoint(1, 100)) << "below its previous report";
  EXPECT_EQ(a.anchor(), 0u) << "node 1 never reported 100";
  EXPECT_TRUE(a.OnPeerCheckpoint(1, 120)) << "the same report again";
  const CheckpointPlan p = a.Plan({100}, 2);
  EXPECT_EQ(p.keep, Epochs({100}));
  EXPECT_EQ(p.cut_before, 0u);
}

TEST(CheckpointAgreement, AClusterRestartStartsFromTheHandshakesCheckpoint) {
  CheckpointAgreement a(2, 0);
  a.OnPeerDurable(1, 500);
  EXPECT_TRUE(a.OnPeerCheckpoint(1, 80));  // before this node started
  a.Start({30, 50, 80}, 50);
  EXPECT_EQ(a.newest(), 80u);
  EXPECT_EQ(a.anchor(), 80u);
  CheckpointPlan p = a.Plan({30, 50, 80}, 2);
  EXPECT_EQ(p.keep, Epochs({50, 80}));
  EXPECT_EQ(p.cut_before, 50u);
  // Only the start checkpoint known common: 30, not known, is kept too.
  CheckpointAgreement b(2, 0);
  b.Start({30, 50, 80}, 50);
  EXPECT_EQ(b.anchor(), 50u);
  p = b.Plan({30, 50, 80}, 2);
  EXPECT_EQ(p.keep, Epochs({30, 50, 80}));
  EXPECT_EQ(p.cut_before, 0u);
}

}  // namespace
}  // namespace detdb
