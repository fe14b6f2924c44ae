#include "bench/sim_costs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/lockbench.h"
#include "bench/micro_runner.h"
#include "bench/micro_workload.h"
#include "common/partitioner.h"
#include "common/thread_cpu.h"
#include "common/work_queue.h"
#include "lockmgr/lock_manager.h"
#include "scheduler/partition_txn.h"
#include "workloads/micro/micro.h"
#include "workloads/micro/micro_table.h"
#include "zmq.hpp"

namespace detdb {

absl::StatusOr<SimCosts::Lock> SimCosts::LockCosts(const std::string& name) const {
  auto it = lock.find(name);
  if (it == lock.end()) return absl::NotFoundError(absl::StrCat("the calibration has no costs for lock manager ", name));
  return it->second;
}

std::string SimCosts::ToText() const {
  std::string out = "# detdb simulation costs (virtual ns), from detdb-bench calibrate\n";
  absl::StrAppend(&out, "exec_txn_ns ", exec_txn_ns, "\nexec_key_ns ", exec_key_ns, "\nhandoff_ns ", handoff_ns,
                  "\nnet_ns ", net_ns, "\nlock_txn_extra_ns ", lock_txn_extra_ns, "\nworker_txn_extra_ns ",
                  worker_txn_extra_ns, "\nfront_txn_ns ", front_txn_ns, "\n");
  for (const auto& [name, c] : lock)
    absl::StrAppend(&out, "lock_txn_ns.", name, " ", c.txn_ns, "\nlock_key_ns.", name, " ", c.key_ns, "\n");
  return out;
}

absl::StatusOr<SimCosts> SimCosts::FromText(const std::string& text) {
  SimCosts c;
  std::istringstream in(text);
  std::string line;
  int n = 0, seen = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    double v;
    if (!(ls >> name >> v) || v < 0)
      return absl::InvalidArgumentError(absl::StrCat("calibration line ", n, ": want \"name value>=0\": ", line));
    if (name == "exec_txn_ns") c.exec_txn_ns = v, seen |= 1;
    else if (name == "exec_key_ns") c.exec_key_ns = v, seen |= 2;
    else if (name == "handoff_ns") c.handoff_ns = v, seen |= 4;
    else if (name == "net_ns") c.net_ns = v, seen |= 8;
    else if (name == "lock_txn_extra_ns") c.lock_txn_extra_ns = v;
    else if (name == "worker_txn_extra_ns") c.worker_txn_extra_ns = v;
    else if (name == "front_txn_ns") c.front_txn_ns = v;
    else if (name.rfind("lock_txn_ns.", 0) == 0) c.lock[name.substr(12)].txn_ns = v;
    else if (name.rfind("lock_key_ns.", 0) == 0) c.lock[name.substr(12)].key_ns = v;
    else return absl::InvalidArgumentError(absl::StrCat("calibration line ", n, ": unknown cost ", name));
  }
  if (seen != 15 || c.lock.empty())
    return absl::InvalidArgumentError("calibration incomplete: needs exec_txn_ns, exec_key_ns, handoff_ns, net_ns and lock costs");
  return c;
}

absl::Status SimCosts::Save(const std::string& path) const {
  std::ofstream f(path);
  if (!f) return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
  f << ToText();
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

absl::StatusOr<SimCosts> SimCosts::Load(const std::string& path) {
  std::ifstream f(path);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read calibration file ", path,
                                                  " (make one with detdb-bench calibrate --out ", path, ")"));
  std::stringstream ss;
  ss << f.rdbuf();
  return FromText(ss.str());
}

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per txn of one lock manager's Lock + Release (lockbench), k keys.
absl::StatusOr<double> LockNs(const std::string& name, uint32_t k, const CalibrateOptions& o) {
  auto set = MicroTxnSet::Generate({.contention = 0.0001, .keys_per_txn = k}, o.txns);
  if (!set.ok()) return set.status();
  std::vector<double> ns;
  for (uint32_t r = 0; r < o.rounds; ++r) {
    auto lm = NewLockManager(name, LockManagerOptions{});
    if (!lm.ok()) return lm.status();
    const uint64_t cpu0 = SelfThreadCpuNs();
    auto res = RunLockBench(lm->get(), *set, LockBenchOptions{});
    if (!res.ok()) return res.status();
    // This thread's CPU time, not the wall clock: other processes that take
    // the core meanwhile do not count.
    ns.push_back(static_cast<double>(SelfThreadCpuNs() - cpu0) / static_cast<double>(res->txns));
  }
  return Median(ns);
}

