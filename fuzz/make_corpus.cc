// fuzz_make_corpus DIR: writes the seed corpora of the fuzz targets into
// DIR/<target>/ (fuzz/corpus/ in the repo; docs/FUZZING.md): valid inputs
// made by the real encoders and generators (client requests of every
// workload, peer messages of every kind, cluster configs, input log records
// and segments, a checkpoint file taken by ForkCapture) and a few edge
// cases. Deterministic: the same files on every run.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/partitioner.h"
#include "common/types.h"
#include "glog/logging.h"
#include "io/file_system.h"
#include "proto/client.pb.h"
#include "proto/cluster.pb.h"
#include "proto/tpcc.pb.h"
#include "scheduler/checkpoint.h"
#include "sequencer/epoch_batcher.h"
#include "sequencer/input_log.h"
#include "storage/partition_store.h"
#include "workloads/kv/kv_request.h"
#include "workloads/micro/micro.h"
#include "workloads/micro/micro_table.h"
#include "workloads/tpcc/generator.h"
#include "workloads/tpcc/new_order_lines.h"

namespace detdb {
namespace {

std::string root;

void Put(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = JoinPath(root, target);
  mkdir(dir.c_str(), 0755);
  std::ofstream f(JoinPath(dir, name), std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  CHECK(f.good()) << "writing " << dir << "/" << name;
}

template <typename T>
T Must(absl::StatusOr<T> v) {
  CHECK(v.ok()) << v.status();
  return std::move(*v);
}

// --- client_request: serialized pb::ClientRequest ---
void ClientRequests() {
  uint64_t seq = 0;
  auto stamp = [&](pb::Txn* t) {
    t->set_client_id(7);
    t->set_client_seq(++seq);
  };
  {
    MicroOptions mo;
    mo.partitions = 2;
    mo.records_per_partition = 1000;
    mo.contention = 0.01;
    mo.multipartition = 0.5;
    MicroGenerator g(mo);
    pb::ClientRequest r;
    for (int i = 0; i < 3; ++i) {
      pb::Txn* t = r.add_txns();
      g.Next(t);
      stamp(t);
    }
    Put("client_request", "micro", r.SerializeAsString());
  }
  {
    tpcc::GeneratorOptions go;
    go.scale = tpcc::Scale::Small(2);
    tpcc::Generator g(go);
    for (int i = 0; i < 6; ++i) {
      tpcc::Generator::Request q = g.Next();
      pb::ClientRequest r;
      stamp(&q.txn);
      *r.add_txns() = q.txn;
      Put("client_request", absl::StrCat("tpcc_", i), r.SerializeAsString());
      if (q.kind != tpcc::TxnKind::kNewOrder) continue;
      // The same New-Order with its lines in the two older encodings,
      // still read (proto/tpcc.proto): sub-messages, and packed arrays.
      pb::tpcc::NewOrderArgs a, arrays;
      CHECK(a.ParseFromString(q.txn.args()));
      arrays = a;
      arrays.clear_line_words();
      for (int l = 0; l < a.line_words_size(); ++l) {
        const tpcc::OrderLine line = tpcc::OrderLineOfWord(a.line_words(l));
        pb::tpcc::OrderLineInput* in = a.add_lines();
        in->set_i_id(line.i_id);
        in->set_supply_w_id(line.supply_w_id);
        in->set_quantity(line.quantity);
        arrays.add_i_ids(line.i_id);
        arrays.add_supply_w_ids(line.supply_w_id);
        arrays.add_quantities(line.quantity);
      }
      a.clear_line_words();
      r.mutable_txns(0)->set_args(a.SerializeAsString());
      Put("client_request", absl::StrCat("tpcc_nested_", i), r.SerializeAsString());
      r.mutable_txns(0)->set_args(arrays.SerializeAsString());
      Put("client_request", absl::StrCat("tpcc_arrays_", i), r.SerializeAsString());
    }
  }
  {
    const pb::KvValue v = KvBytes("hello");
    const pb::KvValue n = KvInt(5);
    std::vector<pb::Txn> kv = {Must(KvPutRequest("a", v)),          Must(KvGetRequest("a")),
                               Must(KvDeleteRequest("b")),          Must(KvCasRequest("a", v, n)),
                               Must(KvTransferRequest("x", "y", 3)), Must(KvAppendRequest("l", "e"))};
    for (size_t i = 0; i < kv.size(); ++i) {
      pb::ClientRequest r;
      stamp(&kv[i]);
      *r.add_txns() = kv[i];
      Put("client_request", absl::StrCat("kv_", i), r.SerializeAsString());
    }
  }
  pb::ClientRequest admin;
  admin.set_request_id(3);
  admin.set_info(true);
  admin.set_digest(true);
  admin.set_digest_epoch(2);
  Put("client_request", "admin", admin.SerializeAsString());
  pb::ClientRequest outcomes;
  outcomes.set_outcome_only(true);
  pb::Txn* t = outcomes.add_txns();
  stamp(t);
  Put("client_request", "outcome_only", outcomes.SerializeAsString());
  Put("client_request", "empty", "");
}

// --- peer_message: mode byte (1: stamp our config hash) + pb::PeerMessage ---
void PeerMessages() {
  auto put = [](const std::string& name, pb::PeerMessage m, uint64_t seq) {
    m.set_from_node(1);
    m.set_seq(seq);
    Put("peer_message", name, "\x01" + m.SerializeAsString());
    if (name == "batch") Put("peer_message", "batch_raw", std::string("\x00", 1) + m.SerializeAsString());
  };
  pb::PeerMessage hello;
  hello.mutable_hello()->set_boot_us(1);
  hello.mutable_hello()->set_epoch_us(1000);
  hello.mutable_hello()->set_recovered_epoch(4);
  hello.mutable_hello()->set_has_log(true);
  hello.mutable_hello()->add_checkpoint_epochs(3);
  put("hello", hello, 1);
  pb::PeerMessage batch;
  pb::Batch* b = batch.mutable_batch();
  b->set_sequencer_id(1);
  b->set_epoch(5);
  for (uint32_t i = 0; i < 3; ++i) {
    pb::Txn* t = b->add_txns();
    t->set_id(EpochBatcher::EpochSequencerId(5, 1, i));
    t->set_type(kMicroTxnType);
    t->set_client_id(9);
    t->set_client_seq(i + 1);
    t->add_read_set(MakeKey(kMicroTable, i));
    t->add_read_set(MakeKey(kMicroTable, i + 2));
    t->add_write_set(MakeKey(kMicroTable, i));
  }
  batch.set_durable_epoch(4);
  put("batch", batch, 2);
  pb::PeerMessage reads;
  reads.set_to_partition(0);
  reads.mutable_remote_reads()->set_txn_id(EpochBatcher::EpochSequencerId(5, 1, 0));
  reads.mutable_remote_reads()->set_from_partition(2);
  pb::KeyValue* kv = reads.mutable_remote_reads()->add_reads();
  kv->set_key(MakeKey(kMicroTable, 2));
  kv->set_value(std::string(8, '\x01'));
  put("remote_reads", reads, 3);
  pb::PeerMessage result;
  result.mutable_result()->set_txn_id(EpochBatcher::EpochSequencerId(5, 0, 1));
  result.mutable_result()->set_client_id(3);
  result.mutable_result()->set_client_seq(1);
  result.mutable_result()->set_result("ok");
  put("result", result, 4);
  pb::PeerMessage stamp;
  stamp.set_durable_epoch(10);
  stamp.set_checkpoint_epoch(8);
  put("durable_checkpoint", stamp, 5);
  // A rejoining peer's three kinds of request, and a reply nobody asked for.
  for (int kind = 0; kind < 3; ++kind) {
    pb::PeerMessage rq;
    pb::RejoinRequest* r = rq.mutable_rejoin_request();
    r->set_id(kind + 1);
    r->set_kind(static_cast<pb::RejoinRequest::Kind>(kind));
    r->set_own_floor(3);
    r->set_after_epoch(3);
    r->set_from_epoch(4);
    r->set_max_bytes(1 << 16);
    put("rejoin_request_" + std::to_string(kind), rq, 6 + kind);
  }
  pb::PeerMessage rp;
  rp.mutable_rejoin_reply()->set_id(1);
  rp.mutable_rejoin_reply()->set_next_expected(5);
  put("rejoin_reply", rp, 9);
}

// --- cluster_config: text format ---
void ClusterConfigs() {
  Put("cluster_config", "one_node",
      "num_partitions: 2\nepoch_us: 1000\n"
      "nodes { id: 0 host: \"127.0.0.1\" peer_port: 41000 client_port: 41001 partitions: 0 partitions: 1 }\n");
  Put("cluster_config", "three_nodes",
      "num_partitions: 4\nepoch_us: 5000\n"
      "nodes { id: 0 host: \"10.0.0.1\" peer_port: 1 client_port: 2 partitions: 0 partitions: 3 }\n"
      "nodes { id: 1 host: \"10.0.0.2\" peer_port: 1 client_port: 2 partitions: 1 }\n"
      "nodes { id: 2 host: \"10.0.0.3\" peer_port: 65535 client_port: 2 partitions: 2 }\n");
  Put("cluster_config", "duplicate_endpoint",
      "num_partitions: 1\n"
      "nodes { id: 0 host: \"h\" peer_port: 5 client_port: 5 partitions: 0 }\n");
  Put("cluster_config", "partition_twice",
      "num_partitions: 1\n"
      "nodes { id: 0 host: \"a\" peer_port: 5 client_port: 6 partitions: 0 }\n"
      "nodes { id: 63 host: \"b\" peer_port: 5 client_port: 6 partitions: 0 }\n");
}

// --- log_record / log_recovery: EncodeRecord ---
std::string Record(uint64_t epoch, uint32_t sequencer, bool end, uint32_t txns) {
  pb::Batch b;
  b.set_sequencer_id(sequencer);
  b.set_epoch(epoch);
  for (uint32_t i = 0; i < txns; ++i) {
    pb::Txn* t = b.add_txns();
    t->set_id(EpochBatcher::EpochSequencerId(epoch, sequencer, i));
    t->set_type(kMicroTxnType);
    t->add_write_set(MakeKey(kMicroTable, i));
  }
  LogRecordHeader h;
  h.epoch = epoch;
  h.sequencer_id = sequencer;
  h.epoch_end = end;
  std::string out;
  EncodeRecord(h, b.SerializeAsString(), &out);
  return out;
}

void LogRecords() {
  Put("log_record", "batch", Record(3, 0, true, 2));
  Put("log_record", "not_end", Record(1, 1, false, 0));
  std::string torn = Record(2, 0, true, 1);
  Put("log_record", "torn", torn.substr(0, torn.size() - 3));
  // Segments: flags byte (bit 0 fix CRCs, bit 1 two segments, bit 2 trim), split, epoch.
  std::string log;
  for (uint64_t e = 1; e <= 3; ++e) {
    log += Record(e, 0, false, 1);
    log += Record(e, 1, true, 2);
  }
  Put("log_recovery", "three_epochs", std::string("\x00\x00\x00", 3) + log);
  Put("log_recovery", "three_epochs_fixcrc", std::string("\x01\x00\x00", 3) + log);
  const std::string first = Record(1, 0, true, 1) + Record(2, 0, true, 1);
  const std::string two = first + Record(3, 0, true, 1);
  // Split where the third record starts (byte 1 = cut * 256 / size, rounded up).
  const uint8_t cut = static_cast<uint8_t>((first.size() * 256 + two.size() - 1) / two.size());
  Put("log_recovery", "two_segments", std::string("\x02", 1) + static_cast<char>(cut) + '\x02' + two);
  Put("log_recovery", "torn_tail_trim", std::string("\x04\x00\x00", 3) + log + Record(4, 0, true, 1).substr(0, 30));
  Put("log_recovery", "gap", std::string("\x00\x00\x00", 3) + Record(1, 0, true, 0) + Record(3, 0, true, 0));
}

// --- checkpoint: mode byte (0: whole file; 1: content, trailer computed) ---
void Checkpoints() {
  char tmpl[] = "/tmp/fuzz_corpus_ckpt_XXXXXX";
  CHECK(mkdtemp(tmpl) != nullptr);
  ModPartitioner parts(1);
  PartitionStore store;
  CHECK(LoadMicroTable(&store, parts, 0, 5).ok());
  CheckpointOptions o;
  o.dir = tmpl;
  o.client_state = [](uint64_t) -> absl::StatusOr<std::string> { return std::string("client-state"); };
  CheckpointMeta meta{/*epoch=*/6, /*config_hash=*/0, /*last_txn_id=*/99, {0}, /*log_crc=*/0};
  auto cap = Must(ForkCapture(meta, {&store}));
  CheckpointStats stats;
  const std::string tmp = Must(ReceiveCapture(cap, o, meta.epoch, &stats));
  CHECK(PublishCheckpoint(o, tmp, meta.epoch).ok());
  const std::string path = JoinPath(o.dir, CheckpointName(meta.epoch));
  const std::string file = Must(PosixFileSystem()->ReadFile(path, 1u << 20));
  Put("checkpoint", "micro_5_rows", std::string("\x00", 1) + file);
  Put("checkpoint", "micro_5_rows_content",
      "\x01" + file.substr(0, file.size() - kCheckpointTrailerBytes));
  Put("checkpoint", "truncated", std::string("\x00", 1) + file.substr(0, 30));
  CHECK(PosixFileSystem()->Remove(path).ok());
  rmdir(tmpl);
}

}  // namespace
}  // namespace detdb

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus DIR\n";
    return 2;
  }
  detdb::root = argv[1];
  mkdir(detdb::root.c_str(), 0755);
  detdb::ClientRequests();
  detdb::PeerMessages();
  detdb::ClusterConfigs();
  detdb::LogRecords();
  detdb::Checkpoints();
  return 0;
}
