#include "scheduler/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "io/crc32c.h"

namespace detdb {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the formats are little-endian");

constexpr size_t kHeaderFixedBytes = 40;
constexpr char kPrefix[] = "ckpt-";
constexpr char kSuffix[] = ".ckpt";
constexpr char kTmpSuffix[] = ".tmp";

FileSystem* FsOf(const CheckpointOptions& o) { return o.fs != nullptr ? o.fs : PosixFileSystem(); }

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The child's output: a buffer flushed with write(2).
class RawWriter {
 public:
  RawWriter(int fd, char* buf, size_t cap) : fd_(fd), buf_(buf), cap_(cap) {}
  bool Put(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      if (used_ == cap_ && !Flush()) return false;
      const size_t k = std::min(n, cap_ - used_);
      std::memcpy(buf_ + used_, c, k);
      used_ += k;
      c += k;
      n -= k;
    }
    return true;
  }
  template <typename T>
  bool PutInt(T v) {
    return Put(&v, sizeof(v));
  }
  bool Flush() {
    size_t off = 0;
    while (off < used_) {
      const ssize_t w = write(fd_, buf_ + off, used_ - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      off += static_cast<size_t>(w);
    }
    used_ = 0;
    return true;
  }

 private:
  const int fd_;
  char* const buf_;
  const size_t cap_;
  size_t used_ = 0;
};

// Bounds-checked reader over a loaded file.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  template <typename T>
  bool Get(T* v) {
    if (data_.size() - off_ < sizeof(T)) return false;
    std::memcpy(v, data_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  bool Skip(uint64_t n, const char** at) {
    if (data_.size() - off_ < n) return false;
    *at = data_.data() + off_;
    off_ += n;
    return true;
  }
  size_t offset() const { return off_; }
  bool done() const { return off_ == data_.size(); }

 private:
  std::string_view data_;
  size_t off_ = 0;
};

// Anonymous memory reserved lazily (MAP_NORESERVE: only touched pages
// count), for the child's buffers; unmapped in the parent after the fork.
class Scratch {
 public:
  explicit Scratch(size_t bytes) : bytes_(std::max<size_t>(bytes, 4096)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    mem_ = p == MAP_FAILED ? nullptr : p;
  }
  ~Scratch() {
    if (mem_ != nullptr) munmap(mem_, bytes_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return mem_; }

 private:
  const size_t bytes_;
  void* mem_ = nullptr;
};

// The child's setup: dies of a fault signal instead of running the
// parent's handler (glog's failure handler takes locks and could block
// forever: finding 19), dies with the forking thread, exits if the parent
// is already gone, dumps no core, keeps no fd but keep_fd. Syscalls only.
void DetachChild(pid_t parent, int keep_fd, rlim_t fd_limit) {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) (void)sigaction(sig, &dfl, nullptr);
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(4);  // the parent died before the prctl
  const struct rlimit no_core = {0, 0};
  (void)setrlimit(RLIMIT_CORE, &no_core);
  const unsigned keep = static_cast<unsigned>(keep_fd);
  bool closed = (keep == 0 || close_range(0, keep - 1, 0) == 0) && close_range(keep + 1, ~0u, 0) == 0;
  if (!closed) {  // close_range refused (an old kernel, a seccomp filter): one by one
    for (rlim_t fd = 0; fd < fd_limit; ++fd)
      if (fd != keep) (void)close(static_cast<int>(fd));
  }
}

void SleepFor(std::chrono::milliseconds d) {
  struct timespec ts = {static_cast<time_t>(d.count() / 1000), static_cast<long>(d.count() % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The parent's cheap check of a received stream: a whole header of `epoch`
// and room for every partition's section header.
absl::Status CheckStreamHeader(std::string_view head, uint64_t length, uint64_t epoch) {
  uint32_t magic = 0, n = 0;
  uint16_t version = 0;
  uint64_t e = 0;
  if (head.size() >= kHeaderFixedBytes) {
    std::memcpy(&magic, head.data(), 4);
    std::memcpy(&version, head.data() + 4, 2);
    std::memcpy(&e, head.data() + 8, 8);
    std::memcpy(&n, head.data() + 32, 4);
  }
  if (head.size() < kHeaderFixedBytes || magic != kCheckpointMagic || version != kCheckpointVersion || e != epoch ||
      n == 0 || n > 1024 || length < kHeaderFixedBytes + 12ull * n)
    return absl::InternalError(absl::StrCat("checkpoint of epoch ", epoch, ": the capture child sent ", length,
                                            " bytes, not a whole checkpoint header of that epoch"));
  return absl::OkStatus();
}

// Waits for the child (killing it first if kill_first), retrying EINTR.
// Any other waitpid failure, and a child that did not exit with 0, is an error.
absl::Status ReapChild(pid_t pid, bool kill_first) {
  if (kill_first) (void)kill(pid, SIGKILL);
  int wstatus = 0;
  for (;;) {
    if (waitpid(pid, &wstatus, 0) >= 0) break;
    if (errno == EINTR) continue;
    return absl::InternalError(absl::StrCat("waitpid for the checkpoint child ", pid, ": ", strerror(errno)));
  }
  if (WIFSIGNALED(wstatus))
    return absl::InternalError(absl::StrCat("checkpoint writer process killed by signal ", WTERMSIG(wstatus), " (",
                                            strsignal(WTERMSIG(wstatus)), ")"));
  if (!(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0))
    return absl::InternalError(absl::StrCat("checkpoint writer process failed (wait status ", wstatus, ")"));
  return absl::OkStatus();
}

// Reads the child's stream into file (CRC and length as it goes) until
// EOF, the deadline or a cancel, then reaps the child (killed unless it
// reached EOF cleanly) and checks the header.
absl::Status ReadChild(const ForkedCapture& c, uint64_t epoch, AppendableFile* file, uint32_t* crc,
                       uint64_t* length) {
  constexpr size_t kBuf = 1 << 20;
  std::unique_ptr<char[]> buf(new char[kBuf]);
  std::string head;
  absl::Status s;
  for (;;) {
    if (c.cancelled && c.cancelled()) {
      s = absl::CancelledError(absl::StrCat("checkpoint of epoch ", epoch, " cancelled (its capture child killed)"));
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= c.deadline) {
      s = absl::DeadlineExceededError(
          absl::StrCat("checkpoint of epoch ", epoch, ": the capture child did not finish in time (killed)"));
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count();
    pollfd pfd = {c.read_fd, POLLIN, 0};
    const int r = poll(&pfd, 1, static_cast<int>(std::clamp<int64_t>(left + 1, 1, 20)));
    if (r == 0 || (r < 0 && errno == EINTR)) continue;
    if (r < 0) {
      s = absl::InternalError(absl::StrCat("poll on the checkpoint pipe: ", strerror(errno)));
      break;
    }
    const ssize_t n = read(c.read_fd, buf.get(), kBuf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      s = absl::InternalError(absl::StrCat("checkpoint pipe: ", strerror(errno)));
      break;
    }
    if (n == 0) break;  // the child closed its end: it is exiting
    if (head.size() < kHeaderFixedBytes)
      head.append(buf.get(), std::min(static_cast<size_t>(n), kHeaderFixedBytes - head.size()));
    *crc = Crc32cExtend(*crc, buf.get(), static_cast<size_t>(n));
    *length += static_cast<uint64_t>(n);
    s = file->Append(std::string_view(buf.get(), static_cast<size_t>(n)));
    if (!s.ok()) break;
  }
  close(c.read_fd);
  absl::Status reaped = ReapChild(c.pid, /*kill_first=*/!s.ok());
  if (c.on_reaped) c.on_reaped();
  if (s.ok()) s = reaped;
  if (s.ok()) s = CheckStreamHeader(head, *length, epoch);
  return s;
}

// A new, empty file at path: AlreadyExists if the name is taken (the
// FileSystem has no O_EXCL; the names are unique per attempt).
absl::StatusOr<std::unique_ptr<AppendableFile>> CreateFresh(FileSystem* fs, const std::string& path) {
  auto exists = fs->FileExists(path);
  if (!exists.ok()) return exists.status();
  if (*exists) return absl::AlreadyExistsError(absl::StrCat("checkpoint temp file ", path, " exists"));
  auto f = fs->NewAppendableFile(path);
  if (f.ok() && (*f)->size() != 0)
    return absl::AlreadyExistsError(absl::StrCat("checkpoint temp file ", path, " exists"));
  return f;
}

// Walks the content (without trailer), calling table(partition, table id,
// value size, count) and record(key, value) for each and copying the
// client state section into *client_state (if not null); false if malformed.
template <typename TableFn, typename RecordFn>
bool WalkContent(std::string_view content, CheckpointMeta* meta, std::string* client_state, std::string* why,
                 TableFn table, RecordFn record) {
  Cursor c(content);
  uint32_t magic = 0, n = 0, reserved = 0;
  uint16_t version = 0, flags = 0;
  if (!c.Get(&magic) || !c.Get(&version) || !c.Get(&flags) || !c.Get(&meta->epoch) || !c.Get(&meta->config_hash) ||
      !c.Get(&meta->last_txn_id) || !c.Get(&n) || !c.Get(&reserved)) {
    *why = "header cut short";
    return false;
  }
  if (magic != kCheckpointMagic) {
    *why = "bad magic";
    return false;
  }
  if ((version != kCheckpointVersion && version != 1) || flags != 0 || (version == 1 && reserved != 0)) {
    *why = absl::StrCat("unknown format version ", version, " or flags ", flags);
    return false;
  }
  meta->log_crc = version == 1 ? 0 : reserved;
  if (n == 0 || n > 1024) {
    *why = absl::StrCat("partition count ", n);
    return false;
  }
  meta->partitions.clear();
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t p = 0;
    if (!c.Get(&p)) {
      *why = "partition ids cut short";
      return false;
    }
    meta->partitions.push_back(p);
  }
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t p = 0, tables = 0;
    if (!c.Get(&p) || !c.Get(&tables) || p != meta->partitions[i] || tables > 256) {
      *why = absl::StrCat("bad section of partition ", meta->partitions[i], " at offset ", c.offset());
      return false;
    }
    for (uint32_t t = 0; t < tables; ++t) {
      uint32_t id = 0, value_size = 0;
      uint64_t count = 0;
      if (!c.Get(&id) || !c.Get(&value_size) || !c.Get(&count) || id > 255 || value_size > (1u << 20)) {
        *why = absl::StrCat("bad table header at offset ", c.offset());
        return false;
      }
      if (!table(p, id, value_size, count)) {
        *why = absl::StrCat("table ", id, " of partition ", p, " does not match the store");
        return false;
      }
      Key prev = 0;
      for (uint64_t r = 0; r < count; ++r) {
        Key k = 0;
        const char* value = nullptr;
        if (!c.Get(&k) || !c.Skip(value_size, &value) || KeyTable(k) != id || (r > 0 && k <= prev)) {
          *why = absl::StrCat("bad record ", r, " of table ", id, " at offset ", c.offset());
          return false;
        }
        prev = k;
        record(k, value, value_size);
      }
    }
  }
  if (version >= 2) {  // the client state section: bounded by the file before it is copied
    uint64_t length = 0;
    const char* at = nullptr;
    const size_t offset = c.offset();
    if (!c.Get(&length) || !c.Skip(length, &at)) {
      *why = absl::StrCat("client state section at offset ", offset, " cut short (length ", length, ", ",
                          content.size() - offset, " bytes left)");
      return false;
    }
    if (client_state != nullptr) client_state->assign(at, length);
  }
  if (!c.done()) {
    *why = absl::StrCat("trailing bytes at offset ", c.offset());
    return false;
  }
  return true;
}

// The parent's part of the content (version 2): the client state section,
// u64 length then the bytes of options.client_state(epoch) (none: length
// 0). Extends *crc and *length over what it appends.
absl::Status AppendClientState(AppendableFile* file, const CheckpointOptions& options, uint64_t epoch, uint32_t* crc,
                               uint64_t* length) {
  std::string section;
  if (options.client_state) {
    absl::StatusOr<std::string> got = options.client_state(epoch);
    if (!got.ok())
      return absl::Status(got.status().code(),
                          absl::StrCat("client state of checkpoint epoch ", epoch, ": ", got.status().message()));
    section = std::move(*got);
  }
  const uint64_t n = section.size();
  char head[8];
  std::memcpy(head, &n, 8);
  *crc = Crc32cExtend(*crc, head, 8);
  *crc = Crc32cExtend(*crc, section.data(), section.size());
  *length += 8 + n;
  absl::Status s = file->Append(std::string_view(head, 8));
  if (s.ok() && n > 0) s = file->Append(section);
  return s;
}

}  // namespace

std::string CheckpointName(uint64_t epoch) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%s%020lu%s", kPrefix, static_cast<unsigned long>(epoch), kSuffix);
  return buf;
}

std::optional<uint64_t> ParseCheckpointName(std::string_view name) {
  const size_t p = sizeof(kPrefix) - 1, s = sizeof(kSuffix) - 1;
  if (name.size() != p + 20 + s || name.substr(0, p) != kPrefix || name.substr(p + 20) != kSuffix) return std::nullopt;
  uint64_t e = 0;
  for (char ch : name.substr(p, 20)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    e = e * 10 + static_cast<uint64_t>(ch - '0');
  }
  return e;
}

std::string CheckpointTempPath(const CheckpointOptions& options, uint64_t epoch) {
  static std::atomic<uint64_t> sequence{0};
  const uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
  return JoinPath(options.dir, absl::StrCat(CheckpointName(epoch), ".", getpid(), "-", sequence.fetch_add(1) + 1, "-",
                                            absl::Hex(ns), kTmpSuffix));
}

bool IsCheckpointTempName(std::string_view name) {
  const size_t base = CheckpointName(0).size(), t = sizeof(kTmpSuffix) - 1;
  if (name.size() < base + t || !ParseCheckpointName(name.substr(0, base)) ||
      name.substr(name.size() - t) != kTmpSuffix)
    return false;
  const std::string_view nonce = name.substr(base, name.size() - t - base);  // "" or ".<pid>-<seq>-<hex>"
  if (nonce.empty()) return true;
  if (nonce.size() < 2 || nonce[0] != '.') return false;
  for (char ch : nonce.substr(1))
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || ch == '-')) return false;
  return true;
}

