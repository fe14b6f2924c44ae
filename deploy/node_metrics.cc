// Node::MetricsText and Node::Healthz: a node's /metrics page (Prometheus
// text format) and /healthz, read at scrape time from the counters the
// engine, its schedulers, the input log, the peer network, the client
// endpoint and the storage latches keep anyway (nothing is counted twice on
// the hot paths). The metric list is in docs/OPERATING.md.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "deploy/node.h"
#include "scheduler/remote_reads_guard.h"
#include "storage/elided_latch.h"

namespace detdb {
namespace {

using Labels = MetricsText::Labels;

}  // namespace

std::string Node::MetricsText() const {
  const EngineStats es = engine_->stats();
  const ZmqPeerNetStats ns = net_->stats();
  const ClientEndpointStats cs = endpoint_->stats();
  const bool is_ready = ready();
  detdb::MetricsText m;

  m.Family("detdb_node_info", "gauge", "Constant 1, labelled with the node's id, lock manager and workload");
  m.Sample("detdb_node_info",
           {{"node", absl::StrCat(options_.node_id)},
            {"lock_manager", options_.engine.lock_manager},
            {"workload", options_.workload}},
           1);
  m.Gauge("detdb_ready", "1 once the handshake is done and the sequencer runs", is_ready ? 1 : 0);
  m.Gauge("detdb_peers", "Other nodes in the cluster config", options_.config.nodes_size() - 1);
  m.Gauge("detdb_peers_connected", "Other nodes whose Hello arrived", net_->peers_heard());

  // Txns, as detdb-ctl info counts them.
  m.Counter("detdb_txns_submitted_total", "Txns accepted from clients at this node", es.submitted);
  m.Counter("detdb_txns_replied_total", "Txns accepted here and answered", es.replied);
  m.Counter("detdb_txns_rejected_total", "Txns refused before sequencing", es.rejected);
  m.Counter("detdb_txns_replayed_total", "Txns replayed from the input log at start", es.replayed_txns);
  // Per partition, from each scheduler's counters.
  struct PerPartition {
    const char* name;
    const char* type;
    const char* help;
    double (*get)(const SchedulerStats&);
  };
  const PerPartition parts[] = {
      {"detdb_txns_committed_total", "counter", "Txns executed here with OK (coordinator or participant)",
       [](const SchedulerStats& s) { return double(s.committed); }},
      {"detdb_txns_aborted_total", "counter", "Txns executed here whose procedure returned an error",
       [](const SchedulerStats& s) { return double(s.aborted); }},
      {"detdb_txns_passive_total", "counter", "Read-only participations finished after sending reads",
       [](const SchedulerStats& s) { return double(s.passive); }},
      {"detdb_lock_admitted_total", "counter", "Txns admitted to the lock manager",
       [](const SchedulerStats& s) { return double(s.admitted); }},
      {"detdb_lock_blocked_at_admission_total", "counter", "Txns admitted but not granted every lock at once",
       [](const SchedulerStats& s) { return double(s.blocked_at_admission); }},
      {"detdb_lock_avg_active", "gauge", "Admitted, unreleased txns, averaged over admissions",
       [](const SchedulerStats& s) { return s.avg_active; }},
      {"detdb_lock_active", "gauge", "Admitted, unreleased txns now",
       [](const SchedulerStats& s) { return double(s.active_now); }},
      {"detdb_lock_ready_queue", "gauge", "Runnable txns waiting for a worker now",
       [](const SchedulerStats& s) { return double(s.ready_queue); }},
      {"detdb_admission_window", "gauge", "The admission window now (scheduler/admission.h)",
       [](const SchedulerStats& s) { return double(s.window); }},
      {"detdb_remote_read_waits_total", "counter", "Times a txn waited for remote reads",
       [](const SchedulerStats& s) { return double(s.parked); }},
      {"detdb_remote_read_waiting", "gauge", "Txns waiting for remote reads now",
       [](const SchedulerStats& s) { return double(s.parked_now); }},
      {"detdb_worker_starved_total", "counter", "Times a worker found no runnable txn",
       [](const SchedulerStats& s) { return double(s.starved); }},
      {"detdb_worker_busy_seconds_total", "counter",
       "CPU time of the partition's worker threads (they sleep when idle: their busy time)",
       [](const SchedulerStats& s) { return double(s.workers_cpu_ns) / 1e9; }},
      {"detdb_lock_thread_busy_seconds_total", "counter", "CPU time of the partition's lock thread",
       [](const SchedulerStats& s) { return double(s.lock_thread_cpu_ns) / 1e9; }},
      {"detdb_remote_reads_accepted_total", "counter", "Remote reads checked and used",
       [](const SchedulerStats& s) { return double(s.remote_reads.accepted); }},
      {"detdb_remote_reads_held", "gauge", "Remote reads held now for txns not taken yet",
       [](const SchedulerStats& s) { return double(s.remote_reads.held_now); }},
      {"detdb_remote_reads_held_bytes", "gauge", "Bytes of the remote reads held now",
       [](const SchedulerStats& s) { return double(s.remote_reads.held_bytes); }},
      {"detdb_remote_reads_expired_total", "counter", "Remote reads held, then dropped: their txn ran elsewhere",
       [](const SchedulerStats& s) { return double(s.remote_reads.expired); }},
      {"detdb_remote_reads_dropped_expected_total", "counter",
       "Remote reads refused early or over budget, then expected: each stalls its txn",
       [](const SchedulerStats& s) { return double(s.remote_reads.dropped_expected); }},
  };
  const auto& local = engine_->local_partitions();
  for (const PerPartition& f : parts) {
    m.Family(f.name, f.type, f.help);
    for (size_t i = 0; i < es.partitions.size() && i < local.size(); ++i)
      m.Sample(f.name, {{"partition", absl::StrCat(local[i])}}, f.get(es.partitions[i]));
  }
  m.Family("detdb_remote_reads_refused_total", "counter",
           "Remote reads refused, by reason (scheduler/remote_reads_guard.h)");
  for (size_t i = 0; i < es.partitions.size() && i < local.size(); ++i) {
    const RemoteReadsStats& r = es.partitions[i].remote_reads;
    const std::pair<const char*, uint64_t> reasons[] = {
        {"duplicate", r.duplicate},     {"forged", r.forged}, {"too_early", r.too_early},
        {"over_budget", r.over_budget}, {"late", r.late},     {"conflicting", r.conflicting}};
    for (const auto& [reason, n] : reasons)
      m.Sample("detdb_remote_reads_refused_total", {{"partition", absl::StrCat(local[i])}, {"reason", reason}}, n);
  }
  // Per procedure: the txns accepted here, as their replies leave.
  m.Family("detdb_procedure_txns_total", "counter",
           "Txns accepted at this node since start, by procedure and outcome (committed, aborted by the procedure, "
           "failed otherwise), counted as their reply leaves");
  for (const auto& [type, o] : endpoint_->outcomes_by_type()) {
    const std::string_view name = procedures_.NameOf(type);
    const std::string procedure = name.empty() ? absl::StrCat("type_", type) : std::string(name);
    m.Sample("detdb_procedure_txns_total", {{"procedure", procedure}, {"outcome", "committed"}}, o.committed);
    m.Sample("detdb_procedure_txns_total", {{"procedure", procedure}, {"outcome", "aborted"}}, o.aborted);
    m.Sample("detdb_procedure_txns_total", {{"procedure", procedure}, {"outcome", "failed"}}, o.failed);
  }

  // Epochs.
  const uint64_t open = is_ready ? engine_->open_epoch() : 0;
  const uint64_t merged = is_ready ? engine_->merged_epoch() : 0;
  m.Counter("detdb_epochs_sequenced_total", "Epochs this node's sequencer closed", es.epochs);
  m.Gauge("detdb_epoch_open", "The sequencer's next epoch (0 until ready)", open);
  m.Gauge("detdb_epoch_merged", "Every local scheduler merged all epochs below this one (0 until ready)", merged);
  m.Gauge("detdb_merge_lag_epochs", "detdb_epoch_open - detdb_epoch_merged", open > merged ? open - merged : 0);

  // Input log and checkpoints.
  m.Gauge("detdb_log_durable_epoch", "Every epoch up to this one is in this node's input log", es.durable_epoch);
  m.Gauge("detdb_log_durable_watermark", "Every epoch up to this one is in every node's input log",
          es.durable_watermark);
  m.Gauge("detdb_log_held_replies", "Results waiting for their epoch to be durable everywhere", es.held_replies);
  m.Counter("detdb_log_bytes_total", "Bytes appended to the input log", es.log.bytes);
  m.Counter("detdb_log_groups_total", "Groups of records written (one fsync each with --log_sync=fsync)",
            es.log.groups);
  m.Family("detdb_log_fsync_seconds", "histogram", "Latency of the input log's fsync, per group");
  m.HistogramSamples("detdb_log_fsync_seconds", {}, es.log.sync_seconds);
  m.Counter("detdb_checkpoints_total", "Checkpoints taken since start", es.checkpoints);
  m.Gauge("detdb_checkpoint_last_epoch", "Epoch of the last checkpoint taken (0: none)", es.last_checkpoint_epoch);

  // Client and peer frames.
  m.Counter("detdb_client_requests_total", "Client request frames that reached decoding", cs.requests);
  m.Counter("detdb_client_frames_good_total", "Client request frames that decoded", cs.good);
  m.Family("detdb_client_refused_total", "counter", "Client frames or txns refused, by reason");
  m.Sample("detdb_client_refused_total", {{"reason", "bad_frame"}}, cs.bad_frames);
  m.Sample("detdb_client_refused_total", {{"reason", "duplicate"}}, cs.duplicates);
  m.Sample("detdb_client_refused_total", {{"reason", "invalid_or_overload"}},
           cs.refused >= cs.duplicates ? cs.refused - cs.duplicates : 0);
  m.Counter("detdb_client_lost_replies_total", "Replies to clients that were gone or not reading",
            cs.lost_replies);
  m.Family("detdb_txn_latency_seconds", "histogram",
           "From a txn's arrival at this node to its reply leaving (txns submitted here)");
  m.HistogramSamples("detdb_txn_latency_seconds", {}, endpoint_->latency());
  m.Counter("detdb_peer_frames_received_total", "Peer frames taken off the peer port", ns.received);
  m.Counter("detdb_peer_frames_good_total", "Peer frames that passed the network's checks and were handed on",
            ns.good);
  m.Counter("detdb_peer_frames_sent_total", "Peer frames sent", ns.sent);
  m.Counter("detdb_peer_send_failed_total", "Peer frames this node could not queue to a peer", ns.send_failed);
  m.Family("detdb_peer_refused_total", "counter",
           "Peer frames (network checks) or their contents (engine checks) dropped, by reason");
  for (int r = 0; r < kPeerDropReasons; ++r)
    m.Sample("detdb_peer_refused_total", {{"reason", PeerDropName(static_cast<PeerDrop>(r))}}, ns.by_reason[r]);
  const std::pair<const char*, uint64_t> engine_reasons[] = {
      {"bad_batch", es.bad_peer_batches},
      {"duplicate_batch", es.duplicate_peer_batches},
      {"far_batch", es.far_peer_batches},
      {"conflicting_batch", es.conflicting_peer_batches},
      {"bad_result", es.bad_peer_results},
      {"forged_result", es.forged_peer_results}};
  for (const auto& [reason, n] : engine_reasons) m.Sample("detdb_peer_refused_total", {{"reason", reason}}, n);
  m.Counter("detdb_peer_frames_lost_total", "Peer frames missing from a sequence (lost in transit)", ns.lost);
  // Rejoins (docs/DURABILITY.md, "Rejoining a running cluster").
  m.Counter("detdb_peer_restarts_total", "Hellos of a newer incarnation of a peer (it restarted)", ns.restarts);
  m.Counter("detdb_rejoin_requests_total", "Rejoining peers' requests answered", es.rejoin_requests);
  m.Gauge("detdb_rejoin_retained_bytes", "Remote reads and results kept for the peers' rejoins", es.retained_bytes);
  m.Gauge("detdb_rejoin_retained_batches", "Batch parts kept for the peers' rejoins (0 without --data_dir)",
          es.retained_batches);
  m.Gauge("detdb_rejoin_retained_batch_bytes", "Serialized bytes of the batch parts kept for the peers' rejoins",
          es.retained_batch_bytes);
  m.Counter("detdb_rejoin_held_peer_messages_total",
            "Reads and results for other nodes that waited for their epoch's durability here (0 with rejoin off)",
            es.held_peer_messages);
  m.Counter("detdb_peer_results_late_total", "Peer results for txns answered already (a peer replaying)",
            es.late_peer_results);

  // CURVE (docs/SECURITY.md): connections, not frames.
  const bool curve = !options_.config.nodes(0).curve_public_key().empty();
  m.Gauge("detdb_curve_enabled", "1 if the peer and client ports require CURVE", curve ? 1 : 0);
  const std::pair<const char*, CurveAuthStats> ports[] = {{"peer", net_->curve_stats()},
                                                          {"client", endpoint_->curve_stats()}};
  m.Family("detdb_curve_allowed_total", "counter", "Connections whose CURVE key was allowed, by port");
  for (const auto& [port, c] : ports) m.Sample("detdb_curve_allowed_total", {{"port", port}}, c.allowed);
  m.Family("detdb_curve_refused_total", "counter",
           "Connections refused, by port and reason: key (not allowed), mechanism (e.g. NULL), protocol (a broken "
           "handshake)");
  for (const auto& [port, c] : ports) {
    m.Sample("detdb_curve_refused_total", {{"port", port}, {"reason", "key"}}, c.refused_key);
    m.Sample("detdb_curve_refused_total", {{"port", port}, {"reason", "mechanism"}}, c.refused_mechanism);
    m.Sample("detdb_curve_refused_total", {{"port", port}, {"reason", "protocol"}}, c.refused_protocol);
  }

  // Storage latches (seed 001): lock elision where the CPU has RTM. The
  // counters are per thread and summed here (docs/STORAGE.md).
  const ElidedLatch::Stats ls = ElidedLatch::GlobalStats();
  m.Gauge("detdb_latch_elision_enabled", "1 if storage latches elide with hardware transactions (RTM)",
          ElidedLatch::ElisionEnabled() ? 1 : 0);
  m.Counter("detdb_latch_elided_total", "Storage latch sections committed as hardware transactions", ls.elided);
  m.Counter("detdb_latch_fallbacks_total", "Storage latch sections that took the latch after aborts", ls.fallback);
  m.Family("detdb_latch_aborts_total", "counter", "Hardware transactions of storage latches that aborted, by cause");
  for (int c = 0; c < ElidedLatch::kNumAbortCauses; ++c)
    m.Sample("detdb_latch_aborts_total", {{"cause", ElidedLatch::AbortCauseName(ElidedLatch::AbortCause(c))}},
             ls.aborts_by_cause[c]);
  return m.text();
}

HttpResponse Node::Healthz() const {
  const bool is_ready = ready();
  const uint64_t open = is_ready ? engine_->open_epoch() : 0;
  const uint64_t merged = is_ready ? engine_->merged_epoch() : 0;
  const uint32_t peers = options_.config.nodes_size() - 1;
  const uint32_t heard = net_->peers_heard();
  HttpResponse r;
  r.status = is_ready && !log_failed() ? 200 : 503;
  r.content_type = "application/json";
  r.body = absl::StrCat("{\"ready\":", is_ready ? "true" : "false", ",\"node\":", options_.node_id,
                        ",\"log_failed\":", log_failed() ? "true" : "false", ",\"epoch\":", open,
                        ",\"merged_epoch\":", merged, ",\"merge_lag_epochs\":", open > merged ? open - merged : 0,
                        ",\"peers\":", peers, ",\"peers_connected\":", heard, "}\n");
  return r;
}

}  // namespace detdb
