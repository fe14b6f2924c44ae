// The input log: what a node's schedulers execute, made durable before
// anything about it leaves the node. detdb logs the input (each sequencer's
// batch of each epoch, as opaque payload bytes), not the effects; replaying
// the log through the deterministic engine rebuilds the state. See
// docs/DURABILITY.md for the format, the invariants and the decisions.
//
// Three parts:
//  * the record format: EncodeRecord / DecodeRecord;
//  * InputLogWriter: Append() from any thread, one writer thread that writes
//    segment files and does one write and one fdatasync per group of queued
//    records (group commit; one write per segment the group touches), then
//    publishes durable_epoch();
//  * RecoverInputLog: reads the segments in order, checks every CRC and the
//    invariants, trims a torn tail, refuses anything else with an error
//    that names the file and the byte offset.
//
// Invariants of a log (Append enforces them, recovery checks them):
//  I1 records are in strictly increasing (epoch, sequencer id) order, the
//     merge order in which the schedulers execute batches;
//  I2 per sequencer id, epochs are consecutive: a sequencer's next record
//     after epoch e is for epoch e + 1 (its first record may have any epoch);
//  I3 epochs are >= 1; every record carries the node's config hash; no
//     record of epoch e follows the record of e marked epoch_end;
//  I4 an epoch never spans two segments; a segment is named by the epoch of
//     its first record, log-<20 digits>.seg, so name order is log order.
#ifndef DETDB_SEQUENCER_INPUT_LOG_H_
#define DETDB_SEQUENCER_INPUT_LOG_H_

#include <atomic>
#include <condition_variable>
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
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "io/file_system.h"

