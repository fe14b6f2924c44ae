// CheckpointAgreement: in one process the plan is "keep the newest two, cut
// behind the older"; in a cluster a node never prunes a checkpoint every node
// holds before a newer one is held by every node (also when the nodes take
// checkpoints at different epochs, or one misses some), never cuts its log
// before one; peers' reports are checked against their durable epochs and
// must not go down.
#include "scheduler/checkpoint_agreement.h"

#include <algorithm>

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
  // 200 and 300 are held by node 0 only, but everything from the oldest
  // kept anchor on is kept (finding 16: the anchors seen may differ).
  EXPECT_EQ(p.keep, Epochs({100, 200, 300, 400}));
  EXPECT_EQ(p.cut_before, 100u);
}

// Finding 16, the worked example: both nodes publish 10, 20, 30 in
// lockstep; node 0 sees every report of node 1 (anchors 10, 20, 30), node 1
// sees node 0's newest rise from 10 to 30 in one message (anchors 10, 30).
// Keeping only the anchors, node 0 kept {20, 30} and node 1 {10, 30}: a
// damaged 30 left no common checkpoint. Now every node keeps the range from
// its oldest kept anchor, so the fallbacks overlap.
TEST(CheckpointAgreement, FallbacksAreCommonWhenTheNodesSawDifferentAnchors) {
  CheckpointAgreement n0(2, 0), n1(2, 1);
  n0.OnPeerDurable(1, 1000);
  n1.OnPeerDurable(0, 1000);
  for (uint64_t e : {10, 20, 30}) {
    n0.OnPublished(e);
    n1.OnPublished(e);
    EXPECT_TRUE(n0.OnPeerCheckpoint(1, e));
    if (e != 20) {  // 20 not seen by node 1
      EXPECT_TRUE(n1.OnPeerCheckpoint(0, e));
    }
  }
  EXPECT_EQ(n0.anchor(), 30u);
  EXPECT_EQ(n1.anchor(), 30u);
  const CheckpointPlan p0 = n0.Plan({10, 20, 30}, 2), p1 = n1.Plan({10, 20, 30}, 2);
  EXPECT_EQ(p0.keep, Epochs({20, 30}));
  EXPECT_EQ(p0.cut_before, 20u);
  EXPECT_EQ(p1.keep, Epochs({10, 20, 30}));
  EXPECT_EQ(p1.cut_before, 10u);
  // Without 30 (damaged on one node), a checkpoint both hold remains, and
  // both logs go back to it.
  Epochs common;
  for (uint64_t e : p0.keep)
    if (e != 30 && std::count(p1.keep.begin(), p1.keep.end(), e) > 0) common.push_back(e);
  EXPECT_EQ(common, Epochs({20}));
  EXPECT_LE(p0.cut_before, 20u);
  EXPECT_LE(p1.cut_before, 20u);
}

// Finding 15: node 1 never publishes (no periodic checkpoints there). Node 0
// keeps at most max_uncommon checkpoints after the newest common one, names
// node 1 for the log, keeps the common one and does not cut its log.
TEST(CheckpointAgreement, APeerThatNeverPublishesDoesNotMakeTheOthersKeepEverything) {
  CheckpointAgreement a(3, 0);
  a.OnPeerDurable(1, 100000);
  a.OnPeerDurable(2, 100000);
  a.OnPublished(10);
  EXPECT_TRUE(a.OnPeerCheckpoint(1, 10));
  EXPECT_TRUE(a.OnPeerCheckpoint(2, 10));
  ASSERT_EQ(a.anchor(), 10u);
  Epochs mine{10};
  for (uint64_t e = 20; e <= 200; e += 10) {
    a.OnPublished(e);
    mine.push_back(e);
    EXPECT_TRUE(a.OnPeerCheckpoint(2, e));  // node 2 keeps up, node 1 stays at 10
  }
  CheckpointPlan p = a.Plan(mine, 2, /*max_uncommon=*/4);
  EXPECT_EQ(p.keep, Epochs({10, 170, 180, 190, 200}));
  EXPECT_EQ(p.cut_before, 0u) << "one common checkpoint only: the log stays";
  EXPECT_EQ(p.dropped_uncommon.size(), 15u);
  EXPECT_EQ(p.dropped_uncommon.front(), 20u);
  EXPECT_EQ(p.behind, std::vector<uint32_t>({1}));
  // Without a cap (0), or below it, nothing is dropped.
  p = a.Plan(mine, 2);
  EXPECT_EQ(p.keep, mine);
  EXPECT_TRUE(p.dropped_uncommon.empty());
  p = a.Plan({10, 190, 200}, 2, 4);
  EXPECT_EQ(p.keep, Epochs({10, 190, 200}));
  // No common checkpoint at all yet: the cap holds too.
  CheckpointAgreement b(2, 0);
  Epochs all;
  for (uint64_t e = 10; e <= 100; e += 10) {
    b.OnPublished(e);
    all.push_back(e);
  }
  p = b.Plan(all, 2, 3);
  EXPECT_EQ(p.keep, Epochs({80, 90, 100}));
  EXPECT_EQ(p.behind, std::vector<uint32_t>({1}));
  // One process: every checkpoint is common, the cap never applies.
  CheckpointAgreement c(1, 0);
  for (uint64_t e : all) c.OnPublished(e);
  EXPECT_TRUE(c.Plan(all, 2, 3).dropped_uncommon.empty());
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
    if (e % 20 == 0) {
      EXPECT_TRUE(a.OnPeerCheckpoint(1, e));
    }
  }
  EXPECT_EQ(a.anchor(), 60u);
  const CheckpointPlan p = a.Plan(mine, 2);
  EXPECT_EQ(p.keep, Epochs({40, 50, 60})) << "from the oldest kept anchor on";
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
