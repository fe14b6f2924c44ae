// The record format and InputLogWriter. Recovery: input_log_recovery.cc.
#include "sequencer/input_log.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/thread_name.h"
#include "glog/logging.h"
#include "io/crc32c.h"

namespace detdb {
namespace {

template <typename T>
void PutLE(std::string* out, T v) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "detdb assumes a little-endian host");
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->append(b, sizeof(T));
}

template <typename T>
T GetLE(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

constexpr std::string_view kSegmentPrefix = "log-";
constexpr std::string_view kSegmentSuffix = ".seg";
constexpr size_t kEpochDigits = 20;

}  // namespace

void EncodeRecord(const LogRecordHeader& header, std::string_view payload, std::string* out) {
  CHECK_LE(payload.size(), UINT32_MAX);
  const size_t start = out->size();
  out->reserve(start + EncodedRecordSize(payload.size()));
  PutLE<uint32_t>(out, kLogMagic);
  PutLE<uint16_t>(out, kLogFormatVersion);
  PutLE<uint16_t>(out, header.epoch_end ? kLogFlagEpochEnd : 0);
  PutLE<uint64_t>(out, header.epoch);
  PutLE<uint32_t>(out, header.sequencer_id);
  PutLE<uint32_t>(out, static_cast<uint32_t>(payload.size()));
  PutLE<uint64_t>(out, header.config_hash);
  PutLE<uint64_t>(out, header.build_id);
  out->append(payload);
  PutLE<uint32_t>(out, Crc32c(out->data() + start, out->size() - start));
}

DecodeResult DecodeRecord(std::string_view bytes, uint32_t max_payload_bytes) {
  DecodeResult r;
  if (bytes.empty()) {
    r.outcome = DecodeOutcome::kIncomplete;
    r.error = "no bytes";
    return r;
  }
  char magic[4];
  std::memcpy(magic, &kLogMagic, 4);
  const size_t visible = std::min<size_t>(4, bytes.size());
  if (std::memcmp(bytes.data(), magic, visible) != 0) {
    r.outcome = DecodeOutcome::kCorrupt;
    r.error = "bad magic";
    return r;
  }
  if (bytes.size() < kLogHeaderBytes) {
    r.outcome = DecodeOutcome::kIncomplete;
    r.error = absl::StrCat("header cut after ", bytes.size(), " of ", kLogHeaderBytes, " bytes");
    return r;
  }
  const char* p = bytes.data();
  const uint16_t version = GetLE<uint16_t>(p + 4);
  const uint16_t flags = GetLE<uint16_t>(p + 6);
  const uint32_t length = GetLE<uint32_t>(p + 20);
  r.outcome = DecodeOutcome::kCorrupt;
  if (version != kLogFormatVersion) {
    r.error = absl::StrCat("unknown format version ", version);
    return r;
  }
  if ((flags & ~kLogFlagEpochEnd) != 0) {
    r.error = absl::StrCat("unknown flags ", flags);
    return r;
  }
  if (length > max_payload_bytes) {
    r.error = absl::StrCat("payload length ", length, " over the limit of ", max_payload_bytes);
    return r;
  }
  const size_t total = EncodedRecordSize(length);
  if (bytes.size() < total) {
    r.outcome = DecodeOutcome::kIncomplete;
    r.error = absl::StrCat("record cut after ", bytes.size(), " of ", total, " bytes");
    return r;
  }
  const uint32_t stored = GetLE<uint32_t>(p + kLogHeaderBytes + length);
  const uint32_t computed = Crc32c(p, kLogHeaderBytes + length);
  if (stored != computed) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "CRC mismatch (stored %08x, computed %08x)", stored, computed);
    r.error = buf;
    return r;
  }
  r.outcome = DecodeOutcome::kOk;
  r.size = total;
  r.record.header.epoch = GetLE<uint64_t>(p + 8);
  r.record.header.sequencer_id = GetLE<uint32_t>(p + 16);
  r.record.header.config_hash = GetLE<uint64_t>(p + 24);
  r.record.header.build_id = GetLE<uint64_t>(p + 32);
  r.record.header.epoch_end = (flags & kLogFlagEpochEnd) != 0;
  r.record.payload = bytes.substr(kLogHeaderBytes, length);
  return r;
}