bool WriteCheckpointContent(int fd, const CheckpointMeta& meta, const std::vector<const PartitionStore*>& stores,
                            const CaptureBuffers& buffers) {
  if (buffers.table_ids.size() != stores.size()) return false;
  RawWriter w(fd, buffers.out, buffers.out_bytes);
  bool ok = w.PutInt<uint32_t>(kCheckpointMagic) && w.PutInt<uint16_t>(kCheckpointVersion) &&
            w.PutInt<uint16_t>(0) && w.PutInt<uint64_t>(meta.epoch) && w.PutInt<uint64_t>(meta.config_hash) &&
            w.PutInt<uint64_t>(meta.last_txn_id) && w.PutInt<uint32_t>(static_cast<uint32_t>(stores.size())) &&
            w.PutInt<uint32_t>(meta.log_crc);
  for (PartitionId p : meta.partitions) ok = ok && w.PutInt<uint32_t>(p);
  for (size_t i = 0; ok && i < stores.size(); ++i) {
    const PartitionStore* s = stores[i];
    const std::vector<uint32_t>& ids = buffers.table_ids[i];
    ok = w.PutInt<uint32_t>(meta.partitions[i]) && w.PutInt<uint32_t>(static_cast<uint32_t>(ids.size()));
    for (uint32_t id : ids) {
      if (!ok) break;
      const Table* t = s->GetTable(id);
      if (t == nullptr) return false;
      const uint32_t vs = t->value_size();
      ok = w.PutInt<uint32_t>(id) && w.PutInt<uint32_t>(vs) && w.PutInt<uint64_t>(t->size()) &&
           t->ForEachInKeyOrder(buffers.sort, buffers.sort_capacity, [&](const Record& r) {
             ok = ok && w.PutInt<uint64_t>(r.key) && w.Put(r.value(), vs);
           });
    }
  }
  return ok && w.Flush();
}

