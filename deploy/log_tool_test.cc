#include "deploy/log_tool.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "io/fault_injecting_file_system.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {

class LogToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detdb_log_tool_test.XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    root_ = tmpl;
    dir_ = JoinPath(root_, "log");
    InputLogOptions o;
    o.dir = dir_;
    o.segment_bytes = 300;
    o.config_hash = 7;
    o.build_id = 9;
    auto w = InputLogWriter::Open(o, {});
    ASSERT_TRUE(w.ok()) << w.status();
    for (uint64_t e = 1; e <= 10; ++e) ASSERT_TRUE((*w)->Append(e, 0, std::string(50 + e, 'p')).ok());
    ASSERT_TRUE((*w)->Close().ok());
    auto names = PosixFileSystem()->ListDir(dir_);
    ASSERT_TRUE(names.ok());
    segments_ = *names;
    ASSERT_GT(segments_.size(), 2u);
  }
  void TearDown() override { (void)std::system(("rm -rf " + root_).c_str()); }

  // Runs the real binary; returns its exit status and output.
  int Run(const std::string& args, std::string* output) {
    const std::string out_file = JoinPath(root_, "out.txt");
    const std::string cmd = std::string(DETDB_LOG_BIN) + " " + args + " > " + out_file + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(out_file);
    std::stringstream ss;
    ss << in.rdbuf();
    *output = ss.str();
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  std::string Path(size_t segment) { return JoinPath(dir_, segments_[segment]); }

  std::string root_, dir_;
  std::vector<std::string> segments_;
};

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_F(LogToolTest, VerifyACleanLog) {
  std::ostringstream out;
  EXPECT_EQ(0, VerifyLog(dir_, {}, out));
  const std::string text = out.str();
  EXPECT_TRUE(Has(text, segments_[0] + "  records ")) << text;
  EXPECT_TRUE(Has(text, "epochs 1..")) << text;
  EXPECT_TRUE(Has(text, "crc ok")) << text;
  EXPECT_TRUE(Has(text, "10 records, epochs 1..10, last complete epoch 10")) << text;
  EXPECT_TRUE(Has(text, "\nOK\n")) << text;
}

TEST_F(LogToolTest, DumpPrintsOneLinePerRecord) {
  std::ostringstream out;
  EXPECT_EQ(0, DumpLog(dir_, {}, out));
  const std::string text = out.str();
  EXPECT_EQ(10, std::count(text.begin(), text.end(), '\n')) << text;
  EXPECT_TRUE(Has(text, segments_[0] + "  offset 0  epoch 1  sequencer 0  payload 51 bytes  epoch-end  config 7  build 9  crc ok"))
      << text;
}

TEST_F(LogToolTest, ConfigHashIsCheckedWhenGiven) {
  std::ostringstream out;
  LogToolOptions o;
  o.config_hash = 8;
  EXPECT_EQ(1, VerifyLog(dir_, o, out));
  EXPECT_TRUE(Has(out.str(), "config hash")) << out.str();
  o.config_hash = 7;
  EXPECT_EQ(0, VerifyLog(dir_, o, out));
}

TEST_F(LogToolTest, BinaryVerifiesDumpsAndNeverModifies) {
  std::string text;
  EXPECT_EQ(0, Run("verify " + dir_, &text));
  EXPECT_TRUE(Has(text, "OK")) << text;
  EXPECT_EQ(0, Run("dump " + dir_, &text));
  EXPECT_TRUE(Has(text, "epoch 10  sequencer 0")) << text;
  EXPECT_EQ(2, Run("frobnicate " + dir_, &text));
  EXPECT_EQ(2, Run("verify " + JoinPath(root_, "missing"), &text));
  EXPECT_TRUE(Has(text, "no such directory")) << text;

  // A torn tail: reported, exit 0 (a node would trim it and start), file untouched.
  const std::string last = Path(segments_.size() - 1);
  const uint64_t size = *PosixFileSystem()->FileSize(last);
  ASSERT_TRUE(PosixFileSystem()->Truncate(last, size - 5).ok());
  EXPECT_EQ(0, Run("verify " + dir_, &text));
  EXPECT_TRUE(Has(text, "torn tail")) << text;
  EXPECT_EQ(size - 5, *PosixFileSystem()->FileSize(last));

  // A bit flip in the first segment: exit 1, the file and offset named.
  {
    std::fstream f(Path(0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(45);
    f.put('\x01');
  }
  EXPECT_EQ(1, Run("verify " + dir_, &text));
  EXPECT_TRUE(Has(text, "CORRUPT: input log " + Path(0) + " offset 0:")) << text;
  EXPECT_EQ(1, Run("dump " + dir_, &text));
  EXPECT_TRUE(Has(text, "CORRUPT")) << text;
}

}  // namespace
}  // namespace detdb
