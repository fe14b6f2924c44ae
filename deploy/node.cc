#include "deploy/node.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "workloads/kv/kv.h"
#include "workloads/micro/micro.h"
#include "workloads/tpcc/checker.h"
#include "workloads/tpcc/loader.h"
#include "workloads/tpcc/procedures.h"
#include "client/cluster_config.h"
#include "glog/logging.h"
#include "io/file_system.h"
#include "workloads/micro/micro_table.h"

namespace detdb {

void SetWorkloadChecks(const std::string& workload, uint64_t micro_rows, EngineOptions* eo) {
  if (workload == "kv") eo->txn_check = &ValidateKvTxn;  // arguments and key sets, on every path into the engine
  if (workload == "micro") eo->txn_check = &ValidateMicroTxn;  // the compute it asks for
  if (workload == "micro") eo->key_check = [rows = micro_rows](Key k) -> absl::Status {
    if (KeyTable(k) == kMicroTable && KeyRow(k) >= rows)
      return absl::InvalidArgumentError(absl::StrCat("key ", k, " (micro row ", KeyRow(k),
                                                     ") is outside every partition: rows are 0 .. ", rows - 1));
    return absl::OkStatus();
  };
}

namespace {

// The client port's CURVE options (allowed: the allowlist and every node's
// key), nullopt when the config turns CURVE off; errors name the file or
// flag at fault.
absl::StatusOr<std::optional<CurveServerOptions>> CurveOptionsFor(const NodeOptions& options,
                                                                  const pb::NodeConfig& self) {
  if (self.curve_public_key().empty()) {
    if (!options.curve_secret_key_file.empty() || !options.curve_allowlist_file.empty())
      return absl::InvalidArgumentError(
          "CURVE key files given but the cluster config gives no curve_public_key: add the nodes' public keys to "
          "the config (docs/SECURITY.md), or drop the key flags to run insecure");
    if (!IsLoopbackHost(self.host()) && !options.allow_insecure_nonloopback)
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", self.id(), " would bind ", self.host(), " (beyond loopback) without CURVE: give the nodes "
          "curve_public_key in the config and --curve_secret_key_file, or pass --allow_insecure_nonloopback"));
    return std::optional<CurveServerOptions>();
  }
  if (options.curve_secret_key_file.empty())
    return absl::InvalidArgumentError(
        "the cluster config gives the nodes' curve_public_key: --curve_secret_key_file (this node's secret key, "
        "detdb-ctl keygen) is required");
  auto keys = ReadCurveSecretKeyFile(options.curve_secret_key_file);
  if (!keys.ok()) return keys.status();
  if (keys->public_key != self.curve_public_key())
    LOG(ERROR) << "node " << self.id() << ": the public key of " << options.curve_secret_key_file << " ("
               << keys->public_key << ") is not this node's curve_public_key in the config ("
               << self.curve_public_key() << "): the other nodes will refuse this node";
  CurveServerOptions o;
  o.server = *keys;
  if (!options.curve_allowlist_file.empty()) {
    auto allowed = ReadCurveAllowlist(options.curve_allowlist_file);
    if (!allowed.ok()) return allowed.status();
    o.allowed = *std::move(allowed);
  }
  for (const auto& n : options.config.nodes()) o.allowed.insert(n.curve_public_key());
  o.domain = "client";
  return std::optional<CurveServerOptions>(std::move(o));
}

}  // namespace

Node::Node(const NodeOptions& options) : options_(options) {}

std::map<std::string, std::string> HandshakeSettings(const NodeOptions& o) {
  std::map<std::string, std::string> s;
  s["workload"] = o.workload;
  s["max_keys_per_txn"] = absl::StrCat(o.engine.max_keys_per_txn);
  s["max_args_bytes"] = absl::StrCat(o.engine.max_args_bytes);
  // The build (tools/build_id.cmake: the sources that decide what a txn
  // does): nodes of other builds could execute the same txn differently.
  if (o.engine.log.build_id != 0) s["build_id"] = absl::StrFormat("%016x", o.engine.log.build_id);
  if (o.workload == "tpcc") {
    s["tpcc_warehouses"] = absl::StrCat(o.tpcc_scale.warehouses);
    s["tpcc_items"] = absl::StrCat(o.tpcc_scale.items);
    s["tpcc_customers_per_district"] = absl::StrCat(o.tpcc_scale.customers_per_district);
    s["tpcc_orders_per_district"] = absl::StrCat(o.tpcc_scale.orders_per_district);
    s["tpcc_new_orders_per_district"] = absl::StrCat(o.tpcc_scale.new_orders_per_district);
    s["tpcc_load_seed"] = absl::StrCat(o.tpcc_load_seed);
  } else if (o.workload == "micro") {  // (kv loads nothing; its checks are the build's)
    s["micro_records"] = absl::StrCat(o.micro_records_per_partition);
  }
  return s;
}

