// The capture mechanics of a checkpoint (docs/DURABILITY.md, review
// findings 4-7, 19): the forked child keeps no fd but its pipe, dumps no
// core, dies with its parent, calls no operator new and dies of a fault
// signal despite a handler of the parent's; the parent kills and reaps a
// child that is stuck (deadline) or cancelled and removes its temp file; a
// failed waitpid and a stream shorter than a header are errors; temp names
// are unique per attempt, an existing one is never reused or removed, and
// pruning spares the temp files of attempts in flight.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "glog/logging.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/checkpoint.h"
#include "scheduler/test_workload.h"

// When nonzero: operator new in any other process than this pid (a forked
// child) exits with 99 instead of allocating.
static std::atomic<pid_t> g_alloc_owner{0};

// Every non-aligned form is replaced, so that all of them pair malloc/free
// (which GCC cannot see where it inlines them).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static void* CheckedAlloc(size_t n) noexcept {
  const pid_t owner = g_alloc_owner.load(std::memory_order_relaxed);
  if (owner != 0 && getpid() != owner) _exit(99);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new(size_t n) {
  void* p = CheckedAlloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return CheckedAlloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return CheckedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const char kDir[] = "/ckpt";

struct Stores {
  ModPartitioner parts{2};
  std::vector<std::unique_ptr<PartitionStore>> owned;
  std::vector<const PartitionStore*> raw;
  explicit Stores(uint64_t rows) {
    for (PartitionId p = 0; p < 2; ++p) {
      owned.push_back(std::make_unique<PartitionStore>());
      CHECK(LoadCounterTable(owned.back().get(), parts, p, rows).ok());
      auto wide = owned.back()->CreateTable({.id = 7, .name = "wide", .value_size = 100});
      CHECK(wide.ok());
      for (uint64_t r = 0; r < rows; ++r) (*wide)->Insert(MakeKey(7, r * 2 + p));
      raw.push_back(owned.back().get());
    }
  }
};

CheckpointMeta Meta(uint64_t epoch) { return CheckpointMeta{epoch, 42, 1000 + epoch, {0, 1}}; }

CheckpointOptions Options(FileSystem* fs) {
  CheckpointOptions o;
  o.dir = kDir;
  o.fs = fs;
  return o;
}

// Whether pid is gone and reaped (not our child any more).
bool Reaped(pid_t pid) {
  int st = 0;
  return waitpid(pid, &st, WNOHANG) < 0 && errno == ECHILD;
}

std::vector<std::string> TempFiles(FileSystem* fs) {
  std::vector<std::string> out;
  auto names = fs->ListDir(kDir);
  if (names.ok())
    for (const std::string& n : *names)
      if (IsCheckpointTempName(n)) out.push_back(n);
  return out;
}

int OpenFds(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

std::string CoreLimit(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Max core file size", 0) == 0) {
      std::istringstream words(line.substr(18));
      std::string soft, hard;
      words >> soft >> hard;
      return soft + "/" + hard;
    }
  return "?";
}

TEST(CheckpointCapture, TheChildKeepsOnlyItsPipeDumpsNoCoreAndIsKilledWhenCancelled) {
  FaultInjectingFileSystem fs;
  Stores s(50);
  const int extra = open("/dev/null", O_RDONLY);  // an fd the child must not keep
  ASSERT_GE(extra, 0);
  auto cap = ForkCapture(Meta(3), s.raw, milliseconds(60000));
  ASSERT_TRUE(cap.ok()) << cap.status();
  int fds = -1;
  for (int i = 0; i < 500 && fds != 1; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    fds = OpenFds(cap->pid);
  }
  EXPECT_EQ(fds, 1) << "the child keeps fds other than its pipe";
  EXPECT_EQ(CoreLimit(cap->pid), "0/0");
  close(extra);
  cap->cancelled = [] { return true; };
  const auto t0 = Clock::now();
  auto tmp = ReceiveCapture(*cap, Options(&fs), 3, nullptr);
  EXPECT_TRUE(absl::IsCancelled(tmp.status())) << tmp.status();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(Reaped(cap->pid));
  EXPECT_TRUE(TempFiles(&fs).empty());
}

// Finding 19: the child does not inherit the parent's fault handlers (detdb
// installs glog's, which takes locks): a fault kills it at once. Here the
// parent's SIGSEGV handler would hang forever; the child must die of the
// signal, not sit in the handler until the deadline kills it.
void HangForever(int) {
  for (;;) pause();
}

TEST(CheckpointCapture, TheChildDiesOfAFaultSignalDespiteTheParentsHandler) {
  FaultInjectingFileSystem fs;
  Stores s(50);
  struct sigaction hang, old;
  std::memset(&hang, 0, sizeof(hang));
  hang.sa_handler = HangForever;
  ASSERT_EQ(sigaction(SIGSEGV, &hang, &old), 0);
  auto cap = ForkCapture(Meta(3), s.raw, milliseconds(60000));
  ASSERT_EQ(sigaction(SIGSEGV, &old, nullptr), 0);
  ASSERT_TRUE(cap.ok()) << cap.status();
  for (int i = 0; i < 500 && OpenFds(cap->pid) != 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(OpenFds(cap->pid), 1) << "the child did not set itself up";
  ASSERT_EQ(kill(cap->pid, SIGSEGV), 0);
  const auto t0 = Clock::now();
  cap->deadline = t0 + std::chrono::seconds(8);
  auto got = ReceiveCapture(*cap, Options(&fs), 3, nullptr);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4)) << "the child hung in the inherited handler";
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("killed by signal " + std::to_string(SIGSEGV)), std::string::npos)
      << got.status();
  EXPECT_TRUE(Reaped(cap->pid));
  EXPECT_TRUE(TempFiles(&fs).empty());
}

