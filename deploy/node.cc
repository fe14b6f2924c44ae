#include "deploy/node.h"

#include "absl/strings/str_cat.h"
#include "workloads/micro/micro.h"
#include "workloads/tpcc/checker.h"
#include "workloads/tpcc/loader.h"
#include "workloads/tpcc/procedures.h"
#include "client/cluster_config.h"
#include "glog/logging.h"
#include "workloads/micro/micro_table.h"

namespace detdb {

Node::Node(const NodeOptions& options) : options_(options) {}

std::map<std::string, std::string> HandshakeSettings(const NodeOptions& o) {
  std::map<std::string, std::string> s;
  s["workload"] = o.workload;
  s["max_keys_per_txn"] = absl::StrCat(o.engine.max_keys_per_txn);
  s["max_args_bytes"] = absl::StrCat(o.engine.max_args_bytes);
  if (o.workload == "tpcc") {
    s["tpcc_warehouses"] = absl::StrCat(o.tpcc_scale.warehouses);
    s["tpcc_items"] = absl::StrCat(o.tpcc_scale.items);
    s["tpcc_customers_per_district"] = absl::StrCat(o.tpcc_scale.customers_per_district);
    s["tpcc_orders_per_district"] = absl::StrCat(o.tpcc_scale.orders_per_district);
    s["tpcc_new_orders_per_district"] = absl::StrCat(o.tpcc_scale.new_orders_per_district);
    s["tpcc_load_seed"] = absl::StrCat(o.tpcc_load_seed);
  } else {
    s["micro_records"] = absl::StrCat(o.micro_records_per_partition);
  }
  return s;
}

Node::~Node() { (void)Stop(std::chrono::milliseconds(0)); }

absl::StatusOr<std::unique_ptr<Node>> Node::Create(const NodeOptions& options) {
  absl::Status s = ValidateClusterConfig(options.config);
  if (!s.ok()) return s;
  const bool tpcc = options.workload == "tpcc";
  if (options.workload != "micro" && !tpcc)
    return absl::InvalidArgumentError(absl::StrCat("unknown workload '", options.workload, "' (known: micro, tpcc)"));
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
  if (!s.ok()) return s;

  ZmqPeerNetOptions no;
  no.config = config;
  no.node_id = options.node_id;
  no.epoch_us = node->epoch_us_;
  no.settings = HandshakeSettings(options);
  auto net = ZmqPeerNet::Create(no);
  if (!net.ok()) return net.status();
  node->net_ = std::move(*net);

  ClientEndpointOptions co;
  co.bind = absl::StrCat("tcp://", self->host(), ":", self->client_port());
  co.max_request_bytes = options.max_request_bytes;
  auto endpoint = ClientEndpoint::Create(co);
  if (!endpoint.ok()) return endpoint.status();
  node->endpoint_ = std::move(*endpoint);

  EngineOptions eo = options.engine;
  eo.epoch_us = node->epoch_us_;
  eo.peers = node->net_.get();
  eo.results = node->endpoint_.get();
  const uint64_t rows = options.micro_records_per_partition * config.num_partitions();
  if (!tpcc) eo.key_check = [rows](Key k) -> absl::Status {
    if (KeyTable(k) == kMicroTable && KeyRow(k) >= rows)
      return absl::InvalidArgumentError(absl::StrCat("key ", k, " (micro row ", KeyRow(k),
                                                     ") is outside every partition: rows are 0 .. ", rows - 1));
    return absl::OkStatus();
  };
  auto engine = Engine::Create(eo, node->partitioner_.get(), &node->procedures_);
  if (!engine.ok()) return engine.status();
  node->engine_ = std::move(*engine);
  for (PartitionId p : node->engine_->local_partitions()) {
    if (tpcc) {
      s = tpcc::LoadPartition(node->engine_->store(p),
                              static_cast<const tpcc::WarehousePartitioner&>(*node->partitioner_), p,
                              options.tpcc_scale, options.tpcc_load_seed);
    } else {
      s = LoadMicroTable(node->engine_->store(p), *node->partitioner_, p, options.micro_records_per_partition);
    }
    if (!s.ok()) return s;
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
  absl::Status s = engine_->Start(*start_us);
  if (!s.ok()) return s;
  ready_.store(true, std::memory_order_release);
  LOG(INFO) << "node " << options_.node_id << " ready: " << engine_->local_partitions().size() << " partition(s), "
            << options_.engine.lock_manager << ", " << options_.engine.workers << " worker(s) per partition, epoch "
            << epoch_us_ << " us";
  return absl::OkStatus();
}

absl::Status Node::Stop(std::chrono::milliseconds drain) {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  ready_.store(false, std::memory_order_release);
  if (net_ != nullptr) net_->CancelHandshake();
  // The engine refuses new txns at once and drains what it accepted; the
  // endpoint keeps delivering their replies until then (its last flush
  // happens in Stop), and the network keeps carrying reads and results.
  absl::Status s;
  if (engine_ != nullptr) s = engine_->Stop(drain);
  if (endpoint_ != nullptr) endpoint_->Stop();
  if (net_ != nullptr) net_->Stop();
  return s;
}

pb::NodeInfo Node::info() const {
  pb::NodeInfo i;
  i.set_node_id(options_.node_id);
  i.set_num_nodes(options_.config.nodes_size());
  i.set_num_partitions(options_.config.num_partitions());
  for (PartitionId p : engine_->local_partitions()) i.add_partitions(p);
  i.set_ready(ready());
  i.set_lock_manager(options_.engine.lock_manager);
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
  for (const SchedulerStats& ps : es.partitions) {
    i.set_committed(i.committed() + ps.committed);
    i.set_aborted(i.aborted() + ps.aborted);
  }
  const ZmqPeerNetStats ns = net_->stats();
  // Refused peer input, duplicates aside (resent frames are normal).
  uint64_t refused_reads = 0;
  for (const SchedulerStats& ps : es.partitions)
    refused_reads += ps.remote_reads.refused() - ps.remote_reads.duplicate - ps.remote_reads.late;
  i.set_peer_dropped(ns.dropped + es.bad_peer_batches + es.bad_peer_results + es.far_peer_batches + refused_reads);
  i.set_peer_lost(ns.lost);
  return i;
}

}  // namespace detdb
