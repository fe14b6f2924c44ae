// Sequencer: collects client txns and, every epoch_us, closes an epoch and
// emits its batch (empty ones too, so schedulers can advance).
//
// INPUT:  Submit()/SubmitMany() from any thread (clients, the network).
// OUTPUT: BatchSink::OnBatch(batch) once per epoch, in epoch order, on the
//         sequencer's own thread. The batch is self-contained: the unit the
//         input log persists and that is split into per-partition sub-batches.
//
// The stage's logic is EpochBatcher; this class is the thread that runs it.
// Thread-safety: Submit* are thread-safe; Start/Stop from one owner thread.
#ifndef DETDB_SEQUENCER_SEQUENCER_H_
#define DETDB_SEQUENCER_SEQUENCER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/partitioner.h"
#include "proto/detdb.pb.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {

class BatchSink {
 public:
  virtual ~BatchSink() = default;
  // Called on the sequencer thread, once per epoch, in epoch order.
  virtual void OnBatch(std::shared_ptr<const pb::Batch> batch) = 0;
};

struct SequencerOptions {
  uint32_t sequencer_id = 0;
  uint64_t epoch_us = 1000;         // epoch length
  size_t max_pending = 1u << 20;    // submitted, not yet batched; more is refused
  // Cluster mode: epoch e (from 1) closes at wall-clock time start_us +
  // e * epoch_us (microseconds since the Unix epoch, system_clock), so that
  // every node's sequencer closes epoch e at about the same moment. A
  // sequencer that falls behind closes the missed epochs at once (it never
  // skips an epoch number). 0: epochs follow this process's steady clock.
  uint64_t start_us = 0;
  EpochBatcher::IdScheme id_scheme = EpochBatcher::IdScheme::kDense;
  // The first epoch and (kDense) the first txn id: a node that recovered
  // its input log up to epoch E continues at E + 1 with the ids after the
  // log's last. With start_us set, epoch first_epoch - 1 + k closes at
  // start_us + k * epoch_us.
  uint64_t first_epoch = 1;
  TxnId first_id = 1;
};

class Sequencer {
 public:
  // partitioner and sink must outlive the sequencer.
  Sequencer(const SequencerOptions& options, const Partitioner* partitioner, BatchSink* sink);
  ~Sequencer();  // stops

  // start_us: see SequencerOptions::start_us (overrides it when nonzero).
  void Start(uint64_t start_us = 0);
  // REQUIRES: before Start. Overrides SequencerOptions::first_epoch and
  // first_id (a node continuing after its recovered input log).
  void ResumeAt(uint64_t first_epoch, TxnId first_id);
  // Closes a last epoch holding everything submitted so far, then stops.
  // Submissions after Stop() are refused.
  void Stop();

  // Queues txn for the next epoch. Unavailable when stopped or overloaded.
  absl::Status Submit(pb::Txn txn);
  // Queues every txn of *txns (in order) and clears it; all or none. The
  // vector itself is taken whole (no txn is moved) and replaced by an empty
  // one, with the capacity of an earlier caller's when there is one.
  absl::Status SubmitMany(std::vector<pb::Txn>* txns);

  // The last epoch closed (first_epoch - 1 before any).
  uint64_t epochs_closed() const { return epochs_closed_.load(std::memory_order_relaxed); }
  // The epoch now open (the next batch's epoch).
  uint64_t open_epoch() const { return epochs_closed() + 1; }

 private:
  void Run();
  void CloseEpoch();

  const SequencerOptions options_;
  uint64_t start_us_ = 0;  // set by Start, read by the sequencer thread
  BatchSink* const sink_;
  const Partitioner* const partitioner_;
  std::unique_ptr<EpochBatcher> batcher_;  // sequencer thread only (after Start)

  std::mutex mu_;
  std::condition_variable cv_;
  // Submitted txns, not yet batched: groups in submission order, each a
  // vector SubmitMany took whole (or Submit's), so a client's group costs
  // one swap, not a move of each txn. Batched groups come back emptied
  // (their moved-from txns destroyed on the sequencer thread) as spares,
  // which SubmitMany hands to its callers and Submit starts its group
  // with, so their vectors keep capacity. At most kMaxSpares of at most
  // kMaxSpareCapacity txns are kept (a few MB); a caller gets a vector
  // without capacity when none is left (more than kMaxSpares groups per
  // epoch).
  using Group = std::vector<pb::Txn>;
  static constexpr size_t kMaxSpares = 8;
  static constexpr size_t kMaxSpareCapacity = 4096;  // larger ones are freed
  std::vector<Group> incoming_;    // guarded by mu_
  size_t incoming_txns_ = 0;       // guarded by mu_: txns in incoming_
  std::vector<Group> spares_;      // guarded by mu_
  bool stopping_ = false;          // guarded by mu_
  bool accepting_ = true;          // guarded by mu_
  std::vector<pb::Txn> carry_;     // sequencer thread: txns that did not fit an epoch
  std::vector<pb::Txn> carried_;   // sequencer thread: scratch (the last epoch's carry)
  std::vector<Group> taken_;       // sequencer thread: scratch
  std::atomic<uint64_t> epochs_closed_{0};
  std::thread thread_;
};

}  // namespace detdb

#endif  // DETDB_SEQUENCER_SEQUENCER_H_
