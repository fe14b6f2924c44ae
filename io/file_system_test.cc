#include "io/file_system.h"

#include <stdlib.h>

#include <string>

#include "gtest/gtest.h"

namespace detdb {
namespace {

class PosixFileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detdb_io_test.XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }
  FileSystem* fs_ = PosixFileSystem();
  std::string dir_;
};

TEST_F(PosixFileSystemTest, AppendSyncReadTruncate) {
  const std::string p = JoinPath(dir_, "a");
  {
    auto f = fs_->NewAppendableFile(p);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(0u, (*f)->size());
    ASSERT_TRUE((*f)->Append("hello ").ok());
    ASSERT_TRUE((*f)->Append("world").ok());
    EXPECT_EQ(11u, (*f)->size());
    ASSERT_TRUE((*f)->Sync().ok());
    ASSERT_TRUE((*f)->Close().ok());
    EXPECT_TRUE((*f)->Close().ok());  // idempotent
    EXPECT_FALSE((*f)->Append("x").ok());
  }
  EXPECT_EQ("hello world", *fs_->ReadFile(p, 100));
  EXPECT_EQ(11u, *fs_->FileSize(p));
  {
    auto f = fs_->NewAppendableFile(p);  // reopen: appends at the end
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(11u, (*f)->size());
    ASSERT_TRUE((*f)->Append("!").ok());
  }
  EXPECT_EQ("hello world!", *fs_->ReadFile(p, 100));
  ASSERT_TRUE(fs_->Truncate(p, 5).ok());
  EXPECT_EQ("hello", *fs_->ReadFile(p, 100));
  // The read limit is checked before reading.
  auto big = fs_->ReadFile(p, 4);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, big.status().code());
}

TEST_F(PosixFileSystemTest, DirectoryOperations) {
  const std::string sub = JoinPath(dir_, "sub");
  ASSERT_TRUE(fs_->CreateDir(sub).ok());
  ASSERT_TRUE(fs_->CreateDir(sub).ok());  // exists: OK
  for (const char* n : {"b", "a", "c"}) {
    auto f = fs_->NewAppendableFile(JoinPath(sub, n));
    ASSERT_TRUE(f.ok());
  }
  ASSERT_TRUE(fs_->SyncDir(sub).ok());
  EXPECT_EQ((std::vector<std::string>{"a", "b", "c"}), *fs_->ListDir(sub));
  ASSERT_TRUE(fs_->Rename(JoinPath(sub, "a"), JoinPath(sub, "d")).ok());
  ASSERT_TRUE(fs_->Remove(JoinPath(sub, "b")).ok());
  EXPECT_EQ((std::vector<std::string>{"c", "d"}), *fs_->ListDir(sub));
  EXPECT_TRUE(*fs_->FileExists(JoinPath(sub, "c")));
  EXPECT_FALSE(*fs_->FileExists(JoinPath(sub, "a")));
}

TEST_F(PosixFileSystemTest, ErrorsNameThePathAndTheErrno) {
  const std::string missing = JoinPath(dir_, "nope/x");
  auto f = fs_->NewAppendableFile(missing);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(absl::StatusCode::kNotFound, f.status().code());
  EXPECT_NE(std::string::npos, f.status().message().find(missing)) << f.status();
  EXPECT_NE(std::string::npos, f.status().message().find("No such file")) << f.status();
  EXPECT_EQ(absl::StatusCode::kNotFound, fs_->ReadFile(missing, 10).status().code());
  EXPECT_EQ(absl::StatusCode::kNotFound, fs_->FileSize(missing).status().code());
  EXPECT_EQ(absl::StatusCode::kNotFound, fs_->Remove(missing).code());
  EXPECT_EQ(absl::StatusCode::kNotFound, fs_->ListDir(missing).status().code());
  EXPECT_EQ(absl::StatusCode::kNotFound, fs_->Truncate(missing, 0).code());
}

TEST(PathTest, JoinAndDirName) {
  EXPECT_EQ("a/b", JoinPath("a", "b"));
  EXPECT_EQ("a/b", JoinPath("a/", "b"));
  EXPECT_EQ("/x", JoinPath("/", "x"));
  EXPECT_EQ("a", DirName("a/b"));
  EXPECT_EQ("/", DirName("/b"));
  EXPECT_EQ(".", DirName("b"));
}

}  // namespace
}  // namespace detdb
