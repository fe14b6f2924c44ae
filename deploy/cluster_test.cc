// Cluster mode end to end: real `detdb` processes on 127.0.0.1 talking
// ZeroMQ, driven through the client library.
//
// - Every lock manager: a 3-node cluster (2 partitions per node) runs a
//   seeded mix of single- and multi-partition txns from several clients;
//   every client gets exactly one reply per request, and every partition's
//   digest equals a serial replay of the global order (every node's
//   sequencer batches merged by txn id) — results too; so do the digests
//   every node takes at an epoch boundary in the middle of the run.
// - Bad input at a live node: random bytes, a truncated frame, an oversized
//   frame, a multi-part message, an unknown txn type, a key outside every
//   partition, an unknown table, a duplicate (client id, seq): each gets an
//   error and is counted, a good client keeps being served meanwhile, and
//   none of it is sequenced. A client that vanishes before its replies
//   blocks nothing.
// - A node killed in the middle of a run: the others stall (their schedulers
//   wait for the dead node's next sub-batch: no merge past the gap, no
//   commit, so nothing can diverge), keep answering, and stop cleanly.
#include <signal.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "workloads/micro/micro.h"
#include "common/partitioner.h"
#include "client/client.h"
#include "deploy/test_cluster.h"
#include "lockmgr/lock_manager.h"
#include "scheduler/serial_executor.h"
#include "sequencer/epoch_batcher.h"
#include "workloads/micro/micro_table.h"
#include "zmq.hpp"

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kRecords = 200;  // per partition: hot enough for conflicts

// Sends txns from `clients` clients (client c talks to node c % nodes) and
// collects every reply. Returns replies by (client id, seq).
struct DriveResult {
  std::map<std::pair<uint64_t, uint64_t>, pb::TxnResult> results;
  int duplicates = 0, refused = 0;
};

// seq_base: the client_seq of client c's first txn is seq_base + 1 (a second
// call continues the first one's clients and streams).
DriveResult Drive(ClusterClient* cc, uint32_t clients, int txns_per_client, double multipartition, uint64_t seed,
                  std::chrono::seconds timeout = seconds(120), int seq_base = 0) {
  DriveResult run;
  MicroOptions w;
  w.partitions = cc->config().num_partitions();
  w.records_per_partition = kRecords;
  w.contention = 0.05;
  w.keys_per_txn = 4;
  w.write_fraction = 0.6;
  w.multipartition = multipartition;
  int expected = 0;
  for (uint32_t c = 0; c < clients; ++c) {
    w.seed = seed + c;
    MicroGenerator gen(w);
    pb::Txn skip;
    for (int i = 0; i < seq_base; ++i) gen.Next(&skip);
    std::vector<pb::Txn> all;
    for (int i = 0; i < txns_per_client; ++i) {
      pb::Txn t;
      gen.Next(&t);
      t.set_client_id(1000 + c);
      t.set_client_seq(seq_base + i + 1);
      all.push_back(std::move(t));
    }
    Client* node = cc->node(c % cc->num_nodes());
    for (size_t i = 0; i < all.size(); i += 50) {
      std::vector<pb::Txn> g(all.begin() + i, all.begin() + std::min(all.size(), i + 50));
      EXPECT_TRUE(node->SubmitTxns(g).ok());
    }
    expected += txns_per_client;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int got = 0;
  while (got < expected && std::chrono::steady_clock::now() < deadline) {
    auto r = cc->Receive(milliseconds(100));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) continue;
    for (const pb::TxnResult& res : (*r)->second.results()) {
      ++got;
      if (res.status() == pb::STATUS_INVALID_ARGUMENT || res.status() == pb::STATUS_UNAVAILABLE) ++run.refused;
      if (!run.results.emplace(std::make_pair(res.client_id(), res.client_seq()), res).second) ++run.duplicates;
    }
  }
  // A little longer: nothing more may come.
  for (int i = 0; i < 3; ++i) {
    auto r = cc->Receive(milliseconds(100));
    if (r.ok() && r->has_value()) run.duplicates += (*r)->second.results_size();
  }
  return run;
}

