#include "bench/crash_command.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/cluster_config.h"
#include "common/partitioner.h"
#include "deploy/test_cluster.h"
#include "gflags/gflags.h"
#include "scheduler/procedure.h"
#include "scheduler/serial_executor.h"
#include "sequencer/input_log.h"
#include "storage/partition_store.h"
#include "workloads/micro/micro.h"
#include "workloads/micro/micro_table.h"

DECLARE_uint32(nodes);
DECLARE_uint64(seed);
DECLARE_string(lock_manager);
DECLARE_uint32(workers);

DEFINE_uint32(kills, 3, "crash: how many times nodes are killed (SIGKILL) and restarted");
DEFINE_string(crash_mode, "mixed", "crash: whom a kill hits: one (a random node, which rejoins the running cluster), all (every node at once), mixed (each kill one or all, by the seed)");
DEFINE_double(crash_load_s, 1.5, "crash: at most this many seconds of load before each kill (random, seeded)");
DEFINE_double(crash_down_s, 3, "crash: a killed node stays down 0 to this many seconds (random, seeded)");
DEFINE_uint64(crash_records, 10000, "crash: micro records per partition");
DEFINE_uint32(crash_clients, 3, "crash: clients (client c talks to node c mod --nodes)");
DEFINE_bool(crash_log, true,
            "crash: false runs the nodes without --data_dir (nothing is durable): the check must then report "
            "losses (a self-test of this command)");

namespace detdb {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SeqKey = std::pair<uint64_t, uint64_t>;  // (client id, client seq)

constexpr uint64_t kClientBase = 9000;

// The recorded history of the load.
struct History {
  std::map<SeqKey, pb::Txn> sent;             // every request, by (client, seq)
  std::map<SeqKey, pb::TxnResult> acked;      // acknowledged: OK or ABORTED
  uint64_t conflicting_acks = 0;              // acknowledged twice with different results
};

// The load: --crash_clients clients over one ClusterClient (its own
// thread), each with up to kWindow requests in flight to its node.
class Load {
 public:
  Load(const pb::ClusterConfig& config, uint64_t seed) : config_(config), seed_(seed) {}

  // Runs until Finish(); then drains what is unanswered (asking for
  // outcomes) until everything is answered or `drain` has passed.
  void Run(std::chrono::milliseconds drain);
  void Finish() { finish_.store(true); }
  // Nodes were restarted: ask for every unanswered outcome at once.
  void Restarted() { restarted_.store(true); }
  History TakeHistory() { return std::move(h_); }
  uint64_t unanswered() const { return unanswered_.load(); }

 private:
  struct Pending {
    pb::Txn txn;
    Clock::time_point sent;
  };
  static constexpr uint32_t kWindow = 100;
  static constexpr uint32_t kGroup = 20;

  // A result for client c: acknowledged if OK or ABORTED (else asked again).
  void Ack(const pb::TxnResult& r, std::map<uint64_t, Pending>* out_c);
  void AskOutcomes(ClusterClient* cc, uint32_t c, std::map<uint64_t, Pending>* out, bool all);