Node::~Node() { (void)Stop(std::chrono::milliseconds(0)); }

absl::StatusOr<std::unique_ptr<Node>> Node::Create(const NodeOptions& options) {
  absl::Status s = ValidateClusterConfig(options.config);
  if (!s.ok()) return s;
  const bool tpcc = options.workload == "tpcc";
  const bool kv = options.workload == "kv";
  if (options.workload != "micro" && !tpcc && !kv)
    return absl::InvalidArgumentError(
        absl::StrCat("unknown workload '", options.workload, "' (known: micro, tpcc, kv)"));
  if (tpcc) {
    absl::Status valid = options.tpcc_scale.Validate();
    if (!valid.ok()) return valid;
  }
  std::unique_ptr<Node> node(new Node(options));
  const pb::ClusterConfig& config = node->options_.config;
  const pb::NodeConfig* self = nullptr;
  for (const auto& n : config.nodes())
    if (n.id() == options.node_id) self = &n;
  if (self == nullptr) return absl::InvalidArgumentError(absl::StrCat("node ", options.node_id, " is not in the config"));
  node->epoch_us_ = config.epoch_us() != 0 ? config.epoch_us() : options.engine.epoch_us;
  if (tpcc) {
    node->partitioner_ = std::make_unique<tpcc::WarehousePartitioner>(config.num_partitions());
  } else {
    node->partitioner_ = std::make_unique<ModPartitioner>(config.num_partitions());
  }
  s = RegisterMicroProcedures(&node->procedures_);
  if (s.ok()) s = tpcc::RegisterProcedures(&node->procedures_);
  if (s.ok()) s = RegisterKvProcedures(&node->procedures_);
  if (!s.ok()) return s;

  auto curve = CurveOptionsFor(options, *self);
  if (!curve.ok()) return curve.status();
  LOG(INFO) << "node " << options.node_id << ": " << CurveStartLine(curve->has_value());

  ZmqPeerNetOptions no;
  no.config = config;
  no.node_id = options.node_id;
  no.epoch_us = node->epoch_us_;
  no.settings = HandshakeSettings(options);
  if (curve->has_value()) {
    no.curve = **curve;
    no.curve->domain = "peer";  // admits only the config's nodes' keys, not the allowlist (ZmqPeerNet::Create)
  }
  if (!options.data_dir.empty()) {
    // Above the last incarnation, whatever the clock did since (review
    // finding 12): peers drop a Hello of an older one as stale.
    if (absl::Status d = PosixFileSystem()->CreateDir(options.data_dir); !d.ok()) return d;
    auto last = LoadIncarnation(PosixFileSystem(), options.data_dir);
    if (!last.ok()) return last.status();
    no.min_incarnation = *last;
  }
  auto net = ZmqPeerNet::Create(no);
  if (!net.ok()) return net.status();
  node->net_ = std::move(*net);
  if (!options.data_dir.empty()) {
    // Before the first Hello leaves (Start).
    absl::Status saved = SaveIncarnation(PosixFileSystem(), options.data_dir, node->net_->incarnation());
    if (!saved.ok()) return saved;
  }

  ClientEndpointOptions co;
  co.bind = absl::StrCat("tcp://", self->host(), ":", self->client_port());
  co.max_request_bytes = options.max_request_bytes;
  co.curve = *curve;  // the allowlist and the nodes' keys
  auto endpoint = ClientEndpoint::Create(co);
  if (!endpoint.ok()) return endpoint.status();
  node->endpoint_ = std::move(*endpoint);

  EngineOptions eo = options.engine;
  eo.epoch_us = node->epoch_us_;
  eo.peers = node->net_.get();
  eo.results = node->endpoint_.get();
  SetWorkloadChecks(options.workload, options.micro_records_per_partition * config.num_partitions(), &eo);
  if (!options.data_dir.empty()) {
    if (absl::Status d = PosixFileSystem()->CreateDir(options.data_dir); !d.ok()) return d;
    eo.log.dir = JoinPath(options.data_dir, "log");
    eo.log.config_hash = ClusterConfigHash(config);
    eo.on_log_failure = options.on_log_failure;
    eo.checkpoint.dir = JoinPath(options.data_dir, "ckpt");
    // The exactly-once table goes into every checkpoint and comes back
    // before the replay (docs/DURABILITY.md, "Exactly once across restarts").
    ClientEndpoint* endpoint = node->endpoint_.get();
    eo.checkpoint.client_state = [endpoint](uint64_t) { return endpoint->SaveOutcomes(); };
    eo.checkpoint.restore_client_state = [endpoint](std::string_view b) { return endpoint->RestoreOutcomes(b); };
  }
  auto engine = Engine::Create(eo, node->partitioner_.get(), &node->procedures_);
  if (!engine.ok()) return engine.status();
  node->engine_ = std::move(*engine);
  if (node->engine_->logging()) {
    // A damaged log refuses here, naming the file and offset.
    auto recovered = node->engine_->RecoverLog();
    if (!recovered.ok()) return recovered.status();
    node->net_->SetRecoveredEpoch(*recovered);
    node->net_->SetCheckpoints(node->engine_->checkpoint_epochs(), node->engine_->log_from_start());
    LOG(INFO) << "node " << options.node_id << ": input log " << eo.log.dir << " holds epochs 1.." << *recovered;
  }
  for (PartitionId p : node->engine_->local_partitions()) {
    if (tpcc) {
      s = tpcc::LoadPartition(node->engine_->store(p),
                              static_cast<const tpcc::WarehousePartitioner&>(*node->partitioner_), p,
                              options.tpcc_scale, options.tpcc_load_seed);
    } else if (kv) {
      s = CreateKvTable(node->engine_->store(p));  // empty: clients put what they need
    } else {
      s = LoadMicroTable(node->engine_->store(p), *node->partitioner_, p, options.micro_records_per_partition);
    }
    if (!s.ok()) return s;
  }
  const uint32_t http_port = options.http_port.has_value() ? *options.http_port : self->http_port();
  if (http_port != 0) {
    HttpServerOptions ho;
    ho.host = "127.0.0.1";  // plain HTTP: this machine only, unless the operator says otherwise
    if (!self->http_host().empty()) ho.host = self->http_host();
    if (options.http_host.has_value()) ho.host = *options.http_host;
    ho.port = http_port;
    if (!IsLoopbackHost(ho.host))
      LOG(WARNING) << "node " << options.node_id << ": /metrics and /healthz in plain HTTP on " << ho.host
                   << ", beyond loopback: anyone who reaches it reads this node's counters (docs/SECURITY.md)";
    Node* n = node.get();
    auto http = HttpServer::Start(ho, [n](std::string_view path) {
      HttpResponse r;
      if (path == "/metrics") {
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = n->MetricsText();
      } else if (path == "/healthz") {
        r = n->Healthz();
      } else {
        r.status = 404;
        r.body = "not found: try /metrics or /healthz\n";
      }
      return r;
    });
    if (!http.ok()) return http.status();
    node->http_ = std::move(*http);
    LOG(INFO) << "node " << options.node_id << ": /metrics and /healthz on http://" << ho.host << ":"
              << node->http_->port();
  }
  return node;
}

