#include "io/fault_injecting_file_system.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace detdb {
namespace {

using Mode = FaultInjectingFileSystem::CrashMode;
constexpr uint64_t kSector = FaultInjectingFileSystem::kSectorSize;

std::string Bytes(size_t n, char c) { return std::string(n, c); }

class FaultFsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs_.CreateDir("/d").ok()); }
  std::unique_ptr<AppendableFile> Open(const std::string& p) {
    auto f = fs_.NewAppendableFile(p);
    EXPECT_TRUE(f.ok()) << f.status();
    return std::move(*f);
  }
  FaultInjectingFileSystem fs_;
};

TEST_F(FaultFsTest, BehavesLikeAFileSystem) {
  auto f = Open("/d/a");
  ASSERT_TRUE(f->Append("abc").ok());
  EXPECT_EQ("abc", *fs_.ReadFile("/d/a", 10));
  EXPECT_EQ(3u, *fs_.FileSize("/d/a"));
  EXPECT_EQ(0u, *fs_.SyncedSize("/d/a"));
  ASSERT_TRUE(f->Sync().ok());
  EXPECT_EQ(3u, *fs_.SyncedSize("/d/a"));
  EXPECT_EQ((std::vector<std::string>{"a"}), *fs_.ListDir("/d"));
  ASSERT_TRUE(fs_.Rename("/d/a", "/d/b").ok());
  EXPECT_EQ((std::vector<std::string>{"b"}), *fs_.ListDir("/d"));
  EXPECT_EQ(absl::StatusCode::kNotFound, fs_.NewAppendableFile("/nope/x").status().code());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, fs_.ReadFile("/d/b", 2).status().code());
  ASSERT_TRUE(fs_.Truncate("/d/b", 1).ok());
  EXPECT_EQ("a", *fs_.ReadFile("/d/b", 10));
  ASSERT_TRUE(fs_.Remove("/d/b").ok());
  EXPECT_FALSE(*fs_.FileExists("/d/b"));
}

TEST_F(FaultFsTest, ARenameIsUndoneByACrashUntilItsDirectoryIsSynced) {
  {
    auto f = Open("/d/tmp");
    ASSERT_TRUE(f->Append("x").ok());
    ASSERT_TRUE(f->Sync().ok());
  }
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  ASSERT_TRUE(fs_.Rename("/d/tmp", "/d/final").ok());
  fs_.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
  fs_.Restart();
  EXPECT_EQ((std::vector<std::string>{"tmp"}), *fs_.ListDir("/d"));
  ASSERT_TRUE(fs_.Rename("/d/tmp", "/d/final").ok());
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  fs_.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
  fs_.Restart();
  EXPECT_EQ((std::vector<std::string>{"final"}), *fs_.ListDir("/d"));
  EXPECT_EQ("x", *fs_.ReadFile("/d/final", 10));
}

TEST_F(FaultFsTest, CrashDropsUnsyncedBytesAndUnsyncedNames) {
  auto a = Open("/d/a");
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  auto b = Open("/d/b");  // name never synced
  ASSERT_TRUE(a->Append("durable").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(a->Append("-lost").ok());
  ASSERT_TRUE(b->Append("lost too").ok());
  ASSERT_TRUE(b->Sync().ok());
  fs_.SimulateCrash(Mode::kDrop);
  fs_.Restart();
  EXPECT_EQ("durable", *fs_.ReadFile("/d/a", 100));
  EXPECT_FALSE(*fs_.FileExists("/d/b"));
  // Handles from before the crash are dead, after Restart too.
  EXPECT_EQ(absl::StatusCode::kFailedPrecondition, a->Append("x").code());
  EXPECT_EQ(absl::StatusCode::kFailedPrecondition, a->Sync().code());
  EXPECT_EQ("durable", *fs_.ReadFile("/d/a", 100));
}

TEST_F(FaultFsTest, TearKeepsSyncedBytesAndASectorGranularPrefix) {
  const std::string synced = Bytes(700, 's');  // ends mid-sector
  std::string unsynced;
  for (size_t i = 0; i < 5 * kSector; ++i) unsynced.push_back(static_cast<char>('a' + i % 26));
  bool saw_drop = false, saw_keep = false, saw_garble = false;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    FaultInjectingFileSystem fs;
    ASSERT_TRUE(fs.CreateDir("/d").ok());
    auto f = *fs.NewAppendableFile("/d/f");
    ASSERT_TRUE(fs.SyncDir("/d").ok());
    ASSERT_TRUE(f->Append(synced).ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append(unsynced).ok());
    fs.SimulateCrash(Mode::kTear, seed);
    fs.Restart();
    const std::string got = *fs.ReadFile("/d/f", 1 << 20);
    ASSERT_GE(got.size(), synced.size());
    ASSERT_EQ(synced, got.substr(0, synced.size())) << "seed " << seed;
    const std::string all = synced + unsynced;
    // The longest prefix of got that is correct ends at the synced end or a
    // sector boundary (or the end of the data); anything after it lies
    // within one sector.
    size_t ok = 0;
    while (ok < got.size() && got[ok] == all[ok]) ++ok;
    size_t cut = ok;
    if (cut != all.size() && cut != synced.size() && cut % kSector != 0) {
      // A garbled byte may equal the original by chance: round down.
      cut = std::max<size_t>(synced.size(), cut / kSector * kSector);
    }
    EXPECT_TRUE(cut == synced.size() || cut % kSector == 0 || cut == all.size()) << "seed " << seed;
    EXPECT_LE(got.size(), std::max<size_t>(cut, (cut / kSector + 1) * kSector)) << "seed " << seed;
    if (got.size() == synced.size()) saw_drop = true;
    if (got.size() > synced.size()) saw_keep = true;
    if (ok < got.size()) saw_garble = true;
  }
  EXPECT_TRUE(saw_drop);
  EXPECT_TRUE(saw_keep);
  EXPECT_TRUE(saw_garble);
}

