#include "bench/micro_cluster.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "bench/histogram.h"
#include "common/partitioner.h"
#include "client/client.h"

namespace detdb {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct Shared {
  LatencyHistogram all, single, multi;
  std::atomic<uint64_t> submitted{0}, committed{0}, aborted{0}, refused{0}, duplicates{0};
  std::atomic<bool> stop_submitting{false};
  std::mutex error_mu;
  absl::Status error;  // guarded by error_mu
  void Fail(absl::Status s) {
    std::lock_guard<std::mutex> l(error_mu);
    if (error.ok()) error = std::move(s);
    stop_submitting.store(true);
  }
};

// One closed-loop client: its own connections, client id and txn stream.
void ClientLoop(const MicroClusterOptions& o, const MicroOptions& w, uint32_t index, uint64_t client_id,
                uint64_t txn_quota, uint32_t outstanding, Shared* sh) {
  auto cc = ClusterClient::Connect(o.config, o.curve);
  if (!cc.ok()) return sh->Fail(cc.status());
  MicroOptions mine = w;
  mine.seed = w.seed * 1000003 + index;
  MicroGenerator gen(mine);
  ModPartitioner parts(w.partitions);
  // In-flight txns by seq: submit time and whether multi-partition. (Not a
  // ring: a slow txn may stay in flight while far newer ones finish.)
  struct InFlight {
    uint64_t stamp;
    bool multi;
  };
  absl::flat_hash_map<uint64_t, InFlight> in_flight;
  in_flight.reserve(2 * outstanding);
  uint64_t seq = 0, done = 0;
  std::vector<std::vector<pb::Txn>> groups((*cc)->num_nodes());
  auto last_reply = Clock::now();
  constexpr size_t kGroup = 256;
  for (;;) {
    const bool more = !sh->stop_submitting.load(std::memory_order_relaxed) && (txn_quota == 0 || seq < txn_quota);
    if (!more && done == seq) break;
    // Fill the window.
    if (more && seq - done < outstanding) {
      uint64_t n = std::min<uint64_t>(outstanding - (seq - done), 4 * kGroup);
      if (txn_quota != 0) n = std::min(n, txn_quota - seq);
      const uint64_t now = NowNs();
      for (uint64_t i = 0; i < n; ++i) {
        pb::Txn t;
        gen.Next(&t);
        t.set_client_id(client_id);
        t.set_client_seq(++seq);
        const Key first = t.read_set_size() > 0 ? t.read_set(0) : t.write_set(0);
        std::vector<uint32_t> ps;
        for (Key k : t.read_set()) ps.push_back(parts.PartitionOf(k));
        for (Key k : t.write_set()) ps.push_back(parts.PartitionOf(k));
        bool multi = false;
        for (uint32_t p : ps) multi |= p != ps[0];
        in_flight[seq] = InFlight{now, multi};
        groups[(*cc)->NodeOfPartition(parts.PartitionOf(first))].push_back(std::move(t));
      }
      sh->submitted.fetch_add(n, std::memory_order_relaxed);
      for (uint32_t node = 0; node < groups.size(); ++node) {
        for (size_t i = 0; i < groups[node].size(); i += kGroup) {
          std::vector<pb::Txn> g(groups[node].begin() + i,
                                 groups[node].begin() + std::min(groups[node].size(), i + kGroup));
          absl::Status s = (*cc)->node(node)->SubmitTxns(g);
          if (!s.ok()) return sh->Fail(s);
        }
        groups[node].clear();
      }
    }
    // Collect replies.
    const bool window_full = !more || seq - done >= outstanding;
    auto reply = (*cc)->Receive(std::chrono::milliseconds(window_full ? 100 : 0));
    if (!reply.ok()) return sh->Fail(reply.status());
    if (!reply->has_value()) {
      if (std::chrono::duration<double>(Clock::now() - last_reply).count() > o.stall_timeout_s)
        return sh->Fail(absl::DeadlineExceededError(absl::StrCat(
            "no reply for ", o.stall_timeout_s, " s; ", seq - done, " txns unanswered (is a node down?)")));
      continue;
    }
    last_reply = Clock::now();
    const pb::ClientReply& r = (*reply)->second;
    if (r.status() != pb::STATUS_OK) return sh->Fail(absl::InternalError(absl::StrCat("node: ", r.error())));
    const uint64_t now = NowNs();
    for (const pb::TxnResult& res : r.results()) {
      auto it = in_flight.find(res.client_seq());
      if (res.client_id() != client_id || it == in_flight.end()) {
        sh->duplicates.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      const uint64_t lat = now - it->second.stamp;
      const bool multi = it->second.multi;
      in_flight.erase(it);
      ++done;
      switch (res.status()) {
        case pb::STATUS_OK:
          sh->committed.fetch_add(1, std::memory_order_relaxed);
          break;
        case pb::STATUS_ABORTED:
          sh->aborted.fetch_add(1, std::memory_order_relaxed);
          break;
        default:
          sh->refused.fetch_add(1, std::memory_order_relaxed);
          continue;  // no latency for refusals
      }
      sh->all.Record(lat);
      (multi ? sh->multi : sh->single).Record(lat);
    }
  }
}

}  // namespace

absl::StatusOr<MicroClusterResult> RunMicroCluster(const MicroClusterOptions& o) {
  if (o.clients == 0 || o.outstanding < o.clients)
    return absl::InvalidArgumentError("need clients >= 1 and outstanding >= clients");
  if (o.txns == 0 && !(o.duration_s > 0)) return absl::InvalidArgumentError("give --txns or a positive --duration");
  auto cc = ClusterClient::Connect(o.config, o.curve);
  if (!cc.ok()) return cc.status();
  absl::Status ready = (*cc)->WaitReady(std::chrono::seconds(10));
  if (!ready.ok()) return ready;
  auto infos = (*cc)->InfoAll(std::chrono::seconds(5));
  if (!infos.ok()) return infos.status();
  MicroOptions w = o.workload;
  w.partitions = (*infos)[0].num_partitions();
  w.records_per_partition = (*infos)[0].micro_records_per_partition();
  for (const auto& i : *infos)
    if (i.workload() != "micro") return absl::FailedPreconditionError("the cluster did not load the micro workload");
  absl::Status valid = MicroGenerator::Validate(w);
  if (!valid.ok()) return valid;

  MicroClusterResult r;
  r.lock_manager = (*infos)[0].lock_manager();
  for (const auto& i : *infos)
    if (i.lock_manager() != r.lock_manager) r.lock_manager = "mixed";
  r.nodes = (*cc)->num_nodes();
  r.partitions = w.partitions;

  Shared sh;
  // Client ids differ between runs, so a rerun is never taken for duplicates.
  std::random_device rd;
  const uint64_t base_id = ((static_cast<uint64_t>(rd()) << 32 | rd()) ^ static_cast<uint64_t>(getpid())) | 1;
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (uint32_t c = 0; c < o.clients; ++c) {
    const uint64_t quota = o.txns == 0 ? 0 : o.txns / o.clients + (c < o.txns % o.clients ? 1 : 0);
    const uint32_t window = o.outstanding / o.clients;
    threads.emplace_back(ClientLoop, std::cref(o), w, c, base_id + 2 * c, quota, window, &sh);
  }
  auto next_report = start + std::chrono::seconds(1);
  const auto end = start + std::chrono::duration<double>(o.duration_s);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto now = Clock::now();
    if (o.txns == 0 && now >= end) sh.stop_submitting.store(true);
    const uint64_t answered = sh.committed.load() + sh.aborted.load() + sh.refused.load();
    if (o.progress && now >= next_report) {
      ProgressSample sample;
      sample.t = std::chrono::duration<double>(now - start).count();
      sample.committed = sh.committed.load();
      sh.all.AddTo(&sample.latency);
      o.progress(sample);
      next_report += std::chrono::seconds(1);
    }
    bool failed;
    {
      std::lock_guard<std::mutex> l(sh.error_mu);
      failed = !sh.error.ok();
    }
    if (failed) break;
    if (sh.stop_submitting.load() || (o.txns != 0 && sh.submitted.load() == o.txns)) {
      if (answered == sh.submitted.load() && (o.txns == 0 || answered == o.txns)) break;
    }
  }
  for (std::thread& t : threads) t.join();
  if (!sh.error.ok()) return sh.error;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.submitted = sh.submitted.load();
  r.committed = sh.committed.load();
  r.aborted = sh.aborted.load();
  r.refused = sh.refused.load();
  r.duplicates = sh.duplicates.load();
  r.txns_per_sec = r.committed / r.seconds;
  r.p50_us = sh.all.Percentile(0.5) / 1000;
  r.p90_us = sh.all.Percentile(0.9) / 1000;
  r.p99_us = sh.all.Percentile(0.99) / 1000;
  r.p999_us = sh.all.Percentile(0.999) / 1000;
  r.single_count = sh.single.count();
  r.single_p50_us = sh.single.Percentile(0.5) / 1000;
  r.single_p99_us = sh.single.Percentile(0.99) / 1000;
  r.multi_count = sh.multi.count();
  r.multi_p50_us = sh.multi.Percentile(0.5) / 1000;
  r.multi_p99_us = sh.multi.Percentile(0.99) / 1000;
  return r;
}

}  // namespace detdb
