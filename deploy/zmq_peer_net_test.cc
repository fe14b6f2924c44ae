// ZmqPeerNet over real sockets on 127.0.0.1: the start handshake (agreed
// start time, refusal of peers with another config or epoch length) and
// delivery of batches, remote reads and results in order.
#include "deploy/zmq_peer_net.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "client/cluster_config.h"
#include "deploy/test_cluster.h"
#include "deploy/zmq_peer_net_test_util.h"
#include "zmq.hpp"

namespace detdb {
namespace {

using std::chrono::milliseconds;

using namespace zmq_peer_testing;  // NOLINT

TEST(ZmqPeerNet, HandshakeAgreesOnOneStartTime) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  auto s0 = p.net[0]->Handshake(milliseconds(10000));
  auto s1 = p.net[1]->Handshake(milliseconds(10000));
  ASSERT_TRUE(s0.ok()) << s0.status();
  ASSERT_TRUE(s1.ok()) << s1.status();
  EXPECT_EQ(*s0, *s1);
  EXPECT_GT(*s0, WallClockMicros() - 10'000'000);
}

TEST(ZmqPeerNet, AgreesOnTheSmallestRecoveredEpochAndCarriesTheDurableEpoch) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000, 17, 12).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
  EXPECT_EQ(*p.net[0]->resume_epoch(), 12u);
  EXPECT_EQ(*p.net[1]->resume_epoch(), 12u);
  // The durable epoch rides on any message; the receiver hears each rise once.
  p.net[0]->SetDurableEpoch(13);
  pb::Batch b;
  b.set_sequencer_id(0);
  b.set_epoch(14);
  p.net[0]->SendBatch(1, b);
  p.net[0]->SendBatch(1, b);
  p.net[0]->SetDurableEpoch(14);
  p.net[0]->SendResult(1, pb::TxnResult());
  for (int i = 0; i < 500 && p.rec[1].total() < 3; ++i) std::this_thread::sleep_for(milliseconds(10));
  std::lock_guard<std::mutex> l(p.rec[1].mu);
  EXPECT_EQ(p.rec[1].durable, (std::vector<std::pair<uint32_t, uint64_t>>{{0, 13}, {0, 14}}));
}

// Every node starts from the newest checkpoint epoch that all hold and that
// is <= the resume epoch; with none, only if every log starts at epoch 1.
TEST(ZmqPeerNet, AgreesOnTheNewestCheckpointEveryNodeHolds) {
  const pb::ClusterConfig c = TwoNodes(1000);
  {
    Pair p;
    p.checkpoints[0] = {30, 20, 10};
    p.checkpoints[1] = {20, 10};  // its checkpoint of 30 was damaged
    p.from_start[0] = p.from_start[1] = false;
    ASSERT_TRUE(p.Create(c, c, 1000, 1000, 40, 40).ok());
    ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
    ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
    EXPECT_EQ(*p.net[0]->checkpoint_epoch(40), 20u);
    EXPECT_EQ(*p.net[1]->checkpoint_epoch(40), 20u);
    EXPECT_EQ(*p.net[0]->checkpoint_epoch(15), 10u) << "never after the resume epoch";
    auto none = p.net[0]->checkpoint_epoch(5);
    EXPECT_TRUE(absl::IsFailedPrecondition(none.status())) << none.status();
    EXPECT_NE(none.status().message().find("node(s) 0, 1"), std::string::npos) << none.status();
  }
  {
    Pair p;
    p.checkpoints[0] = {30};
    p.checkpoints[1] = {};
    ASSERT_TRUE(p.Create(c, c, 1000, 1000, 40, 40).ok());
    ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
    ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
    EXPECT_EQ(*p.net[0]->checkpoint_epoch(40), 0u) << "no common one, every log from epoch 1: replay it all";
    EXPECT_EQ(*p.net[1]->checkpoint_epoch(40), 0u);
  }
}