namespace detdb {

// ---------------------------------------------------------------------------
// Record format (all integers little-endian):
//   offset  size  field
//        0     4  magic "DLOG" (0x474F4C44)
//        4     2  format version (1)
//        6     2  flags: bit 0 "epoch end" (the last record of its epoch); others 0
//        8     8  epoch
//       16     4  sequencer id
//       20     4  payload length L
//       24     8  config hash
//       32     8  build id
//       40     L  payload
//     40+L     4  CRC32C of bytes [0, 40 + L)
// ---------------------------------------------------------------------------
inline constexpr uint32_t kLogMagic = 0x474F4C44;
inline constexpr uint16_t kLogFormatVersion = 1;
inline constexpr uint16_t kLogFlagEpochEnd = 1;
inline constexpr size_t kLogHeaderBytes = 40;
inline constexpr size_t kLogTrailerBytes = 4;

struct LogRecordHeader {
  uint64_t epoch = 0;
  uint32_t sequencer_id = 0;
  uint64_t config_hash = 0;
  uint64_t build_id = 0;
  // The last record of its epoch: no record of this epoch follows (the
  // caller knows how many sequencers an epoch has).
  bool epoch_end = true;
};

// A decoded record; payload points into the bytes given to DecodeRecord.
struct LogRecordView {
  LogRecordHeader header;
  std::string_view payload;
};

// An owning copy, for tests and tools.
struct LogRecord {
  LogRecordHeader header;
  std::string payload;
};

inline size_t EncodedRecordSize(size_t payload_bytes) {
  return kLogHeaderBytes + payload_bytes + kLogTrailerBytes;
}

// Appends the record to *out. REQUIRES payload.size() < 2^32.
void EncodeRecord(const LogRecordHeader& header, std::string_view payload, std::string* out);

enum class DecodeOutcome {
  kOk,
  kIncomplete,  // the bytes end inside the record (a torn tail, if at the end)
  kCorrupt,     // bad magic, version, flags, length or CRC
};

struct DecodeResult {
  DecodeOutcome outcome = DecodeOutcome::kCorrupt;
  LogRecordView record;     // kOk
  size_t size = 0;          // kOk: bytes the record occupies
  std::string error;        // otherwise: why
};

// Decodes the record at the start of bytes. The payload length is checked
// against max_payload_bytes before anything else is read (and nothing is
// allocated: the view points into bytes).
DecodeResult DecodeRecord(std::string_view bytes, uint32_t max_payload_bytes);

// Segment file names.
std::string SegmentName(uint64_t first_epoch);
// The first epoch of a segment name; nullopt if name is not a segment.
std::optional<uint64_t> ParseSegmentName(std::string_view name);

// ---------------------------------------------------------------------------
// Recovery
// ---------------------------------------------------------------------------
struct RecoveryOptions {
  FileSystem* fs = nullptr;  // PosixFileSystem() if null
  uint64_t config_hash = 0;  // every record must carry it...
  bool check_config_hash = true;  // ...unless false (detdb-log)
  uint64_t build_id = 0;     // nonzero: records of another build are refused
  uint32_t max_payload_bytes = 64u << 20;
  uint64_t max_segment_bytes = 4ull << 30;  // a larger file is refused unread
  // true: truncate a torn tail (and remove a last segment left empty), so
  // that the next append starts at the verified end. false: read-only.
  bool trim_torn_tail = true;
};

struct LogPosition {
  uint64_t epoch = 0;
  uint32_t sequencer_id = 0;
  auto operator<=>(const LogPosition&) const = default;
};

struct SegmentInfo {
  std::string name;
  uint64_t first_epoch = 0;  // from the name
  uint64_t file_bytes = 0;   // size found on disk
  uint64_t verified_end = 0; // end of the last valid record
  uint64_t records = 0;
  uint64_t min_epoch = 0, max_epoch = 0;  // of its records (0 if none)
  bool removed = false;      // an empty last segment, removed by the trim
};

struct RecoveryResult {
  std::vector<SegmentInfo> segments;  // in log order
  uint64_t records = 0;
  std::optional<LogPosition> last;    // the last valid record
  bool last_epoch_ended = false;      // it is marked epoch_end
  uint64_t last_complete_epoch = 0;   // of the last record marked epoch_end
  std::map<uint32_t, uint64_t> last_epoch_by_sequencer;
  // The torn tail, if any: bytes after the verified end of the last segment.
  std::string torn_segment;  // name; empty if none
  uint64_t torn_offset = 0;
  uint64_t torn_bytes = 0;
  std::string torn_reason;
  bool torn_trimmed = false;
};

struct RecordLocation {
  const std::string& segment;  // file name in the log directory
  uint64_t offset;             // of the record in the segment
  uint64_t size;               // bytes of the record
};
// Called for every valid record in log order; an error stops recovery and
// is returned. Records of a log that then turns out damaged have been
// visited: a caller must not act on them before RecoverInputLog returns OK.
using RecordVisitor = std::function<absl::Status(const RecordLocation&, const LogRecordView&)>;

// Reads the log in dir. A directory that does not exist is an empty log.
// Errors: DataLoss for damage that is not a torn tail (a bad record followed
// by a valid one, a bad record in a segment that is not the last, a CRC-valid
// record that breaks I1, I2 or I4), FailedPrecondition for a config-hash or
// build-id mismatch; the message names the file and the byte offset.
absl::StatusOr<RecoveryResult> RecoverInputLog(const std::string& dir, const RecoveryOptions& options,
                                               const RecordVisitor& visitor = nullptr);

// Cuts the log after epoch `last_epoch`: the first record of a later epoch
// and everything after it are removed, crash-safely: the later segments
// are removed from the last backwards and the directory synced before the
// cut segment is truncated (a crash between any two steps leaves a shorter
// log without an epoch gap; running it again finishes the cut). For a cluster restart, where every node
// resumes at the epoch all nodes have durable and drops what only it has
// (nothing of it was acknowledged). Run RecoverInputLog first (it refuses
// damage); returns what RecoverInputLog returns for the shortened log.
absl::StatusOr<RecoveryResult> TruncateInputLogAfter(const std::string& dir, uint64_t last_epoch,
                                                     const RecoveryOptions& options);

// Drops the log's prefix behind a checkpoint at `epoch`: removes every
// segment whose records all have epochs <= epoch (a segment is such when
// the next segment starts at or before epoch + 1; the last segment is never
// removed), oldest first, then syncs the directory. A crash between steps
// leaves a log that starts later but still at or before epoch + 1 (running
// it again finishes). Reads only the names (no record is read).
// Returns the number of segments removed.
absl::StatusOr<size_t> DropInputLogBefore(const std::string& dir, uint64_t epoch, FileSystem* fs = nullptr);

// The first epoch of the log's first segment (from its name); nullopt when
// the log has no segment.
absl::StatusOr<std::optional<uint64_t>> InputLogFirstEpoch(const std::string& dir, FileSystem* fs = nullptr);

// Every record of the log (read-only), for tests and tools.
absl::StatusOr<std::vector<LogRecord>> ReadInputLog(const std::string& dir, RecoveryOptions options);

// ---------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------
enum class LogSyncMode {
  kFsync,  // one fdatasync per group; durable_epoch() means on disk
  // No fdatasync. durable_epoch() means "written to the OS": it survives
  // kill -9 of the process, not a power loss or kernel crash, which may lose
  // every epoch since the OS last wrote back (seconds), or damage the log so
  // that recovery refuses to start. For benchmarks.
  kNone,
};

struct InputLogOptions {
  std::string dir;
  FileSystem* fs = nullptr;                 // PosixFileSystem() if null
  uint64_t segment_bytes = 64ull << 20;     // rotate once a segment is this big (at an epoch boundary)
  LogSyncMode sync_mode = LogSyncMode::kFsync;
  uint64_t config_hash = 0;
  uint64_t build_id = 0;
  uint32_t max_payload_bytes = 64u << 20;
  uint64_t max_queued_bytes = 256ull << 20; // Append refuses beyond (ResourceExhausted)
  // Records appended with lazy = true (nothing waits on them: an idle
  // epoch's empty batch) are written and synced with the next non-lazy
  // record, at Flush/Close, or once the oldest of them has waited this long,
  // whichever comes first; durable_epoch() only rises when they are synced.
  // 0: every record is written and synced at once.
  std::chrono::microseconds lazy_sync{0};
  // Group commit with a floor: a group is not written and synced sooner than
  // this after the previous group's sync ended (Flush and Close do not wait
  // for it). Under load that trades latency for fewer fdatasyncs, each of
  // which costs the kernel CPU (journal commit, block layer): records wait up
  // to this long more before they are durable. 0: a group starts as soon as
  // the previous sync ended (the groups are then as large as one sync lasts).
  std::chrono::microseconds min_sync_interval{0};
  // Called on the writer thread after each group that advanced
  // durable_epoch(), with the new value. Must not call Close().
  std::function<void(uint64_t durable_epoch)> on_durable;
  // Called once on the writer thread when a write or sync fails.
  std::function<void(const absl::Status&)> on_failure;
  // Crash-point hook (tests): called on the writer thread with
  // "log_written" after a group's records are written and before its
  // fdatasync. It may end the process.
  std::function<void(std::string_view point)> crash_hook;
};

// Thread-safety: Append, Flush, durable_epoch and status are thread-safe;
// Close from the owner only. Callbacks run on the writer thread.
//
// Failure: the first failed write, Sync, rotation or directory sync is
// sticky. The writer thread stops at once and never retries (a failed
// fdatasync may have dropped the data); records queued or written after it
// are never reported durable; status() and every later Append return the
// error. The node must stop: the log cannot be trusted past the last
// durable epoch until it restarts and recovers.
class InputLogWriter {
 public:
  // Opens a writer that appends after the log that `recovered` describes
  // (RecoverInputLog with trim_torn_tail on the same dir; a default
  // RecoveryResult for a new, empty dir). Creates dir if needed.
  static absl::StatusOr<std::unique_ptr<InputLogWriter>> Open(const InputLogOptions& options,
                                                              const RecoveryResult& recovered);
  ~InputLogWriter();  // Close()

