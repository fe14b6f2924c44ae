#include "scheduler/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "io/crc32c.h"

namespace detdb {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the formats are little-endian");

constexpr size_t kHeaderFixedBytes = 40;
constexpr char kPrefix[] = "ckpt-";
constexpr char kSuffix[] = ".ckpt";
constexpr char kTmpSuffix[] = ".tmp";

FileSystem* FsOf(const CheckpointOptions& o) { return o.fs != nullptr ? o.fs : PosixFileSystem(); }

// Bounds-checked reader over a loaded file.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  template <typename T>
  bool Get(T* v) {
    if (data_.size() - off_ < sizeof(T)) return false;
    std::memcpy(v, data_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return true;
  }
  bool Skip(uint64_t n, const char** at) {
    if (data_.size() - off_ < n) return false;
    *at = data_.data() + off_;
    off_ += n;
    return true;
  }
  size_t offset() const { return off_; }
  bool done() const { return off_ == data_.size(); }

 private:
  std::string_view data_;
  size_t off_ = 0;
};

// Walks the content (without trailer), calling table(partition, table id,
// value size, count) and record(key, value) for each and copying the
// client state section into *client_state (if not null); false if malformed.
template <typename TableFn, typename RecordFn>
bool WalkContent(std::string_view content, CheckpointMeta* meta, std::string* client_state, std::string* why,
                 TableFn table, RecordFn record) {
  Cursor c(content);
  uint32_t magic = 0, n = 0, reserved = 0;
  uint16_t version = 0, flags = 0;
  if (!c.Get(&magic) || !c.Get(&version) || !c.Get(&flags) || !c.Get(&meta->epoch) || !c.Get(&meta->config_hash) ||
      !c.Get(&meta->last_txn_id) || !c.Get(&n) || !c.Get(&reserved)) {
    *why = "header cut short";
    return false;
  }
  if (magic != kCheckpointMagic) {
    *why = "bad magic";
    return false;
  }
  if ((version != kCheckpointVersion && version != 1) || flags != 0 || (version == 1 && reserved != 0)) {
    *why = absl::StrCat("unknown format version ", version, " or flags ", flags);
    return false;
  }
  meta->log_crc = version == 1 ? 0 : reserved;
  if (n == 0 || n > 1024) {
    *why = absl::StrCat("partition count ", n);
    return false;
  }
  meta->partitions.clear();
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t p = 0;
    if (!c.Get(&p)) {
      *why = "partition ids cut short";
      return false;
    }
    meta->partitions.push_back(p);
  }
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t p = 0, tables = 0;
    if (!c.Get(&p) || !c.Get(&tables) || p != meta->partitions[i] || tables > 256) {
      *why = absl::StrCat("bad section of partition ", meta->partitions[i], " at offset ", c.offset());
      return false;
    }
    for (uint32_t t = 0; t < tables; ++t) {
      uint32_t id = 0, value_size = 0;
      uint64_t count = 0;
      if (!c.Get(&id) || !c.Get(&value_size) || !c.Get(&count) || id > 255 || value_size > (1u << 20)) {
        *why = absl::StrCat("bad table header at offset ", c.offset());
        return false;
      }
      if (!table(p, id, value_size, count)) {
        *why = absl::StrCat("table ", id, " of partition ", p, " does not match the store");
        return false;
      }
      Key prev = 0;
      for (uint64_t r = 0; r < count; ++r) {
        Key k = 0;
        const char* value = nullptr;
        if (!c.Get(&k) || !c.Skip(value_size, &value) || KeyTable(k) != id || (r > 0 && k <= prev)) {
          *why = absl::StrCat("bad record ", r, " of table ", id, " at offset ", c.offset());
          return false;
        }
        prev = k;
        record(k, value, value_size);
      }
    }
  }
  if (version >= 2) {  // the client state section: bounded by the file before it is copied
    uint64_t length = 0;
    const char* at = nullptr;
    const size_t offset = c.offset();
    if (!c.Get(&length) || !c.Skip(length, &at)) {
      *why = absl::StrCat("client state section at offset ", offset, " cut short (length ", length, ", ",
                          content.size() - offset, " bytes left)");
      return false;
    }
    if (client_state != nullptr) client_state->assign(at, length);
  }
  if (!c.done()) {
    *why = absl::StrCat("trailing bytes at offset ", c.offset());
    return false;
  }
  return true;
}

}  // namespace

std::string CheckpointName(uint64_t epoch) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%s%020lu%s", kPrefix, static_cast<unsigned long>(epoch), kSuffix);
  return buf;
}

