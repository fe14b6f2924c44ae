#include "io/fault_injecting_file_system.h"

#include <algorithm>
#include <cerrno>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {

struct FaultInjectingFileSystem::Node {
  std::string data;     // what reads see (the page cache)
  std::string durable;  // what survives a crash (the disk)
  bool name_durable = false;
  // The path a crash leaves the file at once name_durable: the path it had
  // at the last SyncDir of its directory (a rename not yet followed by a
  // SyncDir of the new directory is undone by a crash).
  std::string durable_path;
  // Bytes [lost_begin, lost_end) were covered by a failed Sync: the kernel
  // dropped them, a later successful Sync writes zeros there.
  uint64_t lost_begin = 0;
  uint64_t lost_end = 0;
};

class FaultInjectingFileSystem::File final : public AppendableFile {
 public:
  File(FaultInjectingFileSystem* fs, std::shared_ptr<Node> node, std::string path, uint64_t generation,
       uint64_t size)
      : fs_(fs), node_(std::move(node)), path_(std::move(path)), generation_(generation), size_(size) {}

  absl::Status Append(std::string_view data) override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat("append ", path_, ": file is closed"));
    const uint64_t before = NodeSize();
    absl::Status s = fs_->AppendTo(node_.get(), generation_, path_, data);
    size_ += NodeSize() - before;
    return s;
  }
  absl::Status Sync() override {
    if (closed_) return absl::FailedPreconditionError(absl::StrCat("fdatasync ", path_, ": file is closed"));
    return fs_->SyncNode(node_.get(), generation_, path_);
  }
  absl::Status Close() override {
    closed_ = true;
    return absl::OkStatus();
  }
  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  uint64_t NodeSize() {
    std::lock_guard<std::mutex> l(fs_->mu_);
    return node_->data.size();
  }

  FaultInjectingFileSystem* const fs_;
  const std::shared_ptr<Node> node_;
  const std::string path_;
  const uint64_t generation_;
  uint64_t size_;
  bool closed_ = false;
};

namespace {
absl::Status Errno(int err, const std::string& op, const std::string& path) {
  return absl::ErrnoToStatus(err, absl::StrCat(op, " ", path));
}

// An AppendableFile of a process that crashed: it fails for good.
absl::Status DeadFile(const char* op, const std::string& path, bool restarted) {
  return absl::FailedPreconditionError(
      absl::StrCat(op, " ", path, restarted ? ": opened by a process that crashed (simulated) before Restart()"
                                            : ": the process crashed (simulated) and Restart() was not called"));
}
}  // namespace

FaultInjectingFileSystem::FaultInjectingFileSystem() { dirs_.insert("/"); dirs_.insert("."); }
FaultInjectingFileSystem::~FaultInjectingFileSystem() = default;

absl::Status FaultInjectingFileSystem::CheckAliveLocked(const char* op, const std::string& path) const {
  if (!crashed_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(op, " ", path, ": the process crashed (simulated) and Restart() was not called"));
}

absl::StatusOr<std::unique_ptr<AppendableFile>> FaultInjectingFileSystem::NewAppendableFile(
    const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("open", path); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (!dirs_.count(DirName(path))) return Errno(ENOENT, "open", path);
    if (dirs_.count(path)) return Errno(EISDIR, "open", path);
    it = files_.emplace(path, std::make_shared<Node>()).first;
  }
  return std::unique_ptr<AppendableFile>(new File(this, it->second, path, generation_, it->second->data.size()));
}

