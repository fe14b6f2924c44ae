#include "storage/partition_store.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "xxhash.h"

namespace detdb {

namespace {

// Buffers the digest's byte stream and feeds XXH3 in large pieces.
class DigestWriter {
 public:
  DigestWriter() : state_(XXH3_createState()) {
    CHECK(state_ != nullptr);
    CHECK_EQ(XXH3_64bits_reset(state_), XXH_OK);
    buf_.reserve(kFlushBytes + 64);
  }
  ~DigestWriter() { XXH3_freeState(state_); }
  DigestWriter(const DigestWriter&) = delete;
  DigestWriter& operator=(const DigestWriter&) = delete;

  void PutU32(uint32_t v) { PutLittleEndian(v, 4); }
  void PutU64(uint64_t v) { PutLittleEndian(v, 8); }
  void PutBytes(const char* p, size_t n) {
    if (buf_.size() + n > kFlushBytes) {
      Flush();
      if (n > kFlushBytes) {
        CHECK_EQ(XXH3_64bits_update(state_, p, n), XXH_OK);
        return;
      }
    }
    buf_.append(p, n);
  }

  uint64_t Finish() {
    Flush();
    return XXH3_64bits_digest(state_);
  }

 private:
  static constexpr size_t kFlushBytes = 64 << 10;

  void PutLittleEndian(uint64_t v, int bytes) {
    char b[8];
    for (int i = 0; i < bytes; ++i) b[i] = static_cast<char>(v >> (8 * i));
    PutBytes(b, bytes);
  }
  void Flush() {
    if (buf_.empty()) return;
    CHECK_EQ(XXH3_64bits_update(state_, buf_.data(), buf_.size()), XXH_OK);
    buf_.clear();
  }

  XXH3_state_t* const state_;
  std::string buf_;
};

}  // namespace

absl::StatusOr<Table*> PartitionStore::CreateTable(const TableOptions& options) {
  if (absl::Status s = Table::ValidateOptions(options); !s.ok()) return s;
  if (tables_[options.id] != nullptr)
    return absl::AlreadyExistsError(absl::StrCat("table ", options.id, " already exists (as '",
                                                 tables_[options.id]->name(), "'; creating '",
                                                 options.name, "')"));
  tables_[options.id] = std::make_unique<Table>(options);
  return tables_[options.id].get();
}

std::vector<uint32_t> PartitionStore::table_ids() const {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < tables_.size(); ++id)
    if (tables_[id] != nullptr) ids.push_back(id);
  return ids;
}

size_t PartitionStore::ReclaimErased() {
  size_t n = 0;
  for (auto& t : tables_)
    if (t != nullptr) n += t->ReclaimErased();
  return n;
}

size_t PartitionStore::ReclaimSafe(EpochParticipant* self) {
  std::unique_lock<std::mutex> l(reclaim_mu_, std::try_to_lock);
  if (!l.owns_lock()) return 0;
  // Only this function advances the epoch, one call at a time: the next
  // epoch is known before the tables are sealed with it.
  const uint64_t label = epochs_.epoch() + 1;
  bool sealed = false;
  for (auto& t : tables_)
    if (t != nullptr) sealed |= t->SealRetired(label);
  if (sealed) {
    // After the sealing: a participant that announces `label` has read the
    // epoch after everything in the batches was unlinked.
    const uint64_t e = epochs_.Advance();
    CHECK_EQ(e, label) << "the epoch is advanced only by ReclaimSafe";
    has_sealed_ = true;
  }
  if (!has_sealed_ || free_holds_.load(std::memory_order_acquire) > 0) return 0;
  if (self != nullptr) self->Quiescent();
  const uint64_t safe = epochs_.SafeEpoch();
  size_t n = 0;
  bool left = false;
  for (auto& t : tables_) {
    if (t == nullptr) continue;
    n += t->FreeSealed(safe);
    left |= t->has_sealed();
  }
  has_sealed_ = left;
  return n;
}

absl::StatusOr<uint64_t> PartitionStore::Truncate(uint32_t table) {
  Table* t = GetTable(table);
  if (t == nullptr) return absl::NotFoundError(absl::StrCat("no table ", table));
  return t->Clear();
}

absl::Status PartitionStore::BulkLoad(uint32_t table, const std::vector<std::pair<Key, std::string_view>>& rows) {
  Table* t = GetTable(table);
  if (t == nullptr) return absl::NotFoundError(absl::StrCat("no table ", table));
  for (const auto& [k, v] : rows) {
    if (KeyTable(k) != table)
      return absl::InvalidArgumentError(absl::StrCat("key ", k, " is not of table ", table));
    if (v.size() != t->value_size())
      return absl::InvalidArgumentError(absl::StrCat("a value of ", v.size(), " bytes for table ", table,
                                                     " (records of ", t->value_size(), " bytes)"));
  }
  t->Reserve(t->size() + rows.size());
  for (const auto& [k, v] : rows) std::memcpy(t->Insert(k)->value(), v.data(), v.size());
  return absl::OkStatus();
}

uint64_t PartitionStore::Digest() const {
  DigestWriter w;
  for (const auto& t : tables_) {
    if (t == nullptr) continue;
    w.PutU32(t->id());
    w.PutU32(t->value_size());
    w.PutU64(t->size());
    const size_t value_size = t->value_size();
    t->ForEachInKeyOrder([&](const Record& r) {
      w.PutU64(r.key);
      w.PutBytes(r.value(), value_size);
    });
  }
  return w.Finish();
}

uint64_t PartitionStore::size() const {
  uint64_t n = 0;
  for (const auto& t : tables_)
    if (t != nullptr) n += t->size();
  return n;
}

size_t PartitionStore::memory_bytes() const {
  size_t bytes = sizeof(*this);
  for (const auto& t : tables_)
    if (t != nullptr) bytes += t->memory_bytes();
  return bytes;
}

}  // namespace detdb
