// detdb-cli: a shell for the key-value workload of a detdb cluster
// (`detdb --workload=kv`; docs/KV.md).
//
//   detdb-cli --config=cluster.pbtxt                       interactive (line editing, history)
//   detdb-cli --config=cluster.pbtxt --exec 'put a 1; get a'
//   echo 'get a' | detdb-cli --config=cluster.pbtxt --format=json
//
// Interactive when stdin is a terminal and --exec is not given: libedit
// (BSD licence) gives line editing and a history kept in --history_file.
// Otherwise it runs --exec, or every line of stdin, and exits 0 if every
// command succeeded, 1 if one failed (an error line each), 2 on bad flags.
// The commands are KvShell's (deploy/kv_shell.h); `help` lists them. Every
// call to a node gives up after --timeout_ms (a dead node is reported,
// never waited for).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include <editline/readline.h>

#include "client/cluster_config.h"
#include "deploy/kv_client.h"
#include "deploy/kv_shell.h"
#include "gflags/gflags.h"

DEFINE_string(config, "", "Cluster config (protobuf text); required");
DEFINE_string(exec, "", "Commands to run (separated by ';') instead of reading them");
DEFINE_string(format, "table", "Output: table (aligned columns) or json (one object per command per line)");
DEFINE_uint32(timeout_ms, 5000, "Give up on a node that does not answer within this time");
DEFINE_string(curve_key_file, "",
              "A CURVE cluster: this client's secret-key file (mode 0600; its public key in the nodes' allowlist; default: keys/client.key beside the config if there)");
DEFINE_string(history_file, "", "Interactive history (default: $HOME/.detdb_cli_history; 'none' keeps none)");

namespace {

void Print(const detdb::KvShell::Output& o) {
  fputs(o.out.c_str(), stdout);
  fflush(stdout);
  fputs(o.err.c_str(), stderr);
  fflush(stderr);
}

int Interactive(detdb::KvShell* shell) {
  std::string history = FLAGS_history_file;
  if (history.empty() && getenv("HOME") != nullptr) history = std::string(getenv("HOME")) + "/.detdb_cli_history";
  if (history == "none") history.clear();
  using_history();
  stifle_history(1000);
  if (!history.empty()) read_history(history.c_str());
  printf("detdb-cli: connected to %s; type help for the commands, quit or Ctrl-D to leave\n", FLAGS_config.c_str());
  for (;;) {
    char* line = readline("detdb> ");
    if (line == nullptr) {  // Ctrl-D
      printf("\n");
      break;
    }
    const std::string text(line);
    free(line);
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    add_history(text.c_str());
    if (!history.empty()) write_history(history.c_str());  // kept even if the shell is killed
    const detdb::KvShell::Output o = shell->Execute(text);
    Print(o);
    if (o.quit) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("detdb-cli --config=<cluster.pbtxt> [--exec='CMD; CMD'] [--format=table|json]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_config.empty() || argc != 1) {
    fprintf(stderr, "detdb-cli: %s\n", argc != 1 ? "unexpected arguments (commands go in --exec)"
                                                 : "--config is required");
    fprintf(stderr, "%s\n", gflags::ProgramUsage());
    return 2;
  }
  if (FLAGS_format != "table" && FLAGS_format != "json") {
    fprintf(stderr, "detdb-cli: --format must be table or json\n");
    return 2;
  }
  if (FLAGS_timeout_ms == 0) {
    fprintf(stderr, "detdb-cli: --timeout_ms must be positive\n");
    return 2;
  }
  auto config = detdb::LoadClusterConfig(FLAGS_config);
  if (!config.ok()) {
    fprintf(stderr, "detdb-cli: %s: %s\n", FLAGS_config.c_str(), std::string(config.status().message()).c_str());
    return 2;
  }
  detdb::KvClientOptions ko;
  ko.timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
  auto keys = detdb::LoadClientKeys(FLAGS_curve_key_file, FLAGS_config, *config);
  if (!keys.ok()) {
    fprintf(stderr, "detdb-cli: %s\n", std::string(keys.status().message()).c_str());
    return 2;
  }
  ko.curve = *keys;
  auto kv = detdb::KvClient::Connect(*config, ko);
  if (!kv.ok()) {
    fprintf(stderr, "detdb-cli: %s\n", std::string(kv.status().message()).c_str());
    return 2;
  }
  detdb::KvShell shell(kv->get(), FLAGS_format == "json" ? detdb::KvShellFormat::kJson : detdb::KvShellFormat::kTable);
  if (!FLAGS_exec.empty()) {
    const detdb::KvShell::Output o = shell.Execute(FLAGS_exec);
    Print(o);
    return o.ok ? 0 : 1;
  }
  if (isatty(STDIN_FILENO)) return Interactive(&shell);
  bool ok = true;
  std::string line;
  while (std::getline(std::cin, line)) {
    const detdb::KvShell::Output o = shell.Execute(line);
    Print(o);
    ok = ok && o.ok;
    if (o.quit) break;
  }
  return ok ? 0 : 1;
}
