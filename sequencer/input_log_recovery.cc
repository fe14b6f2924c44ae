// RecoverInputLog: reads the segments in order and decides, for any damage,
// between a torn tail (trimmed) and corruption (refused). See input_log.h.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {

absl::Status Damage(const std::string& path, uint64_t offset, const std::string& what) {
  return absl::DataLossError(absl::StrCat("input log ", path, " offset ", offset, ": ", what));
}

// The first offset after `from` where a valid record starts, or npos.
size_t FindValidRecord(std::string_view data, size_t from, uint32_t max_payload) {
  char magic[4];
  std::memcpy(magic, &kLogMagic, 4);
  for (size_t off = from; off + kLogHeaderBytes + kLogTrailerBytes <= data.size(); ++off) {
    if (std::memcmp(data.data() + off, magic, 4) != 0) continue;
    if (DecodeRecord(data.substr(off), max_payload).outcome == DecodeOutcome::kOk) return off;
  }
  return std::string_view::npos;
}

}  // namespace

absl::StatusOr<RecoveryResult> RecoverInputLog(const std::string& dir, const RecoveryOptions& options,
                                               const RecordVisitor& visitor) {
  FileSystem* fs = options.fs != nullptr ? options.fs : PosixFileSystem();
  RecoveryResult result;
  auto names = fs->ListDir(dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return result;
    return names.status();
  }
  // Segment names have a fixed width: name order is epoch order.
  std::vector<std::pair<std::string, uint64_t>> segments;
  for (const std::string& name : *names) {
    if (auto epoch = ParseSegmentName(name)) {
      segments.emplace_back(name, *epoch);
    } else if (name.rfind("log-", 0) == 0) {
      return absl::DataLossError(absl::StrCat("input log ", JoinPath(dir, name), ": not a segment name"));
    }
  }

  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& name = segments[i].first;
    const std::string path = JoinPath(dir, name);
    const bool last_segment = i + 1 == segments.size();
    SegmentInfo info;
    info.name = name;
    info.first_epoch = segments[i].second;
    auto data_or = fs->ReadFile(path, options.max_segment_bytes);
    if (!data_or.ok()) return data_or.status();
    const std::string_view data = *data_or;
    info.file_bytes = data.size();

    size_t off = 0;
    while (off < data.size()) {
      DecodeResult r = DecodeRecord(data.substr(off), options.max_payload_bytes);
      if (r.outcome != DecodeOutcome::kOk) {
        // A torn tail can only be at the end of the last segment: the writer
        // syncs a segment before it creates the next one.
        if (!last_segment) {
          return Damage(path, off, absl::StrCat(r.error, "; later segments follow"));
        }
        if (size_t next = FindValidRecord(data, off + 1, options.max_payload_bytes);
            next != std::string_view::npos) {
          return Damage(path, off, absl::StrCat(r.error, "; a valid record follows at offset ", next));
        }
        result.torn_segment = name;
        result.torn_offset = off;
        result.torn_bytes = data.size() - off;
        result.torn_reason = r.error;
        break;
      }
      const LogRecordHeader& h = r.record.header;
      const LogPosition pos{h.epoch, h.sequencer_id};
      if (options.check_config_hash && h.config_hash != options.config_hash) {
        return absl::FailedPreconditionError(
            absl::StrCat("input log ", path, " offset ", off, ": config hash ", h.config_hash,
                         " differs from this node's ", options.config_hash));
      }
      if (options.build_id != 0 && h.build_id != options.build_id) {
        return absl::FailedPreconditionError(absl::StrCat("input log ", path, " offset ", off,
                                                          ": build id ", h.build_id, " differs from this build's ",
                                                          options.build_id,
                                                          ": the log was written by another build of detdb, whose "
                                                          "procedures may differ (detdb --replay_other_build "
                                                          "replays it anyway)"));
      }
      if (h.epoch == 0) return Damage(path, off, "epoch 0");
      if (info.records == 0 && h.epoch != info.first_epoch) {
        return Damage(path, off, absl::StrCat("first record has epoch ", h.epoch, ", the segment name says ",
                                              info.first_epoch));
      }
      if (result.last && !(*result.last < pos)) {
        return Damage(path, off, absl::StrCat("(epoch ", h.epoch, ", sequencer ", h.sequencer_id,
                                              ") after (", result.last->epoch, ", ", result.last->sequencer_id,
                                              "): out of order"));
      }
      if (info.records == 0 && result.last && h.epoch == result.last->epoch) {
        return Damage(path, off, absl::StrCat("epoch ", h.epoch, " spans two segments"));
      }
      if (result.last && result.last_epoch_ended && h.epoch == result.last->epoch) {
        return Damage(path, off, absl::StrCat("epoch ", h.epoch, " continues after its epoch_end record"));
      }
      auto it = result.last_epoch_by_sequencer.find(h.sequencer_id);
      if (it != result.last_epoch_by_sequencer.end() && h.epoch != it->second + 1) {
        return Damage(path, off, absl::StrCat("epoch gap: sequencer ", h.sequencer_id, " has epoch ", h.epoch,
                                              " after epoch ", it->second));
      }
      if (visitor) {
        if (absl::Status s = visitor(RecordLocation{name, off, r.size}, r.record); !s.ok()) return s;
      }
      result.last = pos;
      result.last_epoch_ended = h.epoch_end;
      if (h.epoch_end) result.last_complete_epoch = h.epoch;
      result.last_epoch_by_sequencer[h.sequencer_id] = h.epoch;
      if (info.records == 0) info.min_epoch = h.epoch;
      info.max_epoch = h.epoch;
      ++info.records;
      ++result.records;
      off += r.size;
    }
    info.verified_end = off;

    if (info.records == 0 && !last_segment) {
      return Damage(path, 0, "empty segment; later segments follow");
    }
    if (options.trim_torn_tail) {
      if (!result.torn_segment.empty() && result.torn_segment == name) {
        LOG(WARNING) << "input log " << path << ": trimming a torn tail of " << result.torn_bytes
                     << " bytes at offset " << result.torn_offset << " (" << result.torn_reason << ")";
        if (absl::Status s = fs->Truncate(path, off); !s.ok()) return s;
        result.torn_trimmed = true;
      }
      if (info.records == 0) {  // the last segment, left empty: the writer starts a new one
        if (absl::Status s = fs->Remove(path); !s.ok()) return s;
        if (absl::Status s = fs->SyncDir(dir); !s.ok()) return s;
        info.removed = true;
      }
    }
    result.segments.push_back(std::move(info));
  }
  return result;
}

