// fuzz_peer_message: a frame on a node's peer port, as the receive thread
// of deploy/zmq_peer_net.h takes it: ZmqPeerNet::Handle (size limit,
// pb::PeerMessage parse, config hash, sender, frame sequence, durable and
// checkpoint epoch reports, Hello for the handshake, batch sender, remote
// reads' partition), then what the engine checks of it: a batch through
// Engine::CheckPeerBatch (sequencer, epoch, txn ids, every txn's
// validation), results, durable and checkpoint epochs through the engine's
// own handlers (the checkpoint agreement). A real ZmqPeerNet (node 0 of
// two, bound to a free local port, never started) and a real engine of the
// micro workload in cluster mode; only valid batches and remote reads are
// not enqueued (nothing runs them: they would pile up).
//
// Input: byte 0 selects the mode; the rest is the frame. Mode bit 0 clear:
// the frame as is (a peer's frame must carry our config hash, which the
// fuzzer rarely guesses: this exercises the decode and the first check).
// Bit 0 set: if the frame parses, it is stamped with our config hash and
// serialised again, so the checks behind the hash are reached. Bits 1-2:
// the node whose CURVE key the frame came with (none, 0, 1, no node's).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "deploy/zmq_peer_net.h"
#include "fuzz/fuzz_util.h"
#include "glog/logging.h"

namespace {

using detdb::Engine;
using detdb::PartitionId;
namespace pb = detdb::pb;

uint32_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  CHECK_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

// The engine's PeerHandler, except that a batch is only checked.
class Handler final : public detdb::PeerHandler, public detdb::RemoteReadsReceiver {
 public:
  explicit Handler(Engine* engine) : engine_(engine) {}
  void OnPeerBatch(std::shared_ptr<pb::Batch> batch) override { (void)engine_->CheckPeerBatch(batch.get()); }
  void OnPeerResult(uint32_t from, const pb::TxnResult& result) override { engine_->OnPeerResult(from, result); }
  void OnPeerDurable(uint32_t node, uint64_t epoch) override { engine_->OnPeerDurable(node, epoch); }
  void OnPeerCheckpoint(uint32_t node, uint64_t epoch) override { engine_->OnPeerCheckpoint(node, epoch); }
  // A rejoin request from a peer is answered by the engine (here: with an
  // error, it keeps no input log); a reply nobody asked for is dropped.
  void OnRejoinRequest(uint32_t node, const pb::RejoinRequest& request) override {
    engine_->OnRejoinRequest(node, request);
  }
  void OnRejoinReply(uint32_t node, const pb::RejoinReply& reply) override { engine_->OnRejoinReply(node, reply); }
  void OnRemoteReads(pb::RemoteReads) override {}

 private:
  Engine* const engine_;
};

struct State {
  std::unique_ptr<detdb::ZmqPeerNet> net;
  std::unique_ptr<detdb::fuzz::WorkloadEngine> engine;
  std::unique_ptr<Handler> handler;
};
State* state = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detdb::fuzz::QuietLogs();
  state = new State;
  detdb::ZmqPeerNetOptions o;
  o.config.set_num_partitions(4);
  o.config.set_epoch_us(1000);
  for (uint32_t i = 0; i < 2; ++i) {
    pb::NodeConfig* n = o.config.add_nodes();
    n->set_id(i);
    n->set_host("127.0.0.1");
    n->set_peer_port(FreePort());
    n->set_client_port(FreePort());
    n->add_partitions(2 * i);
    n->add_partitions(2 * i + 1);
  }
  o.node_id = 0;
  o.max_frame_bytes = 1u << 20;
  auto net = detdb::ZmqPeerNet::Create(o);
  CHECK(net.ok()) << net.status();
  state->net = std::move(*net);
  state->engine = detdb::fuzz::MakeWorkloadEngine("micro", 4, state->net.get());
  state->handler = std::make_unique<Handler>(state->engine->engine.get());
  state->net->SetHandler(state->handler.get());
  for (PartitionId p : state->engine->engine->local_partitions()) state->net->RegisterReceiver(p, state->handler.get());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool stamp = data[0] & 1;
  std::string frame(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (stamp) {
    pb::PeerMessage m;
    if (!m.ParseFromString(frame)) return 0;
    m.set_config_hash(state->net->config_hash());
    frame = m.SerializeAsString();
  }
  // Bits 1-2 of the mode: the node the frame's CURVE key belongs to, as the
  // receive thread passes it with CURVE on (0: none, CURVE off; 1, 2: node
  // 0 or 1; 3: a key of no node).
  std::optional<uint32_t> authenticated;
  switch ((data[0] >> 1) & 3) {
    case 1: authenticated = 0; break;
    case 2: authenticated = 1; break;
    case 3: authenticated = detdb::ZmqPeerNet::kUnknownNode; break;
    default: break;
  }
  state->net->Handle(zmq::message_t(frame.data(), frame.size()), authenticated);
  return 0;
}