absl::Status Node::Start() {
  std::function<void(pb::ClientReply*)> check;
  if (options_.workload == "tpcc") {
    check = [this](pb::ClientReply* reply) {
      std::vector<const PartitionStore*> stores;
      for (PartitionId p : engine_->local_partitions()) stores.push_back(engine_->store(p));
      const bool all = engine_->local_partitions().size() == options_.config.num_partitions();
      const tpcc::CheckReport report = tpcc::CheckConsistency(stores, options_.tpcc_scale, all);
      reply->set_consistency_ok(report.ok);
      for (const std::string& f : report.failures) reply->add_consistency_failures(f);
      reply->set_consistency_summary(absl::StrCat(report.conditions.size(), " conditions on ", report.warehouses,
                                                  " warehouse(s), ", report.orders, " orders, ", report.order_lines,
                                                  " order lines"));
    };
  }
  endpoint_->Start(engine_.get(), [this] { return info(); }, check);
  net_->Start();
  LOG(INFO) << "node " << options_.node_id << ": waiting for the other " << options_.config.nodes_size() - 1
            << " node(s)";
  auto start_us = net_->Handshake(options_.handshake_timeout);
  if (!start_us.ok()) return start_us.status();
  auto running = net_->running_cluster();
  if (!running.ok()) return running.status();
  if (running->has_value()) {
    // This node restarted while the others kept running: it catches up
    // from its log and its peers (docs/DURABILITY.md, "Rejoining a running
    // cluster").
    if (!engine_->logging())
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", options_.node_id, " restarted while the other nodes run, without --data_dir: its data is gone, "
          "it cannot rejoin; restart every node"));
    LOG(INFO) << "node " << options_.node_id << ": the other nodes run (cluster resumed after epoch "
              << (*running)->origin_epoch << "): rejoining";
    // Not running before it caught up: a node restarting meanwhile is
    // refused rather than counting on our state (review finding 2).
    net_->SetRejoining(**running);
    absl::Status s = engine_->Rejoin(**running);
    if (!s.ok()) return s;
    net_->SetRunning(**running);
    return Ready();
  }
  std::optional<uint64_t> resume, checkpoint;
  if (engine_->logging()) {
    auto agreed = net_->resume_epoch();
    if (!agreed.ok()) return agreed.status();
    resume = *agreed;
    auto from = net_->checkpoint_epoch(*resume);
    if (!from.ok()) return from.status();
    checkpoint = *from;
    LOG(INFO) << "node " << options_.node_id << ": every node resumes after epoch " << *resume
              << (*from > 0 ? absl::StrCat(", from the checkpoint of epoch ", *from) : std::string());
  }
  // Agreed: a node that restarts from now on rejoins instead.
  net_->SetRunning(ClusterClock{*start_us, resume.value_or(0)});
  absl::Status s = engine_->Start(*start_us, resume, checkpoint);
  if (!s.ok()) return s;
  return Ready();
}

