#include "io/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace detdb {
namespace {

absl::Status Errno(int err, const std::string& op, const std::string& path) {
  return absl::ErrnoToStatus(err, absl::StrCat(op, " ", path));
}

class PosixAppendableFile final : public AppendableFile {
 public:
  PosixAppendableFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixAppendableFile() override { (void)Close(); }

  absl::Status Append(std::string_view data) override {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat("append ", path_, ": file is closed"));
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno(errno, "write", path_);
      }
      size_ += static_cast<uint64_t>(n);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat("fdatasync ", path_, ": file is closed"));
    if (::fdatasync(fd_) != 0) return Errno(errno, "fdatasync", path_);
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return Errno(errno, "close", path_);
    return absl::OkStatus();
  }

  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  const std::string path_;
  int fd_;
  uint64_t size_;
};

// Opens path with `flags` (mode 0644 when created) and returns the fd and
// the file's size; on error nothing stays open.
absl::StatusOr<int> OpenSized(const std::string& path, int flags, uint64_t* size) {
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return Errno(errno, "open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Errno(err, "fstat", path);
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

class PosixFs final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<AppendableFile>> NewAppendableFile(const std::string& path) override {
    uint64_t size = 0;
    absl::StatusOr<int> fd = OpenSized(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, &size);
    if (!fd.ok()) return fd.status();
    return std::unique_ptr<AppendableFile>(new PosixAppendableFile(path, *fd, size));
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override {
    uint64_t size = 0;
    absl::StatusOr<int> opened = OpenSized(path, O_RDONLY | O_CLOEXEC, &size);
    if (!opened.ok()) return opened.status();
    const int fd = *opened;
    if (size > max_bytes) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat("read ", path, ": ", size, " bytes, more than the limit of ", max_bytes));
    }
    std::string out(size, '\0');
    uint64_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(done));
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        ::close(fd);
        return Errno(err, "read", path);
      }
      if (n == 0) break;  // shrank under us
      done += static_cast<uint64_t>(n);
    }
    out.resize(done);
    ::close(fd);
    return out;
  }

  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Errno(errno, "stat", path);
    return static_cast<uint64_t>(st.st_size);
  }

  absl::StatusOr<bool> FileExists(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return Errno(errno, "stat", path);
  }

  absl::Status Truncate(const std::string& path, uint64_t size) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Errno(errno, "open", path);
    absl::Status s;
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      s = Errno(errno, "ftruncate", path);
    } else if (::fsync(fd) != 0) {
      s = Errno(errno, "fsync", path);
    }
    ::close(fd);
    return s;
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Errno(errno, "rename", absl::StrCat(from, " to ", to));
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Errno(errno, "unlink", path);
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Errno(errno, "mkdir", dir);
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno(errno, "open", dir);
    absl::Status s;
    if (::fsync(fd) != 0) s = Errno(errno, "fsync", dir);
    ::close(fd);
    return s;
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Errno(errno, "opendir", dir);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      const std::string_view name(e->d_name);
      if (name != "." && name != "..") names.emplace_back(name);
      errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) return Errno(err, "readdir", dir);
    std::sort(names.begin(), names.end());
    return names;
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static FileSystem* const fs = new PosixFs();
  return fs;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

std::string DirName(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace detdb
