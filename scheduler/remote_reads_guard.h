// RemoteReadsGuard: which RemoteReads a partition accepts, and the reads it
// holds for txns it has not taken from its input yet. Pure logic (no
// threads); one per partition, called by the scheduler under remote_mu_.
//
// Why: a rejoining node and its peers resend remote reads, so duplicates
// are normal, and a frame from a peer must be checked as strictly as a
// client's request. Counting any message for a txn (the old scheduler) let
// a duplicate or a forged frame complete a parked txn before a real
// reader's values arrived: that executor ran on wrong reads and diverged.
//
// A message for txn T claiming to come from partition R is accepted only if
//  - this partition took T from its input and executes it with remote reads
//    (Expect(T) was called), else see "early" and "late" below;
//  - R != this partition and R is a reader of T   (else: kForged);
//  - nothing from R was accepted for T yet (else: kDuplicate if the content
//    is the same, a resend; kConflict if it differs and would pass the
//    checks: forgery or divergence, refused and logged as an ERROR every
//    time, never used);
//  - its reads are exactly T's read-set keys on R, in read-set order (what
//    the reader's ReadLocal sends), each either not found with no value or
//    found with a value of its table's size        (else: kForged).
// That the sending node serves R is checked by the PeerLink, which knows the
// sender (CheckReadsSender below). A forged frame that passes all of this
// (right keys, wrong values, sent before the real one) cannot be told from
// a real one without authenticating peers (RELIABILITY.md G7).
//
// Early: reads for a T above the last txn Expect()ed may be for a txn not
// taken yet (another partition ran ahead). They are held, within a window:
//  - when txn ids carry their epoch (cluster mode) and R is on another
//    node, only for T's epoch below max(merged_epoch, clock_epoch) +
//    window_epochs (the window peer batches get), else kTooEarly: an
//    honest peer never sends beyond the wall-clock epoch plus the skew,
//    however far our merge lags, so a held merge never refuses honest
//    reads. Held reads are dropped once T's epoch is two below the merged
//    epoch (every txn of that epoch has been taken by then);
//  - per (T, R), a message of the same content as one held is kDuplicate
//    on arrival; messages of different contents (a forgery before the real
//    one) are held side by side, at most kMaxVariants, else kForged; when T
//    is taken the first that passes the checks is accepted, the others are
//    kForged (failing) or kConflict (passing: a second valid version);
//  - at most max_held_bytes of them in all, else kOverBudget (cluster mode,
//    reads from other nodes only: in single-process mode, and from this
//    process's partitions, nothing is refused as early or over budget);
//  - Expect(T) takes T's held reads (checking each as above) and drops those
//    of lower ids: ids are taken in increasing order, so those txns are not
//    executed here with remote reads.
// A (T, R) refused early or over budget is remembered (bounded); if T is
// later expected, Expect logs an ERROR and counts dropped_expected: that
// txn waits for reads nobody resends (never silently).
// Late: reads for a T at or below the last id Expect()ed that is not
// expected (finished here, or not executed here): kLate, dropped.
// A refused message is the caller's to count and log; the guard counts
// verdicts in stats().
//
// Thread-safety: not thread-safe.
#ifndef DETDB_SCHEDULER_REMOTE_READS_GUARD_H_
#define DETDB_SCHEDULER_REMOTE_READS_GUARD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common/partitioner.h"
#include "common/types.h"
#include "proto/detdb.pb.h"

namespace detdb {

class PeerLink;

struct RemoteReadsGuardOptions {
  PartitionId self = 0;
  const Partitioner* partitioner = nullptr;  // must outlive the guard
  // The value size of key's table; 0 if the table does not exist.
  std::function<uint32_t(Key)> value_size;
  // Txn ids are EpochBatcher's kEpochSequencer ids (cluster mode).
  bool epoch_in_id = false;
  uint64_t window_epochs = 10000;    // see "Early" above (the engine derives it from peer_window_us)
  uint64_t max_held_bytes = 64u << 20;
  // Partitions of this process: their reads are never refused as early or
  // over budget (they are not untrusted input, and never resent). Null:
  // every partition is local (single-process mode).
  std::function<bool(PartitionId)> is_local;
};

struct RemoteReadsStats {
  uint64_t accepted = 0;     // checked and used
  uint64_t held = 0;         // kept for a txn not taken yet (checked later)
  uint64_t duplicate = 0;    // a second message from the same reader
  uint64_t forged = 0;       // not a reader, from this partition, or wrong keys or values
  uint64_t too_early = 0;    // for an epoch beyond the window
  uint64_t over_budget = 0;  // early, but max_held_bytes are held already
  uint64_t late = 0;         // for a txn taken and not expected (finished, or not executed here)
  uint64_t expired = 0;      // held, then dropped (their txn was not executed here)
  uint64_t dropped_expected = 0;  // a (txn, reader) refused early or over budget, then expected: that txn stalls
  uint64_t conflicting = 0;  // a second valid version of accepted reads (forgery or divergence: logged as ERROR)
  uint64_t held_now = 0, held_bytes = 0;  // early messages held at the moment
  uint64_t refused() const { return duplicate + forged + too_early + over_budget + late + conflicting; }
};

class RemoteReadsGuard {
 public:
  enum class Verdict {
    kDeliver,  // accepted; the txn is parked (Take was called): add it now
    kKept,     // accepted before Take, or held early: the guard keeps it
    kDuplicate,
    kForged,
    kTooEarly,
    kOverBudget,
    kLate,
    kConflict,  // a second valid version of reads accepted already: forgery or divergence
  };
  // Distinct held versions of one (txn, reader) at most.
  static constexpr size_t kMaxVariants = 4;
  // What identifies a message's content (partition, keys, found flags, values).
  static uint64_t ContentHash(const pb::RemoteReads& msg);
  static const char* Name(Verdict v);

