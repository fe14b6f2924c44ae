#include "io/fault_injecting_file_system.h"

#include <string>

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
  EXPECT_EQ((std::vector<std::string>{"tmp"}), *fs_.ListDir("/d"));
  ASSERT_TRUE(fs_.Rename("/d/tmp", "/d/final").ok());
  ASSERT_TRUE(fs_.SyncDir("/d").ok());
  fs_.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
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
  EXPECT_EQ("durable", *fs_.ReadFile("/d/a", 100));
  EXPECT_FALSE(*fs_.FileExists("/d/b"));
  // Handles from before the crash are dead.
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
  EXPECT_EQ("C", *fs_.ReadFile("/d/a", 10));
}

}  // namespace
}  // namespace detdb