  // Queues one sequencer's batch of one epoch; epoch_end marks the epoch's
  // last batch (in a cluster, that of the last sequencer in merge order).
  // InvalidArgument if it would break I1-I3 or the payload is over
  // max_payload_bytes; ResourceExhausted if max_queued_bytes are queued; the
  // sticky error after a failure; FailedPrecondition after Close.
  // lazy: see InputLogOptions::lazy_sync.
  absl::Status Append(uint64_t epoch, uint32_t sequencer_id, std::string_view payload, bool epoch_end = true,
                      bool lazy = false);

  // Every record of every epoch <= durable_epoch() is durable: the highest
  // epoch whose epoch_end record is durable (0: none yet).
  uint64_t durable_epoch() const { return durable_epoch_.load(std::memory_order_acquire); }

  // Waits until everything appended before the call is durable; returns
  // status().
  absl::Status Flush();
  // Writes and syncs the lazy records queued now without waiting for their
  // deadline (something waits for their durability); returns at once.
  void Hurry();
  absl::Status status() const;

  // Writes and syncs what is queued, stops the writer thread, closes the
  // segment. Returns status(). Idempotent.
  absl::Status Close();

  // Groups written and syncs done (tests, metrics).
  uint64_t groups() const { return groups_.load(std::memory_order_relaxed); }
  // Record bytes appended, and the latency of each group's fsync (seconds;
  // none with LogSyncMode::kNone). Thread-safe.
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  Histogram::Snapshot sync_seconds() const { return sync_seconds_.snapshot(); }

