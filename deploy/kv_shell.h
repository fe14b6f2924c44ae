// KvShell: the commands of detdb-cli (deploy/detdb_cli_main.cc), apart from
// the terminal: a line of commands in, text out. The program feeds it lines
// from --exec, from libedit (interactive) or from a pipe.
//
//   get KEY                          put [--int|--list] KEY VALUE...
//   delete KEY                       cas [--int] KEY EXPECTED|--absent NEW
//   transfer FROM TO AMOUNT          append KEY ELEMENT
//   info   digest   help   quit      (checkpoint, scan: not available yet)
//
// Words are separated by blanks; 'single' or "double" quotes keep blanks
// (double quotes also take \n \t \\ \" \xNN escapes); ';' outside quotes
// separates commands. Output per command: an aligned table or one-line
// acknowledgement (format table), or one JSON object per line (format
// json; bytes are JSON strings with every byte >= 0x80 as \u00XX). An
// error is one line: "error: ..." on the error stream (table), or
// {"ok":false,"error":"..."} on the output (json); later commands of the
// line still run.
//
// Thread-safety: not thread-safe (one shell per KvClient).
#ifndef DETDB_DEPLOY_KV_SHELL_H_
#define DETDB_DEPLOY_KV_SHELL_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/kv_client.h"

namespace detdb {

enum class KvShellFormat { kTable, kJson };

// Splits line into commands (';'), each a list of words (quotes, escapes as
// above). Empty commands are dropped. InvalidArgument for an unterminated
// quote or a bad escape.
absl::StatusOr<std::vector<std::vector<std::string>>> ParseCommandLine(std::string_view line);

// s as a JSON string literal (quotes included).
std::string JsonString(std::string_view s);

class KvShell {
 public:
  // kv must outlive the shell.
  KvShell(KvClient* kv, KvShellFormat format) : kv_(kv), format_(format) {}

  struct Output {
    std::string out;     // for stdout
    std::string err;     // for stderr (table format errors)
    bool ok = true;      // every command succeeded
    bool quit = false;   // a quit/exit command was given
  };
  // Runs every command of line, in order.
  Output Execute(std::string_view line);

  static const char* Help();

 private:
  // Runs one command; its text goes to *out. An error is returned.
  absl::Status Run(const std::vector<std::string>& words, std::string* out);
  absl::Status RunKv(const std::vector<std::string>& words, std::string* out);
  absl::Status Info(std::string* out);
  absl::Status Digest(std::string* out);

  KvClient* const kv_;
  const KvShellFormat format_;
};

}  // namespace detdb

#endif  // DETDB_DEPLOY_KV_SHELL_H_