// The largest (or smallest) of the nodes' open epochs (NodeInfo.epoch: the
// epoch their sequencers fill now).
uint64_t OpenEpoch(ClusterClient* cc, bool smallest = false) {
  auto infos = cc->InfoAll(seconds(5));
  EXPECT_TRUE(infos.ok()) << infos.status();
  uint64_t e = smallest ? UINT64_MAX : 0;
  if (infos.ok())
    for (const auto& i : *infos) e = smallest ? std::min<uint64_t>(e, i.epoch()) : std::max<uint64_t>(e, i.epoch());
  return infos.ok() ? e : 0;
}

// Every node's partition digests at the boundary of `epoch`, asked of all
// nodes at once (each pauses there); empty on any error (reported).
std::map<uint32_t, uint64_t> SnapshotAll(const pb::ClusterConfig& config, uint64_t epoch) {
  std::map<uint32_t, uint64_t> out;
  std::mutex mu;
  bool failed = false;
  std::vector<std::thread> threads;
  for (int n = 0; n < config.nodes_size(); ++n)
    threads.emplace_back([&, n] {
      auto c = ClusterClient::Connect(config);
      auto d = (*c)->node(n)->Digests(epoch, seconds(60));
      std::lock_guard<std::mutex> l(mu);
      if (!d.ok()) {
        ADD_FAILURE() << "node " << n << ": " << d.status();
        failed = true;
        return;
      }
      for (const auto& pd : *d) out[pd.partition()] = pd.digest();
    });
  for (std::thread& t : threads) t.join();
  if (failed) out.clear();
  return out;
}

class ClusterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ClusterTest, EveryNodeEqualsTheSerialReplayOfTheGlobalOrder) {
  TestClusterOptions o;
  o.nodes = 3;
  o.partitions_per_node = 2;
  o.flags = {"--lock_manager=" + GetParam(), "--workers=2", absl::StrCat("--micro_records=", kRecords),
             "--record_history", "--table_size=1024", "--max_active=100"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());
  constexpr uint32_t kClients = 4;
  constexpr int kTxns = 600;  // per client: kTxns / 2 before the mid-run snapshot, kTxns / 2 after
  DriveResult run = Drive(cc->get(), kClients, kTxns / 2, 0.3, 11);
  // A snapshot at an epoch boundary just ahead, taken while the second half
  // of the txns streams in: every node pauses there for its digests.
  const uint64_t boundary = OpenEpoch(cc->get()) + 300;  // well ahead, also under the sanitizers
  std::map<uint32_t, uint64_t> mid_digests;
  std::thread snapper([&] { mid_digests = SnapshotAll(cluster.config(), boundary); });
  while (OpenEpoch(cc->get()) + 1 < boundary) std::this_thread::sleep_for(milliseconds(1));
  // Each Drive submits all its txns at once, so a fast burst can land
  // wholly in the epoch before the boundary: the last kLast of each client
  // go only once every node's sequencer is past it, so that the run
  // straddles the boundary on any machine.
  constexpr int kLast = 25;
  const DriveResult second = Drive(cc->get(), kClients, kTxns / 2 - kLast, 0.3, 11, seconds(120), kTxns / 2);
  const auto past_deadline = std::chrono::steady_clock::now() + seconds(60);
  while (OpenEpoch(cc->get(), /*smallest=*/true) <= boundary && std::chrono::steady_clock::now() < past_deadline)
    std::this_thread::sleep_for(milliseconds(1));
  const DriveResult third = Drive(cc->get(), kClients, kLast, 0.3, 11, seconds(120), kTxns - kLast);
  snapper.join();
  for (const DriveResult* d : {&second, &third}) {
    run.results.insert(d->results.begin(), d->results.end());
    run.duplicates += d->duplicates;
    run.refused += d->refused;
  }
  ASSERT_EQ(run.results.size(), kClients * kTxns) << "every request answered\n" << cluster.Logs();
  EXPECT_EQ(run.duplicates, 0) << "exactly one reply per request";
  EXPECT_EQ(run.refused, 0);
  ASSERT_EQ(mid_digests.size(), o.nodes * o.partitions_per_node);