  const pb::ClusterConfig config_;
  const uint64_t seed_;
  std::atomic<bool> finish_{false}, restarted_{false};
  std::atomic<uint64_t> unanswered_{0};
  History h_;
};

void Load::Ack(const pb::TxnResult& r, std::map<uint64_t, Pending>* out_c) {
  if (r.status() != pb::STATUS_OK && r.status() != pb::STATUS_ABORTED) return;  // asked again later
  const SeqKey key{r.client_id(), r.client_seq()};
  auto [it, fresh] = h_.acked.emplace(key, r);
  if (!fresh && (it->second.txn_id() != r.txn_id() || it->second.status() != r.status() ||
                 it->second.result() != r.result()))
    ++h_.conflicting_acks;
  out_c->erase(r.client_seq());
}

// Asks client c's node for the outcome of its requests unanswered for a
// second (all: every one): a result is acknowledged, NOT_FOUND is sent
// again (the node never had it), UNAVAILABLE is asked again later.
void Load::AskOutcomes(ClusterClient* cc, uint32_t c, std::map<uint64_t, Pending>* out, bool all) {
  const auto now = Clock::now();
  std::vector<pb::Txn> ask;
  for (const auto& [seq, p] : *out)
    if (all || now - p.sent > seconds(1)) ask.push_back(p.txn);
  if (ask.empty()) return;
  if (ask.size() > 500) ask.resize(500);
  Client* node = cc->node(c % cc->num_nodes());
  auto outcomes = node->Outcomes(ask, seconds(2));
  if (!outcomes.ok()) return;  // the node is down: later
  std::vector<pb::Txn> resend;
  for (const pb::TxnResult& r : *outcomes) {
    auto it = out->find(r.client_seq());
    if (it == out->end()) continue;
    if (r.status() == pb::STATUS_NOT_FOUND) {
      resend.push_back(it->second.txn);
      it->second.sent = now;
    } else if (r.status() == pb::STATUS_OK || r.status() == pb::STATUS_ABORTED) {
      Ack(r, out);
    } else {
      it->second.sent = now;
    }
  }
  if (!resend.empty()) (void)node->SubmitTxns(resend);
}

void Load::Run(std::chrono::milliseconds drain) {
  auto cc = ClusterClient::Connect(config_);
  if (!cc.ok()) {
    fprintf(stderr, "crash: cannot connect: %s\n", std::string(cc.status().message()).c_str());
    return;
  }
  const uint32_t clients = FLAGS_crash_clients;
  std::vector<MicroGenerator> gens;
  for (uint32_t c = 0; c < clients; ++c) {
    MicroOptions w;
    w.partitions = config_.num_partitions();
    w.records_per_partition = FLAGS_crash_records;
    w.contention = 0.05;
    w.keys_per_txn = 4;
    w.multipartition = 0.3;
    w.seed = seed_ * 1000 + c;
    gens.emplace_back(w);
  }
  std::vector<uint64_t> next(clients, 1);
  std::vector<std::map<uint64_t, Pending>> out(clients);
  auto last_ask = Clock::now();
  Clock::time_point drain_end{};
  for (;;) {
    const bool finishing = finish_.load();
    if (finishing && drain_end == Clock::time_point{}) drain_end = Clock::now() + drain;
    uint64_t pending = 0;
    for (const auto& o : out) pending += o.size();
    unanswered_.store(pending);
    if (finishing && (pending == 0 || Clock::now() > drain_end)) break;
    if (!finishing) {
      for (uint32_t c = 0; c < clients; ++c) {
        if (out[c].size() + kGroup > kWindow) continue;
        std::vector<pb::Txn> g(kGroup);
        for (pb::Txn& t : g) {
          gens[c].Next(&t);
          t.set_client_id(kClientBase + c);
          t.set_client_seq(next[c]++);
          h_.sent[{t.client_id(), t.client_seq()}] = t;
          out[c][t.client_seq()] = Pending{t, Clock::now()};
        }
        (void)(*cc)->node(c % (*cc)->num_nodes())->SubmitTxns(g);
      }
    }
    auto r = (*cc)->Receive(milliseconds(2));
    if (r.ok() && r->has_value())
      for (const pb::TxnResult& res : (*r)->second.results()) {
        const uint64_t c = res.client_id() - kClientBase;
        if (res.client_id() >= kClientBase && c < clients) Ack(res, &out[c]);
      }
    const bool all = restarted_.exchange(false);
    if (all || Clock::now() - last_ask > milliseconds(500)) {
      last_ask = Clock::now();
      for (uint32_t c = 0; c < clients; ++c) AskOutcomes(cc->get(), c, &out[c], all);
    }
  }
}

// Every node's partition digests at the boundary of `epoch` (each node
// pauses there), asked of all nodes at once.
absl::StatusOr<std::map<uint32_t, uint64_t>> DigestsAt(const pb::ClusterConfig& config, uint64_t epoch) {
  std::map<uint32_t, uint64_t> out;
  std::mutex mu;
  absl::Status failed;
  std::vector<std::thread> threads;
  for (int n = 0; n < config.nodes_size(); ++n)
    threads.emplace_back([&, n] {
      auto c = ClusterClient::Connect(config);
      absl::StatusOr<std::vector<pb::PartitionDigest>> d =
          c.ok() ? (*c)->node(n)->Digests(epoch, seconds(120)) : c.status();
      std::lock_guard<std::mutex> l(mu);
      if (!d.ok()) {
        failed = absl::Status(d.status().code(), absl::StrCat("node ", n, ": ", d.status().message()));
        return;
      }
      for (const auto& pd : *d) out[pd.partition()] = pd.digest();
    });
  for (std::thread& t : threads) t.join();
  if (!failed.ok()) return failed;
  return out;
}

absl::StatusOr<uint64_t> MaxEpoch(const pb::ClusterConfig& config) {
  auto cc = ClusterClient::Connect(config);
  if (!cc.ok()) return cc.status();
  auto infos = (*cc)->InfoAll(seconds(10));
  if (!infos.ok()) return infos.status();
  uint64_t e = 0;
  for (const auto& i : *infos) e = std::max<uint64_t>(e, i.epoch());
  return e;
}

// The global order from the durable logs: every node's own sequencer's
// batches (a peer's batch is in its own log), by txn id.
absl::StatusOr<std::vector<pb::Txn>> DurableOrder(const TestCluster& cluster) {
  std::vector<pb::Txn> order;
  for (int n = 0; n < cluster.config().nodes_size(); ++n) {
    RecoveryOptions ro;
    ro.config_hash = ClusterConfigHash(cluster.config());
    ro.trim_torn_tail = false;  // read-only: the nodes stopped cleanly
    auto records = ReadInputLog(cluster.LogDir(n), ro);
    if (!records.ok()) return records.status();
    for (const LogRecord& r : *records) {
      if (r.header.sequencer_id != static_cast<uint32_t>(n)) continue;
      pb::Batch b;
      if (!b.ParseFromString(r.payload))
        return absl::DataLossError(absl::StrCat("node ", n, ": a record of epoch ", r.header.epoch, " does not parse"));
      for (pb::Txn& t : *b.mutable_txns()) order.push_back(std::move(t));
    }
  }
  std::sort(order.begin(), order.end(), [](const pb::Txn& a, const pb::Txn& b) { return a.id() < b.id(); });
  return order;
}

}  // namespace

