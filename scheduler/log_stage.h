// LogStage: a node's input log wired between its sequencer / the network
// and its schedulers, and the durability gate on its replies. detdb logs
// the input (every batch this node's schedulers execute: its own
// sequencer's and, in a cluster, the part of every peer's batch that
// touches its partitions), never the effects; docs/DURABILITY.md.
//
// INPUT:  Add(batch) for every such batch, in any order (the sequencer
//         thread, the network thread); Hold(result) from the engine's reply
//         path (workers, network thread); OnPeerDurable(node, epoch) from
//         the network: a peer's durable epoch, carried on its messages;
//         the log writer's on_durable (writer thread).
// OUTPUT: execute(batch) once per batch: at once (execute ahead: the
//         schedulers run an epoch as soon as it is ordered) or, with
//         log_then_execute, once its epoch is durable here; the batches are
//         appended to the log in merge order (epoch, sequencer), the last
//         sequencer's record marked epoch_end.
//         deliver(result) once the txn's epoch and every earlier one are
//         durable on every node (the cluster durable watermark: the minimum
//         of every node's durable epoch, since every node's input goes into
//         every epoch). Read-only results too. PeerLink::SetDurableEpoch
//         tells the peers ours. fatal(status) once if the log fails (a
//         failed fsync is never retried; nothing after it is delivered).
//
// Recovery: Recover() checks the log (trims a torn tail, refuses other
// damage with file and offset) and returns its last complete epoch L; a
// cluster agrees on R = min over the nodes' L; Open(R) drops what follows
// R, returns epochs <= R for replay, and opens the writer after them. A
// checkpoint supplies the start epoch and state (Open's first_epoch);
// without one replay starts at the log's first epoch.
//
// Thread-safety: Add, Hold, OnPeerDurable and the getters are thread-safe;
// Recover/Open/Close from the engine's owner thread.
#ifndef DETDB_SCHEDULER_LOG_STAGE_H_
#define DETDB_SCHEDULER_LOG_STAGE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "common/types.h"
#include "io/file_system.h"
#include "proto/detdb.pb.h"
#include "scheduler/peer_link.h"
#include "sequencer/input_log.h"

namespace detdb {

struct LogStageOptions {
  std::string dir;                       // empty: no log (replies as soon as executed)
  FileSystem* fs = nullptr;              // PosixFileSystem() if null
  LogSyncMode sync_mode = LogSyncMode::kFsync;
  // Execution waits for the fsync (the comparison mode); default: execute
  // ahead, only replies wait.
  bool log_then_execute = false;
  uint64_t segment_bytes = 64ull << 20;
  uint64_t config_hash = 0;              // of the cluster config; 0 in one process
  // The build id written into every record (detdb: a hash of the sources
  // that decide what a replayed txn does, tools/build_id.cmake). Recovery
  // refuses records of another nonzero build id (FailedPrecondition naming
  // file and offset), unless accept_other_build: then they are replayed
  // with this build (procedures that changed may give other results).
  uint64_t build_id = 0;                 // 0: none written, not checked
  bool accept_other_build = false;
  // An empty batch appended while no reply is held is logged lazily: written
  // and synced with the next batch that has txns, or after this long (idle
  // epochs cost one fdatasync per lazy_sync, not one per epoch). The durable
  // epoch only counts synced records, so the gate stays exact; a reply of a
  // peer may wait up to this long for this node's empty batches. 0: off.
  std::chrono::microseconds lazy_sync{20000};
  // InputLogOptions::min_sync_interval: at least this long between the end
  // of one group's fdatasync and the next group (fewer syncs under load,
  // replies later by up to this much). 0: off.
  std::chrono::microseconds min_sync_interval{0};
  // Crash points (tests): "log_written" (writer thread, after a group's
  // write, before its fdatasync) and "log_synced" (after the fsync, before
  // the replies it releases leave). May end the process.
  std::function<void(std::string_view point)> crash_hook;
};

// What Open hands back for replay.
struct RecoveredInput {
  uint64_t epoch = 0;   // the last epoch replayed (0: empty log)
  TxnId last_id = 0;    // the largest txn id in it (dense ids continue after it)
  std::vector<std::shared_ptr<pb::Batch>> batches;  // in log order
};

class LogStage {
 public:
  using BatchFn = std::function<void(std::shared_ptr<const pb::Batch>)>;
  using ResultFn = std::function<void(pb::TxnResult)>;
  using FatalFn = std::function<void(const absl::Status&)>;

  // epoch_ids: txn ids are EpochBatcher's kEpochSequencer ids (cluster);
  // otherwise dense ids, mapped to epochs through the batches logged.
  // peers may be null (one process).
  LogStage(const LogStageOptions& options, uint32_t num_sequencers, uint32_t self, PeerLink* peers,
           bool epoch_ids, BatchFn execute, ResultFn deliver, FatalFn fatal);
  ~LogStage();

