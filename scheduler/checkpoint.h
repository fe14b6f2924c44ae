// Checkpoints: the state of a node's partitions at one epoch boundary,
// written while txns keep running, so that recovery loads the newest
// checkpoint and replays only the input log after it, and the log can be
// cut behind it. See docs/DURABILITY.md, section "Checkpoints".
//
// Capture (Engine::Checkpoint drives it): with the schedulers paused at the
// boundary, ForkCapture fork()s; the kernel's copy-on-write keeps the
// child's view of the stores frozen at the boundary while the parent's
// schedulers resume at once. The child streams the stores into a pipe
// (write(2) only: no logging, no locks another thread could hold; the one
// allocation is ForEachInKeyOrder's vector, and glibc's and tcmalloc's
// malloc are fork-safe) and _exit()s. ReceiveCapture, in the parent, reads
// the pipe into DIR/ckpt-<epoch>.ckpt.tmp through a FileSystem, appends the
// layer above's client state section and the trailer (length, CRC32C) and
// fsyncs it; PublishCheckpoint renames it into place and fsyncs the
// directory; PruneCheckpoints keeps the newest `keep` (in a cluster: what
// CheckpointAgreement says, scheduler/checkpoint_agreement.h).
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
  uint64_t max_bytes = 64ull << 30;  // a larger file is refused unread
  // Crash points (tests): "ckpt_written" (temp file written, not synced),
  // "ckpt_synced" (temp synced, not renamed), "ckpt_renamed" (renamed, the
  // directory not synced), "ckpt_published" (directory synced, nothing
  // pruned). A hook returning true stops the checkpoint there (Aborted), as
  // a crash would; detdb's hook SIGKILLs the process.
  std::function<bool(std::string_view point)> crash_hook;
  // State of the layer above that must survive with the checkpoint, as
  // opaque bytes (deploy: the client endpoint's exactly-once table): the
  // file's client state section. client_state(E), if set, is called by
  // ReceiveCapture in the parent once the child's content is in (the
  // engine first waits until every result of epochs <= E has been handed
  // to its clients); its error fails the checkpoint. restore_client_state,
  // if set, gets the section at recovery (empty for a version 1 file),
  // before the log after the checkpoint is replayed; its error fails Start.
  std::function<absl::StatusOr<std::string>(uint64_t epoch)> client_state;
  std::function<absl::Status(std::string_view bytes)> restore_client_state;
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

// The forked child's side: the content (header and partitions, no trailer)
// to fd through buf. Only write(2); returns false on a write error.
// REQUIRES: stores[i] holds partition meta.partitions[i]; no writer runs.
bool WriteCheckpointContent(int fd, const CheckpointMeta& meta, const std::vector<const PartitionStore*>& stores,
                            char* buf, size_t buf_bytes);

struct ForkedCapture {
  pid_t pid = -1;
  int read_fd = -1;
};
// Forks a child that streams the stores into a pipe and exits. The caller
// may let writers run again as soon as this returns.
absl::StatusOr<ForkedCapture> ForkCapture(const CheckpointMeta& meta,
                                          const std::vector<const PartitionStore*>& stores);

struct CheckpointStats {
  uint64_t epoch = 0;
  uint64_t bytes = 0;   // of the file
  std::string path;     // the published file
  double pause_ms = 0;  // schedulers paused at the boundary (filled by the engine)
  double fork_ms = 0;   // of which fork()
  double write_ms = 0;  // child streaming + temp file written and synced
  double total_ms = 0;  // request to published (filled by the engine)
};

// Reads the child's bytes into the temp file, reaps the child, adds the
// client state section (options.client_state) and the trailer, fsyncs it.
// Returns the temp file's path; on error the temp file is removed (if it
// can be) and the child reaped.
absl::StatusOr<std::string> ReceiveCapture(const ForkedCapture& capture, const CheckpointOptions& options,
                                           uint64_t epoch, CheckpointStats* stats);
// Renames the temp file to its final name and fsyncs the directory.
absl::Status PublishCheckpoint(const CheckpointOptions& options, const std::string& tmp_path, uint64_t epoch);
// Removes every checkpoint not in `keep` (default: all but the newest
// options.keep; a cluster passes CheckpointAgreement's plan) and leftover
// temp files, then fsyncs the directory. Returns the epochs kept, oldest
// first. Quarantined files (below) are neither counted nor removed.
absl::StatusOr<std::vector<uint64_t>> PruneCheckpoints(const CheckpointOptions& options,
                                                       const std::optional<std::vector<uint64_t>>& keep = std::nullopt);
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
