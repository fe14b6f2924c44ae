// Engine: detdb in one process (the single-machine multicore mode). One
// sequencer, `partitions` partitions each with its own store and scheduler
// (lock thread + workers), and an in-process transport between them.
//
//   Engine::Create(options, partitioner, procedures) -> load data through
//   store(p) -> RegisterClient(c) -> Start() -> Submit()... -> Stop()
//
// INPUT:  Submit/SubmitMany from client threads (validated before sequencing).
// OUTPUT: TxnClient::OnResult once per accepted txn, on a worker thread.
//
// Thread-safety: Submit* are thread-safe; the rest belongs to one owner thread.
#ifndef DETDB_SCHEDULER_ENGINE_H_
#define DETDB_SCHEDULER_ENGINE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/partitioner.h"
#include "lockmgr/lock_manager.h"
#include "proto/detdb.pb.h"
#include "scheduler/procedure.h"
#include "scheduler/scheduler.h"
#include "scheduler/transport.h"
#include "sequencer/sequencer.h"
#include "storage/partition_store.h"

namespace detdb {

class TxnClient {
 public:
  virtual ~TxnClient() = default;
  // Called once per txn the client submitted, from a worker thread.
  virtual void OnResult(const pb::TxnResult& result) = 0;
};

struct EngineOptions {
  uint32_t workers = 1;               // per partition
  std::string lock_manager = "dclp";
  LockManagerOptions lock;
  uint64_t epoch_us = 1000;
  size_t max_pending = 1u << 20;      // accepted, not yet answered; more is refused (Unavailable)
  size_t max_keys_per_txn = 10000;    // larger txns are rejected
  bool record_history = false;        // keep every batch (for replay by tests)
};

struct EngineStats {
  uint64_t submitted = 0, replied = 0, rejected = 0, epochs = 0;
  std::vector<SchedulerStats> partitions;
};

class Engine final : public BatchSink, public ReplySink {
 public:
  // partitioner and procedures must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options,
                                                        const Partitioner* partitioner,
                                                        const ProcedureRegistry* procedures);
  ~Engine() override;

  uint32_t num_partitions() const { return static_cast<uint32_t>(stores_.size()); }
  // For loading before Start() and for digests after Stop().
  PartitionStore* store(PartitionId p) { return stores_[p].get(); }

  // REQUIRES: before Start(). Returns the client id to put in its txns.
  uint64_t RegisterClient(TxnClient* client);

  // FailedPrecondition unless every partition has the same tables (ids and
  // value sizes): executors validate writes against their own schema, so a
  // difference could make them disagree on a txn.
  absl::Status Start();
  // Stops accepting, waits until every accepted txn has been answered (up to
  // drain_timeout), then stops every thread. Returns DeadlineExceeded if
  // txns were still running.
  absl::Status Stop(std::chrono::milliseconds drain_timeout = std::chrono::seconds(60));

  // Validates and queues txn. InvalidArgument (unknown type, unknown table,
  // unregistered client, too many keys) or Unavailable (stopped, overloaded).
  absl::Status Submit(pb::Txn txn);
  // All or nothing; clears *txns on success.
  absl::Status SubmitMany(std::vector<pb::Txn>* txns);

  // XXH3 over every partition's digest, in partition order. REQUIRES: stopped.
  uint64_t Digest() const;
  EngineStats stats() const;
  // Lock statistics per partition. REQUIRES: stopped.
  std::vector<LockStats> lock_stats() const;
  // Every batch in order; empty unless options.record_history.
  std::vector<std::shared_ptr<const pb::Batch>> history() const;

  // BatchSink (sequencer thread) and ReplySink (workers).
  void OnBatch(std::shared_ptr<const pb::Batch> batch) override;
  void OnTxnResult(const pb::Txn& txn, pb::TxnResult result) override;

 private:
  Engine(const EngineOptions& options, const Partitioner* partitioner, const ProcedureRegistry* procedures);
  absl::Status Validate(const pb::Txn& txn) const;
  absl::Status Admit(size_t n);

  const EngineOptions options_;
  const Partitioner* const partitioner_;
  const ProcedureRegistry* const procedures_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;
  std::unique_ptr<InProcessTransport> transport_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
  std::unique_ptr<Sequencer> sequencer_;
  std::vector<TxnClient*> clients_;
  bool started_ = false, stopped_ = false;

  std::atomic<uint64_t> submitted_{0}, replied_{0}, rejected_{0};
  mutable std::mutex history_mu_;
  std::vector<std::shared_ptr<const pb::Batch>> history_;  // guarded by history_mu_
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ENGINE_H_
