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
#include "zmq.hpp"

namespace detdb {
namespace {

using std::chrono::milliseconds;

pb::ClusterConfig TwoNodes(uint64_t epoch_us) {
  pb::ClusterConfig c;
  c.set_num_partitions(2);
  c.set_epoch_us(epoch_us);
  for (uint32_t i = 0; i < 2; ++i) {
    pb::NodeConfig* n = c.add_nodes();
    n->set_id(i);
    n->set_host("127.0.0.1");
    n->set_peer_port(FreeLoopbackPort());
    n->set_client_port(FreeLoopbackPort());
    n->add_partitions(i);
  }
  return c;
}

class Recorder : public PeerHandler, public RemoteReadsReceiver {
 public:
  void OnPeerBatch(std::shared_ptr<pb::Batch> b) override {
    std::lock_guard<std::mutex> l(mu);
    epochs.push_back(b->epoch());
  }
  void OnPeerResult(uint32_t, const pb::TxnResult& r) override {
    std::lock_guard<std::mutex> l(mu);
    results.push_back(r.txn_id());
  }
  void OnPeerDurable(uint32_t node, uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu);
    durable.emplace_back(node, epoch);
  }
  void OnPeerCheckpoint(uint32_t node, uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu);
    checkpoint.emplace_back(node, epoch);
    durable_when_checkpoint.push_back(durable.empty() ? 0 : durable.back().second);
  }
  void OnRejoinRequest(uint32_t node, const pb::RejoinRequest& r) override {
    std::lock_guard<std::mutex> l(mu);
    rejoin_requests.emplace_back(node, r.id());
  }
  void OnRejoinReply(uint32_t node, const pb::RejoinReply& r) override {
    std::lock_guard<std::mutex> l(mu);
    rejoin_replies.emplace_back(node, r.id());
  }
  void OnRemoteReads(pb::RemoteReads m) override {
    std::lock_guard<std::mutex> l(mu);
    reads.push_back(m.txn_id());
  }
  size_t total() {
    std::lock_guard<std::mutex> l(mu);
    return epochs.size() + results.size() + reads.size();
  }
  std::mutex mu;
  std::vector<uint64_t> epochs, results, reads;
  std::vector<std::pair<uint32_t, uint64_t>> durable, checkpoint, rejoin_requests, rejoin_replies;
  std::vector<uint64_t> durable_when_checkpoint;  // the durable epoch heard before each checkpoint epoch
};

struct Pair {
  std::unique_ptr<ZmqPeerNet> net[2];
  Recorder rec[2];
  // Checkpoint epochs and "log from epoch 1" per node (before Start).
  std::vector<uint64_t> checkpoints[2];
  bool from_start[2] = {true, true};
  absl::Status Create(const pb::ClusterConfig& c0, const pb::ClusterConfig& c1, uint64_t e0, uint64_t e1,
                      uint64_t recovered0 = 0, uint64_t recovered1 = 0, bool log1 = true) {
    const uint64_t recovered[2] = {recovered0, recovered1};
    const pb::ClusterConfig* cs[2] = {&c0, &c1};
    const uint64_t es[2] = {e0, e1};
    for (uint32_t i = 0; i < 2; ++i) {
      ZmqPeerNetOptions o;
      o.config = *cs[i];
      o.node_id = i;
      o.epoch_us = es[i];
      auto n = ZmqPeerNet::Create(o);
      if (!n.ok()) return n.status();
      net[i] = std::move(*n);
      net[i]->SetHandler(&rec[i]);
      net[i]->RegisterReceiver(i, &rec[i]);
      if (i == 0 || log1) net[i]->SetRecoveredEpoch(recovered[i]);
      net[i]->SetCheckpoints(checkpoints[i], from_start[i]);
    }
    for (auto& n : net) n->Start();
    return absl::OkStatus();
  }
};

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
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
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
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
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
void SendRaw(const pb::ClusterConfig& c, uint32_t to, pb::PeerMessage m) {
  zmq::context_t ctx;
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 5000);
  push.connect("tcp://127.0.0.1:" + std::to_string(c.nodes(to).peer_port()));
  m.set_config_hash(ClusterConfigHash(c));
  const std::string bytes = m.SerializeAsString();
  push.send(zmq::buffer(bytes), zmq::send_flags::none);
}

TEST(ZmqPeerNet, FramesBelowTheExpectedSequenceAreDroppedWithoutMovingItBack) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
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

