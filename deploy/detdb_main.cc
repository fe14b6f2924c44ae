// detdb: one node of a detdb cluster.
//
//   detdb --config=cluster.pbtxt --node_id=0 [--lock_manager=dclp --workers=2 ...]
//   detdb ... --data_dir=DIR [--checkpoint_interval_s=60]   input log and checkpoints
//
// Binds the node's peer and client ports (from the config), loads its
// partitions, waits for every other node of the config, then sequences,
// schedules and executes txns until SIGINT or SIGTERM. Logs go to stderr
// (glog; --log_dir to write files instead). deploy/local_cluster.sh starts a
// whole cluster on this machine.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <string_view>
#include <thread>
#include <cstdio>

#include "client/cluster_config.h"
#include "common/prefault.h"
#include "workloads/tpcc/random.h"
#include "deploy/node.h"
#include "detdb_build_id.h"  // generated: tools/build_id.cmake
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_string(config, "", "Cluster config (protobuf text, detdb.pb.ClusterConfig); required");
DEFINE_int32(node_id, -1, "This node's id in the config; required");
DEFINE_string(lock_manager, "dclp", "dclp, det2pl, vll, vll_sca or dclp_frag");
DEFINE_uint32(workers, 1, "Worker threads per partition");
DEFINE_bool(staged_alloc, false,
            "Txn states and their buffers from per-sub-batch slabs freed in bulk (seed 003; docs/STORAGE.md)");
DEFINE_string(intent_locks, "lil", "Intent locks that keep table scans, truncates, bulk loads and checkpoint captures apart from the workers: lil, sli or queue (docs/STORAGE.md)");
DEFINE_bool(allow_table_ops, false, "Clients may truncate and bulk load tables (pb::Txn::table_op); off: refused before sequencing");
DEFINE_bool(adaptive_admission, true, "The admission window adapts to the workers (up to --max_active); false: a fixed window of --max_active");
DEFINE_bool(release_on_workers, true, "Workers release their txns' locks (false: only the lock thread touches the lock manager, as in Calvin and the DCLP paper)");
DEFINE_uint64(epoch_us, 0, "Epoch length in microseconds if the config gives none (all nodes must agree)");
DEFINE_uint32(max_active, 2000, "Lock manager admission bound (active txns per partition)");
DEFINE_uint32(table_size, 1u << 20, "Hash locks / VLL counters per partition (power of two)");
DEFINE_uint64(max_pending, 1u << 20, "Txns accepted here and not yet answered; more are refused (overload)");
DEFINE_uint64(max_pending_bytes, 256u << 20, "Bytes of the txns accepted here and not yet answered (arguments + 8 per key + 64 each); more are refused (overload)");
DEFINE_uint64(max_keys_per_txn, 10000, "Larger txns are refused");
DEFINE_string(workload, "micro", "Data to load: micro (the microbenchmark table), tpcc, or kv (an empty key-value table; docs/KV.md)");
DEFINE_uint64(micro_records, 1000000, "micro: records per partition");
DEFINE_uint32(warehouses, 0, "tpcc: warehouses in the whole cluster (0: one per partition)");
DEFINE_bool(tpcc_small, false, "tpcc: the shrunk scale (10% of items, customers and orders) for small machines");
DEFINE_uint64(tpcc_load_seed, 1, "tpcc: seed of the loaded data (every node must use the same)");
DEFINE_bool(record_history, false, "Keep every batch this node's sequencer made (tests replay them)");
DEFINE_uint64(max_request_bytes, 16u << 20, "Client frames above this size are refused before parsing");
DEFINE_uint32(drain_timeout_s, 5, "On SIGTERM, wait this long for txns in flight (a dead peer keeps them)");
DEFINE_uint32(handshake_timeout_s, 600, "Give up if the other nodes are not all up by then");
DEFINE_string(data_dir, "", "Directory of this node's input log (DIR/log). Empty: no log, nothing survives a restart");
DEFINE_string(log_sync, "fsync",
              "fsync: one fdatasync per group of epochs, replies after it; none: no fdatasync, replies once the "
              "OS has the bytes (survives kill -9, not a power loss or kernel crash)");
DEFINE_int32(log_lazy_sync_ms, 20,
             "An idle epoch's empty batch is written and synced with the next batch that has txns, or after "
             "this many ms (0: every epoch synced at once, as before)");
