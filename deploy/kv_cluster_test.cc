// The key-value workload on a real 3-node cluster (`detdb --workload=kv`,
// one process per node), driven through KvClient:
// - bank transfers from several clients at once (multi-partition where the
//   two accounts hash to different partitions, some refused for
//   insufficient funds): the total balance stays constant, and every
//   partition's digest and every transfer's outcome (the balances after
//   it, or its error) equal a serial replay of the global order;
// - appends from several clients to shared lists: every acknowledged
//   element is in its list exactly once, in each client's order, and
//   nothing else is;
// - bad requests (oversized key or value, arguments that do not parse, key
//   sets that do not match the arguments, an unknown procedure, a value of
//   the wrong type): a clear error each, nothing sequenced for the refused
//   ones, and the node keeps serving.
#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "common/partitioner.h"
#include "deploy/kv_client.h"
#include "deploy/test_cluster.h"
#include "scheduler/serial_executor.h"
#include "workloads/kv/kv.h"

namespace detdb {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TestClusterOptions KvCluster() {
  TestClusterOptions o;
  o.nodes = 3;
  o.flags = {"--workload=kv", "--record_history", "--workers=2"};
  return o;
}

std::unique_ptr<KvClient> Connect(const TestCluster& cluster) {
  KvClientOptions o;
  o.timeout = seconds(30);
  auto kv = KvClient::Connect(cluster.config(), o);
  EXPECT_TRUE(kv.ok()) << kv.status();
  return kv.ok() ? std::move(*kv) : nullptr;
}

// Every node's digests at the boundary of `epoch`, asked at once.
std::map<uint32_t, uint64_t> Digests(const pb::ClusterConfig& config, uint64_t epoch) {
  std::map<uint32_t, uint64_t> out;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int n = 0; n < config.nodes_size(); ++n)
    threads.emplace_back([&, n] {
      auto c = ClusterClient::Connect(config);
      auto d = (*c)->node(n)->Digests(epoch, seconds(60));
      std::lock_guard<std::mutex> l(mu);
      if (!d.ok()) {
        ADD_FAILURE() << "node " << n << ": " << d.status();
        return;
      }
      for (const auto& pd : *d) out[pd.partition()] = pd.digest();
    });
  for (std::thread& t : threads) t.join();
  return out;
}

uint64_t MaxEpoch(ClusterClient* cc) {
  auto infos = cc->InfoAll(seconds(5));
  EXPECT_TRUE(infos.ok()) << infos.status();
  uint64_t e = 0;
  if (infos.ok())
    for (const auto& i : *infos) e = std::max<uint64_t>(e, i.epoch());
  return e;
}

std::string Account(int i) { return absl::StrCat("account-", i); }

