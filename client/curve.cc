#include "client/curve.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace detdb {

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::Status CheckPrivateMode(const std::string& path, const char* what) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
  if ((st.st_mode & 077) != 0)
    return absl::PermissionDeniedError(absl::StrFormat("%s %s has mode %04o: it must be 0600 (chmod 600 %s)", what,
                                                       path, st.st_mode & 0777, path));
  return absl::OkStatus();
}

absl::Status WriteNew(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  if (fd < 0) {
    if (errno == EEXIST) return absl::AlreadyExistsError(absl::StrCat(path, " exists: not overwritten"));
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fchmod(fd, mode) == 0;
  ::close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCurveAvailable() {
  if (zmq_has("curve") == 0)
    return absl::FailedPreconditionError(
        "this libzmq has no CURVE security (zmq_has(\"curve\") is false): install a libzmq built with libsodium "
        "(Debian/Ubuntu: libzmq5), or run insecure (docs/SECURITY.md)");
  return absl::OkStatus();
}

absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair() {
  if (absl::Status s = CheckCurveAvailable(); !s.ok()) return s;
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    return absl::InternalError(absl::StrCat("zmq_curve_keypair: ", zmq_strerror(zmq_errno())));
  return CurveKeyPair{pub, sec};
}

absl::Status ValidateZ85Key(const std::string& key) {
  uint8_t raw[32];
  if (key.size() != 40 || zmq_z85_decode(raw, key.c_str()) == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' is not a Z85 CURVE key (40 characters)"));
  return absl::OkStatus();
}

absl::StatusOr<CurveKeyPair> ReadCurveSecretKeyFile(const std::string& path) {
  if (absl::Status s = CheckCurveAvailable(); !s.ok()) return s;
  if (absl::Status s = CheckPrivateMode(path, "secret-key file"); !s.ok()) return s;
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  CurveKeyPair kp;
  kp.secret_key = std::string(absl::StripAsciiWhitespace(*text));
  if (absl::Status s = ValidateZ85Key(kp.secret_key); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("secret-key file ", path, ": not one Z85 key of 40 characters"));
  char pub[41];
  if (zmq_curve_public(pub, kp.secret_key.c_str()) != 0)
    return absl::InternalError(absl::StrCat("zmq_curve_public: ", zmq_strerror(zmq_errno())));
  kp.public_key = pub;
  return kp;
}

absl::StatusOr<std::string> ReadCurvePublicKeyFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::string key(absl::StripAsciiWhitespace(*text));
  if (absl::Status s = ValidateZ85Key(key); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("public-key file ", path, ": ", s.message()));
  return key;
}

absl::StatusOr<std::set<std::string>> ReadCurveAllowlist(const std::string& path) {
  if (absl::Status s = CheckPrivateMode(path, "allowlist file"); !s.ok()) return s;
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::set<std::string> keys;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    // '#' is a Z85 digit: a comment is "#" then a space (keys have none).
    if (line.empty() || line == "#" || absl::StartsWith(line, "# ")) continue;
    std::string key(line.substr(0, line.find_first_of(" \t")));  // a name may follow the key
    if (absl::Status s = ValidateZ85Key(key); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("allowlist ", path, " line ", line_no, ": ", s.message()));
    keys.insert(std::move(key));
  }
  return keys;
}

absl::StatusOr<CurveKeyPair> LoadClientKeys(const std::string& secret_key_file, const std::string& config_path,
                                            const pb::ClusterConfig& config) {
  if (!secret_key_file.empty()) return ReadCurveSecretKeyFile(secret_key_file);
  if (config.nodes_size() == 0 || config.nodes(0).curve_public_key().empty()) return CurveKeyPair{};
  const size_t slash = config_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : config_path.substr(0, slash);
  const std::string beside = dir + "/keys/client.key";
  struct stat st;
  if (::stat(beside.c_str(), &st) != 0) return CurveKeyPair{};  // ClusterClient::Connect says what is missing
  return ReadCurveSecretKeyFile(beside);
}

absl::StatusOr<CurveKeyPair> WriteCurveKeyPair(const std::string& prefix) {
  auto kp = GenerateCurveKeyPair();
  if (!kp.ok()) return kp.status();
  if (absl::Status s = WriteNew(prefix + ".key", kp->secret_key + "\n", 0600); !s.ok()) return s;
  if (absl::Status s = WriteNew(prefix + ".pub", kp->public_key + "\n", 0644); !s.ok()) return s;
  return kp;
}

void ApplyCurveClient(const CurveClientKeys& keys, zmq::socket_t* socket) {
  if (!keys.enabled()) return;
  socket->set(zmq::sockopt::curve_serverkey, keys.server_public_key);
  socket->set(zmq::sockopt::curve_publickey, keys.client.public_key);
  socket->set(zmq::sockopt::curve_secretkey, keys.client.secret_key);
}

}  // namespace detdb
