// detdb-cli's command-line parsing and JSON strings (no cluster needed;
// deploy/kv_cli_test.cc runs the commands against one).
#include "deploy/kv_shell.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

using Cmds = std::vector<std::vector<std::string>>;

TEST(KvShellParse, WordsQuotesEscapesAndSemicolons) {
  EXPECT_EQ(*ParseCommandLine("get a"), (Cmds{{"get", "a"}}));
  EXPECT_EQ(*ParseCommandLine("  put  k   v ;; get k;"), (Cmds{{"put", "k", "v"}, {"get", "k"}}));
  EXPECT_EQ(*ParseCommandLine("put 'a b' \"c;d\""), (Cmds{{"put", "a b", "c;d"}}));
  EXPECT_EQ(*ParseCommandLine(R"(put k "x\ty\n\"q\"\\\x41\0")"),
            (Cmds{{"put", "k", std::string("x\ty\n\"q\"\\A\0", 10)}}));
  EXPECT_EQ(*ParseCommandLine(R"(put k 'no \n escapes')"), (Cmds{{"put", "k", "no \\n escapes"}}));
  EXPECT_EQ(*ParseCommandLine("put k ''"), (Cmds{{"put", "k", ""}}));
  EXPECT_EQ(*ParseCommandLine("pre'fix'\"ed\""), (Cmds{{"prefixed"}}));
  EXPECT_TRUE(ParseCommandLine("   ;  ")->empty());
  EXPECT_EQ(ParseCommandLine("get \"open").status().message(), "unterminated \" quote");
  EXPECT_EQ(ParseCommandLine("get 'open").status().message(), "unterminated ' quote");
  EXPECT_EQ(ParseCommandLine(R"(get "\x4")").status().message(), "\\x needs two hex digits");
}

TEST(KvShellParse, JsonStringsEscapeEverythingOutsidePrintableAscii) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b\\c\nd\te"), R"("a\"b\\c\nd\te")");
  EXPECT_EQ(JsonString(std::string("\0\x1f\x7f\xc3\xa9", 5)), R"("\u0000\u001f\u007f\u00c3\u00a9")");
}

}  // namespace
}  // namespace detdb
