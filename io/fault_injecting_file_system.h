// FaultInjectingFileSystem: an in-memory FileSystem for tests that knows,
// per file, which bytes were synced, and can simulate what a disk does when
// things go wrong:
//
//  * SimulateCrash(kDrop): the machine loses power. Every byte appended
//    since the file's last successful Sync is gone; a file whose name was
//    never made durable by SyncDir(its directory) is gone.
//  * SimulateCrash(kTear, seed): as kDrop, except that each file keeps a
//    random sector-granular prefix of its unsynced bytes (whole 512-byte
//    sectors, the sector holding the synced end counted from that end), and
//    with probability 1/2 the sector after it is torn: a random-length prefix
//    of it holds random bytes. Synced bytes are never changed. A file whose
//    name was never synced survives with probability 1/2 (its unsynced bytes
//    torn the same way).
//  * The crashed process is fenced off: from SimulateCrash until Restart(),
//    every call fails with FailedPrecondition naming the operation and the
//    path ("the process crashed (simulated) and Restart() was not called"):
//    NewAppendableFile, Append and Sync of any file, Truncate, Rename,
//    Remove, CreateDir, SyncDir, and the reads too (ReadFile, FileSize,
//    FileExists, ListDir), as a dead process can read nothing either. A
//    thread of the "dead" engine still running in the test thus can neither
//    change what the crash left nor act on it. Restart() starts the new
//    process: calls work again, except on AppendableFiles opened before the
//    crash, which fail for good (the process that held them is gone). A test
//    calls Restart() where it starts the new process: once the crashed
//    engine or writer was stopped, before recovery or any look at the files.
//    The fault knobs and the inspection calls (SyncedSize, FlipBit, the
//    counters) are the test's, not the process's, and work at any time.
//  * FailNextSync() / FailSyncAfter(n): Sync fails with EIO, once or for
//    good after n more successes. As on Linux, the bytes that a failed Sync
//    covered are lost: a later Sync that succeeds writes zeros in their place
//    (which is why a failed fsync must never be retried).
//  * SetSpaceLimit(bytes): the total size of all files is capped; an Append
//    that would pass it writes what fits, then fails with ENOSPC.
//
//  * Rename is durable only once SyncDir(the new name's directory) ran:
//    a crash before that (kDrop; kTear with probability 1/2) puts the file
//    back at the name it had at its directory's last SyncDir (a file whose
//    name was never synced is dropped as above). Checkpoints publish with
//    write, fsync, rename, SyncDir and depend on it.
//
// Simplifications, as the input log and checkpoints do not depend on them:
// directories exist as soon as CreateDir returns; Remove is durable at
// once; a rename over an existing file loses that file even if a crash
// undoes the rename; Truncate is durable at once and never fails (but for
// the crash fence).
//
// Thread-safety: thread-safe (one mutex).
#ifndef DETDB_IO_FAULT_INJECTING_FILE_SYSTEM_H_
#define DETDB_IO_FAULT_INJECTING_FILE_SYSTEM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/file_system.h"

namespace detdb {

class FaultInjectingFileSystem final : public FileSystem {
 public:
  enum class CrashMode { kDrop, kTear };
  static constexpr uint64_t kSectorSize = 512;

  FaultInjectingFileSystem();
  ~FaultInjectingFileSystem() override;

  // --- FileSystem ---
  absl::StatusOr<std::unique_ptr<AppendableFile>> NewAppendableFile(const std::string& path) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override;
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override;
  absl::StatusOr<bool> FileExists(const std::string& path) override;
  absl::Status Truncate(const std::string& path, uint64_t size) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status CreateDir(const std::string& dir) override;
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override;

  // --- Faults ---
  // The machine loses power (see above); the file system then refuses
  // every call until Restart(). A second crash before Restart() is allowed.
  void SimulateCrash(CrashMode mode, uint64_t seed = 0);
  // A new process starts on what the crash left: calls work again, files
  // opened before the crash stay failed. A no-op if there was no crash.
  void Restart();
  void FailNextSync();
  // After n more successful Syncs, every Sync fails until ClearFaults().
  void FailSyncAfter(int64_t n);
  // The next Remove fails with EIO (the file stays).
  void FailNextRemove();
  // 0: no limit.
  void SetSpaceLimit(uint64_t bytes);
  void ClearFaults();

  // --- Inspection (tests; these, like the fault knobs, work between a crash and Restart()) ---
  // Bytes of path that would survive a crash (NotFound if no such file).
  absl::StatusOr<uint64_t> SyncedSize(const std::string& path);
  // Flips one bit of the file, in memory and "on disk" alike (bit rot).
  absl::Status FlipBit(const std::string& path, uint64_t offset, int bit);
  int64_t syncs() const;         // successful
  int64_t appends() const;       // Append calls that reached the file system (write calls)
  int64_t failed_syncs() const;

 private:
  struct Node;
  class File;
  friend class File;

  absl::Status AppendTo(Node* node, uint64_t generation, const std::string& path, std::string_view data);
  absl::Status SyncNode(Node* node, uint64_t generation, const std::string& path);
  uint64_t TotalBytesLocked() const;
  // OK unless the process crashed and Restart() was not called.
  absl::Status CheckAliveLocked(const char* op, const std::string& path) const;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> files_;
  std::set<std::string> dirs_;
  uint64_t generation_ = 0;  // bumped by each crash
  bool crashed_ = false;     // between SimulateCrash and Restart
  bool fail_next_sync_ = false;
  bool fail_next_remove_ = false;
  int64_t fail_after_ = -1;  // successes left before Sync fails for good; -1: off
  uint64_t space_limit_ = 0;
  int64_t syncs_ = 0;
  int64_t appends_ = 0;
  int64_t failed_syncs_ = 0;
};

}  // namespace detdb

#endif  // DETDB_IO_FAULT_INJECTING_FILE_SYSTEM_H_