absl::Status FaultInjectingFileSystem::AppendTo(Node* node, uint64_t generation, const std::string& path,
                                                std::string_view data) {
  std::lock_guard<std::mutex> l(mu_);
  ++appends_;
  if (generation != generation_) return DeadFile("write", path, !crashed_);
  if (space_limit_ > 0) {
    const uint64_t total = TotalBytesLocked();
    const uint64_t room = total >= space_limit_ ? 0 : space_limit_ - total;
    if (data.size() > room) {
      node->data.append(data.substr(0, room));
      return Errno(ENOSPC, "write", path);
    }
  }
  node->data.append(data);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::SyncNode(Node* node, uint64_t generation, const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (generation != generation_) return DeadFile("fdatasync", path, !crashed_);
  bool fail = false;
  if (fail_next_sync_) {
    fail_next_sync_ = false;
    fail = true;
  } else if (fail_after_ == 0) {
    fail = true;
  }
  if (fail) {
    ++failed_syncs_;
    if (node->data.size() > node->durable.size()) {
      if (node->lost_end == node->lost_begin) node->lost_begin = node->durable.size();
      node->lost_end = node->data.size();
    }
    return Errno(EIO, "fdatasync", path);
  }
  if (fail_after_ > 0) --fail_after_;
  ++syncs_;
  node->durable = node->data;
  const uint64_t end = std::min<uint64_t>(node->lost_end, node->durable.size());
  for (uint64_t i = node->lost_begin; i < end; ++i) node->durable[i] = '\0';
  node->lost_begin = node->lost_end = 0;
  return absl::OkStatus();
}

uint64_t FaultInjectingFileSystem::TotalBytesLocked() const {
  uint64_t total = 0;
  for (const auto& [path, node] : files_) total += node->data.size();
  return total;
}

absl::StatusOr<std::string> FaultInjectingFileSystem::ReadFile(const std::string& path, uint64_t max_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("read", path); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) return Errno(ENOENT, "open", path);
  if (it->second->data.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("read ", path, ": ", it->second->data.size(),
                                                   " bytes, more than the limit of ", max_bytes));
  }
  return it->second->data;
}

absl::StatusOr<uint64_t> FaultInjectingFileSystem::FileSize(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("stat", path); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) return Errno(ENOENT, "stat", path);
  return it->second->data.size();
}

absl::StatusOr<bool> FaultInjectingFileSystem::FileExists(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("stat", path); !s.ok()) return s;
  return files_.count(path) > 0 || dirs_.count(path) > 0;
}

