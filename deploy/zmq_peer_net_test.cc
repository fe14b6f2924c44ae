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

namespace detdb {
namespace {

using std::chrono::milliseconds;

uint32_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

pb::ClusterConfig TwoNodes(uint64_t epoch_us) {
  pb::ClusterConfig c;
  c.set_num_partitions(2);
  c.set_epoch_us(epoch_us);
  for (uint32_t i = 0; i < 2; ++i) {
    pb::NodeConfig* n = c.add_nodes();
    n->set_id(i);
    n->set_host("127.0.0.1");
    n->set_peer_port(FreePort());
    n->set_client_port(FreePort());
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
  void OnPeerResult(const pb::TxnResult& r) override {
    std::lock_guard<std::mutex> l(mu);
    results.push_back(r.txn_id());
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
};

struct Pair {
  std::unique_ptr<ZmqPeerNet> net[2];
  Recorder rec[2];
  absl::Status Create(const pb::ClusterConfig& c0, const pb::ClusterConfig& c1, uint64_t e0, uint64_t e1) {
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
