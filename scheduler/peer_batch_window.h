// PeerBatchWindow: which batches of other nodes' sequencers an engine takes.
// Pure logic (no threads, no clock); the engine asks it before validating a
// peer's batch and records the batch once it passed validation.
//
// Why: a rejoining node and its peers resend batches, so the same (sequencer,
// epoch) may arrive twice; and an unchecked epoch lets a peer park one batch
// per future epoch in every scheduler's merge queue (memory without limit:
// epochs go up to 2^40). So, per sequencer:
// - an epoch already delivered (below the sequencer's frontier, the lowest
//   epoch not yet delivered, or recorded above it) is a duplicate: dropped
//   and counted, never an error (the schedulers have it already);
// - an epoch at or beyond merged_epoch + window_epochs is too far ahead:
//   refused and counted (a stall if a real one is refused, never a
//   divergence; a resend after the merge caught up is taken);
// - otherwise it is taken.
// Memory: per sequencer at most window_epochs recorded epochs (every
// recorded epoch lies between the frontier and merged_epoch + window, and
// the frontier is >= merged_epoch: nothing undelivered is merged).
//
// merged_epoch: the caller's lowest epoch not yet merged by every local
// scheduler (Engine::merged_epoch()).
//
// Thread-safety: not thread-safe; the engine calls it under a mutex.
#ifndef DETDB_SCHEDULER_PEER_BATCH_WINDOW_H_
#define DETDB_SCHEDULER_PEER_BATCH_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

namespace detdb {

class PeerBatchWindow {
 public:
  enum class Verdict { kAccept, kDuplicate, kTooFarAhead };

  // Sequencer ids are 0 .. num_sequencers - 1; epochs start at first_epoch.
  // REQUIRES: window_epochs >= 1.
  PeerBatchWindow(uint32_t num_sequencers, uint64_t first_epoch, uint64_t window_epochs);

  // What Record would say, changing nothing. REQUIRES: sequencer in range.
  Verdict Classify(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch) const;
  // Classify, and on kAccept records (sequencer, epoch) as delivered.
  Verdict Record(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch);

  uint64_t window_epochs() const { return window_; }
  // The lowest epoch of `sequencer` not delivered yet.
  uint64_t frontier(uint32_t sequencer) const { return seqs_[sequencer].next; }
  // Epochs recorded above the frontiers, over all sequencers (bounded by
  // num_sequencers * window_epochs).
  size_t recorded_above() const;

  static const char* Name(Verdict v);

 private:
  struct Seq {
    uint64_t next = 0;         // lowest epoch not delivered
    std::set<uint64_t> above;  // delivered epochs > next
  };
  const uint64_t window_;
  std::vector<Seq> seqs_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PEER_BATCH_WINDOW_H_
