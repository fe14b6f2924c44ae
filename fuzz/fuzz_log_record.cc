// fuzz_log_record: the input log's record decoder (sequencer/input_log.h,
// DecodeRecord) on bytes as read from a segment file. Input: the bytes.
// A record it accepts must lie inside the bytes, re-encode to the same
// bytes (EncodeRecord) and decode alike from a copy.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "sequencer/input_log.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  detdb::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const detdb::DecodeResult r = detdb::DecodeRecord(bytes, /*max_payload_bytes=*/1u << 20);
  if (r.outcome != detdb::DecodeOutcome::kOk) return 0;
  if (r.size > size || r.record.payload.data() < bytes.data() ||
      r.record.payload.data() + r.record.payload.size() > bytes.data() + r.size)
    __builtin_trap();
  std::string again;
  detdb::EncodeRecord(r.record.header, r.record.payload, &again);
  if (again.size() != r.size || std::memcmp(again.data(), data, r.size) != 0) __builtin_trap();
  return 0;
}
