// EpochBatcher: what the sequencer stage does, without a thread. Txns are
// added in arrival order; Close() ends the current epoch and returns its
// batch with every txn's global id, readers and writers filled in.
//
// Global ids: id = epoch << 24 | sequencer_id << 18 | index. They increase in
// the order every scheduler merges batches in, (epoch, sequencer id, index),
// are unique across sequencers, and leave 40 bits of epochs (35 years of
// 1 ms epochs). An epoch holds at most kMaxTxnsPerEpoch txns; Add() refuses
// more and the caller keeps them for the next epoch.
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

  static constexpr TxnId MakeTxnId(uint64_t epoch, uint32_t sequencer_id, uint32_t index) {
    return (epoch << 24) | (uint64_t{sequencer_id} << 18) | index;
  }
  static constexpr uint64_t EpochOf(TxnId id) { return id >> 24; }

  // REQUIRES: sequencer_id < kMaxSequencers; partitioner outlives this.
  EpochBatcher(uint32_t sequencer_id, const Partitioner* partitioner, uint64_t first_epoch = 1);

  // Adds txn to the open epoch. Returns false (and leaves txn untouched) if
  // the epoch is full.
  bool Add(pb::Txn* txn);

  // Closes the open epoch (also when empty) and opens the next.
  std::shared_ptr<pb::Batch> Close();

  uint64_t epoch() const { return epoch_; }
  size_t pending() const { return batch_->txns_size(); }

 private:
  const uint32_t sequencer_id_;
  const Partitioner* const partitioner_;
  uint64_t epoch_;
  std::shared_ptr<pb::Batch> batch_;
  std::vector<uint32_t> scratch_;
};

}  // namespace detdb

#endif  // DETDB_SEQUENCER_EPOCH_BATCHER_H_
