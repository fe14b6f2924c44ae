// PlanRejoin: which of its own epochs a restarted node replays, which it
// sequences again from what its peers received, and what each peer lacks.
#include "scheduler/rejoin_plan.h"

#include <gtest/gtest.h>

#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {

constexpr uint32_t kSelf = 1;

pb::Txn T(uint64_t epoch, uint32_t index, const std::string& args = "") {
  pb::Txn t;
  t.set_id(EpochBatcher::EpochSequencerId(epoch, kSelf, index));
  t.set_type(1);
  t.set_args(args);
  t.add_read_set(index);
  return t;
}

// The part of our batch of `epoch` a peer received: txns with these indexes.
std::shared_ptr<const pb::Batch> Part(uint64_t epoch, std::vector<uint32_t> indexes) {
  auto b = std::make_shared<pb::Batch>();
  b->set_sequencer_id(kSelf);
  b->set_epoch(epoch);
  for (uint32_t i : indexes) *b->add_txns() = T(epoch, i);
  return b;
}

std::vector<uint32_t> Indexes(const pb::Batch& b) {
  std::vector<uint32_t> out;
  for (const pb::Txn& t : b.txns()) out.push_back(static_cast<uint32_t>(EpochBatcher::IdIndex(t.id())));
  return out;
}

RejoinPlanInput Input(uint64_t log_epoch, uint64_t origin) {
  RejoinPlanInput in;
  in.self = kSelf;
  in.num_nodes = 3;
  in.log_epoch = log_epoch;
  in.clock_origin = origin;
  return in;
}

TEST(RejoinPlan, EpochsAfterTheLogAreTheUnionOfWhatThePeersReceived) {
  // The log holds epochs up to 10. Node 0 received our epochs up to 13,
  // node 2 up to 12: epochs 11..13 are sequenced again from their parts.
  RejoinPlanInput in = Input(10, 0);
  in.peers[0].next_expected = 14;
  in.peers[0].received = {Part(11, {0, 2}), Part(12, {}), Part(13, {1})};
  in.peers[0].durable = 9;
  in.peers[2].next_expected = 13;
  in.peers[2].received = {Part(11, {1, 2}), Part(12, {5})};
  in.peers[2].durable = 10;
  auto plan = PlanRejoin(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->keep_through, 10u);
  EXPECT_EQ(plan->horizon, 13u);
  ASSERT_EQ(plan->own.size(), 3u);
  EXPECT_EQ(plan->own[0]->epoch(), 11u);
  EXPECT_EQ(Indexes(*plan->own[0]), (std::vector<uint32_t>{0, 1, 2})) << "in id order, txn 2 once";
  EXPECT_EQ(Indexes(*plan->own[1]), (std::vector<uint32_t>{5}));
  EXPECT_EQ(Indexes(*plan->own[2]), (std::vector<uint32_t>{1}));
  for (const auto& b : plan->own) EXPECT_EQ(b->sequencer_id(), kSelf);
  EXPECT_TRUE(plan->lacks[0].empty());
  EXPECT_EQ(plan->lacks[2], (std::vector<uint64_t>{13})) << "node 2 never received epoch 13";
  EXPECT_TRUE(plan->lacks[kSelf].empty());
}

TEST(RejoinPlan, EpochsOfTheLogAPeerNeverReceivedAreResent) {
  // The log holds up to 20, but node 0 received only up to 17 (frames lost
  // with the process) and node 2 up to 20.
  RejoinPlanInput in = Input(20, 5);
  in.peers[0].next_expected = 18;
  in.peers[2].next_expected = 21;
  auto plan = PlanRejoin(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->keep_through, 20u);
  EXPECT_EQ(plan->horizon, 20u);
  EXPECT_TRUE(plan->own.empty());
  EXPECT_EQ(plan->lacks[0], (std::vector<uint64_t>{18, 19, 20}));
  EXPECT_TRUE(plan->lacks[2].empty());
}

TEST(RejoinPlan, AnEpochNoPeerReceivedIsEmptyAndAGapIsFilled) {
  // Node 0 received 11 and 13 (12 was refused there); node 2 received 11.
  RejoinPlanInput in = Input(10, 0);
  in.peers[0].next_expected = 12;
  in.peers[0].received = {Part(11, {0}), Part(13, {3})};
  in.peers[2].next_expected = 12;
  in.peers[2].received = {Part(11, {0})};
  auto plan = PlanRejoin(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->horizon, 13u);
  ASSERT_EQ(plan->own.size(), 3u);
  EXPECT_EQ(plan->own[1]->epoch(), 12u);
  EXPECT_EQ(plan->own[1]->txns_size(), 0) << "nobody holds any of epoch 12";
  EXPECT_EQ(plan->lacks[0], (std::vector<uint64_t>{12}));
  EXPECT_EQ(plan->lacks[2], (std::vector<uint64_t>{12, 13}));
}