TEST_F(FaultFsTest, FailNextSyncFailsOnceAndLosesTheBytes) {
  auto f = Open("/d/a");
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  ASSERT_TRUE(f->Append("ok").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("XY").ok());
  fs_.FailNextSync();
  absl::Status s = f->Sync();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string::npos, s.message().find("Input/output error")) << s;  // EIO
  EXPECT_NE(std::string::npos, s.message().find("/d/a")) << s;
  EXPECT_EQ(1, fs_.failed_syncs());
  // The retry "succeeds", but the bytes it covered are gone: never retry.
  ASSERT_TRUE(f->Sync().ok());
  fs_.SimulateCrash(Mode::kDrop);
  fs_.Restart();
  EXPECT_EQ(std::string("ok\0\0", 4), *fs_.ReadFile("/d/a", 10));
}

TEST_F(FaultFsTest, FailSyncAfterN) {
  auto f = Open("/d/a");
  fs_.FailSyncAfter(2);
  EXPECT_TRUE(f->Sync().ok());
  EXPECT_TRUE(f->Sync().ok());
  EXPECT_FALSE(f->Sync().ok());
  EXPECT_FALSE(f->Sync().ok());
  fs_.ClearFaults();
  EXPECT_TRUE(f->Sync().ok());
  EXPECT_EQ(3, fs_.syncs());
  EXPECT_EQ(2, fs_.failed_syncs());
}

TEST_F(FaultFsTest, SpaceLimitWritesWhatFitsThenENOSPC) {
  auto f = Open("/d/a");
  auto g = Open("/d/b");
  fs_.SetSpaceLimit(10);
  ASSERT_TRUE(f->Append("123456").ok());
  absl::Status s = g->Append("abcdef");
  EXPECT_EQ(absl::StatusCode::kResourceExhausted, s.code()) << s;
  EXPECT_NE(std::string::npos, s.message().find("/d/b")) << s;
  EXPECT_NE(std::string::npos, s.message().find("No space")) << s;
  EXPECT_EQ("abcd", *fs_.ReadFile("/d/b", 100));
  EXPECT_EQ(4u, g->size());
  EXPECT_FALSE(g->Append("x").ok());
  fs_.ClearFaults();
  EXPECT_TRUE(g->Append("x").ok());
}