absl::Status Node::Ready() {
  ready_.store(true, std::memory_order_release);
  if (engine_->logging() && options_.checkpoint_interval.count() > 0) {
    const uint64_t every =
        std::max<uint64_t>(1, static_cast<uint64_t>(options_.checkpoint_interval.count()) * 1000000 / epoch_us_);
    checkpointer_ = std::thread([this, every] { CheckpointLoop(every); });
  }
  LOG(INFO) << "node " << options_.node_id << " ready: " << engine_->local_partitions().size() << " partition(s), "
            << options_.engine.lock_manager << ", " << options_.engine.workers << " worker(s) per partition, epoch "
            << epoch_us_ << " us";
  return absl::OkStatus();
}

absl::Status Node::Stop(std::chrono::milliseconds drain) {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  ready_.store(false, std::memory_order_release);
  http_.reset();  // its handler reads the parts stopped below
  if (net_ != nullptr) net_->CancelHandshake();
  // The engine refuses new txns at once and drains what it accepted; the
  // endpoint keeps delivering their replies until then (its last flush
  // happens in Stop), and the network keeps carrying reads and results.
  {
    std::lock_guard<std::mutex> l(checkpointer_mu_);
    checkpointer_stop_ = true;
  }
  checkpointer_cancel_.store(true);
  checkpointer_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  absl::Status s;
  if (engine_ != nullptr) s = engine_->Stop(drain);
  if (endpoint_ != nullptr) endpoint_->Stop();
  if (net_ != nullptr) net_->Stop();
  return s;
}

