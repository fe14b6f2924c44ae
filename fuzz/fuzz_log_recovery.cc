// fuzz_log_recovery: the input log's recovery scanner (sequencer/input_log.h,
// RecoverInputLog), which a node runs at start over every segment file:
// record decode, the torn-tail and damage rules, the invariants between
// records (epochs, sequencers, epoch ends), the visitor. The segments live
// in an in-memory file system (io/fault_injecting_file_system.h), fresh
// for every input.
//
// Input: byte 0: flags; bit 0: recompute the CRC of every record (walking
// the bytes by their length fields) so that the checks behind the CRC are
// reached; bit 1: two segments (byte 1 picks where the bytes are split,
// byte 2 the second segment's first epoch); bit 2: trim a torn tail (as a
// node does) rather than read-only (as detdb-log does). The rest: the
// bytes of the segment(s).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz/fuzz_util.h"
#include "io/crc32c.h"
#include "io/fault_injecting_file_system.h"
#include "sequencer/input_log.h"

namespace {

constexpr char kDir[] = "/log";

// Rewrites the CRC trailer of each record, found by its length field.
void FixCrcs(std::string* s) {
  size_t off = 0;
  while (off + detdb::kLogHeaderBytes + detdb::kLogTrailerBytes <= s->size()) {
    uint32_t len = 0;
    std::memcpy(&len, s->data() + off + 20, 4);
    if (len > s->size() - off - detdb::kLogHeaderBytes - detdb::kLogTrailerBytes) return;
    const uint32_t crc = detdb::Crc32c(s->data() + off, detdb::kLogHeaderBytes + len);
    std::memcpy(s->data() + off + detdb::kLogHeaderBytes + len, &crc, 4);
    off += detdb::EncodedRecordSize(len);
  }
}

void Write(detdb::FileSystem* fs, const std::string& name, const std::string& bytes) {
  auto f = fs->NewAppendableFile(detdb::JoinPath(kDir, name));
  if (!f.ok()) __builtin_trap();
  if (!(*f)->Append(bytes).ok() || !(*f)->Close().ok()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detdb::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t flags = data[0];
  std::string bytes(reinterpret_cast<const char*>(data) + 3, size - 3);
  detdb::FaultInjectingFileSystem fs;
  if (!fs.CreateDir(kDir).ok()) __builtin_trap();
  if (flags & 2) {
    const size_t cut = bytes.size() * data[1] / 256;
    std::string first = bytes.substr(0, cut), second = bytes.substr(cut);
    if (flags & 1) {
      FixCrcs(&first);
      FixCrcs(&second);
    }
    Write(&fs, detdb::SegmentName(1), first);
    Write(&fs, detdb::SegmentName(1 + data[2]), second);
  } else {
    if (flags & 1) FixCrcs(&bytes);
    Write(&fs, detdb::SegmentName(1), bytes);
  }
  detdb::RecoveryOptions o;
  o.fs = &fs;
  o.config_hash = 0;
  o.max_payload_bytes = 1u << 20;
  o.trim_torn_tail = (flags & 4) != 0;
  uint64_t visited = 0;
  auto r = detdb::RecoverInputLog(kDir, o, [&](const detdb::RecordLocation& where, const detdb::LogRecordView& rec) {
    if (where.size != detdb::EncodedRecordSize(rec.payload.size())) __builtin_trap();
    ++visited;
    return absl::OkStatus();
  });
  if (r.ok() && r->records != visited) __builtin_trap();
  return 0;
}
