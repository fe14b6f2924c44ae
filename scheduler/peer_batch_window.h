// PeerBatchWindow: which batches of other nodes' sequencers an engine takes.
// Pure logic (no threads, no clock); the engine asks it before validating a
// peer's batch and records the batch once it passed validation.
//
// Why: a rejoining node and its peers resend batches, so the same (sequencer,
// epoch) may arrive twice; and an unchecked epoch lets a peer park one batch
// per future epoch in every scheduler's merge queue (memory without limit:
// epochs go up to 2^40). So, per sequencer:
// - an epoch already delivered (below the sequencer's frontier, the lowest
//   epoch not yet delivered, or recorded above it) or below merged_epoch is
//   a duplicate: dropped and counted, never an error (the schedulers have
//   it already);
// - an epoch at or beyond max(base, merged_epoch) + window_epochs is too
//   far ahead: refused and counted. base is the epoch the wall clock is in:
//   an honest peer's sequencer closes epoch e at about start + e x epoch_us,
//   so it never sends beyond base + the clock-skew margin, however far our
//   merge lags (a held merge never makes an honest batch "too far");
// - otherwise it is taken.
// A duplicate whose content hash (the caller's, over what decides execution)
// differs from the one recorded for that (sequencer, epoch) is kConflict:
// forgery or divergence, to refuse loudly. Hashes of the last kRecent
// epochs per sequencer are kept (older duplicates are plain kDuplicate).
// Memory: per sequencer at most window_epochs + (base - merged_epoch)
// recorded epochs (every recorded epoch lies between the frontier, which
// Record moves up to merged_epoch, and max(base, merged) + window).
//
// merged_epoch: the caller's lowest epoch not yet merged by every local
// scheduler (Engine::merged_epoch()); base: the wall-clock epoch (0 if
// unknown).
//
// Thread-safety: not thread-safe; the engine calls it under a mutex.
#ifndef DETDB_SCHEDULER_PEER_BATCH_WINDOW_H_
#define DETDB_SCHEDULER_PEER_BATCH_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace detdb {

class PeerBatchWindow {
 public:
  enum class Verdict { kAccept, kDuplicate, kTooFarAhead, kConflict };
  static constexpr uint64_t kRecent = 4096;

  // Sequencer ids are 0 .. num_sequencers - 1; epochs start at first_epoch.
  // REQUIRES: window_epochs >= 1.
  PeerBatchWindow(uint32_t num_sequencers, uint64_t first_epoch, uint64_t window_epochs);

  // What Record would say, changing nothing. REQUIRES: sequencer in range.
  Verdict Classify(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch, uint64_t base, uint64_t hash) const;
  // Moves the frontier up to merged_epoch, then Classify, and on kAccept
  // records (sequencer, epoch) as delivered.
  Verdict Record(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch, uint64_t base, uint64_t hash);

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
    std::vector<std::pair<uint64_t, uint64_t>> recent;  // (epoch, hash) at epoch % kRecent; allocated on use
  };
  const uint64_t window_;
  std::vector<Seq> seqs_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_PEER_BATCH_WINDOW_H_
