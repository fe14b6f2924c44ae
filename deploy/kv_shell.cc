#include "deploy/kv_shell.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "deploy/cluster_admin.h"

namespace detdb {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Rows of cells as columns aligned on their widest cell, two blanks apart.
std::string TextTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string JsonValue(const pb::KvValue& v) {
  switch (v.v_case()) {
    case pb::KvValue::kBytes:
      return JsonString(v.bytes());
    case pb::KvValue::kInt:
      return absl::StrCat(v.int_());
    default: {
      std::string s = "[";
      for (int i = 0; i < v.list().items_size(); ++i) absl::StrAppend(&s, i ? "," : "", JsonString(v.list().items(i)));
      return s + "]";
    }
  }
}

absl::StatusOr<int64_t> ParseInt(const std::string& word, const char* what) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(word, &v))
    return absl::InvalidArgumentError(absl::StrCat(what, " must be a 64-bit integer, not ", JsonString(word)));
  return v;
}

absl::Status Usage(const char* usage) { return absl::InvalidArgumentError(absl::StrCat("usage: ", usage)); }

}  // namespace

absl::StatusOr<std::vector<std::vector<std::string>>> ParseCommandLine(std::string_view line) {
  std::vector<std::vector<std::string>> cmds(1);
  std::string word;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) cmds.back().push_back(word);
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      end_word();
    } else if (c == ';') {
      end_word();
      cmds.emplace_back();
    } else if (c == '\'' || c == '"') {
      in_word = true;
      size_t j = i + 1;
      for (; j < line.size() && line[j] != c; ++j) {
        if (c == '"' && line[j] == '\\') {
          if (++j >= line.size()) break;
          switch (line[j]) {
            case 'n':
              word += '\n';
              break;
            case 't':
              word += '\t';
              break;
            case 'r':
              word += '\r';
              break;
            case '0':
              word += '\0';
              break;
            case 'x': {
              const int hi = j + 1 < line.size() ? HexDigit(line[j + 1]) : -1;
              const int lo = j + 2 < line.size() ? HexDigit(line[j + 2]) : -1;
              if (hi < 0 || lo < 0) return absl::InvalidArgumentError("\\x needs two hex digits");
              word += static_cast<char>(hi * 16 + lo);
              j += 2;
              break;
            }
            default:
              word += line[j];  // \\ \" and any other character as itself
          }
        } else {
          word += line[j];
        }
      }
      if (j >= line.size()) return absl::InvalidArgumentError(absl::StrCat("unterminated ", std::string(1, c), " quote"));
      i = j;
    } else {
      in_word = true;
      word += c;
    }
  }
  end_word();
  cmds.erase(std::remove_if(cmds.begin(), cmds.end(), [](const auto& c) { return c.empty(); }), cmds.end());
  return cmds;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

const char* KvShell::Help() {
  return "commands (separate several with ';'; quote words with blanks: \"a b\" or 'a b'):\n"
         "  get KEY                              the value and its type\n"
         "  put KEY VALUE                        set a byte-string value\n"
         "  put --int KEY N                      set an integer (a balance)\n"
         "  put --list KEY [ELEMENT...]          set a list of byte strings\n"
         "  delete KEY                           remove a key\n"
         "  cas [--int] KEY EXPECTED|--absent NEW   set NEW only if the value is EXPECTED (or absent)\n"
         "  transfer FROM TO AMOUNT              move AMOUNT between integer balances (refused if short)\n"
         "  append KEY ELEMENT                   append to a list (creates it)\n"
         "  info                                 every node: state, partitions, epochs, txn counts\n"
         "  digest                               per-partition state digests at one epoch boundary\n"
         "  help                                 this text\n"
         "  quit, exit                           leave (also Ctrl-D)\n"
         "limits: keys 1..128 bytes; values up to 1024 bytes (a list: its elements + 2 bytes each)\n";
}

KvShell::Output KvShell::Execute(std::string_view line) {
  Output o;
  auto fail = [&](const absl::Status& s) {
    o.ok = false;
    const std::string msg(s.message());
    if (format_ == KvShellFormat::kJson) {
      o.out += absl::StrCat("{\"ok\":false,\"error\":", JsonString(msg), "}\n");
    } else {
      o.err += absl::StrCat("error: ", msg, "\n");
    }
  };
  auto cmds = ParseCommandLine(line);
  if (!cmds.ok()) {
    fail(cmds.status());
    return o;
  }
  for (const auto& words : *cmds) {
    if (words[0] == "quit" || words[0] == "exit") {
      o.quit = true;
      break;
    }
    absl::Status s = Run(words, &o.out);
    if (!s.ok()) fail(s);
  }
  return o;
}

absl::Status KvShell::Run(const std::vector<std::string>& w, std::string* out) {
  const std::string& cmd = w[0];
  if (cmd == "help") {
    *out += format_ == KvShellFormat::kJson ? absl::StrCat("{\"ok\":true,\"help\":", JsonString(Help()), "}\n")
                                            : std::string(Help());
    return absl::OkStatus();
  }
  if (cmd == "info") return Info(out);
  if (cmd == "digest") return Digest(out);
  if (cmd == "checkpoint")
    return absl::UnimplementedError("checkpoint is not available yet: detdb has no checkpoints so far");
  if (cmd == "scan")
    return absl::UnimplementedError("scan is not available yet: the kv table has a hash index only, no ordered scan");
  return RunKv(w, out);
}

