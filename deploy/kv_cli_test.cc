// detdb-cli end to end, against a real 1-node `detdb --workload=kv`: every
// command through --exec (table and JSON output, exit status, one error
// line per failed command, later commands still run), a script on stdin,
// the interactive shell in a pseudo-terminal (`script` from bsdutils:
// prompt, line editing with Ctrl-A and the up arrow, the history file), and
// a dead node (reported within the time-out, never a hang).
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "deploy/test_cluster.h"

namespace detdb {
namespace {

struct Ran {
  int status = -1;
  std::string out;  // stdout and stderr
  double seconds = 0;
};

// Runs a shell command line; its output (2>&1) and exit status.
Ran Sh(const std::string& command) {
  Ran r;
  const auto start = std::chrono::steady_clock::now();
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int Count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

class KvCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    TestClusterOptions o;
    o.nodes = 1;
    o.flags = {"--workload=kv"};
    cluster_ = new TestCluster(o);
    ASSERT_TRUE(cluster_->Start().ok()) << cluster_->Logs();
  }
  static void TearDownTestSuite() {
    EXPECT_TRUE(cluster_->Stop().ok()) << cluster_->Logs();
    delete cluster_;
  }
  static std::string Cli(const std::string& flags = "") {
    return absl::StrCat(DETDB_CLI_BIN, " --config=", cluster_->config_path(), " ", flags);
  }
  static Ran Exec(const std::string& commands, const std::string& flags = "") {
    return Sh(Cli(flags) + " --exec=" + Quote(commands));
  }
  static TestCluster* cluster_;
};
TestCluster* KvCliTest::cluster_ = nullptr;

TEST_F(KvCliTest, ExecRunsEveryCommandWithTableOutput) {
  Ran r = Exec("put --int alice 100; put --int bob 5; transfer alice bob 30; get alice; put s 'hello world'; "
               "get s; append l x; append l 'y z'; get l; put --list m a b; get m; cas s 'hello world' bye; "
               "cas s nope x; cas --int bob 35 36; cas fresh --absent v; delete s; delete s; get s; help");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* want : {"\"alice\"  70\n\"bob\"    35\n", "\"alice\"  int   70\n", "\"s\"  bytes  \"hello world\"\n",
                           "OK (2 elements)\n", "\"l\"  list  [\"x\", \"y z\"]\n", "\"m\"  list  [\"a\", \"b\"]\n",
                           "OK (swapped)\nNOT SWAPPED: the current value is \"bye\" (bytes)\nOK (swapped)\nOK (swapped)\n",
                           "OK (deleted)\nOK (there was no such key)\n(not found) \"s\"\n", "transfer FROM TO AMOUNT"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << r.out;
  EXPECT_EQ(Count(r.out, "error"), 0) << r.out;
}

TEST_F(KvCliTest, ErrorsAreOneLineEachAndLaterCommandsRun) {
  Ran r = Exec("put text abc; transfer text x 1; append text e; transfer x text 0; get " + std::string(129, 'k') +
               "; frob; put; put --int n twelve; checkpoint; scan; put ok yes; get ok");
  EXPECT_EQ(r.status, 1) << r.out;
  for (const char* want :
       {"error: transfer aborted: \"text\" holds bytes, not int\n", "error: append aborted: \"text\" holds bytes, not list\n",
        "error: transfer: amount must be positive, not 0\n", "error: get: key of 129 bytes; the limit is 128\n",
        "error: unknown command \"frob\" (try help)\n", "error: usage: put [--int] KEY VALUE",
        "error: N must be a 64-bit integer, not \"twelve\"\n",
        "error: checkpoint is not available yet: detdb has no checkpoints so far\n",
        "error: scan is not available yet", "\"ok\"  bytes  \"yes\"\n"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << r.out;
  EXPECT_EQ(Count(r.out, "error: "), 9) << r.out;
  EXPECT_EQ(Count(r.out, "\n"), 9 + 2 + 2) << "one line per error, two OKs, one table: " << r.out;
  r = Exec("get \"unterminated");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "error: unterminated \" quote\n");
}

TEST_F(KvCliTest, JsonOutputIsOneObjectPerCommand) {
  Ran r = Exec("put --int j1 7; get j1; get nothing-here; append jl \"\\xff\"; get jl; transfer j1 j2 2; "
               "transfer j1 j2 99; cas j1 5 6; info; digest",
               "--format=json");
  EXPECT_EQ(r.status, 1) << r.out;
  for (const char* want :
       {"{\"ok\":true,\"cmd\":\"put\",\"key\":\"j1\"}\n",
        "{\"ok\":true,\"cmd\":\"get\",\"key\":\"j1\",\"found\":true,\"type\":\"int\",\"value\":7}\n",
        "{\"ok\":true,\"cmd\":\"get\",\"key\":\"nothing-here\",\"found\":false}\n",
        "{\"ok\":true,\"cmd\":\"get\",\"key\":\"jl\",\"found\":true,\"type\":\"list\",\"value\":[\"\\u00ff\"]}\n",
        "\"from_balance\":5,\"to_balance\":2}\n", "{\"ok\":false,\"error\":\"transfer aborted: insufficient funds",
        "{\"ok\":true,\"cmd\":\"cas\",\"key\":\"j1\",\"swapped\":false,\"current_type\":\"int\",\"current\":5}\n",
        "\"workload\":\"kv\"", "{\"ok\":true,\"cmd\":\"digest\",\"epoch\":"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << r.out;
  EXPECT_EQ(Count(r.out, "\n"), 10) << r.out;
  EXPECT_EQ(Count(r.out, "{\"ok\":"), 10) << r.out;
}

TEST_F(KvCliTest, DigestWorksWithATimeOutShorterThanTheBoundaryLead) {
  // The boundary is ~200 ms ahead: the digest request waits for it anyway.
  Ran r = Exec("digest", "--timeout_ms=150 --format=json");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("{\"ok\":true,\"cmd\":\"digest\",\"epoch\":"), std::string::npos) << r.out;
}

TEST_F(KvCliTest, ScriptOnStdin) {
  Ran r = Sh("printf 'put piped 1\\nget piped\\nquit\\nget never\\n' | " + Cli());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"piped\"  bytes  \"1\"\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("never"), std::string::npos) << "nothing after quit: " << r.out;
  EXPECT_EQ(r.out.find("detdb>"), std::string::npos) << "no prompt without a terminal: " << r.out;
}

TEST_F(KvCliTest, InteractiveInATerminalEditsLinesAndKeepsHistory) {
  ASSERT_EQ(Sh("command -v script").status, 0) << "script (bsdutils) is not installed: run deploy/install-deps.sh";
  const std::string dir = ::testing::TempDir();
  const std::string input = dir + "/kv_cli_input", history = dir + "/kv_cli_history";
  std::remove(history.c_str());
  {
    // "ut tty 'x y'", Ctrl-A, "p": the line edited into "put tty 'x y'";
    // then "get tty", and the up arrow to run it again.
    std::ofstream in(input);
    in << "ut tty 'x y'\x01p\nget tty\n\x1b[A\nquit\n";
  }
  Ran r = Sh("TERM=xterm script -qfec " + Quote(Cli("--history_file=" + history)) + " /dev/null < " + input);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("detdb> "), std::string::npos) << r.out;
  EXPECT_EQ(Count(r.out, "\"tty\"  bytes  \"x y\""), 2) << "the get, and again from the history:\n" << r.out;
  std::ifstream h(history);
  std::stringstream saved;
  saved << h.rdbuf();
  EXPECT_NE(saved.str().find("put\\040tty"), std::string::npos) << saved.str();
  EXPECT_EQ(Count(saved.str(), "get\\040tty"), 2) << saved.str();
}

TEST_F(KvCliTest, ZzADeadNodeIsReportedWithinTheTimeout) {  // last: it kills the node
  cluster_->Kill(0, SIGKILL);
  while (cluster_->Running(0)) usleep(10000);
  Ran r = Exec("get a; info", "--timeout_ms=1000");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("error: timed out after 1000 ms: node 0 (tcp://"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the outcome is unknown: the txn may still commit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DOWN"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 10) << "never a hang";
}

}  // namespace
}  // namespace detdb