TEST(CheckpointCapture, AStuckChildIsKilledAndReapedAtTheDeadline) {
  FaultInjectingFileSystem fs;
  Stores s(50);
  auto cap = ForkCapture(Meta(4), s.raw, milliseconds(60000));
  ASSERT_TRUE(cap.ok()) << cap.status();
  const auto t0 = Clock::now();
  cap->deadline = t0 + milliseconds(300);
  auto tmp = ReceiveCapture(*cap, Options(&fs), 4, nullptr);
  EXPECT_TRUE(absl::IsDeadlineExceeded(tmp.status())) << tmp.status();
  EXPECT_GE(Clock::now() - t0, milliseconds(300));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(Reaped(cap->pid));
  EXPECT_TRUE(TempFiles(&fs).empty());
}

TEST(CheckpointCapture, TheChildDiesWithItsParent) {
  Stores s(50);
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // orphans come to us: we can reap them
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t middle = fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {  // forks a stuck capture child, tells its pid, exits
    auto cap = ForkCapture(Meta(5), s.raw, milliseconds(60000));
    const pid_t child = cap.ok() ? cap->pid : -1;
    for (int i = 0; i < 500 && child > 0 && OpenFds(child) != 1; ++i) usleep(10000);  // it is set up
    (void)!write(p[1], &child, sizeof(child));
    _exit(0);
  }
  close(p[1]);
  pid_t child = -1;
  ASSERT_EQ(read(p[0], &child, sizeof(child)), static_cast<ssize_t>(sizeof(child)));
  close(p[0]);
  ASSERT_GT(child, 0);
  int st = 0;
  ASSERT_EQ(waitpid(middle, &st, 0), middle);
  pid_t got = 0;
  for (int i = 0; i < 500 && got == 0; ++i) {
    got = waitpid(child, &st, WNOHANG);
    if (got == 0) std::this_thread::sleep_for(milliseconds(10));
  }
  if (got == 0) {  // still running: the test fails; do not leave it behind
    kill(child, SIGKILL);
    waitpid(child, &st, 0);
  }
  EXPECT_EQ(got, child) << "the capture child outlived its parent";
  // SIGKILLed with its parent (or, had the parent died before the child's
  // prctl, exited on seeing another parent).
  EXPECT_TRUE((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) || (WIFEXITED(st) && WEXITSTATUS(st) == 4))
      << "wait status " << st;
  (void)prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(CheckpointCapture, TheChildDoesNotAllocate) {
  FaultInjectingFileSystem fs;
  Stores s(3000);
  g_alloc_owner.store(getpid());
  auto cap = ForkCapture(Meta(6), s.raw);
  ASSERT_TRUE(cap.ok()) << cap.status();
  CheckpointStats stats;
  auto tmp = ReceiveCapture(*cap, Options(&fs), 6, &stats);
  g_alloc_owner.store(0);
  ASSERT_TRUE(tmp.ok()) << tmp.status() << " (exit status 99: the child called operator new)";
  ASSERT_TRUE(PublishCheckpoint(Options(&fs), *tmp, 6).ok());
  auto loaded = ReadCheckpoint(Options(&fs), 6);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->bytes.size(), stats.bytes);
}

// A test-made "capture": a child that writes `bytes` to the pipe and exits 0.
ForkedCapture FakeChild(const std::string& bytes) {
  int p[2];
  CHECK_EQ(pipe(p), 0);
  const pid_t pid = fork();
  CHECK_GE(pid, 0);
  if (pid == 0) {
    close(p[0]);
    (void)!write(p[1], bytes.data(), bytes.size());
    _exit(0);
  }
  close(p[1]);
  ForkedCapture c;
  c.pid = pid;
  c.read_fd = p[0];
  return c;
}