std::string SegmentName(uint64_t first_epoch) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "log-%020" PRIu64 ".seg", first_epoch);
  return buf;
}

std::optional<uint64_t> ParseSegmentName(std::string_view name) {
  if (name.size() != kSegmentPrefix.size() + kEpochDigits + kSegmentSuffix.size() ||
      name.substr(0, kSegmentPrefix.size()) != kSegmentPrefix ||
      name.substr(name.size() - kSegmentSuffix.size()) != kSegmentSuffix) {
    return std::nullopt;
  }
  uint64_t v = 0;
  for (char c : name.substr(kSegmentPrefix.size(), kEpochDigits)) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// ---------------------------------------------------------------------------
// InputLogWriter
// ---------------------------------------------------------------------------

InputLogWriter::InputLogWriter(const InputLogOptions& options)
    : options_(options), fs_(options.fs != nullptr ? options.fs : PosixFileSystem()) {}

absl::StatusOr<std::unique_ptr<InputLogWriter>> InputLogWriter::Open(const InputLogOptions& options,
                                                                     const RecoveryResult& recovered) {
  if (options.dir.empty()) return absl::InvalidArgumentError("input log: no directory");
  if (options.segment_bytes == 0) return absl::InvalidArgumentError("input log: segment_bytes is 0");
  if (!recovered.torn_segment.empty() && !recovered.torn_trimmed) {
    return absl::FailedPreconditionError(absl::StrCat("input log ", JoinPath(options.dir, recovered.torn_segment),
                                                      ": torn tail at offset ", recovered.torn_offset,
                                                      " was not trimmed; recover with trim_torn_tail"));
  }
  std::unique_ptr<InputLogWriter> w(new InputLogWriter(options));
  if (absl::Status s = w->fs_->CreateDir(options.dir); !s.ok()) return s;
  w->last_appended_ = recovered.last;
  w->last_epoch_ended_ = recovered.last_epoch_ended;
  w->last_epoch_by_sequencer_ = recovered.last_epoch_by_sequencer;
  w->durable_epoch_.store(recovered.last_complete_epoch, std::memory_order_relaxed);
  // Continue in the last segment that holds records.
  const SegmentInfo* tail = nullptr;
  for (const SegmentInfo& s : recovered.segments) {
    if (!s.removed) tail = &s;
  }
  if (tail != nullptr && tail->records == 0) {
    return absl::FailedPreconditionError(absl::StrCat("input log ", JoinPath(options.dir, tail->name),
                                                      ": empty last segment; recover with trim_torn_tail"));
  }
  if (tail != nullptr) {
    const std::string path = JoinPath(options.dir, tail->name);
    auto f = w->fs_->NewAppendableFile(path);
    if (!f.ok()) return f.status();
    if ((*f)->size() != tail->verified_end) {
      return absl::FailedPreconditionError(absl::StrCat("input log ", path, ": ", (*f)->size(),
                                                        " bytes, but recovery verified ", tail->verified_end,
                                                        "; recover again before opening"));
    }
    w->file_ = std::move(*f);
    w->segment_last_epoch_ = tail->max_epoch;
  }
  w->thread_ = std::thread([p = w.get()] {
    SetThreadName("detdb-log");
    p->Run();
  });
  return w;
}

InputLogWriter::~InputLogWriter() { (void)Close(); }

absl::Status InputLogWriter::Append(uint64_t epoch, uint32_t sequencer_id, std::string_view payload,
                                    bool epoch_end, bool lazy) {
  if (epoch == 0) return absl::InvalidArgumentError("input log: epoch 0 (epochs start at 1)");
  if (payload.size() > options_.max_payload_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("input log: payload of ", payload.size(),
                                                   " bytes over the limit of ", options_.max_payload_bytes));
  }
  const LogPosition pos{epoch, sequencer_id};
  Pending p{epoch, epoch_end, {}};
  EncodeRecord({epoch, sequencer_id, options_.config_hash, options_.build_id, epoch_end}, payload, &p.bytes);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!status_.ok()) return status_;
    if (closing_) return absl::FailedPreconditionError("input log: closed");
    if (last_appended_ && !(*last_appended_ < pos)) {
      return absl::InvalidArgumentError(absl::StrCat("input log: (epoch ", epoch, ", sequencer ", sequencer_id,
                                                     ") after (", last_appended_->epoch, ", ",
                                                     last_appended_->sequencer_id, "): out of order"));
    }
    if (last_appended_ && last_epoch_ended_ && epoch == last_appended_->epoch) {
      return absl::InvalidArgumentError(absl::StrCat("input log: epoch ", epoch, " was closed (epoch_end)"));
    }
    auto it = last_epoch_by_sequencer_.find(sequencer_id);
    if (it != last_epoch_by_sequencer_.end() && epoch != it->second + 1) {
      return absl::InvalidArgumentError(absl::StrCat("input log: sequencer ", sequencer_id, " epoch ", epoch,
                                                     " after ", it->second, ": epoch gap"));
    }
    if (queued_bytes_ + p.bytes.size() > options_.max_queued_bytes && !queue_.empty()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("input log: ", queued_bytes_, " bytes queued, limit ", options_.max_queued_bytes));
    }
    last_appended_ = pos;
    last_epoch_ended_ = epoch_end;
    last_epoch_by_sequencer_[sequencer_id] = epoch;
    queued_bytes_ += p.bytes.size();
    if (queue_.empty()) oldest_lazy_ = std::chrono::steady_clock::now();
    queue_.push_back(std::move(p));
    ++appended_;
    if (!lazy || options_.lazy_sync.count() == 0) {
      ++urgent_;
    } else if (queue_.size() > 1) {
      return absl::OkStatus();  // the writer already waits for the group's deadline
    }
  }
  work_cv_.notify_one();
  return absl::OkStatus();
}

