// EpochBatcher: what the sequencer stage does, without a thread. Txns are
// added in arrival order; Close() ends the current epoch and returns its
// batch with every txn's global id, readers and writers filled in.
//
// Ids, IdScheme::kDense (one sequencer): dense positions in the global
// order, 1, 2, 3, ... They do not depend on where epoch boundaries fell, so
// the same stream of requests gets the same ids (and procedures that derive
// values from ids write the same state) in every run.
// IdScheme::kEpochSequencer (cluster mode, several sequencers): id =
// epoch << 24 | sequencer << 18 | index in the batch. Every sequencer can
// assign these alone, and they increase in the merged order (epoch, then
// sequencer, then index). Epochs must stay below 2^40.
// An epoch holds at most kMaxTxnsPerEpoch txns and about kMaxBatchBytes of
// them (a batch must fit a network frame); Add() refuses more and the caller
// keeps them for the next epoch. The first txn of an epoch always fits.
//
// Thread-safety: not thread-safe; owned by the sequencer thread.
#ifndef DETDB_SEQUENCER_EPOCH_BATCHER_H_
#define DETDB_SEQUENCER_EPOCH_BATCHER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "common/partitioner.h"
#include "proto/detdb.pb.h"

namespace detdb {

class EpochBatcher {
 public:
  static constexpr uint32_t kMaxSequencers = 64;
  static constexpr uint32_t kMaxTxnsPerEpoch = 1u << 18;
  static constexpr size_t kMaxBatchBytes = size_t{64} << 20;
  static constexpr uint64_t kMaxEpoch = uint64_t{1} << 40;  // kEpochSequencer ids

  // REQUIRES: sequencer_id < kMaxSequencers; partitioner outlives this.
  enum class IdScheme { kDense, kEpochSequencer };
  static constexpr TxnId EpochSequencerId(uint64_t epoch, uint32_t sequencer, uint32_t index) {
    return epoch << 24 | static_cast<uint64_t>(sequencer) << 18 | index;
  }

  EpochBatcher(uint32_t sequencer_id, const Partitioner* partitioner, uint64_t first_epoch = 1,
               TxnId first_id = 1, IdScheme scheme = IdScheme::kDense);

  // Sets txn's readers and writers: the sorted partitions of its read and
  // write sets (a table operation: no readers, every partition a writer).
  // scratch is reused memory.
  static void SetParticipants(pb::Txn* txn, const Partitioner& partitioner, std::vector<uint32_t>* scratch);
  // The (epoch, sequencer, index) of a kEpochSequencer id.
  static uint64_t IdEpoch(TxnId id) { return id >> 24; }
  static uint32_t IdSequencer(TxnId id) { return static_cast<uint32_t>(id >> 18) & 63; }
  static uint32_t IdIndex(TxnId id) { return static_cast<uint32_t>(id) & (kMaxTxnsPerEpoch - 1); }

  // Adds txn to the open epoch. Returns false (and leaves txn untouched) if
  // the epoch is full.
  bool Add(pb::Txn* txn);

  // Closes the open epoch (also when empty) and opens the next.
  std::shared_ptr<pb::Batch> Close();

  uint64_t epoch() const { return epoch_; }
  TxnId next_id() const { return next_id_; }
  size_t pending() const { return batch_->txns_size(); }

 private:
  const uint32_t sequencer_id_;
  const Partitioner* const partitioner_;
  const IdScheme scheme_;
  uint64_t epoch_;
  TxnId next_id_;
  std::shared_ptr<pb::Batch> batch_;
  size_t batch_bytes_ = 0;
  std::vector<uint32_t> scratch_;
};

}  // namespace detdb

#endif  // DETDB_SEQUENCER_EPOCH_BATCHER_H_