TEST(KvCluster, BankTransfersKeepTheTotalAndEqualTheSerialReplay) {
  TestCluster cluster(KvCluster());
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  constexpr int kAccounts = 12, kInitial = 1000, kClients = 4, kTransfers = 150;
  {
    auto kv = Connect(cluster);
    for (int i = 0; i < kAccounts; ++i) ASSERT_TRUE(kv->Put(Account(i), KvInt(kInitial)).ok());
  }
  std::atomic<int> committed{0}, refused{0}, other{0};
  // What each client saw, transfer by transfer (its seqs are increasing):
  // the balances after a committed transfer, or the error.
  struct Seen {
    bool ok;
    int64_t from_balance, to_balance;
    std::string error;
  };
  std::vector<std::vector<Seen>> seen(kClients);
  std::vector<uint64_t> client_ids(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      auto kv = Connect(cluster);
      client_ids[c] = kv->client_id();
      std::mt19937_64 rng(100 + c);
      for (int i = 0; i < kTransfers; ++i) {
        const int from = static_cast<int>(rng() % kAccounts);
        const int to = (from + 1 + static_cast<int>(rng() % (kAccounts - 1))) % kAccounts;
        auto r = kv->Transfer(Account(from), Account(to), 1 + static_cast<int64_t>(rng() % 400));
        if (r.ok()) {
          ++committed;
          seen[c].push_back({true, r->from_balance, r->to_balance, ""});
        } else if (absl::IsAborted(r.status()) &&
                   r.status().message().find("insufficient funds") != std::string_view::npos) {
          ++refused;
          seen[c].push_back({false, 0, 0, std::string(r.status().message())});
        } else {
          ++other;
          ADD_FAILURE() << r.status();
        }
      }
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(committed + refused, kClients * kTransfers);
  EXPECT_GT(committed.load(), kClients * kTransfers / 3);
  EXPECT_GT(refused.load(), 0) << "some transfers should find too little money";

  auto kv = Connect(cluster);
  int64_t total = 0;
  for (int i = 0; i < kAccounts; ++i) {
    auto r = kv->Get(Account(i));
    ASSERT_TRUE(r.ok() && r->value.has_value()) << r.status();
    EXPECT_GE(r->value->int_(), 0);
    total += r->value->int_();
  }
  EXPECT_EQ(total, kAccounts * kInitial) << "money is neither made nor lost";

  // The serial replay of the global order (every node's batches by id).
  const std::map<uint32_t, uint64_t> digests = Digests(cluster.config(), MaxEpoch(kv->cluster()) + 300);
  std::vector<pb::Txn> order;
  for (uint32_t n = 0; n < 3; ++n) {
    auto h = kv->cluster()->node(n)->History(seconds(30));
    ASSERT_TRUE(h.ok()) << h.status();
    for (const pb::Batch& b : *h)
      for (const pb::Txn& t : b.txns()) order.push_back(t);
  }
  std::sort(order.begin(), order.end(), [](const pb::Txn& a, const pb::Txn& b) { return a.id() < b.id(); });
  ASSERT_EQ(order.size(), static_cast<size_t>(kAccounts + kClients * kTransfers + kAccounts));
  ModPartitioner parts(cluster.config().num_partitions());
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterKvProcedures(&procs).ok());
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < parts.num_partitions(); ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(CreateKvTable(stores.back().get()).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int multi = 0, aborted = 0;
  std::map<uint64_t, std::map<uint64_t, std::pair<pb::Txn, pb::TxnResult>>> replayed;  // client id -> seq ->
  for (const pb::Txn& t : order) {
    const pb::TxnResult r = serial.Execute(t);
    aborted += r.status() == pb::STATUS_ABORTED;
    multi += t.writers_size() > 1;
    replayed[t.client_id()][t.client_seq()] = {t, r};
  }
  // Every transfer's outcome, as its client saw it, is the serial replay's.
  for (int c = 0; c < kClients; ++c) {
    const auto& mine = replayed[client_ids[c]];
    ASSERT_EQ(mine.size(), seen[c].size()) << "client " << c;
    size_t k = 0;
    for (const auto& [seq, tr] : mine) {
      auto want = ParseKvReply(tr.first, tr.second);
      const Seen& got = seen[c][k++];
      ASSERT_EQ(got.ok, want.ok()) << "client " << c << " seq " << seq << ": " << want.status() << " / " << got.error;
      if (got.ok) {
        EXPECT_EQ(got.from_balance, want->from_balance) << "client " << c << " seq " << seq;
        EXPECT_EQ(got.to_balance, want->to_balance) << "client " << c << " seq " << seq;
      } else {
        EXPECT_EQ(got.error, want.status().message()) << "client " << c << " seq " << seq;
      }
    }
  }
  printf("%d transfers committed, %d refused (insufficient funds), %d multi-partition txns, %zu txns replayed\n",
         committed.load(), refused.load(), multi, order.size());
  EXPECT_EQ(aborted, refused.load()) << "the replay refuses the same transfers";
  EXPECT_GT(multi, 100) << "transfers between partitions";
  ASSERT_EQ(digests.size(), 3u);
  for (PartitionId p = 0; p < parts.num_partitions(); ++p)
    EXPECT_EQ(digests.at(p), raw[p]->Digest()) << "partition " << p;
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

TEST(KvCluster, ConcurrentAppendsLoseAndDuplicateNothing) {
  TestCluster cluster(KvCluster());
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  constexpr int kClients = 3, kAppends = 100, kLists = 6;
  std::vector<std::vector<std::pair<int, std::string>>> acked(kClients);  // (list, element)
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      auto kv = Connect(cluster);
      std::mt19937_64 rng(7 + c);
      for (int i = 0; i < kAppends; ++i) {
        const int list = static_cast<int>(rng() % kLists);
        const std::string element = absl::StrCat(c, ":", i);
        auto r = kv->Append(absl::StrCat("list-", list), element);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_GE(r->count, 1u);
        acked[c].push_back({list, element});
      }
    });
  for (std::thread& t : clients) t.join();
  auto kv = Connect(cluster);
  std::map<std::string, int> seen;  // element -> times found
  std::map<std::string, std::pair<int, size_t>> where;  // element -> (list, position)
  size_t elements = 0;
  for (int l = 0; l < kLists; ++l) {
    auto r = kv->Get(absl::StrCat("list-", l));
    ASSERT_TRUE(r.ok()) << r.status();
    if (!r->value.has_value()) continue;
    ASSERT_EQ(r->value->v_case(), pb::KvValue::kList);
    for (int i = 0; i < r->value->list().items_size(); ++i) {
      const std::string& e = r->value->list().items(i);
      ++seen[e];
      where[e] = {l, static_cast<size_t>(i)};
      ++elements;
    }
  }
  size_t want = 0;
  for (int c = 0; c < kClients; ++c) {
    std::map<int, size_t> last_pos;  // per list: this client's elements appear in its order
    for (const auto& [list, e] : acked[c]) {
      ++want;
      ASSERT_EQ(seen[e], 1) << "element " << e << " lost or duplicated";
      EXPECT_EQ(where[e].first, list) << e;
      auto it = last_pos.find(list);
      if (it != last_pos.end()) {
        EXPECT_GT(where[e].second, it->second) << e << " out of order";
      }
      last_pos[list] = where[e].second;
    }
  }
  EXPECT_EQ(elements, want) << "nothing but the acknowledged elements";
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

pb::TxnResult RunRaw(Client* c, pb::Txn t, uint64_t seq) {
  t.set_client_id(4242);
  t.set_client_seq(seq);
  auto r = c->Run(t, seconds(20));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : pb::TxnResult();
}

TEST(KvCluster, BadRequestsGetClearErrorsAndTheNodeKeepsServing) {
  TestCluster cluster(KvCluster());
  ASSERT_TRUE(cluster.Start().ok()) << cluster.Logs();
  auto cc = ClusterClient::Connect(cluster.config());
  ASSERT_TRUE(cc.ok());
  Client* node = (*cc)->node(1);
  auto before = node->Info(seconds(5));
  ASSERT_TRUE(before.ok()) << before.status();
  uint64_t seq = 0;
  auto expect = [&](pb::Txn t, pb::StatusCode code, const char* words) {
    const pb::TxnResult r = RunRaw(node, std::move(t), ++seq);
    EXPECT_EQ(r.status(), code) << r.error();
    EXPECT_NE(r.error().find(words), std::string::npos) << r.error();
  };
  // Built by hand: the builders refuse these before they leave the client.
  pb::KvArgs big_key;
  big_key.set_key(std::string(kKvMaxKeyBytes + 1, 'k'));
  pb::Txn t;
  t.set_type(kKvGet);
  t.set_args(big_key.SerializeAsString());
  t.add_read_set(KvKeyOf(big_key.key()));
  expect(t, pb::STATUS_INVALID_ARGUMENT, "key of 129 bytes; the limit is 128");
  pb::KvArgs big_value;
  big_value.set_key("k");
  big_value.mutable_value()->set_bytes(std::string(kKvMaxValueBytes + 1, 'v'));
  t = pb::Txn();
  t.set_type(kKvPut);
  t.set_args(big_value.SerializeAsString());
  t.add_read_set(KvKeyOf("k"));
  t.add_write_set(KvKeyOf("k"));
  expect(t, pb::STATUS_INVALID_ARGUMENT, "value of 1025 bytes (bytes); the limit is 1024");
  t.set_args("\x0a\xff\xff\xff");
  expect(t, pb::STATUS_INVALID_ARGUMENT, "do not parse");
  t = *KvPutRequest("k", KvBytes("v"));
  t.set_write_set(0, KvKeyOf("elsewhere"));
  expect(t, pb::STATUS_INVALID_ARGUMENT, "exactly the keys of the arguments");
  t.set_type(99);
  expect(t, pb::STATUS_INVALID_ARGUMENT, "unknown txn type 99");
  auto after = node->Info(seconds(5));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->submitted(), before->submitted()) << "refused before sequencing";
  // Valid requests that the procedure refuses: deterministic aborts.
  ASSERT_EQ(RunRaw(node, *KvPutRequest("text", KvBytes("12")), ++seq).status(), pb::STATUS_OK);
  expect(*KvTransferRequest("text", "other", 1), pb::STATUS_ABORTED, "\"text\" holds bytes, not int");
  expect(*KvAppendRequest("text", "x"), pb::STATUS_ABORTED, "holds bytes, not list");
  auto info = node->Info(seconds(5));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->submitted(), before->submitted() + 3) << "the put, the transfer and the append";
  // Still serving.
  auto kv = Connect(cluster);
  ASSERT_TRUE(kv->Put("after", KvBytes("fine")).ok());
  auto r = kv->Get("after");
  ASSERT_TRUE(r.ok() && r->value.has_value()) << r.status();
  EXPECT_EQ(r->value->bytes(), "fine");
  EXPECT_TRUE(cluster.Stop().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace detdb