absl::StatusOr<ForkedCapture> ForkCapture(const CheckpointMeta& meta,
                                          const std::vector<const PartitionStore*>& stores,
                                          std::chrono::milliseconds test_child_stall) {
  if (stores.size() != meta.partitions.size()) return absl::InvalidArgumentError("one store per partition");
  // Everything the child needs, allocated here: it must not call malloc
  // (another thread may have held the allocator's lock at the fork).
  CaptureBuffers buffers;
  uint64_t most = 0;
  for (const PartitionStore* s : stores) {
    buffers.table_ids.push_back(s->table_ids());
    for (uint32_t id : buffers.table_ids.back()) most = std::max(most, s->GetTable(id)->size());
  }
  constexpr size_t kBuf = 1 << 20;
  Scratch out(kBuf), sort(most * sizeof(const Record*));
  if (out.get() == nullptr || sort.get() == nullptr)
    return absl::ResourceExhaustedError(absl::StrCat("mmap for a checkpoint's buffers: ", strerror(errno)));
  buffers.out = static_cast<char*>(out.get());
  buffers.out_bytes = kBuf;
  buffers.sort = static_cast<const Record**>(sort.get());
  buffers.sort_capacity = most;
  struct rlimit nofile = {1024, 1024};
  (void)getrlimit(RLIMIT_NOFILE, &nofile);
  const rlim_t fd_limit = std::min<rlim_t>(nofile.rlim_cur, 1u << 20);
  const pid_t parent = getpid();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return absl::ResourceExhaustedError(absl::StrCat("fork for a checkpoint: ", strerror(err)));
  }
  if (pid == 0) {
    // The child: one thread, a frozen copy of the stores. No logging, no
    // locks, no malloc; syscalls and _exit only.
    DetachChild(parent, fds[1], fd_limit);
    if (test_child_stall.count() > 0) SleepFor(test_child_stall);
    const bool ok = WriteCheckpointContent(fds[1], meta, stores, buffers);
    _exit(ok ? 0 : 3);
  }
  close(fds[1]);
  ForkedCapture capture;
  capture.pid = pid;
  capture.read_fd = fds[0];
  return capture;
}

