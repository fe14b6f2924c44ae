// Checkpoint capture: the forked child that streams the stores, and the
// parent that receives its bytes into a temp file (scheduler/checkpoint.h;
// split from checkpoint.cc, which keeps the names, publish, prune, read and
// restore).
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
    // Only hash tables need the sort scratch (an ordered table is visited in
    // key order as it stands), and an ordered table's size() walks the whole
    // tree: in this pause, with every partition stopped, it must not.
    for (uint32_t id : buffers.table_ids.back()) {
      const Table* t = s->GetTable(id);
      if (!t->ordered()) most = std::max(most, t->size());
    }
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

}  // namespace detdb