std::optional<uint64_t> ParseCheckpointName(std::string_view name) {
  const size_t p = sizeof(kPrefix) - 1, s = sizeof(kSuffix) - 1;
  if (name.size() != p + 20 + s || name.substr(0, p) != kPrefix || name.substr(p + 20) != kSuffix) return std::nullopt;
  uint64_t e = 0;
  for (char ch : name.substr(p, 20)) {
    if (ch < '0' || ch > '9') return std::nullopt;
    e = e * 10 + static_cast<uint64_t>(ch - '0');
  }
  return e;
}

std::string CheckpointTempPath(const CheckpointOptions& options, uint64_t epoch) {
  static std::atomic<uint64_t> sequence{0};
  const uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());
  return JoinPath(options.dir, absl::StrCat(CheckpointName(epoch), ".", getpid(), "-", sequence.fetch_add(1) + 1, "-",
                                            absl::Hex(ns), kTmpSuffix));
}

bool IsCheckpointTempName(std::string_view name) {
  const size_t base = CheckpointName(0).size(), t = sizeof(kTmpSuffix) - 1;
  if (name.size() < base + t || !ParseCheckpointName(name.substr(0, base)) ||
      name.substr(name.size() - t) != kTmpSuffix)
    return false;
  const std::string_view nonce = name.substr(base, name.size() - t - base);  // "" or ".<pid>-<seq>-<hex>"
  if (nonce.empty()) return true;
  if (nonce.size() < 2 || nonce[0] != '.') return false;
  for (char ch : nonce.substr(1))
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || ch == '-')) return false;
  return true;
}