  explicit RemoteReadsGuard(const RemoteReadsGuardOptions& options);

  // The lock thread took txn from its input (in id order); this partition
  // executes it and expects reads from its other readers. txn must stay
  // alive until Take and every expected read are done.
  void Expect(const pb::Txn& txn, uint64_t merged_epoch);
  // A worker reached txn `id`'s remote reads: returns (moves into *out) the
  // accepted reads kept for it so far. Later accepted reads are kDeliver.
  // Once every expected reader's reads were taken or delivered, the txn is
  // forgotten (later reads for it are kLate).
  void Take(TxnId id, std::vector<pb::RemoteReads>* out);
  // Classifies msg; keeps it (kKept), gives it back to deliver (kDeliver,
  // msg untouched), or refuses it (the rest). why: the reason, for a log.
  // clock_epoch: the epoch the wall clock is in (cluster mode; 0 if
  // unknown): reads are too early only for an epoch at or beyond
  // max(merged_epoch, clock_epoch) + window_epochs, which no honest peer
  // sends however far behind the merge is.
  Verdict OnReads(pb::RemoteReads* msg, uint64_t merged_epoch, uint64_t clock_epoch, std::string* why);

  RemoteReadsStats stats() const;
  // Txns expected now (taken, not all reads in or not yet Taken).
  size_t expected_now() const { return expected_.size(); }
  // The lowest id of those (0 if none): a rejoin asks its peers again for
  // reads from that txn's epoch on. O(expected_now()).
  TxnId oldest_expected() const {
    TxnId out = 0;
    for (const auto& [id, e] : expected_)
      if (out == 0 || id < out) out = id;
    return out;
  }

 private:
  struct Expected {
    const pb::Txn* txn = nullptr;
    uint32_t remaining = 0;               // readers not heard from
    bool taken = false;                   // Take was called
    std::vector<std::pair<PartitionId, uint64_t>> received;  // readers accepted so far, with ContentHash
    std::vector<pb::RemoteReads> kept;    // accepted before Take
  };
  struct HeldMsg {
    pb::RemoteReads msg;
    uint64_t hash = 0;  // ContentHash
  };
  struct Held {
    std::vector<HeldMsg> msgs;
    uint64_t bytes = 0;
  };
  // Checks msg against e (a reader, right keys and values): kKept if it
  // passes; then kDuplicate/kConflict if its reader was accepted already.
  Verdict Check(const Expected& e, const pb::RemoteReads& msg, uint64_t hash, std::string* why) const;
  // Counts a refusal of Check's in stats_ (and logs a conflict).
  void CountRefused(Verdict v, const std::string& why);
  // Accepts msg (Check said kKept) for e.
  void Accept(Expected* e, PartitionId from, uint64_t hash) {
    ++stats_.accepted;
    e->received.emplace_back(from, hash);
    --e->remaining;
  }
  // Drops held reads whose txn cannot come any more.
  void Expire(uint64_t merged_epoch);
  void DropHeld(std::map<TxnId, Held>::iterator it);
  static uint64_t Bytes(const pb::RemoteReads& msg);

  const RemoteReadsGuardOptions options_;
  absl::flat_hash_map<TxnId, Expected> expected_;
  std::map<TxnId, Held> early_;  // by txn id
  TxnId last_expected_ = 0;      // the highest id Expect()ed
  uint64_t held_bytes_ = 0, held_msgs_ = 0;
  // (txn, reader) refused as early or over budget, so that Expect can say
  // so loudly; bounded (the lowest are forgotten first).
  static constexpr size_t kMaxDropped = 4096;
  std::set<std::pair<TxnId, PartitionId>> dropped_;
  RemoteReadsStats stats_;
};

// What a PeerLink checks of remote reads from node `sender` before handing
// them to a partition: the partition they claim to come from exists and is
// served by the sender. OK or InvalidArgument with the reason.
absl::Status CheckReadsSender(const pb::RemoteReads& msg, uint32_t sender, const PeerLink& link,
                              uint32_t num_partitions);

}  // namespace detdb

#endif  // DETDB_SCHEDULER_REMOTE_READS_GUARD_H_
