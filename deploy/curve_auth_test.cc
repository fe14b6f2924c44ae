// CurveAuth's ZAP handler, spoken to directly (a REQ socket on
// inproc://zeromq.zap.01 of the server's context) and through a real CURVE
// connection: every request gets a ZAP 1.0 reply, a malformed one a 400
// (a REP socket that does not answer can take no further request: every
// later connection would hang in its handshake); an allowed key gets 200
// and its User-Id, which libzmq then attaches to the connection's messages.
#include "deploy/curve_auth.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "client/curve.h"
#include "zmq.hpp"

namespace detdb {
namespace {

// The 32 raw bytes of a Z85 key.
std::string Raw(const std::string& z85) {
  std::string raw(32, '\0');
  EXPECT_NE(zmq_z85_decode(reinterpret_cast<uint8_t*>(raw.data()), z85.c_str()), nullptr);
  return raw;
}

// Sends one multipart request; the reply's frames (empty if none came
// within 5 s).
std::vector<std::string> Ask(zmq::socket_t* req, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    EXPECT_TRUE(req->send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore
                                                                          : zmq::send_flags::none));
  std::vector<std::string> reply;
  zmq::message_t part;
  do {
    if (!req->recv(part)) return {};
    reply.push_back(part.to_string());
  } while (part.more());
  return reply;
}

TEST(CurveAuth, MalformedZapRequestsGetA400AndTheHandlerKeepsServing) {
  auto server = GenerateCurveKeyPair(), client = GenerateCurveKeyPair(), stranger = GenerateCurveKeyPair();
  ASSERT_TRUE(server.ok() && client.ok() && stranger.ok());
  zmq::context_t ctx(1);
  zmq::socket_t pull(ctx, zmq::socket_type::pull);
  pull.set(zmq::sockopt::linger, 0);
  CurveServerOptions o;
  o.server = *server;
  o.allowed = {client->public_key};
  o.user_ids[client->public_key] = "7";
  o.domain = "test";
  auto auth = CurveAuth::Create(&ctx, &pull, o);
  ASSERT_TRUE(auth.ok()) << auth.status();
  pull.bind("tcp://127.0.0.1:*");
  const std::string endpoint = pull.get(zmq::sockopt::last_endpoint);

  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 5000);
  req.connect("inproc://zeromq.zap.01");
  // Too few frames, one frame, and six frames of another ZAP version.
  std::vector<std::string> r = Ask(&req, {"1.0", "r1", "test"});
  ASSERT_EQ(r.size(), 6u) << "a malformed request is answered, not left hanging";
  EXPECT_EQ(r[0], "1.0");
  EXPECT_EQ(r[1], "r1");
  EXPECT_EQ(r[2], "400");
  EXPECT_EQ(r[4], "") << "no User-Id";
  r = Ask(&req, {"junk"});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[1], "");
  EXPECT_EQ(r[2], "400");
  r = Ask(&req, {"9.9", "r3", "test", "127.0.0.1", "", "CURVE", Raw(client->public_key)});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[1], "r3");
  EXPECT_EQ(r[2], "400") << "only ZAP 1.0";
  // Well-formed requests: the allowed key with its User-Id, the others 400.
  r = Ask(&req, {"1.0", "r4", "test", "127.0.0.1", "", "CURVE", Raw(client->public_key)});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[1], "r4");
  EXPECT_EQ(r[2], "200");
  EXPECT_EQ(r[4], "7");
  r = Ask(&req, {"1.0", "r5", "test", "127.0.0.1", "", "CURVE", Raw(stranger->public_key)});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[2], "400");
  r = Ask(&req, {"1.0", "r6", "test", "127.0.0.1", "", "NULL"});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[2], "400");
  r = Ask(&req, {"1.0", "r7", "test", "127.0.0.1", "", "CURVE", "short"});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[2], "400") << "a credential that is no key";
  const CurveAuthStats s = (*auth)->stats();
  EXPECT_EQ(s.malformed, 3u);
  EXPECT_EQ(s.refused_key, 2u);
  EXPECT_EQ(s.refused_mechanism, 1u);
  EXPECT_EQ(s.allowed, 1u);

  // A real CURVE client still gets through, and what it sends carries the
  // User-Id of its key.
  zmq::context_t client_ctx(1);
  zmq::socket_t push(client_ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 0);
  ApplyCurveClient(CurveClientKeys{*client, server->public_key}, &push);
  push.connect(endpoint);
  ASSERT_TRUE(push.send(zmq::str_buffer("hello"), zmq::send_flags::none).has_value());
  pull.set(zmq::sockopt::rcvtimeo, 5000);
  zmq::message_t got;
  ASSERT_TRUE(pull.recv(got).has_value()) << "the handler answered the real handshake";
  EXPECT_EQ(got.to_string(), "hello");
  const char* user_id = zmq_msg_gets(got.handle(), "User-Id");
  ASSERT_NE(user_id, nullptr);
  EXPECT_EQ(std::string(user_id), "7");
  EXPECT_EQ((*auth)->stats().allowed, 2u);
  push.close();
  req.close();
  pull.close();
  (*auth)->Stop();
}

}  // namespace
}  // namespace detdb