int CrashCommand() {
  if (FLAGS_nodes < 1 || FLAGS_crash_clients < 1 ||
      (FLAGS_crash_mode != "one" && FLAGS_crash_mode != "all" && FLAGS_crash_mode != "mixed")) {
    fprintf(stderr, "detdb-bench crash: --nodes and --crash_clients >= 1, --crash_mode one|all|mixed\n");
    return 2;
  }
  TestClusterOptions o;
  o.nodes = FLAGS_nodes;
  o.epoch_us = 2000;
  o.data_dirs = FLAGS_crash_log;
  o.flags = {absl::StrCat("--micro_records=", FLAGS_crash_records), "--drain_timeout_s=1",
             "--lock_manager=" + FLAGS_lock_manager, absl::StrCat("--workers=", FLAGS_workers)};
  TestCluster cluster(o);
  auto fail = [&](const std::string& what, const absl::Status& s) {
    fprintf(stderr, "detdb-bench crash: %s: %s\n--- node logs ---\n%s\n", what.c_str(),
            std::string(s.message()).c_str(), cluster.Logs().c_str());
    return 2;
  };
  absl::Status s = cluster.Start();
  if (!s.ok()) return fail("cannot start the cluster", s);
  printf("crash: %u nodes %s, %u clients, %u kills (%s), seed %lu\n", FLAGS_nodes,
         FLAGS_crash_log ? "logging to their data dirs" : "WITHOUT a log (--crash_log=false)", FLAGS_crash_clients, FLAGS_kills, FLAGS_crash_mode.c_str(), static_cast<unsigned long>(FLAGS_seed));
  fflush(stdout);

  std::mt19937_64 rng(FLAGS_seed);
  auto uniform = [&rng](double hi) { return std::uniform_real_distribution<double>(0, hi)(rng); };
  Load load(cluster.config(), FLAGS_seed);
  std::thread driver([&load] { load.Run(seconds(60)); });
  const auto start = Clock::now();
  for (uint32_t k = 0; k < FLAGS_kills; ++k) {
    std::this_thread::sleep_for(std::chrono::duration<double>(0.2 + uniform(FLAGS_crash_load_s)));
    const bool all = FLAGS_crash_mode == "all" || (FLAGS_crash_mode == "mixed" && rng() % 2 == 0);
    std::vector<uint32_t> victims;
    if (all) {
      for (uint32_t n = 0; n < FLAGS_nodes; ++n) victims.push_back(n);
    } else {
      victims.push_back(static_cast<uint32_t>(rng() % FLAGS_nodes));
    }
    for (uint32_t n : victims) cluster.Kill(n, SIGKILL);
    const double down = uniform(FLAGS_crash_down_s);
    printf("  %.1f s: kill -9 %s, down %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count(),
           all ? "every node" : absl::StrCat("node ", victims[0]).c_str(), down);
    fflush(stdout);
    for (uint32_t n : victims)
      for (int i = 0; i < 500 && cluster.Running(n); ++i) std::this_thread::sleep_for(milliseconds(10));
    std::this_thread::sleep_for(std::chrono::duration<double>(down));
    s = cluster.Start(seconds(120));  // restarts the killed ones, waits until every node is ready
    if (!s.ok()) {
      load.Finish();
      driver.join();
      return fail(absl::StrCat("kill ", k + 1, ": the restart did not come up"), s);
    }
    load.Restarted();
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(0.2 + uniform(FLAGS_crash_load_s)));
  load.Finish();
  driver.join();
  History h = load.TakeHistory();

  // The nodes' digests at a boundary after every epoch the load can be in.
  auto top = MaxEpoch(cluster.config());
  if (!top.ok()) return fail("cannot read the nodes' epochs", top.status());
  auto digests = DigestsAt(cluster.config(), *top + 500);
  if (!digests.ok()) return fail("cannot take the digests", digests.status());
  s = cluster.Stop();
  if (!s.ok()) return fail("a node did not stop cleanly", s);

  auto order = FLAGS_crash_log ? DurableOrder(cluster) : std::vector<pb::Txn>();  // no log: nothing durable
  if (!order.ok()) return fail("cannot read the logs", order.status());
  std::map<SeqKey, uint32_t> logged;
  for (const pb::Txn& t : *order) ++logged[{t.client_id(), t.client_seq()}];
  uint64_t lost = 0, duplicated = h.conflicting_acks, result_mismatches = 0, digest_mismatches = 0;
  for (const auto& [key, n] : logged) duplicated += n > 1;
  for (const auto& [key, r] : h.acked) lost += logged.count(key) == 0;

  // The serial replay of the durable log: every acknowledged result and
  // every partition's final state.
  ModPartitioner parts(cluster.config().num_partitions());
  ProcedureRegistry procs;
  s = RegisterMicroProcedures(&procs);
  if (!s.ok()) return fail("procedures", s);
  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < parts.num_partitions(); ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    s = LoadMicroTable(stores.back().get(), parts, p, FLAGS_crash_records);
    if (!s.ok()) return fail("loading the replay's tables", s);
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  for (const pb::Txn& t : *order) {
    const pb::TxnResult want = serial.Execute(t);
    auto it = h.acked.find({t.client_id(), t.client_seq()});
    if (it == h.acked.end()) continue;
    const pb::TxnResult& got = it->second;
    result_mismatches += got.txn_id() != t.id() || got.status() != want.status() || got.result() != want.result();
  }
  for (PartitionId p = 0; p < parts.num_partitions(); ++p) {
    auto it = digests->find(p);
    digest_mismatches += it == digests->end() || it->second != raw[p]->Digest();
  }
  printf("requests %zu, unanswered at the end %lu (never acknowledged: allowed), durable txns %zu\n", h.sent.size(),
         static_cast<unsigned long>(load.unanswered()), order->size());
  printf("acknowledged %zu, lost %lu, duplicated %lu, result mismatches %lu, digest mismatches %lu\n",
         h.acked.size(), static_cast<unsigned long>(lost), static_cast<unsigned long>(duplicated),
         static_cast<unsigned long>(result_mismatches), static_cast<unsigned long>(digest_mismatches));
  const bool ok = lost == 0 && duplicated == 0 && result_mismatches == 0 && digest_mismatches == 0;
  printf("%s\n", ok ? "OK: every acknowledged txn is durable once, and every node equals the serial replay"
                    : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace detdb