class DropReplies final : public ReplySink {
 public:
  void OnTxnResult(const pb::Txn&, pb::TxnResult&&) override {}
};

// ns per txn of a worker's run (TxnExecutor) of microbenchmark txns, k keys.
absl::StatusOr<double> ExecNs(uint32_t k, const CalibrateOptions& o) {
  ModPartitioner partitioner(1);
  PartitionStore store;
  absl::Status s = LoadMicroTable(&store, partitioner, 0, 1000000);
  if (!s.ok()) return s;
  ProcedureRegistry procedures;
  s = RegisterMicroProcedures(&procedures);
  if (!s.ok()) return s;
  DropReplies replies;
  TxnExecutor exec(0, &store, &partitioner, &procedures, nullptr, &replies);
  MicroOptions mo;
  mo.keys_per_txn = k;
  MicroGenerator gen(mo);
  const uint64_t n = std::min<uint64_t>(o.txns, 100000);
  std::vector<pb::Txn> txns(n);
  for (uint64_t i = 0; i < n; ++i) {
    gen.Next(&txns[i]);
    txns[i].set_id(i + 1);
    txns[i].add_readers(0);
    txns[i].add_writers(0);
  }
  std::vector<double> ns;
  PartitionTxn st;
  ByteArena values;  // as a worker's (TxnExecutor::Run)
  const std::unique_ptr<IntentAgent> intents = store.intents().NewAgent();
  for (uint32_t r = 0; r < o.rounds; ++r) {
    const uint64_t cpu0 = SelfThreadCpuNs();  // CPU time: see LockNs
    for (const pb::Txn& txn : txns) {
      exec.Init(&st, &txn, nullptr);
      exec.AcquireIntents(&st, intents.get());
      exec.ReadLocal(&st);
      exec.Execute(&st, intents.get(), &values);
      intents->EndTxn();
    }
    ns.push_back(static_cast<double>(SelfThreadCpuNs() - cpu0) / static_cast<double>(n));
  }
  return Median(ns);
}

