#include "scheduler/rejoin_plan.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace detdb {

namespace {
// What decides how a txn executes and whom it answers (as BatchHash in
// engine_peers.cc, plus the client), the table op included.
bool SameTxn(const pb::Txn& a, const pb::Txn& b) {
  return a.id() == b.id() && a.type() == b.type() && a.args() == b.args() &&
         std::equal(a.read_set().begin(), a.read_set().end(), b.read_set().begin(), b.read_set().end()) &&
         std::equal(a.write_set().begin(), a.write_set().end(), b.write_set().begin(), b.write_set().end()) &&
         a.client_id() == b.client_id() && a.client_seq() == b.client_seq() &&
         a.has_table_op() == b.has_table_op() &&
         (!a.has_table_op() || a.table_op().SerializeAsString() == b.table_op().SerializeAsString());
}
}  // namespace

absl::StatusOr<RejoinPlan> PlanRejoin(const RejoinPlanInput& in) {
  if (in.log_epoch < in.clock_origin)
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", in.self, ": the input log ends at epoch ", in.log_epoch, ", before epoch ", in.clock_origin,
        " where the running cluster resumed: it lost epochs it held then; restart every node"));
  const uint64_t max_epoch = std::min(in.max_epoch, EpochBatcher::kMaxEpoch - 1);
  for (const auto& [node, st] : in.peers) {
    // Bounds first: a wrong answer must not make us allocate an epoch each
    // up to it, or start our sequencer where the peers refuse its batches.
    if (st.next_expected > max_epoch + 1)
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", in.self, ": node ", node, " answers that it received our batches up to epoch ",
          st.next_expected - 1, ", beyond epoch ", max_epoch, " (the cluster's clock plus the peer window): a bad "
          "answer (a bug or a forgery); restart every node"));
    for (const auto& b : st.received)
      if (b->epoch() == 0 || b->epoch() > max_epoch)
        return absl::FailedPreconditionError(absl::StrCat(
            "node ", in.self, ": node ", node, " answers with our batch of epoch ", b->epoch(),
            ", outside epochs 1..", max_epoch, " (the cluster's clock plus the peer window): a bad answer (a bug or "
            "a forgery); restart every node"));
  }
  uint64_t peers_high = 0;  // the highest epoch of ours any peer received
  for (const auto& [node, st] : in.peers) {
    if (st.durable > in.log_epoch)
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", in.self, ": node ", node, " heard that epoch ", st.durable, " was durable here, but the input log "
          "ends at epoch ", in.log_epoch, ": it lost durable epochs (a power loss with --log_sync=none?); restart "
          "every node"));
    if (st.next_expected > 0) peers_high = std::max(peers_high, st.next_expected - 1);
    for (const auto& b : st.received) peers_high = std::max(peers_high, b->epoch());
  }
  RejoinPlan plan;
  // Epochs of ours after the resume epoch that no peer received may be of
  // the history before the cluster's last restart: dropped.
  plan.keep_through = peers_high > in.clock_origin ? in.log_epoch : in.clock_origin;
  plan.horizon = std::max(plan.keep_through, peers_high);
  for (const auto& [node, st] : in.peers)
    if (st.durable > plan.keep_through)
      return absl::FailedPreconditionError(absl::StrCat("node ", in.self, ": node ", node, " heard that epoch ",
                                                        st.durable, " was durable here, but no peer received a "
                                                        "batch of ours after epoch ", in.clock_origin));
  // The union of the parts, per epoch after keep_through.
  std::map<uint64_t, std::map<TxnId, const pb::Txn*>> merged;
  std::vector<std::set<uint64_t>> has(in.num_nodes);
  for (const auto& [node, st] : in.peers) {
    if (node >= in.num_nodes || node == in.self)
      return absl::InvalidArgumentError(absl::StrCat("a rejoin state from node ", node));
    for (const auto& b : st.received) {
      if (b->sequencer_id() != in.self)
        return absl::InvalidArgumentError(absl::StrCat("node ", node, " returned a batch of sequencer ",
                                                       b->sequencer_id(), " as ours"));
      has[node].insert(b->epoch());
      if (b->epoch() <= plan.keep_through) continue;
      auto& txns = merged[b->epoch()];
      for (const pb::Txn& t : b->txns()) {
        auto [it, fresh] = txns.emplace(t.id(), &t);
        if (!fresh && !SameTxn(*it->second, t))
          return absl::DataLossError(absl::StrCat("node ", in.self, ": peers hold two versions of txn ", t.id(),
                                                  " of our epoch ", b->epoch(), " (node ", node,
                                                  "'s differs): a forgery or a divergence"));
      }
    }
  }
  for (uint64_t e = plan.keep_through + 1; e <= plan.horizon; ++e) {
    auto b = std::make_shared<pb::Batch>();
    b->set_sequencer_id(in.self);
    b->set_epoch(e);
    if (auto it = merged.find(e); it != merged.end())
      for (const auto& [id, t] : it->second) *b->add_txns() = *t;
    plan.own.push_back(std::move(b));
  }
  plan.lacks.resize(in.num_nodes);
  for (const auto& [node, st] : in.peers)
    for (uint64_t e = std::max<uint64_t>(st.next_expected, 1); e <= plan.horizon; ++e)
      if (!has[node].contains(e)) plan.lacks[node].push_back(e);
  return plan;
}

}  // namespace detdb