  // Digests at a boundary after every epoch any txn could be in.
  const std::map<uint32_t, uint64_t> digests = SnapshotAll(cluster.config(), OpenEpoch(cc->get()) + 300);
  std::vector<pb::Txn> order;
  for (uint32_t n = 0; n < o.nodes; ++n) {
    auto h = (*cc)->node(n)->History(seconds(30));
    ASSERT_TRUE(h.ok()) << h.status();
    for (const pb::Batch& b : *h)
      for (const pb::Txn& t : b.txns()) order.push_back(t);
  }
  ASSERT_EQ(digests.size(), o.nodes * o.partitions_per_node);
  std::sort(order.begin(), order.end(), [](const pb::Txn& a, const pb::Txn& b) { return a.id() < b.id(); });
  ASSERT_EQ(order.size(), kClients * kTxns) << "the global order holds every txn once";

  ModPartitioner parts(cluster.config().num_partitions());
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMicroProcedures(&procs).ok());
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < parts.num_partitions(); ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadMicroTable(stores.back().get(), parts, p, kRecords).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int multi = 0, before_boundary = 0;
  bool mid_checked = false;
  auto check_mid = [&] {
    for (PartitionId p = 0; p < parts.num_partitions(); ++p)
      EXPECT_EQ(mid_digests.at(p), raw[p]->Digest()) << "partition " << p << " at the boundary of epoch " << boundary;
    mid_checked = true;
  };
  for (const pb::Txn& t : order) {
    if (!mid_checked && EpochBatcher::IdEpoch(t.id()) >= boundary) check_mid();
    before_boundary += EpochBatcher::IdEpoch(t.id()) < boundary;
    const pb::TxnResult want = serial.Execute(t);
    const pb::TxnResult& got = run.results.at({t.client_id(), t.client_seq()});
    ASSERT_EQ(got.txn_id(), t.id());
    ASSERT_EQ(got.status(), want.status());
    ASSERT_EQ(got.result(), want.result()) << "txn " << t.id();
    multi += t.readers_size() + t.writers_size() > 2 || (t.writers_size() == 2);
  }
  if (!mid_checked) check_mid();
  EXPECT_GE(before_boundary, static_cast<int>(kClients * kTxns / 2)) << "the first half precedes the boundary";
  EXPECT_LT(before_boundary, static_cast<int>(kClients * kTxns)) << "the second half comes after it";
  EXPECT_GT(multi, 100) << "the mix has multi-partition txns";
  for (PartitionId p = 0; p < parts.num_partitions(); ++p)
    EXPECT_EQ(digests.at(p), raw[p]->Digest()) << "partition " << p;
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, ClusterTest, ::testing::ValuesIn(LockManagerNames()));

