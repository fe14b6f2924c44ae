// CurveAuth: CURVE security for one server socket of a node (the peer PULL
// or the client ROUTER; docs/SECURITY.md). It makes the socket a CURVE
// server with the node's key pair and runs the ZAP handler of the socket's
// ZeroMQ context: a ZMQ_REP socket bound to inproc://zeromq.zap.01 that
// accepts a connection only if it presents CURVE with an allowed public key.
//
// INPUT:  ZAP requests (one per connection that completed the CURVE
//         handshake) and the socket's monitor events (handshakes that failed
//         before ZAP: another mechanism such as NULL, or bytes that are not
//         ZMTP), on the CurveAuth thread.
// OUTPUT: ZAP replies (200 with the key's User-Id for an allowed key, 400
//         otherwise, also to a malformed request); refusals counted by
//         reason (stats()) and logged, at most one line a second.
//
// Threads: one (the ZAP handler and monitor). Thread-safety: stats() is
// thread-safe; Create/Stop from the socket's owner thread.
// REQUIRES: Create before the socket binds; one CurveAuth per context (the
// ZAP endpoint is per context); the context outlives the CurveAuth, and the
// socket is closed before Stop (a connection must never find no handler).
#ifndef DETDB_DEPLOY_CURVE_AUTH_H_
#define DETDB_DEPLOY_CURVE_AUTH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "client/curve.h"
#include "zmq.hpp"

namespace detdb {

struct CurveServerOptions {
  CurveKeyPair server;             // this node's key pair
  std::set<std::string> allowed;   // Z85 public keys that may connect
  // The ZAP User-Id given to an allowed key's connections (libzmq attaches
  // it to every message received on them: zmq_msg_gets(msg, "User-Id")).
  // The peer port maps each node's key to its node id; keys not here get
  // none.
  std::map<std::string, std::string> user_ids;
  std::string domain = "client";   // ZAP domain; names the socket in logs
};

struct CurveAuthStats {
  uint64_t allowed = 0;            // connections with an allowed key
  uint64_t refused_key = 0;        // CURVE with a key not allowed
  uint64_t refused_mechanism = 0;  // another mechanism (NULL, PLAIN)
  // A broken handshake (e.g. raw TCP junk): accepted connections that
  // neither completed CURVE nor were refused for the reasons above, counted
  // once they have been so for kSettle (a handshake in progress is not a
  // refusal). Never decreases.
  uint64_t refused_protocol = 0;
  // ZAP requests that were not ZAP 1.0 with at least six frames (answered
  // 400). libzmq sends none: one would come from inside the process.
  uint64_t malformed = 0;
};

class CurveAuth {
 public:
  // Binds the ZAP endpoint in ctx, sets socket's CURVE server options and
  // monitor, and starts the thread. FailedPrecondition without CURVE in
  // libzmq; Internal if the ZAP endpoint is taken in ctx.
  static absl::StatusOr<std::unique_ptr<CurveAuth>> Create(zmq::context_t* ctx, zmq::socket_t* socket,
                                                           const CurveServerOptions& options);
  ~CurveAuth();  // Stop()
  void Stop();

  CurveAuthStats stats() const;

  // How long an accepted connection may stay unexplained (neither succeeded
  // nor refused with a reason) before it counts as a protocol refusal.
  static constexpr std::chrono::milliseconds kSettle{1000};

 private:
  explicit CurveAuth(const CurveServerOptions& options) : options_(options) {}
  void Loop();
  void HandleZap();
  void HandleMonitorEvent();
  // Moves refused_protocol up to the least unexplained count of the last
  // kSettle (thread only).
  void Settle();
  // Counts and (rate-limited) logs a refusal.
  void Refuse(std::atomic<uint64_t>* counter, const char* reason, const std::string& detail);

  const CurveServerOptions options_;
  std::unique_ptr<zmq::socket_t> zap_;      // thread only (after Create)
  std::unique_ptr<zmq::socket_t> monitor_;  // thread only (after Create)
  std::chrono::steady_clock::time_point last_log_;  // thread only
  uint64_t unlogged_ = 0;                           // thread only: refusals since the last log line
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> allowed_{0}, refused_key_{0}, refused_mechanism_{0}, malformed_{0};
  // Monitor events: connections accepted, handshakes succeeded, ZAP refusals;
  // logged_protocol_ counts the broken handshakes libzmq did report.
  std::atomic<uint64_t> accepted_{0}, succeeded_{0}, failed_auth_{0}, logged_protocol_{0};
  // Settle(): (when, unexplained connections then) over the last kSettle,
  // and the count it settled on.
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> unexplained_;  // thread only
  std::atomic<uint64_t> settled_protocol_{0};
  std::thread thread_;
};

// host is 127.0.0.0/8, ::1 or localhost (binding it exposes nothing beyond
// this machine).
bool IsLoopbackHost(const std::string& host);

// The log line a node writes at start about its transport security.
std::string CurveStartLine(bool curve);

}  // namespace detdb

#endif  // DETDB_DEPLOY_CURVE_AUTH_H_