// The content a real child would write for s at epoch (fits a pipe's buffer).
std::string Content(const Stores& s, uint64_t epoch) {
  int p[2];
  CHECK_EQ(pipe(p), 0);
  CaptureBuffers b;
  std::vector<const Record*> sort(1000);
  std::vector<char> out(4096);
  for (const PartitionStore* st : s.raw) b.table_ids.push_back(st->table_ids());
  b.sort = sort.data();
  b.sort_capacity = sort.size();
  b.out = out.data();
  b.out_bytes = out.size();
  CHECK(WriteCheckpointContent(p[1], Meta(epoch), s.raw, b));
  close(p[1]);
  std::string bytes(1 << 16, '\0');
  const ssize_t n = read(p[0], bytes.data(), bytes.size());
  close(p[0]);
  CHECK_GT(n, 0);
  bytes.resize(static_cast<size_t>(n));
  return bytes;
}

TEST(CheckpointCapture, AStreamShorterThanAHeaderOrOfAnotherEpochIsRefused) {
  FaultInjectingFileSystem fs;
  Stores s(5);
  const std::string good = Content(s, 7);
  ASSERT_GT(good.size(), 60u);
  for (const std::string& bad : {std::string(), good.substr(0, 20), good.substr(0, 41), Content(s, 8)}) {
    auto tmp = ReceiveCapture(FakeChild(bad), Options(&fs), 7, nullptr);
    EXPECT_TRUE(absl::IsInternal(tmp.status())) << bad.size() << " bytes: " << tmp.status();
    EXPECT_TRUE(TempFiles(&fs).empty());
  }
  auto tmp = ReceiveCapture(FakeChild(good), Options(&fs), 7, nullptr);
  ASSERT_TRUE(tmp.ok()) << tmp.status();
  ASSERT_TRUE(PublishCheckpoint(Options(&fs), *tmp, 7).ok());
  EXPECT_TRUE(ReadCheckpoint(Options(&fs), 7).ok());
}

TEST(CheckpointCapture, AFailedWaitpidIsAnError) {
  FaultInjectingFileSystem fs;
  Stores s(5);
  ForkedCapture c = FakeChild(Content(s, 9));
  int st = 0;
  ASSERT_EQ(waitpid(c.pid, &st, 0), c.pid);  // reaped here: ReceiveCapture's waitpid fails (ECHILD)
  auto tmp = ReceiveCapture(c, Options(&fs), 9, nullptr);
  EXPECT_TRUE(absl::IsInternal(tmp.status())) << tmp.status();
  EXPECT_NE(tmp.status().message().find("waitpid"), std::string::npos) << tmp.status();
  EXPECT_TRUE(TempFiles(&fs).empty());
}

TEST(CheckpointCapture, TempNamesAreUniqueAndNeverReused) {
  FaultInjectingFileSystem fs;
  const CheckpointOptions o = Options(&fs);
  const std::string a = CheckpointTempPath(o, 5), b = CheckpointTempPath(o, 5);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind(JoinPath(kDir, CheckpointName(5)) + ".", 0), 0u) << a;
  EXPECT_TRUE(IsCheckpointTempName(a.substr(a.rfind('/') + 1)));
  EXPECT_TRUE(IsCheckpointTempName(CheckpointName(5) + ".tmp"));  // the older form
  EXPECT_FALSE(IsCheckpointTempName(CheckpointName(5)));
  EXPECT_FALSE(IsCheckpointTempName("log-00000000000000000005.seg.tmp"));
  EXPECT_FALSE(ParseCheckpointName(a.substr(a.rfind('/') + 1)));
  // Another attempt's temp file at the name: refused, and left alone.
  Stores s(5);
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  {
    auto f = fs.NewAppendableFile(a);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("someone else's").ok());
  }
  ForkedCapture c = FakeChild(Content(s, 5));
  c.tmp_path = a;
  auto tmp = ReceiveCapture(c, o, 5, nullptr);
  EXPECT_TRUE(absl::IsAlreadyExists(tmp.status())) << tmp.status();
  EXPECT_TRUE(Reaped(c.pid));
  auto kept = fs.ReadFile(a, 1 << 20);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, "someone else's");
}

TEST(CheckpointCapture, PruneSparesTheTempFilesOfAttemptsInFlight) {
  FaultInjectingFileSystem fs;
  const CheckpointOptions o = Options(&fs);
  ASSERT_TRUE(fs.CreateDir(kDir).ok());
  const std::string writing = CheckpointTempPath(o, 20), crashed = CheckpointTempPath(o, 19);
  const std::string old_form = JoinPath(kDir, CheckpointName(18) + ".tmp");
  for (const std::string& p : {writing, crashed, old_form}) ASSERT_TRUE(fs.NewAppendableFile(p).ok());
  const std::string writing_name = writing.substr(writing.rfind('/') + 1);
  auto kept = PruneCheckpoints(o, std::nullopt, [&](std::string_view name) { return name == writing_name; });
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(TempFiles(&fs), std::vector<std::string>{writing_name});
  ASSERT_TRUE(PruneCheckpoints(o).ok());  // nothing in flight (at startup): all go
  EXPECT_TRUE(TempFiles(&fs).empty());
}

}  // namespace
}  // namespace detdb