absl::Status InputLogWriter::Flush() {
  std::unique_lock<std::mutex> l(mu_);
  const uint64_t target = appended_;
  ++flush_waiters_;
  work_cv_.notify_one();
  durable_cv_.wait(l, [&] { return done_ >= target || failed_; });
  --flush_waiters_;
  return status_;
}

void InputLogWriter::Hurry() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (queue_.empty()) return;
    ++urgent_;
  }
  work_cv_.notify_one();
}

absl::Status InputLogWriter::status() const {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

absl::Status InputLogWriter::Close() {
  std::lock_guard<std::mutex> close_lock(close_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    closing_ = true;
  }
  work_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  return status();
}

void InputLogWriter::Run() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_cv_.wait(l, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) break;  // closing, everything written
    // Only lazy records queued: wait for a non-lazy one, a Flush, Close or
    // the deadline of the oldest (idle epochs cost one sync per lazy_sync).
    const auto deadline = oldest_lazy_ + options_.lazy_sync;
    work_cv_.wait_until(l, deadline, [&] { return urgent_ > 0 || flush_waiters_ > 0 || closing_; });
    if (options_.min_sync_interval.count() > 0) {
      work_cv_.wait_until(l, last_sync_end_ + options_.min_sync_interval,
                          [&] { return flush_waiters_ > 0 || closing_; });
    }
    std::deque<Pending> group;
    group.swap(queue_);
    queued_bytes_ = 0;
    urgent_ = 0;
    l.unlock();
    absl::Status s = WriteGroup(group);
    last_sync_end_ = std::chrono::steady_clock::now();
    l.lock();
    if (!s.ok()) {
      status_ = s;  // from now on Append refuses
      queue_.clear();
      queued_bytes_ = 0;
      LOG(ERROR) << "input log: " << s << "; the writer stops, nothing after epoch " << durable_epoch()
                 << " is durable";
      if (options_.on_failure) {
        l.unlock();
        options_.on_failure(s);
        l.lock();
      }
      // Flush waiters return after on_failure ran.
      failed_ = true;
      done_ = appended_;
      durable_cv_.notify_all();
      break;
    }
    groups_.fetch_add(1, std::memory_order_relaxed);
    done_ += group.size();
    // Every record of the group is durable: so is every epoch up to that of
    // its last epoch_end record.
    uint64_t e = 0;
    for (auto it = group.rbegin(); it != group.rend(); ++it) {
      if (it->epoch_end) {
        e = it->epoch;
        break;
      }
    }
    const uint64_t before = durable_epoch_.load(std::memory_order_relaxed);
    if (e > before) durable_epoch_.store(e, std::memory_order_release);
    durable_cv_.notify_all();
    if (e > before && options_.on_durable) {
      l.unlock();
      options_.on_durable(e);
      l.lock();
    }
  }
  l.unlock();
  if (file_ != nullptr) {
    absl::Status s = file_->Close();
    if (!s.ok()) LOG(WARNING) << "input log: " << s;
    file_.reset();
  }
}