TEST(ZmqPeerNet, ANodeWithoutALogOrWithAnEmptyOneIsRefusedRatherThanTruncating) {
  const pb::ClusterConfig c = TwoNodes(1000);
  {
    Pair p;  // node 1 runs without --data_dir
    ASSERT_TRUE(p.Create(c, c, 1000, 1000, 17, 0, /*log1=*/false).ok());
    ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
    auto r = p.net[0]->resume_epoch();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_NE(r.status().message().find("node 1 runs without an input log"), std::string::npos) << r.status();
  }
  {
    Pair p;  // node 1 lost its disk: an empty log while node 0 holds 1..17
    ASSERT_TRUE(p.Create(c, c, 1000, 1000, 17, 0).ok());
    ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
    ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
    auto r = p.net[0]->resume_epoch();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_NE(r.status().message().find("node 1 reports an empty input log"), std::string::npos) << r.status();
    EXPECT_EQ(*p.net[1]->resume_epoch(), 0u) << "node 1 has nothing to truncate";
  }
  {
    Pair p;  // both fresh
    ASSERT_TRUE(p.Create(c, c, 1000, 1000, 0, 0).ok());
    ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
    EXPECT_EQ(*p.net[0]->resume_epoch(), 0u);
  }
}

TEST(ZmqPeerNet, TheDurableEpochTravelsAloneWhenNothingElseIsSentAndAtStop) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Connect(c).ok());
  p.net[0]->SetDurableEpoch(5);  // no batch, no result: a stamp of its own
  auto heard = [&](uint64_t e) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> l(p.rec[1].mu);
        if (!p.rec[1].durable.empty() && p.rec[1].durable.back().second == e) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  };
  EXPECT_TRUE(heard(5));
  EXPECT_EQ(p.net[1]->stats().dropped, 0u) << "a stamp alone is not a bad frame";
  // At Stop the last durable epoch is sent even if it rose an instant before.
  p.net[0]->SetDurableEpoch(9);
  p.net[0]->Stop();
  EXPECT_TRUE(heard(9));
}

// The newest checkpoint epoch rides beside the durable epoch (alone when
// nothing else is sent), handed on after the durable epoch of its message.
TEST(ZmqPeerNet, TheCheckpointEpochTravelsBesideTheDurableEpoch) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Connect(c).ok());
  auto heard = [&](uint64_t e) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> l(p.rec[1].mu);
        if (!p.rec[1].checkpoint.empty() && p.rec[1].checkpoint.back().second == e) return true;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  };
  p.net[0]->SetDurableEpoch(20);
  p.net[0]->SetCheckpointEpoch(15);
  EXPECT_TRUE(heard(15));
  p.net[0]->SetCheckpointEpoch(18);  // the durable epoch did not move: sent anyway
  EXPECT_TRUE(heard(18));
  std::lock_guard<std::mutex> l(p.rec[1].mu);
  EXPECT_EQ(p.rec[1].checkpoint, (std::vector<std::pair<uint32_t, uint64_t>>{{0, 15}, {0, 18}}));
  EXPECT_EQ(p.rec[1].durable_when_checkpoint, (std::vector<uint64_t>{20, 20}));
  EXPECT_EQ(p.net[1]->stats().dropped, 0u);
}

TEST(ZmqPeerNet, NodesWithDifferentConfigsRefuseEachOther) {
  const pb::ClusterConfig c0 = TwoNodes(1000);
  pb::ClusterConfig c1 = c0;
  c1.set_num_partitions(3);  // node 1 also serves partition 2: another cluster
  c1.mutable_nodes(1)->add_partitions(2);
  Pair p;
  ASSERT_TRUE(p.Create(c0, c1, 1000, 1000).ok());
  auto s0 = p.net[0]->Handshake(milliseconds(700));
  auto s1 = p.net[1]->Handshake(milliseconds(700));
  EXPECT_EQ(s0.status().code(), absl::StatusCode::kDeadlineExceeded) << s0.status();
  EXPECT_EQ(s1.status().code(), absl::StatusCode::kDeadlineExceeded) << s1.status();
  EXPECT_GE(p.net[0]->stats().dropped, 1u) << "the other config's hello is dropped and counted";
  EXPECT_GE(p.net[1]->stats().dropped, 1u);
}

TEST(ZmqPeerNet, AnotherEpochLengthIsAClearError) {
  pb::ClusterConfig c = TwoNodes(0);  // the config leaves epoch_us to the nodes
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 2000).ok());
  auto s0 = p.net[0]->Handshake(milliseconds(10000));
  EXPECT_EQ(s0.status().code(), absl::StatusCode::kFailedPrecondition) << s0.status();
  EXPECT_NE(std::string(s0.status().message()).find("epoch_us"), std::string::npos);
}