absl::StatusOr<std::string> ReceiveCapture(const ForkedCapture& capture, const CheckpointOptions& options,
                                           uint64_t epoch, CheckpointStats* stats) {
  FileSystem* fs = FsOf(options);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string tmp = capture.tmp_path.empty() ? CheckpointTempPath(options, epoch) : capture.tmp_path;
  absl::Status s = fs->CreateDir(options.dir);
  std::unique_ptr<AppendableFile> file;
  if (s.ok()) {
    auto f = CreateFresh(fs, tmp);
    if (f.ok()) {
      file = std::move(*f);
    } else {
      s = f.status();
    }
  }
  uint32_t crc = 0;
  uint64_t length = 0;
  // Read, reap and check the header (the child is killed on any error).
  if (s.ok()) {
    s = ReadChild(capture, epoch, file.get(), &crc, &length);
  } else {
    close(capture.read_fd);
    (void)ReapChild(capture.pid, /*kill_first=*/true);
    if (capture.on_reaped) capture.on_reaped();
  }
  if (s.ok()) s = AppendClientState(file.get(), options, epoch, &crc, &length);
  if (s.ok()) {
    char trailer[kCheckpointTrailerBytes];
    std::memcpy(trailer, &length, 8);
    std::memcpy(trailer + 8, &crc, 4);
    s = file->Append(std::string_view(trailer, sizeof(trailer)));
  }
  bool stop = false;
  if (s.ok() && options.crash_hook) stop = options.crash_hook("ckpt_written");
  if (s.ok() && !stop) s = file->Sync();
  if (file != nullptr) (void)file->Close();
  if (s.ok() && !stop && options.crash_hook) stop = options.crash_hook("ckpt_synced");
  if (stop) return absl::AbortedError("checkpoint stopped at a crash point");
  if (!s.ok()) {
    if (file != nullptr) (void)fs->Remove(tmp);  // not a file this call did not create
    return s;
  }
  if (stats != nullptr) {
    stats->bytes = length + kCheckpointTrailerBytes;
    stats->write_ms = MsSince(t0);
  }
  return tmp;
}

