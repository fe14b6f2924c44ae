// PeerOutbox: what a cluster node sends other nodes about its txns'
// execution: the remote reads of its partitions and the results of txns it
// coordinates for another node's client. It is the Transport the engine
// gives its schedulers, and the engine sends results through it.
//
// Two rules, both for a rejoin (docs/DURABILITY.md, "Rejoining a running
// cluster"):
//  - every message is kept for its node's rejoin (PeerRetention, with the
//    input log);
//  - with the input log, a message about a txn of epoch e leaves only once
//    e is durable here (SetDurable). A node that dies may lose the epochs
//    after its durable one; a rejoin sequences those again from what its
//    peers received of them, which lacks the txns that touched only the
//    dead node. Had a peer used a read or result computed after those txns
//    ran, that peer would have diverged from the history the rejoin
//    rebuilds. Held, a message waits about one fsync (the epoch was
//    appended when its batches had all arrived, before any of its txns
//    ran); with log_then_execute it never waits.
// Messages for partitions of this node go out at once (no other process).
//
// Thread-safety: thread-safe (Send from workers, SetDurable from the log's
// writer thread); messages are sent without the lock held.
#ifndef DETDB_SCHEDULER_PEER_OUTBOX_H_
#define DETDB_SCHEDULER_PEER_OUTBOX_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "proto/detdb.pb.h"
#include "scheduler/peer_link.h"
#include "scheduler/peer_retention.h"
#include "scheduler/transport.h"

namespace detdb {

class PeerOutbox final : public Transport {
 public:
  // peers and retention must outlive it; retention may be null (no input
  // log: nothing is kept). gated: hold until durable (the input log is
  // on); else everything leaves at once.
  PeerOutbox(PeerLink* peers, PeerRetention* retention, bool gated);

  void RegisterReceiver(PartitionId partition, RemoteReadsReceiver* receiver) override {
    peers_->RegisterReceiver(partition, receiver);
  }
  void Send(PartitionId to, pb::RemoteReads msg) override;
  // The result of txn for its origin node (another node).
  void SendResult(uint32_t node, const pb::TxnResult& result);
  // Every epoch up to this one is durable here: what waited for it leaves.
  void SetDurable(uint64_t epoch);
  // A kept message again (a peer's rejoin): sent under the same rule, not
  // kept again.
  void Resend(PartitionId to, pb::RemoteReads msg);
  void ResendResult(uint32_t node, const pb::TxnResult& result);

  uint64_t held() const;     // messages waiting now
  uint64_t held_total() const { return held_total_.load(std::memory_order_relaxed); }  // messages that waited
  uint64_t durable() const;  // the epoch SetDurable last gave (0 before)
  bool holding() const { return holding_.load(std::memory_order_acquire); }
  // Called (without the lock) when a message starts to wait while none
  // did: the log should not wait for its lazy deadline. REQUIRES: before
  // the first Send.
  void SetHoldHook(std::function<void()> hook) { hold_hook_ = std::move(hook); }

 private:
  // Sends now, or holds until the txn's epoch is durable here.
  void Gate(PartitionId to, pb::RemoteReads msg);
  void GateResult(uint32_t node, const pb::TxnResult& result);
  struct Held {
    std::vector<std::pair<PartitionId, pb::RemoteReads>> reads;
    std::vector<std::pair<uint32_t, pb::TxnResult>> results;
  };
  PeerLink* const peers_;
  PeerRetention* const retention_;
  const bool gated_;
  mutable std::mutex mu_;
  uint64_t durable_ = 0;                // guarded by mu_
  std::map<uint64_t, Held> held_;       // guarded by mu_: by txn epoch
  uint64_t held_count_ = 0;             // guarded by mu_
  std::atomic<bool> holding_{false};    // held_count_ > 0
  std::atomic<uint64_t> held_total_{0};
  std::function<void()> hold_hook_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PEER_OUTBOX_H_
