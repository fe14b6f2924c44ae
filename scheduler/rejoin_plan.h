// PlanRejoin: what a node that restarted while the others ran sequences
// again, decided from its log and its peers' answers (RejoinReply STATE).
// Pure logic; docs/DURABILITY.md "Rejoining a running cluster" explains the
// rules, scheduler/engine_rejoin.cc carries them out.
//
// The rejoiner's own batch of an epoch e is fixed by what exists of it:
//  - e <= keep_through: its own log (every peer that received e received a
//    part of that very batch);
//  - keep_through < e <= horizon: the union of the parts its peers received
//    (each part holds whole txns: those touching the receiver's
//    partitions), in id order. A txn that touched only the rejoiner's own
//    partitions, or only peers that never received e, is gone with the
//    crash: it was never acknowledged (the durable watermark stayed below
//    e, since the rejoiner's log did not hold e). An epoch no peer received
//    is empty. Every peer that received e received exactly its part of this
//    union; a peer that did not gets its part of it, so none diverges;
//  - after horizon: new epochs of its sequencer.
// keep_through is the log's last complete epoch, except when no peer has
// received any batch of the rejoiner's after the cluster's resume epoch
// (clock_origin): then the log's epochs after clock_origin may be of the
// history before the cluster last restarted (the node died before it cut
// its log back), and are dropped (none was sent, so none was executed
// anywhere or acknowledged).
//
// Refused (FailedPrecondition naming the peer): a log that ends before the
// cluster's resume epoch, or before the durable epoch a peer heard from
// this node (the log lost durable epochs: restart the whole cluster); a
// peer's answer beyond max_epoch (next_expected - 1 or a batch's epoch: no
// honest peer holds an epoch the cluster's clock has not reached, give or
// take the peer window), checked before anything is allocated.
//
// Thread-safety: a pure function (no state).
#ifndef DETDB_SCHEDULER_REJOIN_PLAN_H_
#define DETDB_SCHEDULER_REJOIN_PLAN_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "proto/detdb.pb.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {

// One peer's answer to the STATE request.
struct RejoinPeerState {
  std::vector<std::shared_ptr<const pb::Batch>> received;  // the rejoiner's batches it holds, any order
  uint64_t next_expected = 1;  // lowest epoch of the rejoiner's it has not received
  uint64_t durable = 0;        // the rejoiner's durable epoch as it heard it
};

struct RejoinPlanInput {
  uint32_t self = 0, num_nodes = 0;
  uint64_t log_epoch = 0;     // the rejoiner's log: last complete epoch
  uint64_t clock_origin = 0;  // the epoch the cluster last resumed after
  // The highest epoch of ours a peer may hold: the cluster clock's epoch
  // plus the peer window (Engine::ClockEpoch, PeerWindowEpochs).
  uint64_t max_epoch = EpochBatcher::kMaxEpoch - 1;
  std::map<uint32_t, RejoinPeerState> peers;  // every other node
};

struct RejoinPlan {
  uint64_t keep_through = 0;  // replay the own log up to here (cut after it)
  uint64_t horizon = 0;       // the last epoch sequenced before; the sequencer resumes after it
  // The own batches of keep_through + 1 .. horizon, one per epoch, in order.
  std::vector<std::shared_ptr<pb::Batch>> own;
  // Per node: the epochs of the own batches (keep_through + 1 .. horizon,
  // and of the log before) it lacks, ascending; empty for self.
  std::vector<std::vector<uint64_t>> lacks;
};

absl::StatusOr<RejoinPlan> PlanRejoin(const RejoinPlanInput& in);

}  // namespace detdb

#endif  // DETDB_SCHEDULER_REJOIN_PLAN_H_