DEFINE_uint64(rejoin_retention_mb, 64,
              "Per other node, MiB of memory (each message's in-memory size, not its wire size) of the remote reads "
              "and results sent to it since the newest checkpoint every node "
              "holds, kept so that it can rejoin alone after a crash (docs/DURABILITY.md); 0: rejoin off: nothing "
              "kept, and reads for other nodes no longer wait for their epoch's fsync here (faster multi-partition "
              "txns), but a node restarted after a crash needs a restart of every node; at most 16777216");
DEFINE_uint32(log_min_sync_interval_us, 0,
              "With --data_dir and --log_sync=fsync: at least this many us from the end of one fdatasync to the "
              "next group (fewer syncs, less kernel CPU under load; replies wait up to this much longer). 0: a "
              "group starts as soon as the previous sync ended. At most 1000000");
DEFINE_uint32(checkpoint_interval_s, 0,
              "With --data_dir: take a checkpoint (DIR/ckpt) every this many seconds of epochs, at the same epochs "
              "on every node, and cut the input log behind the older kept one (0: only on request, detdb-ctl "
              "checkpoint)");
DEFINE_uint64(log_segment_kb, 64 << 10,
              "With --data_dir: the input log starts a new segment file once one is this big (checkpoints drop "
              "whole segments behind them)");
DEFINE_bool(replay_other_build, false,
            "Replay an input log written by another build of detdb (records carry a build id: a hash of the "
            "sources that decide what a txn does). Its procedures may differ, so replayed txns may give other "
            "results than the ones acknowledged; then take two checkpoints (detdb-ctl checkpoint, twice, also "
            "in a cluster): once every node holds both, each cuts its log behind the first");
DEFINE_string(curve_secret_key_file, "",
              "CURVE (when the config gives the nodes' curve_public_key): this node's secret key, Z85, mode 0600 "
              "(detdb-ctl keygen; docs/SECURITY.md)");
DEFINE_string(curve_allowlist_file, "",
              "CURVE: client public keys allowed at the client port, one per line, mode 0600 (the nodes' keys are "
              "always allowed)");
DEFINE_bool(allow_insecure_nonloopback, false,
            "Allow binding a host beyond loopback without CURVE (anyone who reaches the ports can talk to the node)");
DEFINE_int32(http_port, -1, "Serve /metrics and /healthz on this port (0: none; -1: the config's http_port)");
DEFINE_string(http_host, "",
              "Address /metrics and /healthz bind (plain HTTP). Empty: the config's http_host, else 127.0.0.1. "
              "Binding beyond loopback exposes the node's counters to whoever reaches it (docs/SECURITY.md)");
DEFINE_uint64(prefault_mb, 0,
              "Fault in this many MiB of heap (in 64 MiB blocks) at start, kept for the tables and their growth: "
              "no page fault per new row while serving (common/prefault.h; 0: off; needs the default tcmalloc "
              "build; a large one takes seconds, mind DETDB_READY_TIMEOUT_S of deploy/local_cluster.sh)");