  // crc_epochs: epochs whose EpochCrc the log holds are noted on the way
  // (RecoveredEpochCrc; checkpoints record theirs).
  absl::StatusOr<uint64_t> Recover(const std::vector<uint64_t>& crc_epochs = {});
  // REQUIRES: Recover() ran (FailedPrecondition otherwise: Open truncates
  // after resume_epoch); resume_epoch <= what it returned.
  // first_epoch: the batches handed back start there (recovery from a
  // checkpoint of first_epoch - 1; the log must hold it: DataLoss
  // otherwise); last_id_floor: the checkpoint's last txn id (dense ids).
  // every_node_holds: every node's log holds resume_epoch (the agreed
  // resume of a cluster start), so the watermark starts there; false for a
  // node rejoining a running cluster: the peers' durable epochs count as
  // they report them (OnPeerDurable).
  absl::StatusOr<RecoveredInput> Open(uint64_t resume_epoch, uint64_t first_epoch = 1, TxnId last_id_floor = 0,
                                      bool every_node_holds = true);

  // Called with this node's durable epoch whenever it rises (by Open, and
  // on the writer thread). REQUIRES: before Open.
  void SetDurableHook(std::function<void(uint64_t)> hook) { durable_hook_ = std::move(hook); }
  // True while something outside waits for the durability of epochs here
  // (PeerOutbox): idle epochs are then not logged lazily. REQUIRES: before
  // Open.
  void SetWaitingHook(std::function<bool()> hook) { waiting_hook_ = std::move(hook); }
  // Writes and syncs lazily queued records now (something began to wait).
  // Thread-safe.
  void Hurry();

  void Add(std::shared_ptr<const pb::Batch> batch);
  void Hold(pb::TxnResult result);
  void OnPeerDurable(uint32_t node, uint64_t epoch);

  uint64_t durable_epoch() const { return local_durable_.load(std::memory_order_acquire); }
  uint64_t watermark() const { return watermark_.load(std::memory_order_acquire); }
  uint64_t held() const;
  // CRC32C of the payloads of `epoch`'s records, in log order, once its
  // last record was appended (the last 4096 epochs; nullopt otherwise).
  // Thread-safe.
  std::optional<uint32_t> EpochCrc(uint64_t epoch) const;
  // The same, from the log as Recover() found it (only the epochs it was
  // asked for, only complete ones). Owner thread.
  std::optional<uint32_t> RecoveredEpochCrc(uint64_t epoch) const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // The writer's bytes appended, groups written and fsync latencies (zero
  // before Open). Thread-safe (takes mu_ briefly: for metrics scrapes).
  struct WriterStats {
    uint64_t bytes = 0, groups = 0;
    Histogram::Snapshot sync_seconds;
  };
  WriterStats writer_stats() const;
  // Syncs what is queued and closes the writer; the log's status.
  absl::Status Close();

 private:
  struct Pending {
    std::shared_ptr<const pb::Batch> batch;
    std::string payload;
  };
  // Returns the append error; the caller calls Fail after releasing mu_.
  absl::Status DrainLocked();
  void OnDurable(uint64_t epoch);
  // Raises the watermark (and, dense ids, the id bound) and delivers what it frees.
  void Advance(uint64_t watermark, TxnId dense_bound = 0);
  void Fail(const absl::Status& s);
  RecoveryOptions recovery_options() const;

  const LogStageOptions options_;
  const uint32_t num_sequencers_, self_;
  PeerLink* const peers_;
  const bool epoch_ids_;
  const BatchFn execute_;
  const ResultFn deliver_;
  const FatalFn fatal_;
  std::function<void(uint64_t)> durable_hook_;  // set before Open
  std::function<bool()> waiting_hook_;          // set before Open
  uint64_t recovered_epoch_ = 0;  // owner thread
  std::map<uint64_t, uint32_t> recovered_crcs_;  // owner thread: RecoveredEpochCrc
  bool recovered_ = false;        // owner thread: Recover() ran (Open refuses otherwise)

  mutable std::mutex mu_;
  std::unique_ptr<InputLogWriter> writer_;                          // set by Open
  std::map<std::pair<uint64_t, uint32_t>, Pending> pending_;        // guarded by mu_: not yet appended
  std::pair<uint64_t, uint32_t> next_{1, 0};                        // guarded by mu_: next to append
  std::deque<std::shared_ptr<const pb::Batch>> to_execute_;         // guarded by mu_: log_then_execute
  std::vector<uint64_t> durable_;                                   // guarded by mu_: by node
  TxnId last_id_ = 0;                                               // guarded by mu_ (dense ids)
  bool closed_ = false;                                             // guarded by mu_: Add drops batches
  std::deque<std::pair<uint64_t, TxnId>> epoch_last_id_;            // guarded by mu_ (dense ids)
  uint32_t epoch_crc_ = 0;                                          // guarded by mu_: of next_.first so far
  std::deque<std::pair<uint64_t, uint32_t>> epoch_crcs_;            // guarded by mu_: EpochCrc

  mutable std::mutex gate_mu_;
  uint64_t gate_epoch_ = 0;                // guarded by gate_mu_
  TxnId bound_ = 0;                        // guarded by gate_mu_: ids <= bound_ may leave
  std::vector<pb::TxnResult> held_;        // guarded by gate_mu_

  std::atomic<uint64_t> local_durable_{0}, watermark_{0};
  std::atomic<bool> failed_{false};
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_LOG_STAGE_H_
