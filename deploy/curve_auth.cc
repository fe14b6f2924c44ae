#include "deploy/curve_auth.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/thread_name.h"
#include "glog/logging.h"

namespace detdb {

namespace {
std::atomic<uint64_t> next_monitor_id{1};

std::string Z85(const zmq::message_t& raw) {
  if (raw.size() != 32) return absl::StrCat("(", raw.size(), " bytes)");
  char text[41];
  zmq_z85_encode(text, static_cast<const uint8_t*>(raw.data()), 32);
  return text;
}
}  // namespace

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a;
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string CurveStartLine(bool curve) {
  if (curve) return "transport security: CURVE on (peer and client ports; docs/SECURITY.md)";
  return "transport security: INSECURE: CURVE is off, the peer and client ports accept anyone who can reach them "
         "(the config gives no curve_public_key; docs/SECURITY.md)";
}

absl::StatusOr<std::unique_ptr<CurveAuth>> CurveAuth::Create(zmq::context_t* ctx, zmq::socket_t* socket,
                                                             const CurveServerOptions& options) {
  if (absl::Status s = CheckCurveAvailable(); !s.ok()) return s;
  std::unique_ptr<CurveAuth> a(new CurveAuth(options));
  const std::string monitor_ep = absl::StrCat("inproc://detdb-curve-monitor-", options.domain, "-",
                                              next_monitor_id.fetch_add(1));
  try {
    a->zap_ = std::make_unique<zmq::socket_t>(*ctx, zmq::socket_type::rep);
    a->zap_->set(zmq::sockopt::linger, 0);
    a->zap_->bind("inproc://zeromq.zap.01");
    if (zmq_socket_monitor(socket->handle(), monitor_ep.c_str(),
                           ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0)
      throw zmq::error_t();
    a->monitor_ = std::make_unique<zmq::socket_t>(*ctx, zmq::socket_type::pair);
    a->monitor_->set(zmq::sockopt::linger, 0);
    a->monitor_->connect(monitor_ep);
    socket->set(zmq::sockopt::curve_server, 1);
    socket->set(zmq::sockopt::curve_secretkey, options.server.secret_key);
    socket->set(zmq::sockopt::curve_publickey, options.server.public_key);
    socket->set(zmq::sockopt::zap_domain, options.domain);
  } catch (const zmq::error_t& e) {
    return absl::InternalError(absl::StrCat("CURVE on the ", options.domain, " socket: ", e.what()));
  }
  a->last_log_ = std::chrono::steady_clock::now() - std::chrono::seconds(2);
  a->thread_ = std::thread([p = a.get()] {
    SetThreadName("detdb-zap");
    p->Loop();
  });
  return a;
}

CurveAuth::~CurveAuth() { Stop(); }

void CurveAuth::Stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  monitor_.reset();
  zap_.reset();
}

CurveAuthStats CurveAuth::stats() const {
  CurveAuthStats s;
  s.allowed = allowed_.load(std::memory_order_relaxed);
  s.refused_key = refused_key_.load(std::memory_order_relaxed);
  s.refused_mechanism = refused_mechanism_.load(std::memory_order_relaxed);
  s.malformed = malformed_.load(std::memory_order_relaxed);
  s.refused_protocol = settled_protocol_.load(std::memory_order_relaxed);
  return s;
}

void CurveAuth::Settle() {
  // libzmq reports no event for some broken handshakes (bytes that look
  // like ZMTP 1.0 while ZAP is on): every accepted connection that neither
  // succeeded nor failed for another reason counts as one, once it has
  // been unexplained for kSettle (the least count over that time), so that
  // a handshake in progress is never counted.
  const auto now = std::chrono::steady_clock::now();
  const uint64_t accepted = accepted_.load(std::memory_order_relaxed);
  const uint64_t explained = succeeded_.load(std::memory_order_relaxed) + failed_auth_.load(std::memory_order_relaxed) +
                             refused_mechanism_.load(std::memory_order_relaxed);
  unexplained_.emplace_back(now, accepted > explained ? accepted - explained : 0);
  while (unexplained_.size() > 1 && unexplained_[1].first <= now - kSettle) unexplained_.pop_front();
  if (unexplained_.front().first > now - kSettle) return;  // less than kSettle seen yet
  uint64_t least = unexplained_.back().second;
  for (const auto& [when, n] : unexplained_) least = std::min(least, n);
  if (least > settled_protocol_.load(std::memory_order_relaxed))
    settled_protocol_.store(least, std::memory_order_relaxed);
}

void CurveAuth::Loop() {
  while (!stop_.load(std::memory_order_acquire)) {
    zmq::pollitem_t items[] = {{zap_->handle(), 0, ZMQ_POLLIN, 0}, {monitor_->handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(50));
      if (items[0].revents & ZMQ_POLLIN) HandleZap();
      if (items[1].revents & ZMQ_POLLIN) HandleMonitorEvent();
      Settle();
    } catch (const zmq::error_t& e) {
      LOG(ERROR) << "ZAP handler (" << options_.domain << "): " << e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void CurveAuth::HandleZap() {
  // ZAP 1.0 (rfc.zeromq.org/spec/27): version, request id, domain, address,
  // routing id, mechanism, credentials... The reply: version, request id,
  // status code, status text, user id, metadata. A REP socket must answer
  // every request before it can take the next, so a malformed one gets a
  // 400 too (libzmq never sends one; anything else in the process could).
  std::vector<zmq::message_t> frames;
  do {
    frames.emplace_back();
    if (!zap_->recv(frames.back(), zmq::recv_flags::dontwait)) {
      frames.pop_back();
      break;
    }
  } while (frames.back().more());
  if (frames.empty()) return;  // nothing was taken: nothing to answer
  const std::string request_id = frames.size() > 1 ? frames[1].to_string() : std::string();
  std::string status = "400", text, user_id;
  if (frames.size() < 6 || frames[0].to_string_view() != "1.0") {
    text = "malformed ZAP request";
    malformed_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_T(ERROR, 1) << "ZAP handler (" << options_.domain << "): malformed request of " << frames.size()
                          << " frame(s), version \"" << absl::CHexEscape(frames[0].to_string().substr(0, 16))
                          << "\": refused (400)";
  } else {
    const std::string address = frames[3].to_string();
    const std::string mechanism = frames[5].to_string();
    if (mechanism != "CURVE" || frames.size() < 7) {
      text = "CURVE required";
      Refuse(&refused_mechanism_, "mechanism", absl::StrCat(absl::CHexEscape(mechanism.substr(0, 16)), " from ",
                                                            absl::CHexEscape(address.substr(0, 64))));
    } else if (const std::string key = Z85(frames[6]); options_.allowed.count(key) == 0) {
      text = "key not allowed";
      Refuse(&refused_key_, "key not allowed", absl::StrCat(key, " from ", absl::CHexEscape(address.substr(0, 64))));
    } else {
      status = "200";
      if (auto it = options_.user_ids.find(key); it != options_.user_ids.end()) user_id = it->second;
      allowed_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const std::string reply[] = {"1.0", request_id, status, text, user_id, ""};
  for (int i = 0; i < 6; ++i)
    zap_->send(zmq::buffer(reply[i]), i < 5 ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

void CurveAuth::HandleMonitorEvent() {
  zmq::message_t event, endpoint;
  if (!monitor_->recv(event, zmq::recv_flags::dontwait)) return;
  if (event.more()) (void)monitor_->recv(endpoint, zmq::recv_flags::none);
  if (event.size() < 6) return;
  uint16_t id;
  uint32_t value;
  std::memcpy(&id, event.data(), sizeof id);
  std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof value);
  if (id == ZMQ_EVENT_ACCEPTED)
    accepted_.fetch_add(1, std::memory_order_relaxed);
  else if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
    succeeded_.fetch_add(1, std::memory_order_relaxed);
  else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
    failed_auth_.fetch_add(1, std::memory_order_relaxed);  // counted by reason in HandleZap
  else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
    Refuse(&refused_mechanism_, "mechanism", "a client without CURVE (e.g. NULL)");
  else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL || id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    Refuse(&logged_protocol_, "protocol", absl::StrCat("broken handshake (event ", id, ", code 0x",
                                                        absl::Hex(value), ")"));
}

void CurveAuth::Refuse(std::atomic<uint64_t>* counter, const char* reason, const std::string& detail) {
  counter->fetch_add(1, std::memory_order_relaxed);
  ++unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_log_ < std::chrono::seconds(1)) return;
  LOG(WARNING) << "refused a connection at the " << options_.domain << " port (" << reason << "): " << detail << " ["
               << unlogged_ << " refusal(s) since the last such line]";
  last_log_ = now;
  unlogged_ = 0;
}

}  // namespace detdb