absl::StatusOr<RecoveryResult> TruncateInputLogAfter(const std::string& dir, uint64_t last_epoch,
                                                     const RecoveryOptions& options) {
  FileSystem* fs = options.fs != nullptr ? options.fs : PosixFileSystem();
  RecoveryOptions o = options;
  o.trim_torn_tail = true;
  // The first record after last_epoch: its segment and offset.
  std::string cut_segment;
  uint64_t cut_offset = 0;
  auto r = RecoverInputLog(dir, o, [&](const RecordLocation& at, const LogRecordView& v) {
    if (cut_segment.empty() && v.header.epoch > last_epoch) {
      cut_segment = at.segment;
      cut_offset = at.offset;
    }
    return absl::OkStatus();
  });
  if (!r.ok()) return r.status();
  if (cut_segment.empty()) return r;  // nothing after last_epoch
  // Crash-safe order: a crash at any step must leave a log without an epoch
  // gap. The segments after the cut go first, from the last backwards (a
  // crash leaves a shorter, gap-free log), the directory is synced, and only
  // then is the cut segment truncated (or removed when the cut is at its
  // start), and the directory synced again.
  std::vector<std::string> later;
  bool after = false;
  for (const SegmentInfo& seg : r->segments) {
    if (seg.removed) continue;
    if (seg.name == cut_segment) {
      after = true;
    } else if (after) {
      later.push_back(JoinPath(dir, seg.name));
    }
  }
  for (auto it = later.rbegin(); it != later.rend(); ++it) {
    LOG(WARNING) << "input log " << *it << ": removed, after epoch " << last_epoch;
    if (absl::Status s = fs->Remove(*it); !s.ok()) return s;
  }
  if (!later.empty()) {
    if (absl::Status s = fs->SyncDir(dir); !s.ok()) return s;
  }
  const std::string path = JoinPath(dir, cut_segment);
  LOG(WARNING) << "input log " << path << ": dropping everything after epoch " << last_epoch << " (offset "
               << cut_offset << "): not durable on every node";
  if (cut_offset == 0) {
    if (absl::Status s = fs->Remove(path); !s.ok()) return s;
  } else if (absl::Status s = fs->Truncate(path, cut_offset); !s.ok()) {
    return s;
  }
  if (absl::Status s = fs->SyncDir(dir); !s.ok()) return s;
  return RecoverInputLog(dir, o);
}

namespace {
// Segment names in dir, in log order (a missing dir: none).
absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> ListSegments(const std::string& dir,
                                                                           FileSystem* fs) {
  std::vector<std::pair<std::string, uint64_t>> out;
  auto names = fs->ListDir(dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return out;
    return names.status();
  }
  for (const std::string& name : *names)
    if (auto epoch = ParseSegmentName(name)) out.emplace_back(name, *epoch);
  return out;
}
}  // namespace

absl::StatusOr<size_t> DropInputLogBefore(const std::string& dir, uint64_t epoch, FileSystem* fs) {
  if (fs == nullptr) fs = PosixFileSystem();
  auto segments = ListSegments(dir, fs);
  if (!segments.ok()) return segments.status();
  size_t removed = 0;
  // Oldest first: a crash leaves a log that starts later, never one with a gap.
  for (size_t i = 0; i + 1 < segments->size(); ++i) {
    if ((*segments)[i + 1].second > epoch + 1) break;
    if (absl::Status s = fs->Remove(JoinPath(dir, (*segments)[i].first)); !s.ok()) return s;
    ++removed;
  }
  if (removed > 0) {
    if (absl::Status s = fs->SyncDir(dir); !s.ok()) return s;
  }
  return removed;
}

absl::StatusOr<std::optional<uint64_t>> InputLogFirstEpoch(const std::string& dir, FileSystem* fs) {
  if (fs == nullptr) fs = PosixFileSystem();
  auto segments = ListSegments(dir, fs);
  if (!segments.ok()) return segments.status();
  if (segments->empty()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(segments->front().second);
}

absl::StatusOr<std::vector<LogRecord>> ReadInputLog(const std::string& dir, RecoveryOptions options) {
  options.trim_torn_tail = false;
  std::vector<LogRecord> out;
  auto r = RecoverInputLog(dir, options, [&](const RecordLocation&, const LogRecordView& v) {
    out.push_back(LogRecord{v.header, std::string(v.payload)});
    return absl::OkStatus();
  });
  if (!r.ok()) return r.status();
  return out;
}

}  // namespace detdb