TEST(ZmqPeerNet, DeliversInOrderAndLocallyWithoutTheNetwork) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  constexpr int kN = 500;
  for (int i = 1; i <= kN; ++i) {
    pb::Batch b;
    b.set_sequencer_id(0);
    b.set_epoch(i);
    p.net[0]->SendBatch(1, b);
    pb::RemoteReads r;
    r.set_txn_id(i);
    p.net[0]->Send(1, r);  // remote partition: over the network
    p.net[0]->Send(0, r);  // local partition: straight to the receiver
    pb::TxnResult res;
    res.set_txn_id(i);
    p.net[0]->SendResult(1, res);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p.rec[1].total() < 3 * kN && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(p.rec[1].total(), 3u * kN);
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(p.rec[1].epochs[i], static_cast<uint64_t>(i + 1));
    EXPECT_EQ(p.rec[1].reads[i], static_cast<uint64_t>(i + 1));
    EXPECT_EQ(p.rec[1].results[i], static_cast<uint64_t>(i + 1));
  }
  EXPECT_EQ(p.rec[0].reads.size(), static_cast<size_t>(kN));
  EXPECT_EQ(p.net[1]->stats().lost, 0u);
  EXPECT_EQ(p.net[1]->stats().dropped, 0u);
}

TEST(ZmqPeerNet, RemoteReadsOfAPartitionTheSenderDoesNotServeAreDropped) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  pb::RemoteReads r;
  r.set_txn_id(1);
  r.set_from_partition(1);  // node 1's partition, sent by node 0
  p.net[0]->Send(1, r);
  r.set_from_partition(7);  // no such partition
  p.net[0]->Send(1, r);
  r.set_txn_id(2);
  r.set_from_partition(0);  // node 0's own: delivered
  p.net[0]->Send(1, r);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p.rec[1].total() < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(p.rec[1].total(), 1u);
  EXPECT_EQ(p.rec[1].reads[0], 2u);
  EXPECT_EQ(p.net[1]->stats().forged_reads, 2u);
  EXPECT_EQ(p.net[1]->stats().dropped, 2u);
}

TEST(ZmqPeerNet, AnotherSettingIsAClearError) {
  const pb::ClusterConfig c = TwoNodes(1000);
  ZmqPeerNet* nets[2];
  std::unique_ptr<ZmqPeerNet> owned[2];
  Recorder rec[2];
  for (uint32_t i = 0; i < 2; ++i) {
    ZmqPeerNetOptions o;
    o.config = c;
    o.node_id = i;
    o.epoch_us = 1000;
    o.settings = {{"workload", "micro"}, {"micro_records", i == 0 ? "100" : "200"}};
    if (i == 1) o.settings["extra"] = "x";  // a setting node 0 does not know
    auto n = ZmqPeerNet::Create(o);
    ASSERT_TRUE(n.ok()) << n.status();
    owned[i] = std::move(*n);
    nets[i] = owned[i].get();
    nets[i]->SetHandler(&rec[i]);
    nets[i]->RegisterReceiver(i, &rec[i]);
  }
  for (ZmqPeerNet* n : nets) n->Start();
  auto s0 = nets[0]->Handshake(milliseconds(10000));
  auto s1 = nets[1]->Handshake(milliseconds(10000));
  EXPECT_EQ(s0.status().code(), absl::StatusCode::kFailedPrecondition) << s0.status();
  EXPECT_NE(s0.status().message().find("node 1 runs with micro_records 200, we with 100"), std::string::npos)
      << s0.status();
  EXPECT_NE(s0.status().message().find("node 1 runs with extra x, we without"), std::string::npos) << s0.status();
  EXPECT_NE(s1.status().message().find("node 0 runs without extra, we with extra x"), std::string::npos)
      << s1.status();
}

