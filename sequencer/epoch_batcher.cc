#include "sequencer/epoch_batcher.h"

#include <algorithm>

#include "glog/logging.h"

namespace detdb {

EpochBatcher::EpochBatcher(uint32_t sequencer_id, const Partitioner* partitioner, uint64_t first_epoch,
                           TxnId first_id, IdScheme scheme)
    : sequencer_id_(sequencer_id), partitioner_(partitioner), scheme_(scheme), epoch_(first_epoch),
      next_id_(first_id) {
  CHECK_LT(sequencer_id, kMaxSequencers);
  CHECK(scheme == IdScheme::kDense || first_epoch > 0);
  batch_ = std::make_shared<pb::Batch>();
  batch_->set_sequencer_id(sequencer_id_);
  batch_->set_epoch(epoch_);
}

namespace {
// Sorted, deduplicated partitions of `keys`. The common cases, one
// partition in all or all keys in one, skip the sort.
void PartitionsOf(const google::protobuf::RepeatedField<uint64_t>& keys, const Partitioner& p,
                  std::vector<uint32_t>* scratch, google::protobuf::RepeatedField<uint32_t>* out) {
  out->Clear();
  if (keys.empty()) return;
  if (p.num_partitions() == 1) {  // PartitionOf < num_partitions(): always 0
    out->Add(0);
    return;
  }
  scratch->clear();
  bool one = true;
  for (uint64_t k : keys) {
    scratch->push_back(p.PartitionOf(k));
    one = one && scratch->back() == scratch->front();
  }
  if (one) {
    out->Add(scratch->front());
    return;
  }
  std::sort(scratch->begin(), scratch->end());
  scratch->erase(std::unique(scratch->begin(), scratch->end()), scratch->end());
  for (uint32_t x : *scratch) out->Add(x);
}
}  // namespace

void EpochBatcher::SetParticipants(pb::Txn* txn, const Partitioner& partitioner, std::vector<uint32_t>* scratch) {
  if (txn->has_table_op()) {  // every partition writes (its part of) the table
    txn->clear_readers();
    txn->clear_writers();
    for (uint32_t p = 0; p < partitioner.num_partitions(); ++p) txn->add_writers(p);
    return;
  }
  PartitionsOf(txn->read_set(), partitioner, scratch, txn->mutable_readers());
  PartitionsOf(txn->write_set(), partitioner, scratch, txn->mutable_writers());
}

bool EpochBatcher::Add(pb::Txn* txn) {
  const int index = batch_->txns_size();
  if (static_cast<uint32_t>(index) >= kMaxTxnsPerEpoch) return false;
  // An upper bound of the encoded size, without ByteSizeLong's walk of
  // every field: a key is a varint of at most 10 bytes, and each key adds
  // at most one reader or writer partition (at most 5 bytes); 64 covers the
  // ids, the type and the framing.
  size_t bytes = 64 + txn->args().size() + 15 * static_cast<size_t>(txn->read_set_size() + txn->write_set_size());
  if (txn->has_table_op()) bytes += txn->table_op().ByteSizeLong() + 5 * size_t{partitioner_->num_partitions()};
  if (index > 0 && batch_bytes_ + bytes > kMaxBatchBytes) return false;
  batch_bytes_ += bytes;
  pb::Txn* t = batch_->add_txns();
  t->Swap(txn);
  t->set_id(scheme_ == IdScheme::kDense ? next_id_++
                                        : EpochSequencerId(epoch_, sequencer_id_, static_cast<uint32_t>(index)));
  SetParticipants(t, *partitioner_, &scratch_);
  return true;
}

std::shared_ptr<pb::Batch> EpochBatcher::Close() {
  std::shared_ptr<pb::Batch> out = std::move(batch_);
  ++epoch_;
  batch_bytes_ = 0;
  CHECK(scheme_ == IdScheme::kDense || epoch_ < kMaxEpoch) << "epoch numbers exhausted";
  batch_ = std::make_shared<pb::Batch>();
  batch_->set_sequencer_id(sequencer_id_);
  batch_->set_epoch(epoch_);
  return out;
}

}  // namespace detdb