// A raw DEALER, for frames the client library would never send.
class RawClient {
 public:
  explicit RawClient(const pb::NodeConfig& n, int linger_ms = 0) : sock_(ctx_, zmq::socket_type::dealer) {
    sock_.set(zmq::sockopt::linger, linger_ms);
    sock_.connect(absl::StrCat("tcp://", n.host(), ":", n.client_port()));
  }
  void SendBytes(const std::string& bytes) { sock_.send(zmq::buffer(bytes), zmq::send_flags::none); }
  void SendParts(const std::vector<std::string>& parts) {
    for (size_t i = 0; i < parts.size(); ++i)
      sock_.send(zmq::buffer(parts[i]), i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  // The next reply, or a reply with status INTERNAL and error "timeout".
  pb::ClientReply Next() {
    pb::ClientReply r;
    zmq::pollitem_t item{sock_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::message_t m;
    if (zmq::poll(&item, 1, seconds(10)) == 0 || !sock_.recv(m, zmq::recv_flags::dontwait)) {
      r.set_status(pb::STATUS_INTERNAL);
      r.set_error("timeout");
      return r;
    }
    EXPECT_TRUE(r.ParseFromArray(m.data(), static_cast<int>(m.size())));
    return r;
  }

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t sock_;
};

pb::Txn MicroTxn(uint64_t client, uint64_t seq, std::vector<Key> keys) {
  pb::Txn t;
  t.set_type(kMicroTxnType);
  t.set_client_id(client);
  t.set_client_seq(seq);
  std::string args(8, '\0');  // compute iterations: 0
  t.set_args(args);
  for (Key k : keys) {
    t.add_read_set(k);
    t.add_write_set(k);
  }
  return t;
}

std::string Serialize(const pb::ClientRequest& r) {
  std::string s;
  r.SerializeToString(&s);
  return s;
}

TEST(ClusterBadInput, RefusedCountedNotSequencedAndOthersServed) {
  TestClusterOptions o;
  o.nodes = 3;
  o.flags = {absl::StrCat("--micro_records=", kRecords), "--record_history", "--max_request_bytes=65536"};
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());

  // A good client keeps a stream going on every node while the bad input arrives.
  std::atomic<bool> done{false};
  std::atomic<int> good_sent{0}, good_ok{0};
  std::thread good([&] {
    auto gc = ClusterClient::Connect(cluster.config());
    uint64_t seq = 0;
    int outstanding = 0;
    while (!done.load() || outstanding > 0) {
      if (!done.load() && outstanding < 20) {
        for (uint32_t n = 0; n < 3; ++n) {
          ++seq;
          ASSERT_TRUE((*gc)->node(n)->SubmitTxns({MicroTxn(7, seq, {MakeKey(kMicroTable, seq % (3 * kRecords))})}).ok());
          ++outstanding;
          ++good_sent;
        }
      }
      auto r = (*gc)->Receive(milliseconds(5));
      if (r.ok() && r->has_value())
        for (const auto& res : (*r)->second.results()) {
          --outstanding;
          good_ok += res.status() == pb::STATUS_OK;
        }
    }
  });

  const pb::NodeConfig& n0 = cluster.config().nodes(0);
  RawClient raw(n0);
  std::mt19937_64 rng(3);
  // Random bytes.
  std::string junk(300, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  raw.SendBytes(junk);
  pb::ClientReply r = raw.Next();
  EXPECT_EQ(r.status(), pb::STATUS_INVALID_ARGUMENT) << r.error();
  // A truncated frame: one txn cut in half.
  pb::ClientRequest one;
  *one.add_txns() = MicroTxn(9, 1, {MakeKey(kMicroTable, 1), MakeKey(kMicroTable, 2)});
  const std::string full = Serialize(one);
  raw.SendBytes(full.substr(0, full.size() / 2));
  r = raw.Next();
  EXPECT_EQ(r.status(), pb::STATUS_INVALID_ARGUMENT) << r.error();
  // An oversized frame (the node runs with --max_request_bytes=65536).
  raw.SendBytes(std::string(100000, 'x'));
  r = raw.Next();
  EXPECT_EQ(r.status(), pb::STATUS_INVALID_ARGUMENT);
  EXPECT_NE(r.error().find("exceeds"), std::string::npos) << r.error();
  // A multi-part message.
  raw.SendParts({full, full});
  r = raw.Next();
  EXPECT_EQ(r.status(), pb::STATUS_INVALID_ARGUMENT) << r.error();

  // Txns refused one by one, each with its own result.
  pb::ClientRequest bad;
  pb::Txn unknown_type = MicroTxn(9, 10, {MakeKey(kMicroTable, 1)});
  unknown_type.set_type(999);
  *bad.add_txns() = unknown_type;
  *bad.add_txns() = MicroTxn(9, 11, {MakeKey(kMicroTable, 3 * kRecords + 5)});  // no such row anywhere
  *bad.add_txns() = MicroTxn(9, 12, {MakeKey(77, 1)});                          // no such table
  *bad.add_txns() = MicroTxn(0, 13, {MakeKey(kMicroTable, 1)});                 // no client id
  raw.SendBytes(Serialize(bad));
  r = raw.Next();
  ASSERT_EQ(r.results_size(), 4) << r.DebugString();
  for (const auto& res : r.results()) EXPECT_EQ(res.status(), pb::STATUS_INVALID_ARGUMENT) << res.error();
  EXPECT_NE(r.results(0).error().find("unknown txn type"), std::string::npos) << r.results(0).error();
  EXPECT_NE(r.results(1).error().find("outside every partition"), std::string::npos) << r.results(1).error();
  // A duplicate (client id, seq): the first runs, the second is refused.
  pb::ClientRequest dup;
  *dup.add_txns() = MicroTxn(9, 20, {MakeKey(kMicroTable, 4)});
  raw.SendBytes(Serialize(dup));
  raw.SendBytes(Serialize(dup));
  int ok = 0, refused = 0;
  for (int i = 0; i < 2; ++i) {
    r = raw.Next();
    ASSERT_EQ(r.results_size(), 1) << r.DebugString();
    if (r.results(0).status() == pb::STATUS_OK) ++ok;
    if (r.results(0).status() == pb::STATUS_INVALID_ARGUMENT) {
      ++refused;
      EXPECT_NE(r.results(0).error().find("duplicate"), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(refused, 1);

  // A client that submits and goes away before its replies: the node drops
  // them and goes on (the good client below must still be served).
  constexpr int kGone = 300;
  {
    RawClient gone(cluster.config().nodes(1), /*linger_ms=*/2000);  // the request leaves before the close
    pb::ClientRequest many;
    for (int i = 0; i < kGone; ++i) *many.add_txns() = MicroTxn(11, i + 1, {MakeKey(kMicroTable, (3 * i + 1) % (3 * kRecords))});
    gone.SendBytes(Serialize(many));
  }
  std::this_thread::sleep_for(milliseconds(300));

  done = true;
  good.join();
  EXPECT_GT(good_sent.load(), 0);
  EXPECT_EQ(good_ok.load(), good_sent.load()) << "the good client was served throughout";

  auto info = (*cc)->node(0)->Info(seconds(5));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->bad_frames(), 4u);
  EXPECT_EQ(info->duplicates(), 1u);
  // Nothing bad was sequenced: the history holds the good client's txns and
  // the one accepted (9, 20), nothing else.
  EXPECT_EQ(SnapshotAll(cluster.config(), OpenEpoch(cc->get()) + 300).size(), 3u);  // all idle past every txn
  int sequenced = 0, from9 = 0, from11 = 0;
  for (uint32_t n = 0; n < 3; ++n) {
    auto h = (*cc)->node(n)->History(seconds(10));
    ASSERT_TRUE(h.ok()) << h.status();
    for (const auto& b : *h)
      for (const auto& t : b.txns()) {
        ++sequenced;
        if (t.client_id() == 9) {
          ++from9;
          EXPECT_EQ(t.client_seq(), 20u);
        }
        from11 += t.client_id() == 11;
        EXPECT_NE(t.client_id(), 0u);
      }
  }
  EXPECT_EQ(from9, 1);
  EXPECT_EQ(from11, kGone) << "the vanished client's txns ran";
  EXPECT_EQ(sequenced, good_sent.load() + 1 + kGone);
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

TEST(ClusterFault, KilledNodeStallsTheOthersWithoutCrashingOrSkipping) {
  TestClusterOptions o;
  o.nodes = 3;
  o.flags = {absl::StrCat("--micro_records=", kRecords), "--drain_timeout_s=1"};  // stuck txns: do not wait long
  TestCluster cluster(o);
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());
  // Some traffic first, so the kill lands in the middle of a run.
  const DriveResult before = Drive(cc->get(), 3, 200, 0.3, 5);
  ASSERT_EQ(before.results.size(), 600u);
  std::thread more([&] {
    auto c2 = ClusterClient::Connect(cluster.config());
    (void)Drive(c2->get(), 3, 2000, 0.3, 50, seconds(3));  // cannot all be answered
  });
  std::this_thread::sleep_for(milliseconds(200));
  cluster.Kill(2, SIGKILL);
  more.join();
  // The survivors keep answering but, once they have worked off what came
  // before the gap, make no progress: their schedulers wait for the dead
  // node's next sub-batch instead of skipping it. (Under the sanitizers
  // working off the backlog can take a while, hence the polling.)
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  std::vector<pb::NodeInfo> prev(2);
  bool stalled = false;
  while (!stalled && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(seconds(1));
    stalled = true;
    for (uint32_t n = 0; n < 2; ++n) {
      auto i = (*cc)->node(n)->Info(seconds(5));
      ASSERT_TRUE(i.ok()) << "node " << n << " must keep answering: " << i.status();
      ASSERT_TRUE(cluster.Running(n)) << "node " << n << " crashed\n" << cluster.Logs();
      stalled = stalled && i->merged_epoch() == prev[n].merged_epoch() && i->committed() == prev[n].committed() &&
                i->epoch() > prev[n].epoch();
      prev[n] = *i;
    }
  }
  EXPECT_TRUE(stalled) << "survivors must stall (no merge, no commit) while their sequencers go on";
  for (uint32_t n = 0; n < 2; ++n)
    EXPECT_GT(prev[n].epoch(), prev[n].merged_epoch() + 100) << "node " << n << " must not skip the missing epochs";
  EXPECT_TRUE(cluster.Stop().ok()) << "survivors stop cleanly\n" << cluster.Logs();
}

}  // namespace
}  // namespace detdb