DEFINE_bool(log_then_execute, false, "Execution waits for the log's fsync too (default: execute ahead, only replies wait)");
DEFINE_string(crash_at, "",
              "Tests: POINT[:N] kills this process (SIGKILL) the N-th time (default 1) it reaches POINT: "
              "log_written (after a log write, before its fsync) or log_synced (after the fsync, before the "
              "replies it frees). Also from the environment variable DETDB_CRASH_AT");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("detdb --config=<cluster.pbtxt> --node_id=<id> [flags]");
  gflags::SetVersionString(std::string("build ") + detdb::kBuildIdHex);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = FLAGS_log_dir.empty();
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();  // a crash prints its stack to the log
  // A file-size limit (RLIMIT_FSIZE) or a file system that refuses to grow
  // a file: the write fails with EFBIG and the input log stops the node
  // with that error, rather than SIGXFSZ killing it without a word.
  signal(SIGXFSZ, SIG_IGN);
  LOG(INFO) << "detdb build " << detdb::kBuildIdHex;
  if (FLAGS_config.empty() || FLAGS_node_id < 0) {
    fprintf(stderr, "detdb: --config and --node_id are required\n%s\n", gflags::ProgramUsage());
    return 2;
  }
  auto config = detdb::LoadClusterConfig(FLAGS_config);
  if (!config.ok()) {
    fprintf(stderr, "detdb: %s: %s\n", FLAGS_config.c_str(), std::string(config.status().message()).c_str());
    return 2;
  }
  if (config->epoch_us() != 0 && FLAGS_epoch_us != 0 && config->epoch_us() != FLAGS_epoch_us) {
    fprintf(stderr, "detdb: --epoch_us=%lu differs from the config's epoch_us %lu\n",
            static_cast<unsigned long>(FLAGS_epoch_us), static_cast<unsigned long>(config->epoch_us()));
    return 2;
  }
  detdb::NodeOptions o;
  o.config = *config;
  o.node_id = static_cast<uint32_t>(FLAGS_node_id);
  o.engine.lock_manager = FLAGS_lock_manager;
  o.engine.intent_locks = FLAGS_intent_locks;
  o.engine.allow_table_ops = FLAGS_allow_table_ops;
  o.engine.workers = FLAGS_workers;
  o.engine.release_on_workers = FLAGS_release_on_workers;
  o.engine.staged_alloc = FLAGS_staged_alloc;
  // As detdb-bench tpcc: the fixed window for TPC-C unless asked (the
  // adaptive one lowers it; docs/ENGINE.md).
  o.engine.adaptive_admission = gflags::GetCommandLineFlagInfoOrDie("adaptive_admission").is_default
                                    ? FLAGS_workload != "tpcc"
                                    : FLAGS_adaptive_admission;
  o.engine.epoch_us = FLAGS_epoch_us != 0 ? FLAGS_epoch_us : 1000;
  o.engine.lock.max_active = FLAGS_max_active;
  o.engine.lock.table_size = FLAGS_table_size;
  o.engine.max_pending = FLAGS_max_pending;
  o.engine.max_pending_bytes = FLAGS_max_pending_bytes;
  if (FLAGS_rejoin_retention_mb > (uint64_t{1} << 24)) {
    fprintf(stderr, "detdb: --rejoin_retention_mb must be at most 16777216 (16 TiB)\n");
    return 2;
  }
  o.engine.rejoin_retention_bytes = FLAGS_rejoin_retention_mb << 20;
  o.engine.max_keys_per_txn = FLAGS_max_keys_per_txn;
  o.engine.record_history = FLAGS_record_history;
  o.workload = FLAGS_workload;
  o.micro_records_per_partition = FLAGS_micro_records;
  {
    const uint32_t w = FLAGS_warehouses != 0 ? FLAGS_warehouses : config->num_partitions();
    o.tpcc_scale = FLAGS_tpcc_small ? detdb::tpcc::Scale::Small(w) : detdb::tpcc::Scale::Spec(w);
    o.tpcc_load_seed = FLAGS_tpcc_load_seed;
  }
  o.max_request_bytes = FLAGS_max_request_bytes;
  if (FLAGS_http_port < -1 || FLAGS_http_port > 65535) {
    fprintf(stderr, "detdb: --http_port must be in 0..65535 (or -1: the config's)\n");
    return 2;
  }
  if (FLAGS_http_port >= 0) o.http_port = static_cast<uint32_t>(FLAGS_http_port);
  if (!FLAGS_http_host.empty()) o.http_host = FLAGS_http_host;
  o.handshake_timeout = std::chrono::seconds(FLAGS_handshake_timeout_s);
  o.data_dir = FLAGS_data_dir;
  o.curve_secret_key_file = FLAGS_curve_secret_key_file;
  o.curve_allowlist_file = FLAGS_curve_allowlist_file;
  o.allow_insecure_nonloopback = FLAGS_allow_insecure_nonloopback;
  if (FLAGS_checkpoint_interval_s > 0 && FLAGS_data_dir.empty()) {
    fprintf(stderr, "detdb: --checkpoint_interval_s needs --data_dir\n");
    return 2;
  }
  o.checkpoint_interval = std::chrono::seconds(FLAGS_checkpoint_interval_s);
  if (FLAGS_log_sync != "fsync" && FLAGS_log_sync != "none") {
    fprintf(stderr, "detdb: --log_sync must be fsync or none\n");
    return 2;
  }
  o.engine.log.sync_mode = FLAGS_log_sync == "none" ? detdb::LogSyncMode::kNone : detdb::LogSyncMode::kFsync;
  o.engine.log.log_then_execute = FLAGS_log_then_execute;
  o.engine.log.build_id = detdb::kBuildId;
  o.engine.log.accept_other_build = FLAGS_replay_other_build;
  if (FLAGS_log_segment_kb == 0) {
    fprintf(stderr, "detdb: --log_segment_kb must be positive\n");
    return 2;
  }
  o.engine.log.segment_bytes = FLAGS_log_segment_kb << 10;
  if (FLAGS_log_lazy_sync_ms < 0) {
    fprintf(stderr, "detdb: --log_lazy_sync_ms must be >= 0\n");
    return 2;
  }
  o.engine.log.lazy_sync = std::chrono::milliseconds(FLAGS_log_lazy_sync_ms);
  if (FLAGS_log_min_sync_interval_us > 1000000) {
    fprintf(stderr, "detdb: --log_min_sync_interval_us must be at most 1000000\n");
    return 2;
  }
  o.engine.log.min_sync_interval = std::chrono::microseconds(FLAGS_log_min_sync_interval_us);
  std::string crash_at = FLAGS_crash_at;
  if (crash_at.empty() && getenv("DETDB_CRASH_AT") != nullptr) crash_at = getenv("DETDB_CRASH_AT");
  if (!crash_at.empty()) {
    const size_t colon = crash_at.find(':');
    const std::string point = crash_at.substr(0, colon);
    const long n = colon == std::string::npos ? 1 : atol(crash_at.c_str() + colon + 1);
    if ((point != "log_written" && point != "log_synced") || n < 1) {
      fprintf(stderr, "detdb: --crash_at=%s: POINT[:N] with POINT log_written or log_synced\n", crash_at.c_str());
      return 2;
    }
    auto hits = std::make_shared<std::atomic<long>>(0);
    o.engine.log.crash_hook = [point, n, hits](std::string_view at) {
      if (at != point || hits->fetch_add(1) + 1 != n) return;
      LOG(ERROR) << "crash point " << point << " reached (" << n << "): SIGKILL";
      google::FlushLogFiles(google::GLOG_INFO);
      raise(SIGKILL);
    };
  }
  o.on_log_failure = [](const absl::Status& s) {
    LOG(ERROR) << "input log failed: " << s << "; stopping this node (restart it to recover)";
    kill(getpid(), SIGTERM);
  };

  // After every flag check (a typo should not cost the wait), before any
  // thread allocates (PrefaultHeap's REQUIRES).
  if (FLAGS_prefault_mb > 0) {
    auto pf = detdb::PrefaultHeap(detdb::MiBToBytes(FLAGS_prefault_mb));
    if (!pf.ok()) {
      fprintf(stderr, "detdb: --prefault_mb: %s\n", std::string(pf.status().message()).c_str());
      return detdb::PrefaultExitCode(pf.status());
    }
    LOG(INFO) << (pf->bytes >> 20) << " MiB of heap faulted in ahead, in " << pf->seconds << " s";
  }

  // Every thread inherits the blocked signals; main waits for them below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto node = detdb::Node::Create(o);
  if (!node.ok()) {
    fprintf(stderr, "detdb: node %d: %s\n", FLAGS_node_id, std::string(node.status().message()).c_str());
    return 1;
  }
  // Start() blocks in the handshake; a signal meanwhile must still stop us.
  absl::Status started;
  std::thread starter([&] {
    started = (*node)->Start();
    if (!started.ok() && !absl::IsCancelled(started)) {
      LOG(ERROR) << "node " << FLAGS_node_id << " cannot start: " << started;
      kill(getpid(), SIGTERM);
    }
  });
  int sig = 0;
  sigwait(&signals, &sig);
  (*node)->CancelStart();
  starter.join();
  LOG(INFO) << "node " << FLAGS_node_id << ": signal " << sig << ", stopping";
  absl::Status s = (*node)->Stop(std::chrono::seconds(FLAGS_drain_timeout_s));
  if (!s.ok()) LOG(WARNING) << "stop: " << s;
  LOG(INFO) << "node " << FLAGS_node_id << " stopped";
  if ((*node)->log_failed()) {
    fprintf(stderr, "detdb: node %d stopped: its input log failed (see the log above)\n", FLAGS_node_id);
    return 1;
  }
  return started.ok() || absl::IsCancelled(started) ? 0 : 1;
}