void Node::CheckpointLoop(uint64_t every) {
  // Epochs of ~100 ms: the checkpoint is asked for that far ahead of the
  // boundary (the schedulers must not have passed it).
  const uint64_t ahead = std::max<uint64_t>(2, 100000 / epoch_us_);
  uint64_t next = (engine_->open_epoch() / every + 1) * every;
  std::unique_lock<std::mutex> l(checkpointer_mu_);
  while (!checkpointer_stop_) {
    // The sequencer's epoch: no partition has merged past it (the slowest
    // partition's merged epoch may lag far behind the fastest's).
    const uint64_t open = engine_->open_epoch();
    if (open + ahead < next) {
      // Meanwhile: prune and cut once the peers also hold our newest
      // checkpoint (a no-op unless the common checkpoint rose).
      l.unlock();
      if (auto r = engine_->ReclaimCheckpoints(); !r.ok()) {
        LOG_EVERY_N(WARNING, 100) << "node " << options_.node_id << ": pruning checkpoints: " << r.status();
      }
      l.lock();
      if (checkpointer_stop_) break;
      checkpointer_cv_.wait_for(l, std::chrono::milliseconds(10));
      continue;
    }
    l.unlock();
    auto c = engine_->Checkpoint(next, std::chrono::seconds(60), &checkpointer_cancel_);
    if (!c.ok() && !absl::IsCancelled(c.status()))
      LOG(WARNING) << "node " << options_.node_id << ": periodic checkpoint of epoch " << next << ": " << c.status();
    next = (std::max(next, engine_->open_epoch()) / every + 1) * every;
    l.lock();
  }
}

pb::NodeInfo Node::info() const {
  pb::NodeInfo i;
  i.set_node_id(options_.node_id);
  i.set_num_nodes(options_.config.nodes_size());
  i.set_num_partitions(options_.config.num_partitions());
  for (PartitionId p : engine_->local_partitions()) i.add_partitions(p);
  i.set_ready(ready());
  i.set_lock_manager(options_.engine.lock_manager);
  i.set_intent_locks(options_.engine.intent_locks);
  i.set_allow_table_ops(options_.engine.allow_table_ops);
  i.set_workload(options_.workload);
  i.set_micro_records_per_partition(options_.micro_records_per_partition);
  if (options_.workload == "tpcc") {
    i.set_tpcc_warehouses(options_.tpcc_scale.warehouses);
    i.set_tpcc_items(options_.tpcc_scale.items);
    i.set_tpcc_customers_per_district(options_.tpcc_scale.customers_per_district);
    i.set_tpcc_new_orders_per_district(options_.tpcc_scale.new_orders_per_district);
    i.set_tpcc_load_seed(options_.tpcc_load_seed);
  }
  if (ready()) {
    i.set_epoch(engine_->open_epoch());
    i.set_merged_epoch(engine_->merged_epoch());
  }
  const EngineStats es = engine_->stats();
  i.set_submitted(es.submitted);
  i.set_replied(es.replied);
  i.set_rejected(es.rejected);
  i.set_durable_epoch(es.durable_epoch);
  i.set_durable_watermark(es.durable_watermark);
  i.set_replayed_txns(es.replayed_txns);
  i.set_restored_checkpoint(es.restored_checkpoint);
  i.set_checkpoints(es.checkpoints);
  i.set_last_checkpoint_epoch(es.last_checkpoint_epoch);
  for (const SchedulerStats& ps : es.partitions) {
    i.set_committed(i.committed() + ps.committed);
    i.set_aborted(i.aborted() + ps.aborted);
  }
  const ZmqPeerNetStats ns = net_->stats();
  // Refused peer input, duplicates aside (resent frames are normal).
  uint64_t refused_reads = 0;
  for (const SchedulerStats& ps : es.partitions)
    refused_reads += ps.remote_reads.refused() - ps.remote_reads.duplicate - ps.remote_reads.late;
  // dropped and stale are read one after the other: saturate.
  const uint64_t bad_frames = ns.dropped > ns.stale ? ns.dropped - ns.stale : 0;
  i.set_peer_dropped(bad_frames + es.bad_peer_batches + es.bad_peer_results + es.forged_peer_results +
                     es.far_peer_batches + es.conflicting_peer_batches + refused_reads);
  i.set_peer_refused_sender(ns.sender_mismatch);
  i.set_peer_lost(ns.lost);
  i.set_curve(!options_.config.nodes(0).curve_public_key().empty());
  const CurveAuthStats pc = net_->curve_stats(), cc = endpoint_->curve_stats();
  i.set_peer_refused_key(pc.refused_key);
  i.set_peer_refused_mechanism(pc.refused_mechanism);
  i.set_peer_refused_protocol(pc.refused_protocol);
  i.set_client_refused_key(cc.refused_key);
  i.set_client_refused_mechanism(cc.refused_mechanism);
  i.set_client_refused_protocol(cc.refused_protocol);
  return i;
}

}  // namespace detdb
