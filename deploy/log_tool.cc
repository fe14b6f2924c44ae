#include "deploy/log_tool.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {

RecoveryOptions ReadOnly(const LogToolOptions& o) {
  RecoveryOptions r;
  r.fs = o.fs;
  r.config_hash = o.config_hash;
  r.check_config_hash = o.config_hash != 0;
  r.max_payload_bytes = o.max_payload_bytes;
  r.trim_torn_tail = false;
  return r;
}

// 1 for damage a node refuses to start on, 2 for a log it cannot read.
int ExitCodeFor(const absl::Status& s) {
  return absl::IsDataLoss(s) || absl::IsFailedPrecondition(s) ? 1 : 2;
}

std::string EpochRange(uint64_t records, uint64_t lo, uint64_t hi) {
  if (records == 0) return "epochs -";
  return absl::StrCat("epochs ", lo, "..", hi);
}

void PrintTorn(const RecoveryResult& r, std::ostream& out) {
  out << "torn tail: " << r.torn_bytes << " bytes after the verified end, " << r.torn_segment << " offset "
      << r.torn_offset << " (" << r.torn_reason << "); recovery trims it\n";
}

// 0 if dir exists; else prints why and returns 2.
int CheckDir(const std::string& dir, const LogToolOptions& o, std::ostream& out) {
  FileSystem* fs = o.fs != nullptr ? o.fs : PosixFileSystem();
  auto exists = fs->FileExists(dir);
  if (exists.ok() && *exists) return 0;
  out << "ERROR: " << (exists.ok() ? absl::StrCat(dir, ": no such directory") : exists.status().ToString())
      << "\n";
  return 2;
}

}  // namespace

int VerifyLog(const std::string& dir, const LogToolOptions& options, std::ostream& out) {
  if (int rc = CheckDir(dir, options, out); rc != 0) return rc;
  // Per segment, what the visitor saw: printed even when recovery refuses.
  struct Seen {
    uint64_t records = 0, lo = 0, hi = 0, end = 0;
  };
  std::map<std::string, Seen> seen;
  auto r = RecoverInputLog(dir, ReadOnly(options), [&](const RecordLocation& loc, const LogRecordView& v) {
    Seen& s = seen[loc.segment];
    if (s.records++ == 0) s.lo = v.header.epoch;
    s.hi = v.header.epoch;
    s.end = loc.offset + loc.size;
    return absl::OkStatus();
  });
  if (!r.ok()) {
    for (const auto& [name, s] : seen) {
      out << name << "  records " << s.records << "  " << EpochRange(s.records, s.lo, s.hi) << "  crc ok up to "
          << s.end << "\n";
    }
    out << "CORRUPT: " << r.status().message() << "\n";
    return ExitCodeFor(r.status());
  }
  uint64_t lo = 0, hi = 0;
  for (const SegmentInfo& s : r->segments) {
    out << s.name << "  records " << s.records << "  " << EpochRange(s.records, s.min_epoch, s.max_epoch)
        << "  bytes " << s.file_bytes << "  verified " << s.verified_end << "  crc ok";
    if (s.file_bytes > s.verified_end) out << "  torn tail " << (s.file_bytes - s.verified_end) << " bytes";
    out << "\n";
    if (s.records > 0) {
      if (lo == 0) lo = s.min_epoch;
      hi = s.max_epoch;
    }
  }
  out << "total: " << r->segments.size() << " segments, " << r->records << " records, "
      << EpochRange(r->records, lo, hi) << ", last complete epoch " << r->last_complete_epoch << "\n";
  if (!r->torn_segment.empty()) PrintTorn(*r, out);
  out << (r->torn_segment.empty() ? "OK\n" : "OK (a node would trim the torn tail and start)\n");
  return 0;
}

int DumpLog(const std::string& dir, const LogToolOptions& options, std::ostream& out) {
  if (int rc = CheckDir(dir, options, out); rc != 0) return rc;
  auto r = RecoverInputLog(dir, ReadOnly(options), [&](const RecordLocation& loc, const LogRecordView& v) {
    out << loc.segment << "  offset " << loc.offset << "  epoch " << v.header.epoch << "  sequencer "
        << v.header.sequencer_id << "  payload " << v.payload.size() << " bytes"
        << (v.header.epoch_end ? "  epoch-end" : "") << "  config " << v.header.config_hash << "  build "
        << v.header.build_id << "  crc ok\n";
    return absl::OkStatus();
  });
  if (!r.ok()) {
    out << "CORRUPT: " << r.status().message() << "\n";
    return ExitCodeFor(r.status());
  }
  if (!r->torn_segment.empty()) PrintTorn(*r, out);
  return 0;
}

}  // namespace detdb
