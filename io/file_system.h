// FileSystem: the small file layer under everything detdb writes to disk (the
// input log now, checkpoints later), so that tests can swap the disk for one
// that loses unsynced bytes, fails fsync or runs out of space
// (io/fault_injecting_file_system.h).
//
// Every error is an absl::Status whose message names the operation, the path
// and the errno text ("fdatasync /d/log-...seg: Input/output error"); its
// code follows errno (absl::ErrnoToStatusCode: ENOENT NotFound, ENOSPC
// ResourceExhausted, ...).
//
// Durability rules a caller must follow (as on POSIX):
//  * bytes appended to a file survive a crash only after AppendableFile::Sync;
//  * a new file's name survives only after SyncDir(its directory);
//  * Truncate makes the new size durable before it returns.
//
// Thread-safety: a FileSystem is thread-safe; an AppendableFile is used by
// one thread at a time.
#ifndef DETDB_IO_FILE_SYSTEM_H_
#define DETDB_IO_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace detdb {

class AppendableFile {
 public:
  virtual ~AppendableFile() = default;
  // Appends data at the end of the file. On error a prefix of data may have
  // been written (size() says how much).
  virtual absl::Status Append(std::string_view data) = 0;
  // fdatasync: everything appended so far is on disk when OK is returned.
  // A failed Sync must not be retried to "make it work": the kernel may have
  // dropped the dirty pages, and a retry would report success for lost data.
  virtual absl::Status Sync() = 0;
  // Closes the descriptor (no implicit Sync). Idempotent; also done by the
  // destructor, which ignores errors.
  virtual absl::Status Close() = 0;
  // Bytes in the file: its size at open plus what Append wrote.
  virtual uint64_t size() const = 0;
  virtual const std::string& path() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Opens path for appending, creating it (mode 0644) if it does not exist.
  virtual absl::StatusOr<std::unique_ptr<AppendableFile>> NewAppendableFile(const std::string& path) = 0;
  // The whole file. InvalidArgument (before reading anything) if it is larger
  // than max_bytes.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) = 0;
  virtual absl::StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  virtual absl::StatusOr<bool> FileExists(const std::string& path) = 0;
  // Cuts the file to `size` bytes (REQUIRES size <= its size) and syncs it.
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
  // Creates dir (not its parents); OK if it exists already.
  virtual absl::Status CreateDir(const std::string& dir) = 0;
  // Makes the directory's entries (creations, renames, removals) durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  // The names in dir (not "." and ".."), sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
};

// The real file system (POSIX calls). A process-wide object, never deleted.
FileSystem* PosixFileSystem();

// dir + "/" + name.
std::string JoinPath(std::string_view dir, std::string_view name);
// Everything before the last '/', or "." if there is none.
std::string DirName(std::string_view path);

}  // namespace detdb

#endif  // DETDB_IO_FILE_SYSTEM_H_