absl::Status FaultInjectingFileSystem::Truncate(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("truncate", path); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) return Errno(ENOENT, "open", path);
  Node& n = *it->second;
  if (size > n.data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("truncate ", path, ": ", size, " is past the end (", n.data.size(), ")"));
  }
  n.data.resize(size);
  n.durable = n.data;
  n.lost_begin = n.lost_end = 0;
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("rename", absl::StrCat(from, " to ", to)); !s.ok()) return s;
  auto it = files_.find(from);
  if (it == files_.end()) return Errno(ENOENT, "rename", absl::StrCat(from, " to ", to));
  if (!dirs_.count(DirName(to))) return Errno(ENOENT, "rename", absl::StrCat(from, " to ", to));
  std::shared_ptr<Node> node = it->second;
  files_.erase(it);
  files_[to] = std::move(node);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Remove(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("unlink", path); !s.ok()) return s;
  if (fail_next_remove_ && files_.count(path)) {
    fail_next_remove_ = false;
    return Errno(EIO, "unlink", path);
  }
  if (files_.erase(path) == 0) return Errno(ENOENT, "unlink", path);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::CreateDir(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("mkdir", dir); !s.ok()) return s;
  if (files_.count(dir)) return Errno(EEXIST, "mkdir", dir);
  if (!dirs_.count(DirName(dir))) return Errno(ENOENT, "mkdir", dir);
  dirs_.insert(dir);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("fsync", dir); !s.ok()) return s;
  if (!dirs_.count(dir)) return Errno(ENOENT, "open", dir);
  for (auto& [path, node] : files_) {
    if (DirName(path) == dir) {
      node->name_durable = true;
      node->durable_path = path;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFileSystem::ListDir(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  if (absl::Status s = CheckAliveLocked("opendir", dir); !s.ok()) return s;
  if (!dirs_.count(dir)) return Errno(ENOENT, "opendir", dir);
  std::vector<std::string> names;
  const std::string prefix = JoinPath(dir, "");
  auto take = [&](const std::string& path) {
    if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
        path.find('/', prefix.size()) == std::string::npos) {
      names.push_back(path.substr(prefix.size()));
    }
  };
  for (const auto& [path, node] : files_) take(path);
  for (const auto& d : dirs_) take(d);
  std::sort(names.begin(), names.end());
  return names;
}

void FaultInjectingFileSystem::SimulateCrash(CrashMode mode, uint64_t seed) {
  std::lock_guard<std::mutex> l(mu_);
  std::mt19937_64 rng(seed);
  ++generation_;
  crashed_ = true;
  std::vector<std::pair<std::string, std::shared_ptr<Node>>> renamed_back;
  for (auto it = files_.begin(); it != files_.end();) {
    Node& n = *it->second;
    if (!n.name_durable && (mode == CrashMode::kDrop || rng() % 2 == 0)) {
      it = files_.erase(it);
      continue;
    }
    std::string kept = n.durable;
    if (mode == CrashMode::kTear && n.data.size() > n.durable.size() &&
        n.data.compare(0, n.durable.size(), n.durable) == 0) {
      // Cut points: the synced end, then every sector boundary after it, and
      // the end of the data.
      const uint64_t d = n.durable.size();
      const uint64_t end = n.data.size();
      std::vector<uint64_t> cuts = {d};
      for (uint64_t b = (d / kSectorSize + 1) * kSectorSize; b < end; b += kSectorSize) cuts.push_back(b);
      cuts.push_back(end);
      const uint64_t cut = cuts[rng() % cuts.size()];
      kept = n.data.substr(0, cut);
      if (cut < end && rng() % 2 == 0) {
        const uint64_t sector_end = std::min<uint64_t>(end, (cut / kSectorSize + 1) * kSectorSize);
        const uint64_t garbled = 1 + rng() % (sector_end - cut);
        for (uint64_t i = 0; i < garbled; ++i) kept.push_back(static_cast<char>(rng()));
      }
    }
    n.data = kept;
    n.durable = std::move(kept);
    n.lost_begin = n.lost_end = 0;
    // A rename whose directory was not synced: kDrop undoes it, kTear
    // undoes it with probability 1/2.
    if (n.name_durable && !n.durable_path.empty() && n.durable_path != it->first &&
        (mode == CrashMode::kDrop || rng() % 2 == 0)) {
      std::shared_ptr<Node> moved = it->second;
      it = files_.erase(it);
      renamed_back.emplace_back(moved->durable_path, std::move(moved));
      continue;
    }
    n.name_durable = true;
    n.durable_path = it->first;
    ++it;
  }
  for (auto& [path, node] : renamed_back) files_[path] = std::move(node);
}

void FaultInjectingFileSystem::Restart() {
  std::lock_guard<std::mutex> l(mu_);
  crashed_ = false;
}

void FaultInjectingFileSystem::FailNextSync() {
  std::lock_guard<std::mutex> l(mu_);
  fail_next_sync_ = true;
}

void FaultInjectingFileSystem::FailSyncAfter(int64_t n) {
  CHECK_GE(n, 0);
  std::lock_guard<std::mutex> l(mu_);
  fail_after_ = n;
}

void FaultInjectingFileSystem::SetSpaceLimit(uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  space_limit_ = bytes;
}

void FaultInjectingFileSystem::FailNextRemove() {
  std::lock_guard<std::mutex> l(mu_);
  fail_next_remove_ = true;
}

void FaultInjectingFileSystem::ClearFaults() {
  std::lock_guard<std::mutex> l(mu_);
  fail_next_sync_ = false;
  fail_next_remove_ = false;
  fail_after_ = -1;
  space_limit_ = 0;
}

absl::StatusOr<uint64_t> FaultInjectingFileSystem::SyncedSize(const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Errno(ENOENT, "stat", path);
  return it->second->durable.size();
}

absl::Status FaultInjectingFileSystem::FlipBit(const std::string& path, uint64_t offset, int bit) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Errno(ENOENT, "open", path);
  Node& n = *it->second;
  if (offset >= n.data.size()) return absl::OutOfRangeError(absl::StrCat("flip ", path, ": offset ", offset));
  const char mask = static_cast<char>(1 << (bit & 7));
  n.data[offset] ^= mask;
  if (offset < n.durable.size()) n.durable[offset] ^= mask;
  return absl::OkStatus();
}

int64_t FaultInjectingFileSystem::appends() const {
  std::lock_guard<std::mutex> l(mu_);
  return appends_;
}

int64_t FaultInjectingFileSystem::syncs() const {
  std::lock_guard<std::mutex> l(mu_);
  return syncs_;
}

int64_t FaultInjectingFileSystem::failed_syncs() const {
  std::lock_guard<std::mutex> l(mu_);
  return failed_syncs_;
}

}  // namespace detdb