// Sends one raw frame to node `to`'s peer port, as node `from` would.
TEST(ZmqPeerNet, FramesBelowTheExpectedSequenceAreDroppedWithoutMovingItBack) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Connect(c).ok());
  auto wait_for = [&](size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (p.rec[1].total() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(5));
  };
  pb::Batch b;
  b.set_sequencer_id(0);
  b.set_epoch(1);
  p.net[0]->SendBatch(1, b);
  wait_for(1);
  ASSERT_EQ(p.rec[1].total(), 1u);
  // A replayed copy of node 0's first frames: below the expected number.
  for (uint64_t seq : {1, 2}) {
    pb::PeerMessage m;
    m.set_from_node(0);
    m.set_incarnation(p.net[0]->incarnation());
    m.set_to_incarnation(p.net[1]->incarnation());
    m.set_seq(seq);
    m.mutable_batch()->set_sequencer_id(0);
    m.mutable_batch()->set_epoch(99);
    SendRaw(c, 1, m);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (p.net[1]->stats().stale < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(p.net[1]->stats().stale, 2u);
  b.set_epoch(2);
  p.net[0]->SendBatch(1, b);  // the next real frame: still expected, not "lost" or stale
  wait_for(2);
  std::lock_guard<std::mutex> l(p.rec[1].mu);
  EXPECT_EQ(p.rec[1].epochs, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(p.net[1]->stats().lost, 0u);
  EXPECT_EQ(p.net[1]->stats().stale, 2u);
}

// With CURVE the receive thread passes the node whose key sent a frame
// (the ZAP User-Id): a frame claiming another node is dropped and counted
// apart (sender_mismatch), before it moves that node's frame sequence;
// without CURVE (nullopt) from_node is taken as it is.
TEST(ZmqPeerNet, AFrameFromAnotherNodesKeyIsDroppedBeforeItTouchesTheSequence) {
  pb::ClusterConfig c = TwoNodes(1000);
  pb::NodeConfig* third = c.add_nodes();
  third->set_id(2);
  third->set_host("127.0.0.1");
  third->set_peer_port(FreeLoopbackPort());
  third->set_client_port(FreeLoopbackPort());
  c.set_num_partitions(3);
  third->add_partitions(2);
  ZmqPeerNetOptions o;
  o.config = c;
  o.node_id = 0;
  auto n = ZmqPeerNet::Create(o);
  ASSERT_TRUE(n.ok()) << n.status();
  Recorder rec;
  (*n)->SetHandler(&rec);
  (*n)->RegisterReceiver(0, &rec);
  auto frame = [&](uint32_t from, uint64_t seq, uint64_t txn) {
    pb::PeerMessage m;
    m.set_config_hash(ClusterConfigHash(c));
    m.set_from_node(from);
    m.set_to_incarnation((*n)->incarnation());  // this process (no Hello: the sender's incarnation stays 0)
    m.set_seq(seq);
    m.mutable_result()->set_txn_id(txn);
    const std::string bytes = m.SerializeAsString();
    return zmq::message_t(bytes.data(), bytes.size());
  };
  (*n)->Handle(frame(2, 1000, 1), 1);  // node 1's key, claiming node 2 (with a frame number far ahead)
  (*n)->Handle(frame(2, 1000, 2), ZmqPeerNet::kUnknownNode);  // a key of no node
  EXPECT_TRUE(rec.results.empty());
  ZmqPeerNetStats s = (*n)->stats();
  EXPECT_EQ(s.sender_mismatch, 2u);
  EXPECT_EQ(s.dropped, 2u);
  EXPECT_EQ(s.by_reason[static_cast<int>(PeerDrop::kSenderMismatch)], 2u);
  EXPECT_EQ(s.lost, 0u) << "node 2's sequence did not move";
  (*n)->Handle(frame(2, 1, 3), 2);  // node 2 itself: its first frame
  (*n)->Handle(frame(1, 1, 4), 1);
  (*n)->Handle(frame(1, 2, 5), std::nullopt);  // without CURVE: taken as it claims
  (*n)->Handle(frame(1, 2, 6), 1);             // again: stale, counted apart
  s = (*n)->stats();
  EXPECT_EQ(rec.results, (std::vector<uint64_t>{3, 4, 5}));
  EXPECT_EQ(s.lost, 0u);
  EXPECT_EQ(s.stale, 1u);
  EXPECT_EQ(s.sender_mismatch, 2u);
  EXPECT_EQ(s.dropped, 3u);
  EXPECT_EQ(s.received, 6u);
  EXPECT_EQ(s.good, 3u);
  EXPECT_STREQ(PeerDropName(PeerDrop::kStale), "stale_frame");
}

TEST(ZmqPeerNet, PortInUseIsAnError) {
  const pb::ClusterConfig c = TwoNodes(1000);
  ZmqPeerNetOptions o;
  o.config = c;
  o.node_id = 0;
  auto first = ZmqPeerNet::Create(o);
  ASSERT_TRUE(first.ok());
  auto second = ZmqPeerNet::Create(o);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

}  // namespace
}  // namespace detdb
