// Checkpoints: the state of a node's partitions at one epoch boundary,
// written while txns keep running, so that recovery loads the newest
// checkpoint and replays only the input log after it, and the log can be
// cut behind it. See docs/DURABILITY.md, section "Checkpoints".
//
// Capture (Engine::Checkpoint drives it): with the schedulers paused at the
// boundary, ForkCapture fork()s; the kernel's copy-on-write keeps the
// child's view of the stores frozen at the boundary while the parent's
// schedulers resume at once. The child streams the stores into a pipe
// (write(2) only: no logging, no locks another thread could hold, no
// malloc: the table ids, the output buffer and the sort scratch are
// allocated by the parent before the fork) and _exit()s. The child dies
// with the thread that forked it (PR_SET_PDEATHSIG), holds no fd but the
// pipe's write end and dumps no core. ReceiveCapture, in the parent, reads
// the pipe (poll, with a deadline and a cancel check: a stuck or cancelled
// child is SIGKILLed and reaped) into a temp file of a unique name
// (DIR/ckpt-<epoch>.ckpt.<nonce>.tmp) through a FileSystem, checks the
// header, appends the layer above's client state section and the trailer
// (length, CRC32C) and fsyncs it; PublishCheckpoint renames it into place
// and fsyncs the directory; PruneCheckpoints keeps the newest `keep` (in a
// cluster: what CheckpointAgreement says, scheduler/checkpoint_agreement.h).
//
// File format (integers little-endian):
//   0   4  magic "DCKP" (0x504B4344)
//   4   2  format version (2; version 1 files are still read)
//   6   2  flags (0)
//   8   8  epoch E: every txn of epochs <= E applied, none later
//  16   8  config hash (of the cluster config; 0 in one process)
//  24   8  last txn id of epochs <= E (one process: dense ids continue after it)
//  32   4  partition count n
//  36   4  version 2: CRC32C of the payloads of epoch E's records in this
//          node's input log, in log order (0: not recorded); version 1: 0.
//          A checkpoint whose E differs from the log's E was taken in
//          another history (e.g. epochs cut and sequenced anew): refused.
//  40  4n  partition ids
//  then per partition: u32 partition id, u32 table count; per table:
//      u32 table id, u32 value size, u64 record count, then per record in
//      increasing key order: u64 key, value bytes
//  version 2: then the client state section, written by the parent:
//      u64 length, that many bytes (CheckpointOptions::client_state;
//      length 0 without it). Version 1 files (no section) are still read:
//      their client state is empty.
//  end-12  8  content length (bytes before this trailer)
//  end-4   4  CRC32C of the content
//
// Thread-safety: free functions; WriteCheckpointContent runs in the forked
// child. The stores passed to ForkCapture must not be written during the
// call (the caller pauses the schedulers).
#ifndef DETDB_SCHEDULER_CHECKPOINT_H_
#define DETDB_SCHEDULER_CHECKPOINT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/types.h"
#include "io/file_system.h"
#include "storage/partition_store.h"

