// detdb-ctl: looks at a running detdb cluster.
//
//   detdb-ctl --config=cluster.pbtxt info                 one line per node
//   detdb-ctl --config=cluster.pbtxt wait_ready [--timeout_s=60]
//   detdb-ctl --config=cluster.pbtxt digest               per-partition state digests at one epoch boundary
//   detdb-ctl keygen PREFIX                               a CURVE key pair: PREFIX.key (secret, mode 0600)
//                                                         and PREFIX.pub (docs/SECURITY.md)
//   detdb-ctl --config=cluster.pbtxt checkpoint           a checkpoint on every node at one epoch boundary
//                                                         (nodes need --data_dir)
//   detdb-ctl --config=cluster.pbtxt scan TABLE [--limit=N] [--from=ROW]
//                                                         the table's first records (by key) while txns run:
//                                                         no record half written (docs/STORAGE.md)
//
// Exit status: 0 when every node answered (and, for wait_ready, is ready).
#include <cstdio>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/cluster_config.h"
#include "common/types.h"
#include "deploy/cluster_admin.h"
#include "gflags/gflags.h"

DEFINE_string(config, "", "Cluster config (protobuf text); required");
DEFINE_uint32(timeout_s, 60, "wait_ready: give up after this many seconds");
DEFINE_uint32(limit, 20, "scan: records to print at most (<= 10000 per node)");
DEFINE_uint64(from, 0, "scan: the first row (the key's low 56 bits) to print");
DEFINE_uint32(value_bytes, 32, "scan: bytes of each value to print in hex (the rest elided)");
DEFINE_string(curve_key_file, "",
              "A CURVE cluster: this client's secret-key file (mode 0600; its public key in the nodes' allowlist, or "
              "a node's own key; default: keys/client.key beside the config if there)");

namespace {

int Info(detdb::ClusterClient* c) {
  int rc = 0;
  for (const detdb::NodeStatus& s : detdb::QueryNodes(c, std::chrono::seconds(2))) {
    if (!s.info.ok()) {
      printf("node %u  %-24s  DOWN (%s)\n", s.node, s.endpoint.c_str(), std::string(s.info.status().message()).c_str());
      rc = 1;
      continue;
    }
    const detdb::pb::NodeInfo& info = *s.info;
    std::string parts;
    for (uint32_t p : info.partitions()) parts += (parts.empty() ? "" : ",") + std::to_string(p);
    printf("node %u  %-24s  %s  partitions %s  %s  epoch %lu merged %lu  submitted %lu replied %lu rejected %lu"
           "  committed %lu aborted %lu  bad_frames %lu duplicates %lu lost_replies %lu peer_dropped %lu\n",
           s.node, s.endpoint.c_str(), info.ready() ? "ready" : "STARTING", parts.c_str(),
           info.lock_manager().c_str(), static_cast<unsigned long>(info.epoch()),
           static_cast<unsigned long>(info.merged_epoch()), static_cast<unsigned long>(info.submitted()),
           static_cast<unsigned long>(info.replied()), static_cast<unsigned long>(info.rejected()),
           static_cast<unsigned long>(info.committed()), static_cast<unsigned long>(info.aborted()),
           static_cast<unsigned long>(info.bad_frames()), static_cast<unsigned long>(info.duplicates()),
           static_cast<unsigned long>(info.lost_replies()), static_cast<unsigned long>(info.peer_dropped()));
    if (info.curve())
      printf("node %u  CURVE on; refused: peer_refused_key %lu peer_refused_mechanism %lu peer_refused_protocol %lu"
             " peer_refused_sender %lu  client_refused_key %lu client_refused_mechanism %lu"
             " client_refused_protocol %lu\n",
             s.node, static_cast<unsigned long>(info.peer_refused_key()),
             static_cast<unsigned long>(info.peer_refused_mechanism()),
             static_cast<unsigned long>(info.peer_refused_protocol()),
             static_cast<unsigned long>(info.peer_refused_sender()),
             static_cast<unsigned long>(info.client_refused_key()),
             static_cast<unsigned long>(info.client_refused_mechanism()),
             static_cast<unsigned long>(info.client_refused_protocol()));
    else
      printf("node %u  INSECURE (CURVE off)\n", s.node);
    if (info.checkpoints() > 0 || info.restored_checkpoint() > 0)
      printf("node %u  checkpoints: loaded at start %lu, taken %lu, last epoch %lu\n", s.node,
             static_cast<unsigned long>(info.restored_checkpoint()), static_cast<unsigned long>(info.checkpoints()),
             static_cast<unsigned long>(info.last_checkpoint_epoch()));
  }
  return rc;
}

// A boundary a little ahead of every node, so that each can pause there.
absl::StatusOr<uint64_t> EpochAhead(detdb::ClusterClient* c) {
  auto infos = c->InfoAll(std::chrono::seconds(2));
  if (!infos.ok()) return infos.status();
  uint64_t epoch = 0;
  for (const auto& i : *infos) epoch = std::max<uint64_t>(epoch, i.epoch());
  return epoch + 200000 / (c->config().epoch_us() != 0 ? c->config().epoch_us() : 1000);  // ~200 ms ahead
}

// Every node checkpoints the state after the same epoch, at once.
int Checkpoint(detdb::ClusterClient* c) {
  auto epoch = EpochAhead(c);
  if (!epoch.ok()) {
    fprintf(stderr, "detdb-ctl: %s\n", std::string(epoch.status().message()).c_str());
    return 1;
  }
  printf("checkpoint after epoch %lu\n", static_cast<unsigned long>(*epoch));
  const uint32_t n = c->num_nodes();
  std::vector<absl::StatusOr<detdb::pb::CheckpointInfo>> out(n, absl::UnknownError("not asked"));
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto own = detdb::ClusterClient::Connect(c->config(), c->curve_keys());
      out[i] = own.ok() ? (*own)->node(i)->Checkpoint(*epoch, std::chrono::seconds(60)) : own.status();
    });
  for (std::thread& t : threads) t.join();
  int rc = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (!out[i].ok()) {
      fprintf(stderr, "detdb-ctl: node %u: %s\n", i, std::string(out[i].status().message()).c_str());
      rc = 1;
      continue;
    }
    const auto& ci = *out[i];
    printf("node %u  epoch %lu  %s  %lu bytes  paused %.2f ms (S locks %.2f ms, fork %.2f ms)  written %.1f ms  total %.1f ms\n",
           i, static_cast<unsigned long>(ci.epoch()), ci.path().c_str(), static_cast<unsigned long>(ci.bytes()),
           ci.pause_ms(), ci.lock_ms(), ci.fork_ms(), ci.write_ms(), ci.total_ms());
  }
  return rc;
}