 private:
  struct Pending {
    uint64_t epoch;
    bool epoch_end;
    std::string bytes;
  };
  explicit InputLogWriter(const InputLogOptions& options);
  void Run();
  absl::Status WriteGroup(const std::deque<Pending>& group);
  absl::Status Rotate(uint64_t first_epoch);

  const InputLogOptions options_;
  FileSystem* const fs_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // the writer thread waits here
  std::condition_variable durable_cv_;  // Flush waits here
  std::deque<Pending> queue_;           // guarded by mu_
  uint64_t queued_bytes_ = 0;           // guarded by mu_
  bool closing_ = false;                // guarded by mu_
  absl::Status status_;                 // guarded by mu_; sticky
  std::optional<LogPosition> last_appended_;            // guarded by mu_
  bool last_epoch_ended_ = false;                       // guarded by mu_
  std::map<uint32_t, uint64_t> last_epoch_by_sequencer_;  // guarded by mu_
  uint64_t appended_ = 0;               // records, guarded by mu_
  uint64_t done_ = 0;                   // records durable or dropped by a failure, guarded by mu_
  uint64_t urgent_ = 0;                 // non-lazy records in queue_, guarded by mu_
  uint64_t flush_waiters_ = 0;          // guarded by mu_
  std::chrono::steady_clock::time_point oldest_lazy_;  // of queue_'s first record, guarded by mu_
  std::chrono::steady_clock::time_point last_sync_end_;  // writer thread only
  bool failed_ = false;                 // the failure was reported (on_failure ran), guarded by mu_
  std::atomic<uint64_t> durable_epoch_{0};
  std::atomic<uint64_t> groups_{0};
  std::atomic<uint64_t> bytes_written_{0};
  Histogram sync_seconds_{Histogram::Exponential(0.0001, 2, 16)};  // 100 us .. 3.3 s

  // Writer thread only (and Open, before it starts).
  std::unique_ptr<AppendableFile> file_;
  uint64_t segment_last_epoch_ = 0;
  std::string group_buf_;  // a group's records for one write

  std::mutex close_mu_;  // serialises Close
  std::thread thread_;
};

}  // namespace detdb

#endif  // DETDB_SEQUENCER_INPUT_LOG_H_