namespace detdb {

inline constexpr uint32_t kCheckpointMagic = 0x504B4344;  // "DCKP"
inline constexpr uint16_t kCheckpointVersion = 2;
inline constexpr size_t kCheckpointTrailerBytes = 12;

struct CheckpointOptions {
  std::string dir;           // empty: no checkpoints
  FileSystem* fs = nullptr;  // PosixFileSystem() if null
  uint32_t keep = 2;         // checkpoints kept (the log is cut behind the oldest)
  // A cluster: at most this many checkpoints newer than the newest one every
  // node holds are kept (a peer that never publishes must not fill the
  // disk); the oldest beyond are pruned and logged (CheckpointAgreement).
  uint32_t max_uncommon = 8;
  uint64_t max_bytes = 64ull << 30;  // a larger file is refused unread
  // Crash points (tests): "ckpt_written" (temp file written, not synced),
  // "ckpt_synced" (temp synced, not renamed), "ckpt_renamed" (renamed, the
  // directory not synced), "ckpt_published" (directory synced, nothing
  // pruned). A hook returning true stops the checkpoint there (Aborted), as
  // a crash would; detdb's hook SIGKILLs the process.
  std::function<bool(std::string_view point)> crash_hook = {};
  // State of the layer above that must survive with the checkpoint, as
  // opaque bytes (deploy: the client endpoint's exactly-once table): the
  // file's client state section. client_state(E), if set, is called by
  // ReceiveCapture in the parent once the child's content is in (the
  // engine first waits until every result of epochs <= E has been handed
  // to its clients); its error fails the checkpoint. restore_client_state,
  // if set, gets the section at recovery (empty for a version 1 file),
  // before the log after the checkpoint is replayed; its error fails Start.
  std::function<absl::StatusOr<std::string>(uint64_t epoch)> client_state = {};
  std::function<absl::Status(std::string_view bytes)> restore_client_state = {};
  // Tests: the forked child sleeps this long before writing (a stuck capture).
  std::chrono::milliseconds test_child_stall{0};
};

struct CheckpointMeta {
  uint64_t epoch = 0;
  uint64_t config_hash = 0;
  TxnId last_txn_id = 0;
  std::vector<PartitionId> partitions;
  // CRC32C of the payloads of epoch E's log records here (0: not recorded).
  uint32_t log_crc = 0;
};

// ckpt-<20 digits>.ckpt: name order is epoch order.
std::string CheckpointName(uint64_t epoch);
std::optional<uint64_t> ParseCheckpointName(std::string_view name);
// A fresh temp path for one capture attempt of epoch:
// DIR/ckpt-<20 digits>.ckpt.<pid>-<sequence>-<time>.tmp, unique per attempt.
std::string CheckpointTempPath(const CheckpointOptions& options, uint64_t epoch);
// Whether name (no directory) is a checkpoint temp file, of this or of the
// older form ckpt-<20 digits>.ckpt.tmp.
bool IsCheckpointTempName(std::string_view name);

// What the forked child uses, all allocated before the fork.
struct CaptureBuffers {
  std::vector<std::vector<uint32_t>> table_ids;  // per store, increasing
  const Record** sort = nullptr;                 // >= every table's size() entries
  size_t sort_capacity = 0;
  char* out = nullptr;  // the write buffer
  size_t out_bytes = 0;
};

// The forked child's side: the content (header and partitions, no trailer)
// to fd through buffers.out. Only write(2), no allocation; returns false on
// a write error or a table larger than buffers.sort_capacity.
// REQUIRES: stores[i] holds partition meta.partitions[i] and has the tables
// buffers.table_ids[i]; no writer runs.
bool WriteCheckpointContent(int fd, const CheckpointMeta& meta, const std::vector<const PartitionStore*>& stores,
                            const CaptureBuffers& buffers);

// A running capture child, and how ReceiveCapture treats it (the caller
// may set the last four before calling it).
struct ForkedCapture {
  pid_t pid = -1;
  int read_fd = -1;
  std::string tmp_path;  // empty: ReceiveCapture picks CheckpointTempPath
  // Past it, or once cancelled() returns true (polled every ~20 ms), the
  // child is SIGKILLed and reaped, the temp file removed:
  // DeadlineExceeded / Cancelled.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> cancelled;
  // Called once, right after the child is reaped (before the client state
  // and the fsync), if set: the engine lets reclamation free again then.
  std::function<void()> on_reaped;
};
// Forks a child that streams the stores into a pipe and exits. The caller
// may let writers run again as soon as this returns. test_child_stall: see
// CheckpointOptions. REQUIRES: no writer runs during the call (the table
// sizes read before the fork size the child's sort scratch).
absl::StatusOr<ForkedCapture> ForkCapture(const CheckpointMeta& meta,
                                          const std::vector<const PartitionStore*>& stores,
                                          std::chrono::milliseconds test_child_stall = std::chrono::milliseconds(0));

struct CheckpointStats {
  uint64_t epoch = 0;
  uint64_t bytes = 0;   // of the file
  std::string path;     // the published file
  double pause_ms = 0;  // schedulers paused at the boundary (filled by the engine)
  double fork_ms = 0;   // of which fork()
  double lock_ms = 0;   // of which taking S on every local partition (the workers' cached intents given back)
  double write_ms = 0;  // child streaming + temp file written and synced
  double total_ms = 0;  // request to published (filled by the engine)
};

// Reads the child's bytes into a new temp file (AlreadyExists if its name
// exists), checks that they hold at least a whole header of `epoch`, reaps
// the child (a failed waitpid is an error), adds the client state section
// (options.client_state) and the trailer, fsyncs it. Returns the temp
// file's path; on error the temp file is removed (if this call created it)
// and the child killed if still running, and reaped.
absl::StatusOr<std::string> ReceiveCapture(const ForkedCapture& capture, const CheckpointOptions& options,
                                           uint64_t epoch, CheckpointStats* stats);
// Renames the temp file to its final name and fsyncs the directory.
absl::Status PublishCheckpoint(const CheckpointOptions& options, const std::string& tmp_path, uint64_t epoch);
// Removes every checkpoint not in `keep` (default: all but the newest
// options.keep; a cluster passes CheckpointAgreement's plan) and the temp
// files of attempts that are not in flight (in_flight(name) false; null:
// none is), then fsyncs the directory. Returns the epochs kept, oldest
// first. Quarantined files (below) are neither counted nor removed.
// in_flight is asked after the directory is listed: a capture that
// registers its temp name before creating the file is never removed.
absl::StatusOr<std::vector<uint64_t>> PruneCheckpoints(
    const CheckpointOptions& options, const std::optional<std::vector<uint64_t>>& keep = std::nullopt,
    const std::function<bool(std::string_view tmp_name)>& in_flight = nullptr);
// Epochs of the checkpoint files in dir, newest first (none if dir is
// missing). Only exact names count: not temp files, not quarantined ones.
absl::StatusOr<std::vector<uint64_t>> ListCheckpoints(const CheckpointOptions& options);
// Renames the checkpoints of these epochs to <name>.bad (kept for
// inspection; never listed, counted, loaded or removed by the code), then
// fsyncs the directory. Recovery quarantines the files it rejects and those
// after the epoch the cluster resumes at.
absl::Status QuarantineCheckpoints(const CheckpointOptions& options, const std::vector<uint64_t>& epochs);
inline constexpr char kQuarantineSuffix[] = ".bad";

// A checkpoint file read and checked (magic, version, length, CRC, header,
// structure): DataLoss naming the file otherwise.
struct LoadedCheckpoint {
  CheckpointMeta meta;
  std::string path;
  std::string bytes;
  std::string client_state;  // the client state section (empty in a version 1 file)
};
absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const CheckpointOptions& options, uint64_t epoch);

// Replaces the contents of the stores with the checkpoint's: stores[p] is
// partition p's store (nullptr if not local). FailedPrecondition if the
// checkpoint's partitions differ from the local ones or a table differs
// (missing, other value size). REQUIRES: no thread uses the stores.
absl::Status RestoreCheckpoint(const LoadedCheckpoint& checkpoint, const std::vector<PartitionStore*>& stores);

}  // namespace detdb

#endif  // DETDB_SCHEDULER_CHECKPOINT_H_
