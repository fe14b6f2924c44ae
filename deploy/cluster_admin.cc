#include "deploy/cluster_admin.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"

namespace detdb {

std::vector<NodeStatus> QueryNodes(ClusterClient* c, std::chrono::milliseconds timeout) {
  std::vector<NodeStatus> out;
  for (uint32_t i = 0; i < c->num_nodes(); ++i) {
    NodeStatus s;
    s.node = i;
    s.endpoint = c->node(i)->endpoint();
    s.info = c->node(i)->Info(timeout);
    out.push_back(std::move(s));
  }
  return out;
}

namespace {
// What a digest request waits beyond the boundary's lead.
constexpr std::chrono::milliseconds kDigestMargin{1000};
}  // namespace

absl::StatusOr<ClusterDigests> TakeDigests(ClusterClient* c, std::chrono::milliseconds timeout) {
  ClusterDigests out;
  // A boundary a little ahead of every node, so that each can pause there.
  uint64_t epoch = 0;
  bool any = false;
  for (const NodeStatus& s : QueryNodes(c, std::min(timeout, std::chrono::milliseconds(2000)))) {
    if (!s.info.ok()) {
      out.node_errors.push_back(absl::StrCat("node ", s.node, ": ", s.info.status().message()));
      continue;
    }
    any = true;
    epoch = std::max<uint64_t>(epoch, s.info->epoch());
  }
  if (!any) return absl::UnavailableError("no node answered");
  if (!out.node_errors.empty()) {
    // A dead node never reaches the boundary: the others would pause there
    // until it came back. Refuse instead.
    return absl::UnavailableError(absl::StrCat("not every node answered (", out.node_errors.front(), ")"));
  }
  // ~200 ms ahead (at least one epoch, whatever the epoch length); the
  // digest request waits at least that long plus a margin, else a short
  // --timeout_ms would always expire before any node reached the boundary.
  const uint64_t epoch_us = c->config().epoch_us() != 0 ? c->config().epoch_us() : 1000;
  const uint64_t lead = std::max<uint64_t>(1, 200000 / epoch_us);
  epoch += lead;
  const auto lead_time = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::microseconds(lead * epoch_us) + std::chrono::milliseconds(999));
  const std::chrono::milliseconds digest_timeout = std::max(timeout, lead_time + kDigestMargin);
  out.epoch = epoch;
  // Asked of every node at once (each pauses at the boundary), each over a
  // connection of its own.
  const uint32_t n = c->num_nodes();
  std::vector<absl::StatusOr<std::vector<pb::PartitionDigest>>> digests(n, absl::UnknownError("not asked"));
  std::vector<std::thread> threads;
  const pb::ClusterConfig config = c->config();
  for (uint32_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      auto own = ClusterClient::Connect(config, c->curve_keys());
      digests[i] = own.ok() ? (*own)->node(i)->Digests(epoch, digest_timeout) : own.status();
    });
  for (std::thread& t : threads) t.join();
  for (uint32_t i = 0; i < n; ++i) {
    if (!digests[i].ok()) {
      out.node_errors.push_back(absl::StrCat("node ", i, ": ", digests[i].status().message()));
      continue;
    }
    for (const auto& pd : *digests[i]) out.rows.push_back({pd.partition(), i, pd.digest()});
  }
  return out;
}

absl::StatusOr<ClusterScan> ScanTable(ClusterClient* c, const std::string& table, uint64_t from_row, uint32_t limit,
                                      std::chrono::milliseconds timeout) {
  ClusterScan out;
  bool any = false, not_found = false;
  std::string not_found_why;
  for (uint32_t i = 0; i < c->num_nodes(); ++i) {
    // Each node's scan runs while its txns do; one node at a time keeps
    // the scans' S locks (and the writers they hold back) short.
    auto r = c->node(i)->Scan(table, from_row, limit, timeout, c->seen_epoch());
    if (!r.ok()) {
      if (absl::IsNotFound(r.status())) {
        not_found = true;
        not_found_why = std::string(r.status().message());
      }
      out.node_errors.push_back(absl::StrCat("node ", i, ": ", r.status().message()));
      continue;
    }
    any = true;
    out.table = r->table();
    out.name = r->name();
    out.value_size = r->value_size();
    out.more |= r->more();
    for (pb::ScanRow& row : *r->mutable_rows()) out.rows.push_back(std::move(row));
  }
  if (!any && not_found) return absl::NotFoundError(not_found_why);
  if (!any) return absl::UnavailableError(out.node_errors.empty() ? "no node" : out.node_errors.front());
  std::sort(out.rows.begin(), out.rows.end(), [](const pb::ScanRow& a, const pb::ScanRow& b) { return a.key() < b.key(); });
  if (out.rows.size() > limit) {
    out.rows.resize(limit);
    out.more = true;
  }
  return out;
}

}  // namespace detdb
