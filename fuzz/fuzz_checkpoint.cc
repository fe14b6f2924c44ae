// fuzz_checkpoint: the checkpoint file parser (scheduler/checkpoint.h):
// ReadCheckpoint (length, CRC, header, structure, client state section),
// then RestoreCheckpoint of what it accepts into the stores of a micro
// engine of one partition (as a node's recovery does). The file lives in an
// in-memory file system, named for the epoch its header holds.
//
// Input: byte 0 even: the rest is the whole file; odd: the rest is the
// content and the trailer (length, CRC32C) is appended, so that the checks
// behind the CRC are reached.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "io/crc32c.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/checkpoint.h"

namespace {

detdb::fuzz::WorkloadEngine* micro = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detdb::fuzz::QuietLogs();
  micro = detdb::fuzz::MakeWorkloadEngine("micro", 1).release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > (4u << 20)) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    const uint64_t length = bytes.size();
    const uint32_t crc = detdb::Crc32c(bytes.data(), bytes.size());
    bytes.append(reinterpret_cast<const char*>(&length), 8);
    bytes.append(reinterpret_cast<const char*>(&crc), 4);
  }
  uint64_t epoch = 1;
  if (bytes.size() >= 16) std::memcpy(&epoch, bytes.data() + 8, 8);
  detdb::FaultInjectingFileSystem fs;
  detdb::CheckpointOptions o;
  o.dir = "/ckpt";
  o.fs = &fs;
  if (!fs.CreateDir(o.dir).ok()) __builtin_trap();
  auto f = fs.NewAppendableFile(detdb::JoinPath(o.dir, detdb::CheckpointName(epoch)));
  if (!f.ok() || !(*f)->Append(bytes).ok() || !(*f)->Close().ok()) __builtin_trap();
  auto loaded = detdb::ReadCheckpoint(o, epoch);
  if (!loaded.ok()) return 0;
  std::vector<detdb::PartitionStore*> stores = {micro->engine->store(0)};
  (void)detdb::RestoreCheckpoint(*loaded, stores);
  return 0;
}