// A node restarts (a new ZmqPeerNet on its port) while the other runs: the
// running node takes the new incarnation's frames from 1 again, answers its
// Hello saying that it runs and on which clock, and from then on numbers
// its own frames to it from 1; frames of the old incarnation, or queued for
// it, are stale.
TEST(ZmqPeerNet, ARestartedPeerIsTakenAgainAndHearsThatTheClusterRuns) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
  auto not_running = p.net[1]->running_cluster();
  ASSERT_TRUE(not_running.ok());
  EXPECT_FALSE(not_running->has_value()) << "a cluster start: nobody said it runs";
  p.net[0]->SetRunning(ClusterClock{12345, 7});
  pb::Batch b;
  b.set_sequencer_id(0);
  for (uint64_t e = 1; e <= 3; ++e) {
    b.set_epoch(e);
    p.net[0]->SendBatch(1, b);
  }
  for (int i = 0; i < 2000 && p.rec[1].total() < 3; ++i) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(p.rec[1].total(), 3u);
  const uint64_t old_incarnation = p.net[1]->incarnation();
  p.net[1]->Stop();  // the process dies
  p.net[1].reset();
  b.set_epoch(4);
  p.net[0]->SendBatch(1, b);  // queued for the dead incarnation

  Recorder fresh;
  ZmqPeerNetOptions o;
  o.config = c;
  o.node_id = 1;
  o.epoch_us = 1000;
  auto n = ZmqPeerNet::Create(o);
  ASSERT_TRUE(n.ok()) << n.status();
  std::unique_ptr<ZmqPeerNet> restarted = std::move(*n);
  EXPECT_GT(restarted->incarnation(), old_incarnation);
  restarted->SetHandler(&fresh);
  restarted->RegisterReceiver(1, &fresh);
  restarted->SetRecoveredEpoch(0);
  restarted->Start();
  ASSERT_TRUE(restarted->Handshake(milliseconds(10000)).ok()) << "the running node answered the new Hello";
  auto running = restarted->running_cluster();
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(running->has_value());
  EXPECT_EQ((*running)->start_us, 12345u);
  EXPECT_EQ((*running)->origin_epoch, 7u);
  for (int i = 0; i < 2000 && p.net[0]->stats().restarts < 1; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(p.net[0]->stats().restarts, 1u);
  // Both ways from 1 again: nothing lost, nothing stale in between.
  b.set_epoch(5);
  p.net[0]->SendBatch(1, b);
  pb::RejoinRequest req;
  req.set_id(9);
  restarted->SendRejoinRequest(0, req);
  pb::RejoinReply reply;
  reply.set_id(9);
  p.net[0]->SendRejoinReply(1, reply);
  auto arrived = [&] {
    std::scoped_lock l(fresh.mu, p.rec[0].mu);
    return !fresh.epochs.empty() && !fresh.rejoin_replies.empty() && !p.rec[0].rejoin_requests.empty();
  };
  for (int i = 0; i < 2000 && !arrived(); ++i) std::this_thread::sleep_for(milliseconds(5));
  {
    std::lock_guard<std::mutex> l(fresh.mu);
    EXPECT_EQ(fresh.epochs, (std::vector<uint64_t>{5})) << "epoch 4 was queued for the old incarnation";
    EXPECT_EQ(fresh.rejoin_replies, (std::vector<std::pair<uint32_t, uint64_t>>{{0, 9}}));
  }
  {
    std::lock_guard<std::mutex> l(p.rec[0].mu);
    EXPECT_EQ(p.rec[0].rejoin_requests, (std::vector<std::pair<uint32_t, uint64_t>>{{1, 9}}));
  }
  EXPECT_EQ(restarted->stats().lost, 0u);
  EXPECT_EQ(p.net[0]->stats().lost, 0u);
  // A frame of the old incarnation (still in flight somewhere) is stale.
  const uint64_t stale = p.net[0]->stats().stale;
  pb::PeerMessage m;
  m.set_from_node(1);
  m.set_incarnation(old_incarnation);
  m.set_to_incarnation(p.net[0]->incarnation());
  m.set_seq(restarted->stats().sent + 1);
  m.mutable_batch()->set_sequencer_id(1);
  m.mutable_batch()->set_epoch(1);
  SendRaw(c, 0, m);
  for (int i = 0; i < 2000 && p.net[0]->stats().stale == stale; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(p.net[0]->stats().stale, stale + 1);
  std::lock_guard<std::mutex> l(p.rec[0].mu);
  EXPECT_TRUE(p.rec[0].epochs.empty());
  restarted->Stop();
}

// A node that restarts while another is still rejoining (its Hello says
// rejoining, not running) is refused: the second rejoin would count on a
// node that has not caught up (review finding 2). Once that node runs, a
// restart is a rejoin again.
TEST(ZmqPeerNet, ARestartWhileAnotherNodeStillRejoinsIsRefused) {
  const pb::ClusterConfig c = TwoNodes(1000);
  Pair p;
  ASSERT_TRUE(p.Create(c, c, 1000, 1000).ok());
  ASSERT_TRUE(p.net[0]->Handshake(milliseconds(10000)).ok());
  ASSERT_TRUE(p.net[1]->Handshake(milliseconds(10000)).ok());
  p.net[0]->SetRejoining(ClusterClock{12345, 7});  // node 0 restarted and catches up
  auto restart = [&](Recorder* rec) -> absl::StatusOr<std::optional<ClusterClock>> {
    p.net[1]->Stop();  // node 1 dies and restarts
    p.net[1].reset();
    ZmqPeerNetOptions o;
    o.config = c;
    o.node_id = 1;
    o.epoch_us = 1000;
    auto n = ZmqPeerNet::Create(o);
    if (!n.ok()) return n.status();
    p.net[1] = std::move(*n);
    p.net[1]->SetHandler(rec);
    p.net[1]->RegisterReceiver(1, rec);
    p.net[1]->SetRecoveredEpoch(0);
    p.net[1]->Start();
    if (auto h = p.net[1]->Handshake(milliseconds(10000)); !h.ok()) return h.status();
    return p.net[1]->running_cluster();
  };
  Recorder first, second;
  auto refused = restart(&first);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("node 0 is still rejoining"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("restart every node"), std::string::npos) << refused.status();
  p.net[0]->SetRunning(ClusterClock{12345, 7});  // node 0 caught up
  auto running = restart(&second);
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(running->has_value());
  EXPECT_EQ((*running)->start_us, 12345u);
  EXPECT_EQ((*running)->origin_epoch, 7u);
  p.net[1]->Stop();
}

TEST(ZmqPeerNet, APeerOfAnotherProtocolVersionIsRefused) {
  const pb::ClusterConfig c = TwoNodes(1000);
  ZmqPeerNetOptions o;
  o.config = c;
  o.node_id = 1;
  o.epoch_us = 1000;
  auto n = ZmqPeerNet::Create(o);
  ASSERT_TRUE(n.ok()) << n.status();
  Recorder rec;
  (*n)->SetHandler(&rec);
  (*n)->RegisterReceiver(1, &rec);
  (*n)->Start();
  pb::PeerMessage m;  // what an older binary says: no settings at all
  m.set_from_node(0);
  m.set_seq(1);
  m.mutable_hello()->set_epoch_us(1000);
  m.mutable_hello()->set_boot_us(1);
  SendRaw(c, 1, m);
  auto s = (*n)->Handshake(milliseconds(10000));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_NE(s.status().message().find(
                absl::StrCat("node 0 runs without protocol_version, we with protocol_version ", kPeerProtocolVersion)),
            std::string::npos)
      << s.status();
}

// A binary of protocol 2 (before incarnations: every frame of it would be
// dropped as stale, silently) fails the handshake, naming the setting.
TEST(ZmqPeerNet, APeerOfTheProtocolBeforeIncarnationsIsRefused) {
  const pb::ClusterConfig c = TwoNodes(1000);
  ZmqPeerNetOptions o;
  o.config = c;
  o.node_id = 1;
  o.epoch_us = 1000;
  auto n = ZmqPeerNet::Create(o);
  ASSERT_TRUE(n.ok()) << n.status();
  Recorder rec;
  (*n)->SetHandler(&rec);
  (*n)->RegisterReceiver(1, &rec);
  (*n)->Start();
  pb::PeerMessage m;
  m.set_from_node(0);
  m.set_seq(1);
  m.mutable_hello()->set_epoch_us(1000);
  m.mutable_hello()->set_boot_us(1);
  (*m.mutable_hello()->mutable_settings())["protocol_version"] = "2";
  SendRaw(c, 1, m);
  auto s = (*n)->Handshake(milliseconds(10000));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_NE(s.status().message().find("node 0 runs with protocol_version 2, we with 3"), std::string::npos)
      << s.status();
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