absl::Status InputLogWriter::WriteGroup(const std::deque<Pending>& group) {
  // The group's records go to the file in one write per segment (a write
  // costs about as much as a group's fdatasync on a VM's ext4; measured in
  // docs/DURABILITY.md), gathered in group_buf_.
  group_buf_.clear();
  auto write_buffered = [&]() -> absl::Status {
    if (group_buf_.empty()) return absl::OkStatus();
    absl::Status s = file_->Append(group_buf_);
    if (s.ok()) bytes_written_.fetch_add(group_buf_.size(), std::memory_order_relaxed);
    group_buf_.clear();
    return s;
  };
  for (const Pending& p : group) {
    if (file_ == nullptr ||
        (file_->size() + group_buf_.size() >= options_.segment_bytes && p.epoch > segment_last_epoch_)) {
      if (file_ != nullptr) {
        if (absl::Status s = write_buffered(); !s.ok()) return s;
      }
      if (absl::Status s = Rotate(p.epoch); !s.ok()) return s;
    }
    group_buf_.append(p.bytes);
    segment_last_epoch_ = p.epoch;
  }
  if (absl::Status s = write_buffered(); !s.ok()) return s;
  // A buffer grown by one large group is not kept (records are bounded by
  // max_record_bytes, groups are not).
  if (group_buf_.capacity() > (4u << 20)) std::string().swap(group_buf_);
  if (options_.crash_hook) options_.crash_hook("log_written");
  if (options_.sync_mode == LogSyncMode::kFsync) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status s = file_->Sync();
    sync_seconds_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return s;
  }
  return absl::OkStatus();
}

absl::Status InputLogWriter::Rotate(uint64_t first_epoch) {
  const bool fsync = options_.sync_mode == LogSyncMode::kFsync;
  if (file_ != nullptr) {
    // The old segment is complete and durable before the next one exists, so
    // that only the last segment can ever have a torn tail.
    if (fsync) {
      if (absl::Status s = file_->Sync(); !s.ok()) return s;
    }
    if (absl::Status s = file_->Close(); !s.ok()) return s;
    file_.reset();
  }
  const std::string path = JoinPath(options_.dir, SegmentName(first_epoch));
  auto exists = fs_->FileExists(path);
  if (!exists.ok()) return exists.status();
  if (*exists) return absl::AlreadyExistsError(absl::StrCat("input log ", path, ": segment exists already"));
  auto f = fs_->NewAppendableFile(path);
  if (!f.ok()) return f.status();
  file_ = std::move(*f);
  if (fsync) return fs_->SyncDir(options_.dir);
  return absl::OkStatus();
}

}  // namespace detdb