int Digest(detdb::ClusterClient* c) {
  auto d = detdb::TakeDigests(c, std::chrono::seconds(30));
  if (!d.ok()) {
    fprintf(stderr, "detdb-ctl: %s\n", std::string(d.status().message()).c_str());
    return 1;
  }
  printf("digests at the boundary of epoch %lu\n", static_cast<unsigned long>(d->epoch));
  for (const std::string& e : d->node_errors) fprintf(stderr, "detdb-ctl: %s\n", e.c_str());
  for (const detdb::DigestRow& r : d->rows)
    printf("partition %u  node %u  digest %016lx\n", r.partition, r.node, static_cast<unsigned long>(r.digest));
  return d->node_errors.empty() ? 0 : 1;
}

// The first --limit records of a table, every node's, in key order.
int Scan(detdb::ClusterClient* c, const std::string& table) {
  auto s = detdb::ScanTable(c, table, FLAGS_from, FLAGS_limit, std::chrono::seconds(30));
  if (!s.ok()) {
    fprintf(stderr, "detdb-ctl: scan %s: %s\n", table.c_str(), std::string(s.status().message()).c_str());
    return 1;
  }
  for (const std::string& e : s->node_errors) fprintf(stderr, "detdb-ctl: %s\n", e.c_str());
  printf("table %u (%s), records of %u bytes: %zu shown%s\n", s->table, s->name.c_str(), s->value_size,
         s->rows.size(), s->more ? ", more follow" : "");
  static const char kHex[] = "0123456789abcdef";
  for (const detdb::pb::ScanRow& r : s->rows) {
    std::string hex;
    const size_t n = std::min<size_t>(r.value().size(), FLAGS_value_bytes);
    for (size_t i = 0; i < n; ++i) {
      hex += kHex[static_cast<unsigned char>(r.value()[i]) >> 4];
      hex += kHex[static_cast<unsigned char>(r.value()[i]) & 15];
    }
    printf("row %lu  partition %u  %s%s\n", static_cast<unsigned long>(detdb::KeyRow(r.key())), r.partition(),
           hex.c_str(), n < r.value().size() ? "..." : "");
  }
  return s->node_errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "detdb-ctl --config=<cluster.pbtxt> [--curve_key_file=F] info|wait_ready|digest|checkpoint\n"
      "detdb-ctl --config=<cluster.pbtxt> scan TABLE [--limit=N] [--from=ROW] [--value_bytes=B]\n"
      "detdb-ctl keygen PREFIX");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc == 3 && std::string(argv[1]) == "keygen") {
    auto kp = detdb::WriteCurveKeyPair(argv[2]);
    if (!kp.ok()) {
      fprintf(stderr, "detdb-ctl keygen: %s\n", std::string(kp.status().message()).c_str());
      return 1;
    }
    printf("%s\n", kp->public_key.c_str());
    return 0;
  }
  const bool scan = argc == 3 && std::string(argv[1]) == "scan";
  if (FLAGS_config.empty() || (argc != 2 && !scan)) {
    fprintf(stderr, "%s\n", gflags::ProgramUsage());
    return 2;
  }
  auto config = detdb::LoadClusterConfig(FLAGS_config);
  if (!config.ok()) {
    fprintf(stderr, "detdb-ctl: %s: %s\n", FLAGS_config.c_str(), std::string(config.status().message()).c_str());
    return 2;
  }
  auto keys = detdb::LoadClientKeys(FLAGS_curve_key_file, FLAGS_config, *config);
  if (!keys.ok()) {
    fprintf(stderr, "detdb-ctl: %s\n", std::string(keys.status().message()).c_str());
    return 2;
  }
  auto c = detdb::ClusterClient::Connect(*config, *keys);
  if (!c.ok()) {
    fprintf(stderr, "detdb-ctl: %s\n", std::string(c.status().message()).c_str());
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "info") return Info(c->get());
  if (cmd == "digest") return Digest(c->get());
  if (cmd == "checkpoint") return Checkpoint(c->get());
  if (scan) return Scan(c->get(), argv[2]);
  if (cmd == "wait_ready") {
    absl::Status s = (*c)->WaitReady(std::chrono::seconds(FLAGS_timeout_s));
    if (!s.ok()) {
      fprintf(stderr, "detdb-ctl: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    printf("cluster ready: %u nodes\n", (*c)->num_nodes());
    return 0;
  }
  fprintf(stderr, "detdb-ctl: unknown command '%s'\n%s\n", cmd.c_str(), gflags::ProgramUsage());
  return 2;
}
