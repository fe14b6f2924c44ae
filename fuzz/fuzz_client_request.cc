// fuzz_client_request: a client frame as a node's client endpoint receives
// it (deploy/client_endpoint.h): ClientEndpoint::DecodeRequest (size limit,
// pb::ClientRequest parse), then every txn of it through Engine::Check, the
// validation before sequencing (procedure type, client id, args size, key
// count, tables, partitions, the workload's key_check / txn_check), on an
// engine set up as a node sets one up for each workload: micro, tpcc, kv.
// Input: the frame's payload bytes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "deploy/client_endpoint.h"
#include "fuzz/fuzz_util.h"

namespace {

using detdb::fuzz::WorkloadEngine;

struct Engines {
  std::unique_ptr<WorkloadEngine> micro, tpcc, kv;
};
Engines* engines = nullptr;

// A node's default (NodeOptions::max_request_bytes) is larger; inputs this
// big only slow the fuzzer.
constexpr size_t kMaxRequestBytes = 1u << 20;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detdb::fuzz::QuietLogs();
  engines = new Engines;
  engines->micro = detdb::fuzz::MakeWorkloadEngine("micro", 2);
  engines->tpcc = detdb::fuzz::MakeWorkloadEngine("tpcc", 2);
  engines->kv = detdb::fuzz::MakeWorkloadEngine("kv", 2);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  detdb::pb::ClientRequest request;
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  if (!detdb::ClientEndpoint::DecodeRequest(payload, kMaxRequestBytes, &request).ok()) return 0;
  for (const detdb::pb::Txn& t : request.txns()) {
    for (const WorkloadEngine* w : {engines->micro.get(), engines->tpcc.get(), engines->kv.get()})
      (void)w->engine->Check(t);
  }
  return 0;
}
