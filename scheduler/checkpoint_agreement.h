// CheckpointAgreement: which of a node's checkpoints stay on disk and where
// its input log may be cut, so that the nodes of a cluster always keep a
// checkpoint that every one of them holds (a restart needs one: every node
// must replay the same epochs). See docs/DURABILITY.md, "Checkpoints".
//
// Every node stamps its newest published checkpoint epoch on its peer
// messages, beside its durable epoch (PeerLink::SetCheckpointEpoch). An
// epoch E is *common* once this node holds a checkpoint of E and every
// peer has reported E as its newest published one (so every node published
// E). The *anchor* is the newest common epoch; it only rises. Every node
// keeps all its checkpoints at or after its anchor, so the largest anchor
// of any node is held by every node (each keeps everything at or after its
// own, smaller or equal, anchor); a restart starts at or after it.
// Plan(): keep every checkpoint from the oldest of the anchor and the keep-1
// anchors before it (older fallbacks) on, not only the anchors: the
// anchors seen differ between nodes (one may miss a peer's report), the
// range between them is what every node keeps (finding 16). The log is cut
// behind the oldest kept anchor, and only once keep anchors are on disk.
// Until then nothing is pruned or cut.
//
// A peer that never publishes (no periodic checkpoints, failing captures)
// or whose epochs never coincide with ours makes no newer checkpoint
// common: at most max_uncommon checkpoints after the anchor are kept, the
// oldest beyond that are pruned and named in the plan with the peers
// behind them, for a loud log (finding 15). The anchors and the log after
// the oldest kept one are never touched by this, so a restart from the
// anchor stays possible; the log keeps growing until the peer publishes.
//
// One process (num_nodes 1): every published checkpoint is common, so the
// plan is "keep the newest `keep`, cut behind the oldest once there are
// `keep`", as before. A cluster keeps up to one more checkpoint: the newest
// one counts only once every peer reported it.
//
// Peer input is untrusted: a report above the peer's durable epoch or below
// its previous report is refused (false). A report only adds to what a node
// knows; a false one can make it prune what it would otherwise keep, never
// keep a cut log or load a checkpoint it does not hold.
//
// INPUT:  Start(valid, start) at recovery; OnPublished(epoch) after this
//         node published a checkpoint; OnPeerDurable, OnPeerCheckpoint from
//         the network thread.
// OUTPUT: newest() (what to gossip), anchor(), Plan().
// Thread-safety: every method is thread-safe (one mutex).
#ifndef DETDB_SCHEDULER_CHECKPOINT_AGREEMENT_H_
#define DETDB_SCHEDULER_CHECKPOINT_AGREEMENT_H_

#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

namespace detdb {

struct CheckpointPlan {
  std::vector<uint64_t> keep;  // checkpoint epochs to keep, oldest first
  uint64_t cut_before = 0;     // cut the log behind this checkpoint (DropInputLogBefore); 0: do not cut
  // Pruned although no peer confirmed them, beyond max_uncommon (oldest
  // first), and the peers whose last report is below the newest of them
  // (they published none of them nor anything later).
  std::vector<uint64_t> dropped_uncommon;
  std::vector<uint32_t> behind;
};

class CheckpointAgreement {
 public:
  // REQUIRES: self < num_nodes.
  CheckpointAgreement(uint32_t num_nodes, uint32_t self);

  // Recovery: this node's valid checkpoints at or before the resume epoch
  // (any order) and the one it starts from (0: none; in a cluster one that
  // every node holds). One process: every valid one counts as common.
  void Start(const std::vector<uint64_t>& valid, uint64_t start);
  // This node published a checkpoint of `epoch`. Returns newest().
  uint64_t OnPublished(uint64_t epoch);
  void OnPeerDurable(uint32_t node, uint64_t epoch);
  // A peer's newest published checkpoint epoch. False (ignored) for an
  // unknown node or self, a value above that node's durable epoch, or below
  // its previous report.
  bool OnPeerCheckpoint(uint32_t node, uint64_t epoch);

  uint64_t newest() const;  // this node's newest published / valid checkpoint (0: none)
  uint64_t anchor() const;  // the newest common epoch (0: none known)
  // What to keep of `listed` (the checkpoints on disk, any order) and where
  // to cut the log; `keep` as CheckpointOptions::keep (at least 1);
  // max_uncommon as CheckpointOptions::max_uncommon (0: no cap).
  CheckpointPlan Plan(const std::vector<uint64_t>& listed, uint32_t keep, uint32_t max_uncommon = 0) const;

 private:
  // Makes `epoch` the anchor if it is common and newer. REQUIRES: mu_.
  void CheckCommonLocked(uint64_t epoch);

  static constexpr size_t kMaxRemembered = 64;  // per peer, and anchors
  const uint32_t num_nodes_, self_;
  mutable std::mutex mu_;
  uint64_t newest_ = 0;                      // guarded by mu_
  std::set<uint64_t> own_;                   // guarded by mu_: own epochs after the anchor
  std::vector<uint64_t> durable_;            // guarded by mu_: by node
  std::vector<uint64_t> reported_;           // guarded by mu_: by node, the last report
  std::vector<std::set<uint64_t>> seen_;     // guarded by mu_: by node, reports after the anchor
  std::vector<uint64_t> anchors_;            // guarded by mu_: common epochs, ascending
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_CHECKPOINT_AGREEMENT_H_
