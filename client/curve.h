// CurveZMQ keys for detdb's TCP endpoints (docs/SECURITY.md): generating key
// pairs, reading key files and allowlists, and the options a client socket
// needs to talk CURVE to a node.
//
// Files: a secret-key file holds one Z85 secret key (40 characters) and
// must be mode 0600 or stricter (no group or other bits: refused naming the
// file otherwise); the public key is derived from it. A public-key file
// holds one Z85 public key. An allowlist holds one Z85 public key per line,
// optionally followed by a space and a name; empty lines and lines starting
// with "# " are comments ('#' alone is a Z85 digit); it must be mode 0600 too.
//
// Thread-safety: pure functions (file reads).
#ifndef DETDB_CLIENT_CURVE_H_
#define DETDB_CLIENT_CURVE_H_

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/cluster.pb.h"
#include "zmq.hpp"

namespace detdb {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// FailedPrecondition (with what to install) unless libzmq has CURVE.
absl::Status CheckCurveAvailable();
absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair();
// InvalidArgument unless key is 40 Z85 characters decoding to 32 bytes.
absl::Status ValidateZ85Key(const std::string& key);
// The key pair of a secret-key file (see above).
absl::StatusOr<CurveKeyPair> ReadCurveSecretKeyFile(const std::string& path);
// One public key (a .pub file; mode not checked).
absl::StatusOr<std::string> ReadCurvePublicKeyFile(const std::string& path);
// The keys of an allowlist file (see above).
absl::StatusOr<std::set<std::string>> ReadCurveAllowlist(const std::string& path);
// A client's key pair for the cluster of `config` (loaded from
// config_path): from secret_key_file; if that is empty and the config gives
// the nodes' CURVE keys, from keys/client.key beside the config (where
// deploy/local_cluster.sh puts it) if it exists; else none.
absl::StatusOr<CurveKeyPair> LoadClientKeys(const std::string& secret_key_file, const std::string& config_path,
                                            const pb::ClusterConfig& config);
// Writes prefix.key (the secret key, created mode 0600) and prefix.pub;
// AlreadyExists rather than overwrite either.
absl::StatusOr<CurveKeyPair> WriteCurveKeyPair(const std::string& prefix);

// What a client socket needs to talk CURVE to a server: its own key pair
// and the server's public key. Empty: NULL mechanism (an insecure server).
struct CurveClientKeys {
  CurveKeyPair client;
  std::string server_public_key;
  bool enabled() const { return !server_public_key.empty(); }
};
// Sets the CURVE client options on socket (before connect). Throws
// zmq::error_t like the socket calls.
void ApplyCurveClient(const CurveClientKeys& keys, zmq::socket_t* socket);

}  // namespace detdb

#endif  // DETDB_CLIENT_CURVE_H_