absl::Status KvShell::RunKv(const std::vector<std::string>& w, std::string* out) {
  const std::string& cmd = w[0];
  const bool json = format_ == KvShellFormat::kJson;
  std::vector<std::string> args(w.begin() + 1, w.end());
  auto take_flag = [&](const char* flag) {
    if (args.empty() || args[0] != flag) return false;
    args.erase(args.begin());
    return true;
  };
  auto value_of = [&](bool as_int, const std::string& word, const char* what) -> absl::StatusOr<pb::KvValue> {
    if (!as_int) return KvBytes(word);
    absl::StatusOr<int64_t> v = ParseInt(word, what);
    if (!v.ok()) return v.status();
    return KvInt(*v);
  };
  absl::StatusOr<KvReply> r;
  if (cmd == "get") {
    if (args.size() != 1) return Usage("get KEY");
    r = kv_->Get(args[0]);
    if (!r.ok()) return r.status();
    if (!r->value.has_value()) {
      *out += json ? absl::StrCat("{\"ok\":true,\"cmd\":\"get\",\"key\":", JsonString(args[0]), ",\"found\":false}\n")
                   : absl::StrCat("(not found) ", KvValueToString(KvBytes(args[0])), "\n");
      return absl::OkStatus();
    }
    *out += json ? absl::StrCat("{\"ok\":true,\"cmd\":\"get\",\"key\":", JsonString(args[0]), ",\"found\":true,\"type\":\"",
                                KvValueType(*r->value), "\",\"value\":", JsonValue(*r->value), "}\n")
                 : TextTable({{"key", "type", "value"},
                          {KvValueToString(KvBytes(args[0])), KvValueType(*r->value), KvValueToString(*r->value)}});
    return absl::OkStatus();
  }
  if (cmd == "put") {
    const bool as_int = take_flag("--int");
    const bool as_list = !as_int && take_flag("--list");
    if (as_list ? args.empty() : args.size() != 2) return Usage("put [--int] KEY VALUE | put --list KEY [ELEMENT...]");
    absl::StatusOr<pb::KvValue> v =
        as_list ? KvList(std::vector<std::string>(args.begin() + 1, args.end())) : value_of(as_int, args[1], "N");
    if (!v.ok()) return v.status();
    r = kv_->Put(args[0], *v);
    if (!r.ok()) return r.status();
    *out += json ? absl::StrCat("{\"ok\":true,\"cmd\":\"put\",\"key\":", JsonString(args[0]), "}\n") : "OK\n";
    return absl::OkStatus();
  }
  if (cmd == "delete" || cmd == "del") {
    if (args.size() != 1) return Usage("delete KEY");
    r = kv_->Delete(args[0]);
    if (!r.ok()) return r.status();
    const bool found = r->outcome != pb::KvResult::NOT_FOUND;
    *out += json ? absl::StrCat("{\"ok\":true,\"cmd\":\"delete\",\"key\":", JsonString(args[0]),
                                ",\"found\":", found ? "true" : "false", "}\n")
                 : (found ? std::string("OK (deleted)\n") : std::string("OK (there was no such key)\n"));
    return absl::OkStatus();
  }
  if (cmd == "cas") {
    const bool as_int = take_flag("--int");
    if (args.size() != 3) return Usage("cas [--int] KEY EXPECTED|--absent NEW");
    std::optional<pb::KvValue> expected;
    if (args[1] != "--absent") {
      absl::StatusOr<pb::KvValue> e = value_of(as_int, args[1], "EXPECTED");
      if (!e.ok()) return e.status();
      expected = *e;
    }
    absl::StatusOr<pb::KvValue> nv = value_of(as_int, args[2], "NEW");
    if (!nv.ok()) return nv.status();
    r = kv_->Cas(args[0], expected, *nv);
    if (!r.ok()) return r.status();
    const bool swapped = r->outcome == pb::KvResult::OK;
    if (json) {
      *out += absl::StrCat("{\"ok\":true,\"cmd\":\"cas\",\"key\":", JsonString(args[0]),
                           ",\"swapped\":", swapped ? "true" : "false");
      if (!swapped)
        *out += r->value.has_value() ? absl::StrCat(",\"current_type\":\"", KvValueType(*r->value),
                                                    "\",\"current\":", JsonValue(*r->value))
                                     : std::string(",\"current\":null");
      *out += "}\n";
    } else {
      *out += swapped ? std::string("OK (swapped)\n")
                      : absl::StrCat("NOT SWAPPED: the current value is ",
                                     r->value.has_value()
                                         ? absl::StrCat(KvValueToString(*r->value), " (", KvValueType(*r->value), ")")
                                         : std::string("absent"),
                                     "\n");
    }
    return absl::OkStatus();
  }
  if (cmd == "transfer") {
    if (args.size() != 3) return Usage("transfer FROM TO AMOUNT");
    absl::StatusOr<int64_t> amount = ParseInt(args[2], "AMOUNT");
    if (!amount.ok()) return amount.status();
    r = kv_->Transfer(args[0], args[1], *amount);
    if (!r.ok()) return r.status();
    *out += json ? absl::StrCat("{\"ok\":true,\"cmd\":\"transfer\",\"from\":", JsonString(args[0]),
                                ",\"to\":", JsonString(args[1]), ",\"amount\":", *amount,
                                ",\"from_balance\":", r->from_balance, ",\"to_balance\":", r->to_balance, "}\n")
                 : TextTable({{"account", "balance"},
                          {KvValueToString(KvBytes(args[0])), absl::StrCat(r->from_balance)},
                          {KvValueToString(KvBytes(args[1])), absl::StrCat(r->to_balance)}});
    return absl::OkStatus();
  }
  if (cmd == "append") {
    if (args.size() != 2) return Usage("append KEY ELEMENT");
    r = kv_->Append(args[0], args[1]);
    if (!r.ok()) return r.status();
    *out += json ? absl::StrCat("{\"ok\":true,\"cmd\":\"append\",\"key\":", JsonString(args[0]),
                                ",\"count\":", r->count, "}\n")
                 : absl::StrCat("OK (", r->count, r->count == 1 ? " element)\n" : " elements)\n");
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown command ", JsonString(cmd), " (try help)"));
}

absl::Status KvShell::Info(std::string* out) {
  const bool json = format_ == KvShellFormat::kJson;
  std::vector<std::vector<std::string>> rows = {
      {"node", "endpoint", "state", "partitions", "workload", "lock_manager", "epoch", "submitted", "committed",
       "aborted", "rejected"}};
  std::string j = "{\"ok\":true,\"cmd\":\"info\",\"nodes\":[";
  std::string down;
  for (const NodeStatus& s : QueryNodes(kv_->cluster(), std::min(kv_->timeout(), std::chrono::milliseconds(2000)))) {
    if (s.node > 0) j += ",";
    if (!s.info.ok()) {
      rows.push_back({absl::StrCat(s.node), s.endpoint, "DOWN"});
      absl::StrAppend(&j, "{\"node\":", s.node, ",\"endpoint\":", JsonString(s.endpoint),
                      ",\"up\":false,\"error\":", JsonString(std::string(s.info.status().message())), "}");
      if (down.empty()) down = absl::StrCat("node ", s.node, " (", s.endpoint, ") did not answer: ", s.info.status().message());
      continue;
    }
    const pb::NodeInfo& i = *s.info;
    std::string parts;
    for (uint32_t p : i.partitions()) absl::StrAppend(&parts, parts.empty() ? "" : ",", p);
    rows.push_back({absl::StrCat(s.node), s.endpoint, i.ready() ? "ready" : "starting", parts, i.workload(),
                    i.lock_manager(), absl::StrCat(i.epoch()), absl::StrCat(i.submitted()),
                    absl::StrCat(i.committed()), absl::StrCat(i.aborted()), absl::StrCat(i.rejected())});
    absl::StrAppend(&j, "{\"node\":", s.node, ",\"endpoint\":", JsonString(s.endpoint), ",\"up\":true,\"ready\":",
                    i.ready() ? "true" : "false", ",\"partitions\":[", parts, "],\"workload\":", JsonString(i.workload()),
                    ",\"lock_manager\":", JsonString(i.lock_manager()), ",\"epoch\":", i.epoch(),
                    ",\"submitted\":", i.submitted(), ",\"committed\":", i.committed(), ",\"aborted\":", i.aborted(),
                    ",\"rejected\":", i.rejected(), "}");
  }
  *out += json ? j + "]}\n" : TextTable(rows);
  if (!down.empty()) return absl::UnavailableError(down);
  return absl::OkStatus();
}

absl::Status KvShell::Digest(std::string* out) {
  auto d = TakeDigests(kv_->cluster(), kv_->timeout());
  if (!d.ok()) return d.status();
  const bool json = format_ == KvShellFormat::kJson;
  std::vector<std::vector<std::string>> rows = {{"partition", "node", "digest"}};
  std::string j = absl::StrCat("{\"ok\":true,\"cmd\":\"digest\",\"epoch\":", d->epoch, ",\"partitions\":[");
  for (size_t k = 0; k < d->rows.size(); ++k) {
    const DigestRow& r = d->rows[k];
    const std::string hex = absl::StrFormat("%016x", r.digest);
    rows.push_back({absl::StrCat(r.partition), absl::StrCat(r.node), hex});
    absl::StrAppend(&j, k ? "," : "", "{\"partition\":", r.partition, ",\"node\":", r.node, ",\"digest\":\"", hex,
                    "\"}");
  }
  *out += json ? j + "]}\n" : absl::StrCat("digests at the boundary of epoch ", d->epoch, "\n", TextTable(rows));
  if (!d->node_errors.empty()) return absl::UnavailableError(d->node_errors.front());
  return absl::OkStatus();
}

}  // namespace detdb
