#include "fuzz/fuzz_util.h"

#include "deploy/node.h"
#include "glog/logging.h"
#include "google/protobuf/stubs/logging.h"
#include "workloads/kv/kv.h"
#include "workloads/micro/micro.h"
#include "workloads/micro/micro_table.h"
#include "workloads/tpcc/loader.h"
#include "workloads/tpcc/procedures.h"
#include "workloads/tpcc/schema.h"

namespace detdb::fuzz {
namespace {

class Sink final : public TxnClient {
 public:
  void OnResult(pb::TxnResult&&) override {}
};

void Must(const absl::Status& s) {
  if (!s.ok()) LOG(FATAL) << "fuzz target setup: " << s;
}

}  // namespace

void QuietLogs() {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::GLOG_FATAL;  // the decoders log every input they drop
  google::protobuf::SetLogHandler(nullptr);  // protobuf's own (e.g. invalid UTF-8 in a string field)
}

std::unique_ptr<WorkloadEngine> MakeWorkloadEngine(const std::string& workload, uint32_t num_partitions,
                                                   PeerLink* peers) {
  auto w = std::make_unique<WorkloadEngine>();
  const bool tpcc = workload == "tpcc";
  if (tpcc) {
    w->partitioner = std::make_unique<tpcc::WarehousePartitioner>(num_partitions);
  } else {
    w->partitioner = std::make_unique<ModPartitioner>(num_partitions);
  }
  Must(RegisterMicroProcedures(&w->procedures));
  Must(tpcc::RegisterProcedures(&w->procedures));
  Must(RegisterKvProcedures(&w->procedures));
  w->sink = std::make_unique<Sink>();
  EngineOptions eo;
  eo.peers = peers;
  eo.results = w->sink.get();
  SetWorkloadChecks(workload, kMicroRowsPerPartition * num_partitions, &eo);
  auto engine = Engine::Create(eo, w->partitioner.get(), &w->procedures);
  Must(engine.status());
  w->engine = std::move(*engine);
  const tpcc::Scale scale = tpcc::Scale::Small(num_partitions);
  for (PartitionId p : w->engine->local_partitions()) {
    absl::Status s;
    if (tpcc) {
      s = tpcc::LoadPartition(w->engine->store(p), static_cast<const tpcc::WarehousePartitioner&>(*w->partitioner),
                              p, scale, /*seed=*/1);
    } else if (workload == "kv") {
      s = CreateKvTable(w->engine->store(p));
    } else {
      s = LoadMicroTable(w->engine->store(p), *w->partitioner, p, kMicroRowsPerPartition);
    }
    Must(s);
  }
  return w;
}

}  // namespace detdb::fuzz