TEST(RejoinPlan, ALogOfTheHistoryBeforeTheLastClusterRestartIsCutBack) {
  // The cluster resumed after epoch 30 without us cutting our log (we died
  // first): our epochs 31..40 are of the old history. No peer received any
  // batch of ours after 30, so we keep only up to 30.
  RejoinPlanInput in = Input(40, 30);
  in.peers[0].next_expected = 31;
  in.peers[2].next_expected = 31;
  auto plan = PlanRejoin(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->keep_through, 30u);
  EXPECT_EQ(plan->horizon, 30u);
  EXPECT_TRUE(plan->own.empty());
  // Once a peer got one of ours after 30, the log after 30 is this history.
  in.peers[2].next_expected = 33;
  plan = PlanRejoin(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->keep_through, 40u);
  EXPECT_EQ(plan->lacks[0], (std::vector<uint64_t>{31, 32, 33, 34, 35, 36, 37, 38, 39, 40}));
}

TEST(RejoinPlan, ALogThatLostDurableEpochsIsRefused) {
  RejoinPlanInput in = Input(10, 0);
  in.peers[0].next_expected = 12;
  in.peers[0].durable = 11;  // we told node 0 that epoch 11 was durable here
  in.peers[2].next_expected = 12;
  auto plan = PlanRejoin(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("node 0 heard that epoch 11 was durable"), std::string::npos)
      << plan.status();
  RejoinPlanInput early = Input(10, 20);  // the cluster resumed after 20: we held it then
  early.peers[0].next_expected = 21;
  early.peers[2].next_expected = 21;
  EXPECT_FALSE(PlanRejoin(early).ok());
}

TEST(RejoinPlan, TwoVersionsOfATxnAreRefused) {
  RejoinPlanInput in = Input(10, 0);
  auto other = std::make_shared<pb::Batch>(*Part(11, {0}));
  other->mutable_txns(0)->set_args("forged");
  in.peers[0].next_expected = 12;
  in.peers[0].received = {Part(11, {0})};
  in.peers[2].next_expected = 12;
  in.peers[2].received = {other};
  auto plan = PlanRejoin(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kDataLoss);
  in.peers[2].received = {Part(11, {0})};
  EXPECT_TRUE(PlanRejoin(in).ok());
  auto foreign = std::make_shared<pb::Batch>(*Part(11, {0}));
  foreign->set_sequencer_id(0);  // not ours
  in.peers[2].received = {foreign};
  EXPECT_FALSE(PlanRejoin(in).ok());
  // Two bulk loads that differ only in their rows (review finding 15).
  auto load = [](const std::string& value) {
    auto b = std::make_shared<pb::Batch>(*Part(11, {0}));
    pb::TableOp* op = b->mutable_txns(0)->mutable_table_op();
    op->set_kind(pb::TableOp::BULK_LOAD);
    op->set_table(1);
    pb::KeyValue* row = op->add_rows();
    row->set_key(7);
    row->set_value(value);
    return b;
  };
  in.peers[0].received = {load("aaaaaaaa")};
  in.peers[2].received = {load("bbbbbbbb")};
  EXPECT_EQ(PlanRejoin(in).status().code(), absl::StatusCode::kDataLoss);
  in.peers[2].received = {load("aaaaaaaa")};
  EXPECT_TRUE(PlanRejoin(in).ok());
}

// A peer's answer beyond the cluster's clock plus the peer window is
// refused before anything is planned: next_expected = 2^40 would allocate
// a batch per epoch up to it (out of memory), a smaller lie would start our
// sequencer where every peer refuses its batches (review finding 3).
TEST(RejoinPlan, AnAnswerBeyondTheClusterClockIsRefused) {
  RejoinPlanInput in = Input(10, 0);
  in.max_epoch = 1000;
  in.peers[0].next_expected = 12;
  in.peers[0].received = {Part(11, {0})};
  in.peers[2].next_expected = uint64_t{1} << 40;
  auto plan = PlanRejoin(in);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition) << plan.status();
  EXPECT_NE(plan.status().message().find("node 2 answers that it received our batches up to epoch"),
            std::string::npos)
      << plan.status();
  in.peers[2].next_expected = 1002;  // just beyond
  EXPECT_EQ(PlanRejoin(in).status().code(), absl::StatusCode::kFailedPrecondition);
  in.peers[2].next_expected = 1001;  // at the bound: taken
  auto at = PlanRejoin(in);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(at->horizon, 1000u);
  // A batch of an epoch beyond, or of epoch 0.
  in.peers[2].next_expected = 12;
  in.peers[2].received = {Part(1001, {1})};
  auto far = PlanRejoin(in);
  EXPECT_EQ(far.status().code(), absl::StatusCode::kFailedPrecondition) << far.status();
  EXPECT_NE(far.status().message().find("node 2 answers with our batch of epoch 1001"), std::string::npos)
      << far.status();
  in.peers[2].received = {Part(0, {})};
  EXPECT_EQ(PlanRejoin(in).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace detdb