absl::Status PublishCheckpoint(const CheckpointOptions& options, const std::string& tmp_path, uint64_t epoch) {
  FileSystem* fs = FsOf(options);
  if (absl::Status s = fs->Rename(tmp_path, JoinPath(options.dir, CheckpointName(epoch))); !s.ok()) return s;
  if (options.crash_hook && options.crash_hook("ckpt_renamed"))
    return absl::AbortedError("checkpoint stopped at a crash point");
  if (absl::Status s = fs->SyncDir(options.dir); !s.ok()) return s;
  if (options.crash_hook && options.crash_hook("ckpt_published"))
    return absl::AbortedError("checkpoint stopped at a crash point");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> ListCheckpoints(const CheckpointOptions& options) {
  std::vector<uint64_t> out;
  auto names = FsOf(options)->ListDir(options.dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return out;
    return names.status();
  }
  for (const std::string& n : *names)
    if (auto e = ParseCheckpointName(n)) out.push_back(*e);
  std::sort(out.rbegin(), out.rend());
  return out;
}

absl::StatusOr<std::vector<uint64_t>> PruneCheckpoints(const CheckpointOptions& options,
                                                       const std::optional<std::vector<uint64_t>>& keep,
                                                       const std::function<bool(std::string_view tmp_name)>& in_flight) {
  FileSystem* fs = FsOf(options);
  auto epochs = ListCheckpoints(options);
  if (!epochs.ok()) return epochs.status();
  const size_t newest = std::max<uint32_t>(options.keep, 1);
  std::vector<uint64_t> kept;
  bool removed = false;
  for (size_t i = 0; i < epochs->size(); ++i) {
    const uint64_t e = (*epochs)[i];
    if (keep.has_value() ? std::find(keep->begin(), keep->end(), e) != keep->end() : i < newest) {
      kept.push_back(e);
      continue;
    }
    if (absl::Status s = fs->Remove(JoinPath(options.dir, CheckpointName(e))); !s.ok()) return s;
    removed = true;
  }
  // Temp files of attempts that never published (a crash, an error), not
  // those being written (in_flight is asked after the listing; one that
  // finished since is gone: NotFound).
  auto names = fs->ListDir(options.dir);
  if (!names.ok()) return names.status();
  for (const std::string& n : *names) {
    if (IsCheckpointTempName(n) && !(in_flight && in_flight(n))) {
      absl::Status s = fs->Remove(JoinPath(options.dir, n));
      if (!s.ok() && !absl::IsNotFound(s)) return s;
      removed = removed || s.ok();
    }
  }
  if (removed) {
    if (absl::Status s = fs->SyncDir(options.dir); !s.ok()) return s;
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

absl::Status QuarantineCheckpoints(const CheckpointOptions& options, const std::vector<uint64_t>& epochs) {
  if (epochs.empty()) return absl::OkStatus();
  FileSystem* fs = FsOf(options);
  for (uint64_t e : epochs) {
    const std::string path = JoinPath(options.dir, CheckpointName(e));
    if (absl::Status s = fs->Rename(path, path + kQuarantineSuffix); !s.ok()) return s;
  }
  return fs->SyncDir(options.dir);
}

absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const CheckpointOptions& options, uint64_t epoch) {
  LoadedCheckpoint out;
  out.path = JoinPath(options.dir, CheckpointName(epoch));
  auto bytes = FsOf(options)->ReadFile(out.path, options.max_bytes);
  if (!bytes.ok()) return bytes.status();
  out.bytes = std::move(*bytes);
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", out.path, ": ", why));
  };
  if (out.bytes.size() < kHeaderFixedBytes + kCheckpointTrailerBytes)
    return bad(absl::StrCat("truncated (", out.bytes.size(), " bytes)"));
  const size_t content = out.bytes.size() - kCheckpointTrailerBytes;
  uint64_t length = 0;
  uint32_t stored = 0;
  std::memcpy(&length, out.bytes.data() + content, 8);
  std::memcpy(&stored, out.bytes.data() + content + 8, 4);
  if (length != content)
    return bad(absl::StrCat("length ", length, " in the trailer, ", content, " bytes of content: truncated or damaged"));
  const uint32_t crc = Crc32c(out.bytes.data(), content);
  if (crc != stored) return bad(absl::StrCat("CRC mismatch (stored ", stored, ", computed ", crc, ")"));
  std::string why;
  if (!WalkContent(std::string_view(out.bytes.data(), content), &out.meta, &out.client_state, &why,
                   [](PartitionId, uint32_t, uint32_t, uint64_t) { return true; },
                   [](Key, const char*, uint32_t) {}))
    return bad(why);
  if (out.meta.epoch != epoch) return bad(absl::StrCat("holds epoch ", out.meta.epoch, ", its name says ", epoch));
  return out;
}

absl::Status RestoreCheckpoint(const LoadedCheckpoint& checkpoint, const std::vector<PartitionStore*>& stores) {
  std::vector<PartitionId> local;
  for (PartitionId p = 0; p < stores.size(); ++p)
    if (stores[p] != nullptr) local.push_back(p);
  if (local != checkpoint.meta.partitions)
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", checkpoint.path, " holds other partitions than this node serves"));
  // Empty every table first (the tables themselves, their schema, stay).
  for (PartitionId p : local) {
    PartitionStore* s = stores[p];
    for (uint32_t id : s->table_ids()) {
      std::vector<Key> keys;
      s->GetTable(id)->ForEachInKeyOrder([&](const Record& r) { keys.push_back(r.key); });
      for (Key k : keys) s->Erase(k);
    }
    s->ReclaimErased();
  }
  std::vector<std::vector<uint32_t>> seen(stores.size());
  PartitionStore* cur = nullptr;
  CheckpointMeta meta;
  std::string why;
  const std::string_view content(checkpoint.bytes.data(), checkpoint.bytes.size() - kCheckpointTrailerBytes);
  const bool ok = WalkContent(
      content, &meta, nullptr, &why,
      [&](PartitionId p, uint32_t id, uint32_t value_size, uint64_t) {
        cur = stores[p];
        const Table* t = cur->GetTable(id);
        if (t == nullptr || t->value_size() != value_size) return false;
        seen[p].push_back(id);
        return true;
      },
      [&](Key k, const char* value, uint32_t value_size) {
        Record* r = cur->Insert(k);
        std::memcpy(r->value(), value, value_size);
      });
  if (!ok) return absl::DataLossError(absl::StrCat("checkpoint ", checkpoint.path, ": ", why));
  for (PartitionId p : local)
    if (seen[p] != stores[p]->table_ids())
      return absl::FailedPreconditionError(absl::StrCat("checkpoint ", checkpoint.path, ": partition ", p,
                                                        " has tables the checkpoint does not hold"));
  return absl::OkStatus();
}

}  // namespace detdb