// One item through a WorkQueue to a sleeping thread (and back to a polling one).
double HandoffNs() {
  // The consumer must be asleep when the item comes: before each trip the
  // producer pauses longer than a Notifier polls (~0.1 ms), then times the
  // Push until the echo is back (which it polls for without sleeping: the
  // way back costs next to nothing beside the wake-up).
  WorkQueue<int> there, back;
  constexpr int kTrips = 2000;
  std::thread peer([&] {
    std::vector<int> items;
    for (int got = 0; got < kTrips;) {
      items.clear();
      got += there.PopBatch(1, &items);
      for (int x : items) back.Push(x);
    }
  });
  std::vector<int> items;
  double ns = 0;
  for (int i = 0; i < kTrips; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    const auto t0 = std::chrono::steady_clock::now();
    there.Push(i);
    items.clear();
    while (back.TryPopBatch(1, &items) == 0) {
    }
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  peer.join();
  return ns / kTrips;
}

// One small message between two ZeroMQ PUSH/PULL pairs over TCP on
// 127.0.0.1 and back, halved (detdb's nodes talk PUSH/PULL).
absl::StatusOr<double> NetNs() {
  try {
    zmq::context_t ctx;
    zmq::socket_t a_pull(ctx, zmq::socket_type::pull), b_pull(ctx, zmq::socket_type::pull);
    a_pull.bind("tcp://127.0.0.1:*");
    b_pull.bind("tcp://127.0.0.1:*");
    const std::string a_ep = a_pull.get(zmq::sockopt::last_endpoint), b_ep = b_pull.get(zmq::sockopt::last_endpoint);
    zmq::socket_t a_push(ctx, zmq::socket_type::push), b_push(ctx, zmq::socket_type::push);
    a_push.connect(b_ep);
    b_push.connect(a_ep);
    for (auto* s : {&a_pull, &b_pull, &a_push, &b_push}) s->set(zmq::sockopt::linger, 0);
    constexpr int kTrips = 5000;
    std::thread peer([&] {
      zmq::message_t m;
      for (int i = 0; i < kTrips + 100; ++i) {
        (void)b_pull.recv(m);
        b_push.send(m, zmq::send_flags::none);
      }
    });
    std::string payload(200, 'x');  // about one txn's remote reads
    zmq::message_t m;
    double ns = 0;
    for (int i = 0; i < kTrips + 100; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      a_push.send(zmq::buffer(payload), zmq::send_flags::none);
      (void)a_pull.recv(m);
      if (i >= 100) ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
    peer.join();
    return ns / kTrips / 2;
  } catch (const zmq::error_t& e) {
    return absl::InternalError(absl::StrCat("network calibration: ", e.what()));
  }
}

// The overheads a real run shows beyond the costs measured above (see
// sim_costs.h), each the median of o.rounds runs.
absl::Status EngineOverheads(const CalibrateOptions& o, SimCosts* c) {
  constexpr uint32_t kKeys = 10;
  std::vector<double> lock, worker, front;
  for (uint32_t r = 0; r < o.rounds; ++r) {
    MicroRunOptions ro;
    ro.workload.partitions = 1;
    ro.workload.contention = 0.0001;
    ro.workload.keys_per_txn = kKeys;
    ro.lock_manager = "dclp";
    ro.workers = 1;
    ro.duration_s = o.real_run_s;
    ro.lock.check_invariants = false;
    auto res = RunMicro(ro);
    if (!res.ok()) return res.status();
    lock.push_back(1000 * res->lock_us_per_txn);
    worker.push_back(1000 * res->worker_us_per_txn);
    front.push_back(1000 * (res->cpu_us_per_txn - res->lock_us_per_txn - res->worker_us_per_txn));
  }
  const SimCosts::Lock& dclp = c->lock.at("dclp");
  c->lock_txn_extra_ns = std::max(0.0, Median(lock) - (dclp.txn_ns + kKeys * dclp.key_ns));
  c->worker_txn_extra_ns = std::max(0.0, Median(worker) - (c->exec_txn_ns + kKeys * c->exec_key_ns));
  c->front_txn_ns = std::max(0.0, Median(front));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SimCosts> Calibrate(const CalibrateOptions& o) {
  if (o.txns == 0 || o.rounds == 0) return absl::InvalidArgumentError("txns and rounds must be positive");
  SimCosts c;
  for (const std::string& name : LockManagerNames()) {
    auto two = LockNs(name, 2, o);
    if (!two.ok()) return two.status();
    auto ten = LockNs(name, 10, o);
    if (!ten.ok()) return ten.status();
    SimCosts::Lock l;
    l.key_ns = std::max(0.0, (*ten - *two) / 8);
    l.txn_ns = std::max(0.0, *two - 2 * l.key_ns);
    c.lock[name] = l;
  }
  auto two = ExecNs(2, o);
  if (!two.ok()) return two.status();
  auto ten = ExecNs(10, o);
  if (!ten.ok()) return ten.status();
  c.exec_key_ns = std::max(0.0, (*ten - *two) / 8);
  c.exec_txn_ns = std::max(0.0, *two - 2 * c.exec_key_ns);
  std::vector<double> h;
  for (uint32_t r = 0; r < o.rounds; ++r) h.push_back(HandoffNs());
  c.handoff_ns = Median(h);
  auto net = NetNs();
  if (!net.ok()) return net.status();
  c.net_ns = *net;
  absl::Status s = EngineOverheads(o, &c);
  if (!s.ok()) return s;
  return c;
}

}  // namespace detdb