TEST_F(FaultFsTest, FlipBitChangesDataAndDisk) {
  auto f = Open("/d/a");
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  ASSERT_TRUE(f->Append("A").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(fs_.FlipBit("/d/a", 0, 1).ok());
  EXPECT_EQ("C", *fs_.ReadFile("/d/a", 10));
  fs_.SimulateCrash(Mode::kDrop);
  fs_.Restart();
  EXPECT_EQ("C", *fs_.ReadFile("/d/a", 10));
}

// The crash fence: from SimulateCrash to Restart every call fails with
// FailedPrecondition naming the operation and the path; nothing it was
// asked lands; the test's own inspection works throughout.
void ExpectFenced(const absl::Status& s, const std::string& what) {
  EXPECT_EQ(absl::StatusCode::kFailedPrecondition, s.code()) << what << ": " << s;
  EXPECT_NE(std::string::npos, s.message().find(what)) << s;
  EXPECT_NE(std::string::npos, s.message().find("crashed (simulated) and Restart() was not called")) << s;
}

TEST_F(FaultFsTest, EveryCallFailsAfterACrashUntilRestart) {
  auto a = Open("/d/a");
  ASSERT_TRUE(a->Append("durable").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  fs_.SimulateCrash(Mode::kDrop);

  ExpectFenced(fs_.NewAppendableFile("/d/new").status(), "open /d/new");
  ExpectFenced(fs_.NewAppendableFile("/d/a").status(), "open /d/a");
  ExpectFenced(a->Append("x"), "write /d/a");
  ExpectFenced(a->Sync(), "fdatasync /d/a");
  ExpectFenced(fs_.Truncate("/d/a", 1), "truncate /d/a");
  ExpectFenced(fs_.Rename("/d/a", "/d/c"), "rename /d/a to /d/c");
  ExpectFenced(fs_.Remove("/d/a"), "unlink /d/a");
  ExpectFenced(fs_.CreateDir("/d/sub"), "mkdir /d/sub");
  ExpectFenced(fs_.SyncDir("/d"), "fsync /d");
  ExpectFenced(fs_.ReadFile("/d/a", 100).status(), "read /d/a");
  ExpectFenced(fs_.FileSize("/d/a").status(), "stat /d/a");
  ExpectFenced(fs_.FileExists("/d/a").status(), "stat /d/a");
  ExpectFenced(fs_.ListDir("/d").status(), "opendir /d");
  // The test's inspection and fault knobs are not the dead process's.
  EXPECT_EQ(7u, *fs_.SyncedSize("/d/a"));
  EXPECT_TRUE(fs_.FlipBit("/d/a", 0, 0).ok());
  EXPECT_TRUE(fs_.FlipBit("/d/a", 0, 0).ok());  // back
  fs_.FailNextSync();
  fs_.ClearFaults();
  // A second crash before the restart changes nothing durable.
  fs_.SimulateCrash(Mode::kTear, 7);
  ExpectFenced(fs_.ListDir("/d").status(), "opendir /d");

  fs_.Restart();
  // Nothing the fenced calls asked for happened.
  EXPECT_EQ((std::vector<std::string>{"a"}), *fs_.ListDir("/d"));
  EXPECT_EQ("durable", *fs_.ReadFile("/d/a", 100));
  EXPECT_EQ(7u, *fs_.FileSize("/d/a"));
  EXPECT_FALSE(*fs_.FileExists("/d/sub"));
  // The new process: every call works again.
  auto n = Open("/d/new");
  ASSERT_TRUE(n->Append("fresh").ok());
  ASSERT_TRUE(n->Sync().ok());
  EXPECT_TRUE(fs_.CreateDir("/d/sub").ok());
  EXPECT_TRUE(fs_.Truncate("/d/a", 3).ok());
  EXPECT_TRUE(fs_.Rename("/d/a", "/d/c").ok());
  EXPECT_TRUE(fs_.SyncDir("/d").ok());
  EXPECT_TRUE(fs_.Remove("/d/c").ok());
  EXPECT_EQ((std::vector<std::string>{"new", "sub"}), *fs_.ListDir("/d"));
  EXPECT_EQ("fresh", *fs_.ReadFile("/d/new", 100));
}

TEST_F(FaultFsTest, FilesOpenedBeforeACrashStayFailedAfterRestart) {
  auto a = Open("/d/a");
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  ASSERT_TRUE(a->Append("kept").ok());
  ASSERT_TRUE(a->Sync().ok());
  fs_.SimulateCrash(Mode::kDrop);
  fs_.Restart();
  for (const absl::Status& s : {a->Append("x"), a->Sync()}) {
    EXPECT_EQ(absl::StatusCode::kFailedPrecondition, s.code()) << s;
    EXPECT_NE(std::string::npos, s.message().find("/d/a: opened by a process that crashed (simulated)")) << s;
  }
  EXPECT_EQ("kept", *fs_.ReadFile("/d/a", 100));
  // Reopened by the new process, the same file takes appends again.
  auto again = Open("/d/a");
  ASSERT_TRUE(again->Append("+more").ok());
  ASSERT_TRUE(again->Sync().ok());
  EXPECT_EQ("kept+more", *fs_.ReadFile("/d/a", 100));
  EXPECT_FALSE(a->Append("x").ok());
}

TEST_F(FaultFsTest, RestartWithoutACrashChangesNothing) {
  auto a = Open("/d/a");
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  ASSERT_TRUE(a->Append("synced").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(a->Append("-unsynced").ok());
  fs_.Restart();
  fs_.Restart();
  // Open files, unsynced bytes and the counters are untouched.
  EXPECT_EQ("synced-unsynced", *fs_.ReadFile("/d/a", 100));
  EXPECT_EQ(6u, *fs_.SyncedSize("/d/a"));
  EXPECT_EQ(1, fs_.syncs());
  ASSERT_TRUE(a->Append("!").ok());
  ASSERT_TRUE(a->Sync().ok());
  EXPECT_TRUE(fs_.CreateDir("/d/sub").ok());
  fs_.SimulateCrash(Mode::kDrop);
  fs_.Restart();
  fs_.Restart();  // a second one is harmless too
  EXPECT_EQ("synced-unsynced!", *fs_.ReadFile("/d/a", 100));
}

// A thread of the "dead" process goes on writing while the crash comes:
// it rotates segments (open, append, fsync, directory sync, an unsynced
// tail), removes old ones, truncates, renames and creates directories, and
// keeps a model of what a kDrop crash would leave of every call that
// succeeded. Every call after its first failure fails too (with
// FailedPrecondition), and after Restart the directory holds exactly the
// model: nothing the thread did after the crash landed.
TEST(FaultFsThreadTest, NothingADeadThreadDoesLands) {
  struct ModelFile {
    std::string data, synced;
    std::optional<std::string> durable_path;  // set by SyncDir
  };
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    FaultInjectingFileSystem fs;
    ASSERT_TRUE(fs.CreateDir("/d").ok());
    std::atomic<int> iterations{0};
    std::map<std::string, ModelFile> files;  // by current path; the thread's until joined
    std::set<std::string> dirs;
    int ok_after_failure = 0, wrong_code = 0, failed = 0, succeeded = 0;
    std::thread writer([&] {
      bool dead = false;
      int after = 0;  // iterations since the first failure
      auto step = [&](const absl::Status& s) {
        if (s.ok()) {
          ++succeeded;
          if (dead) ++ok_after_failure;
          return true;
        }
        ++failed;
        dead = true;
        if (!absl::IsFailedPrecondition(s)) ++wrong_code;
        return false;
      };
      std::unique_ptr<AppendableFile> cur;
      std::string cur_path;
      for (int i = 0; after < 20 && i < 1000000; ++i, iterations = i) {
        if (dead) ++after;
        const std::string seg = absl::StrCat("/d/seg-", i);
        auto f = fs.NewAppendableFile(seg);
        if (step(f.status())) {
          cur = std::move(*f);
          cur_path = seg;
          files[seg] = ModelFile{};
        }
        const std::string rec = absl::StrCat("record ", i, ";");
        if (cur != nullptr && step(cur->Append(rec))) files[cur_path].data += rec;
        if (cur != nullptr && step(cur->Sync())) files[cur_path].synced = files[cur_path].data;
        if (step(fs.SyncDir("/d")))
          for (auto& [path, m] : files) m.durable_path = path;
        if (cur != nullptr && step(cur->Append("tail"))) files[cur_path].data += "tail";
        const std::string old = absl::StrCat("/d/seg-", i - 2);
        if (files.count(old) && step(fs.Remove(old))) files.erase(old);
        const std::string prev = absl::StrCat("/d/seg-", i - 1);
        if (i % 4 == 0 && files.count(prev)) {
          const uint64_t size = files[prev].data.size() / 2;
          if (step(fs.Truncate(prev, size))) {
            files[prev].data.resize(size);
            files[prev].synced = files[prev].data;
          }
        }
        if (i % 3 == 0 && files.count(prev) && step(fs.Rename(prev, absl::StrCat(prev, ".old")))) {
          files[prev + ".old"] = files[prev];
          files.erase(prev);
        }
        const std::string dir = absl::StrCat("/d/dir-", i);
        if (i % 5 == 0 && step(fs.CreateDir(dir))) dirs.insert(dir);
      }
    });
    std::mt19937_64 rng(seed);
    const int at = 1 + static_cast<int>(rng() % 40);
    while (iterations.load() < at) std::this_thread::yield();
    fs.SimulateCrash(Mode::kDrop);
    writer.join();
    fs.Restart();
    EXPECT_EQ(0, ok_after_failure) << "a call of the dead process succeeded";
    EXPECT_EQ(0, wrong_code);
    EXPECT_GT(failed, 0);
    EXPECT_GT(succeeded, 0);
    // What a kDrop crash leaves: each file whose name a SyncDir saw, at that
    // name, with its synced bytes; every directory.
    std::map<std::string, std::string> want;
    for (const auto& [path, m] : files)
      if (m.durable_path.has_value()) want[*m.durable_path] = m.synced;
    std::vector<std::string> names;
    for (const auto& [path, data] : want) names.push_back(path.substr(3));
    for (const std::string& d : dirs) names.push_back(d.substr(3));
    std::sort(names.begin(), names.end());
    auto listed = fs.ListDir("/d");
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_EQ(names, *listed);
    for (const auto& [path, data] : want) EXPECT_EQ(data, *fs.ReadFile(path, 1 << 20)) << path;
  }
}

}  // namespace
}  // namespace detdb