absl::Status PublishCheckpoint(const CheckpointOptions& options, const std::string& tmp_path, uint64_t epoch) {
  FileSystem* fs = FsOf(options);
  if (absl::Status s = fs->Rename(tmp_path, JoinPath(options.dir, CheckpointName(epoch))); !s.ok()) return s;
  if (options.crash_hook && options.crash_hook("ckpt_renamed"))
    return absl::AbortedError("checkpoint stopped at a crash point");
  if (absl::Status s = fs->SyncDir(options.dir); !s.ok()) return s;
  if (options.crash_hook && options.crash_hook("ckpt_published"))
    return absl::AbortedError("checkpoint stopped at a crash point");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> ListCheckpoints(const CheckpointOptions& options) {
  std::vector<uint64_t> out;
  auto names = FsOf(options)->ListDir(options.dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return out;
    return names.status();
  }
  for (const std::string& n : *names)
    if (auto e = ParseCheckpointName(n)) out.push_back(*e);
  std::sort(out.rbegin(), out.rend());
  return out;
}

absl::StatusOr<std::vector<uint64_t>> PruneCheckpoints(const CheckpointOptions& options,
                                                       const std::optional<std::vector<uint64_t>>& keep,
                                                       const std::function<bool(std::string_view tmp_name)>& in_flight) {
  FileSystem* fs = FsOf(options);
  auto epochs = ListCheckpoints(options);
  if (!epochs.ok()) return epochs.status();
  const size_t newest = std::max<uint32_t>(options.keep, 1);
  std::vector<uint64_t> kept;
  bool removed = false;
  for (size_t i = 0; i < epochs->size(); ++i) {
    const uint64_t e = (*epochs)[i];
    if (keep.has_value() ? std::find(keep->begin(), keep->end(), e) != keep->end() : i < newest) {
      kept.push_back(e);
      continue;
    }
    if (absl::Status s = fs->Remove(JoinPath(options.dir, CheckpointName(e))); !s.ok()) return s;
    removed = true;
  }
  // Temp files of attempts that never published (a crash, an error), not
  // those being written (in_flight is asked after the listing; one that
  // finished since is gone: NotFound).
  auto names = fs->ListDir(options.dir);
  if (!names.ok()) return names.status();
  for (const std::string& n : *names) {
    if (IsCheckpointTempName(n) && !(in_flight && in_flight(n))) {
      absl::Status s = fs->Remove(JoinPath(options.dir, n));
      if (!s.ok() && !absl::IsNotFound(s)) return s;
      removed = removed || s.ok();
    }
  }
  if (removed) {
    if (absl::Status s = fs->SyncDir(options.dir); !s.ok()) return s;
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

absl::Status QuarantineCheckpoints(const CheckpointOptions& options, const std::vector<uint64_t>& epochs) {
  if (epochs.empty()) return absl::OkStatus();
  FileSystem* fs = FsOf(options);
  for (uint64_t e : epochs) {
    const std::string path = JoinPath(options.dir, CheckpointName(e));
    if (absl::Status s = fs->Rename(path, path + kQuarantineSuffix); !s.ok()) return s;
  }
  return fs->SyncDir(options.dir);
}

absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const CheckpointOptions& options, uint64_t epoch) {
  LoadedCheckpoint out;
  out.path = JoinPath(options.dir, CheckpointName(epoch));
  auto bytes = FsOf(options)->ReadFile(out.path, options.max_bytes);
  if (!bytes.ok()) return bytes.status();
  out.bytes = std::move(*bytes);
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", out.path, ": ", why));
  };
  if (out.bytes.size() < kHeaderFixedBytes + kCheckpointTrailerBytes)
    return bad(absl::StrCat("truncated (", out.bytes.size(), " bytes)"));
  const size_t content = out.bytes.size() - kCheckpointTrailerBytes;
  uint64_t length = 0;
  uint32_t stored = 0;
  std::memcpy(&length, out.bytes.data() + content, 8);
  std::memcpy(&stored, out.bytes.data() + content + 8, 4);
  if (length != content)
    return bad(absl::StrCat("length ", length, " in the trailer, ", content, " bytes of content: truncated or damaged"));
  const uint32_t crc = Crc32c(out.bytes.data(), content);
  if (crc != stored) return bad(absl::StrCat("CRC mismatch (stored ", stored, ", computed ", crc, ")"));
  std::string why;
  if (!WalkContent(std::string_view(out.bytes.data(), content), &out.meta, &out.client_state, &why,
                   [](PartitionId, uint32_t, uint32_t, uint64_t) { return true; },
                   [](Key, const char*, uint32_t) {}))
    return bad(why);
  if (out.meta.epoch != epoch) return bad(absl::StrCat("holds epoch ", out.meta.epoch, ", its name says ", epoch));
  return out;
}

absl::Status RestoreCheckpoint(const LoadedCheckpoint& checkpoint, const std::vector<PartitionStore*>& stores) {
  std::vector<PartitionId> local;
  for (PartitionId p = 0; p < stores.size(); ++p)
    if (stores[p] != nullptr) local.push_back(p);
  if (local != checkpoint.meta.partitions)
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", checkpoint.path, " holds other partitions than this node serves"));
  const std::string_view content(checkpoint.bytes.data(), checkpoint.bytes.size() - kCheckpointTrailerBytes);
  // The schema first, before anything is emptied: a checkpoint of tables
  // this build does not have, has with another row size (an older build's
  // layout), or lacks, is refused with the reason, and the stores stay as
  // they were.
  {
    std::vector<std::vector<uint32_t>> seen(stores.size());
    CheckpointMeta schema_meta;
    std::string why, mismatch;
    const bool ok = WalkContent(
        content, &schema_meta, nullptr, &why,
        [&](PartitionId p, uint32_t id, uint32_t value_size, uint64_t) {
          const Table* t = p < stores.size() && stores[p] != nullptr ? stores[p]->GetTable(id) : nullptr;
          if (t == nullptr) {
            mismatch = absl::StrCat("table ", id, " of partition ", p, " is not in this build's schema");
          } else if (t->value_size() != value_size) {
            mismatch = absl::StrCat("table ", id, " (", t->name(), ") of partition ", p, " has ", value_size,
                                    "-byte rows in the checkpoint and ", t->value_size(),
                                    "-byte rows in this build (a checkpoint of another build's schema)");
          } else {
            seen[p].push_back(id);
          }
          return mismatch.empty();
        },
        [](Key, const char*, uint32_t) {});
    if (!mismatch.empty())
      return absl::FailedPreconditionError(absl::StrCat("checkpoint ", checkpoint.path, ": ", mismatch));
    if (!ok) return absl::DataLossError(absl::StrCat("checkpoint ", checkpoint.path, ": ", why));
    for (PartitionId p : local)
      if (seen[p] != stores[p]->table_ids())
        return absl::FailedPreconditionError(absl::StrCat("checkpoint ", checkpoint.path, ": partition ", p,
                                                          " has tables the checkpoint does not hold"));
  }
  // Empty every table first (the tables themselves, their schema, stay).
  for (PartitionId p : local) {
    PartitionStore* s = stores[p];
    for (uint32_t id : s->table_ids()) {
      std::vector<Key> keys;
      s->GetTable(id)->ForEachInKeyOrder([&](const Record& r) { keys.push_back(r.key); });
      for (Key k : keys) s->Erase(k);
    }
    s->ReclaimErased();
  }
  // Then the rows (the walk above checked every table header).
  PartitionStore* cur = nullptr;
  CheckpointMeta meta;
  std::string why;
  const bool ok = WalkContent(
      content, &meta, nullptr, &why,
      [&](PartitionId p, uint32_t, uint32_t, uint64_t) {
        cur = stores[p];
        return true;
      },
      [&](Key k, const char* value, uint32_t value_size) {
        Record* r = cur->Insert(k);
        std::memcpy(r->value(), value, value_size);
      });
  if (!ok) return absl::DataLossError(absl::StrCat("checkpoint ", checkpoint.path, ": ", why));
  return absl::OkStatus();
}

}  // namespace detdb
