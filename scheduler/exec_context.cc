#include "scheduler/exec_context.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {
namespace {

// IS on the partition and on key's table, for a read the step's
// AcquireIntents did not cover (a covered or replicated key).
void IntentToRead(IntentAgent* agent, Key key) {
  agent->Acquire(IntentLockTable::kPartitionLock, IntentMode::kIS);
  agent->Acquire(IntentLockTable::TableLock(KeyTable(key)), IntentMode::kIS);
}

}  // namespace

absl::StatusOr<std::string_view> TxnExecutor::ExecContext::Read(Key key) {
  if (const PartitionTxn::Value* v = FindRead(key)) {
    if (!v->found) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    MutableRead(v)->viewed = true;
    return v->view();
  }
  if (Covered(key, /*for_write=*/false)) {
    if (const BufferedWrite* w = FindWrite(key)) {
      if (w->erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      return std::string_view(w->value, w->size);
    }
    if (partitioner_->PartitionOf(key) != self_)
      return absl::FailedPreconditionError(absl::StrCat("covered key ", key, " is not on this partition"));
    return StoredValue(key);
  }
  return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
}

absl::Status TxnExecutor::ExecContext::Write(Key key, std::string_view value) {
  absl::Status s = CheckWrite(key);
  if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
  if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, &value);
  if (!s.ok()) return s;
  store_->Prefetch(key);  // its bucket, for applying the write after the procedure
  BufferedWrite& w = Buffer(key);
  if (w.value == nullptr || w.size != value.size()) {
    w.value = values_->Allocate(value.size());
    w.size = static_cast<uint32_t>(value.size());
  }
  std::memmove(w.value, value.data(), value.size());  // value may be a view of w.value
  w.erase = false;
  return absl::OkStatus();
}

absl::Status TxnExecutor::ExecContext::Delete(Key key) {
  absl::Status s = CheckWrite(key);
  if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
  if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, nullptr);
  if (!s.ok()) return s;
  BufferedWrite& w = Buffer(key);
  w.erase = true;
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<char>> TxnExecutor::ExecContext::Update(Key key) {
  // Read's checks first, then Write's, as a Read and a Write would fail.
  const PartitionTxn::Value* v = FindRead(key);
  if (v == nullptr && !Covered(key, /*for_write=*/false))
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
  if (BufferedWrite* w = FindWrite(key)) {  // written before: go on from there
    if (scan_depth_ > 0) return WriteInScan();
    if (w->erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    return absl::Span<char>(w->value, w->size);
  }
  // The txn's view of the key, as Read sees it, and its record if local.
  std::string_view value;
  Record* record = nullptr;
  if (v != nullptr) {
    if (!v->found) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    value = v->view();
    record = v->record;
  } else {  // a covered key
    absl::StatusOr<std::string_view> r = Read(key);
    if (!r.ok()) return r.status();
    value = *r;
    // Read found it in this partition's store; the cover's lock keeps the
    // record in place until release.
    record = store_->Get(key);
  }
  // CheckWrite, declared keys first (an Update's usually are).
  const bool declared = DeclaredWrite(key);
  absl::Status s = declared ? absl::OkStatus() : CheckWrite(key);
  if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
  if (s.ok()) s = CheckWriteTarget(store_->GetTable(KeyTable(key)), key, &value);
  if (!s.ok()) return s;
  if (record == nullptr) store_->Prefetch(key);  // its bucket, for the apply (as Write)
  BufferedWrite& w = NewWrite(key);
  w.size = static_cast<uint32_t>(value.size());
  w.record = record;
  // Not if the procedure holds a view of the stored value (Read's, or
  // ReadReplicated's: the engine does not know which tables no txn
  // writes). A Scan's views need no such care: it visits covered keys
  // only, and a covered key is never declared (Engine::Validate; the
  // DCHECK in Scan).
  if (declared && v != nullptr && record != nullptr && !v->viewed && (replicated_views_ & WriteBit(key)) == 0) {
    // In place (see PartitionTxn::BufferedWrite): the stored value moves
    // to a copy, which the txn's read of the key now views (Read of a
    // declared key sees the stored value) and Rollback puts back.
    char* undo = values_->Allocate(value.size());
    std::memcpy(undo, value.data(), value.size());
    MutableRead(v)->data = undo;
    w.value = record->value();
  } else {
    w.value = values_->Allocate(value.size());
    std::memcpy(w.value, value.data(), value.size());
  }
  return absl::Span<char>(w.value, w.size);
}

void TxnExecutor::ExecContext::Rollback() {
  for (const BufferedWrite& w : st_->writes) {
    if (!w.in_place()) continue;
    const PartitionTxn::Value* v = FindRead(w.key);
    DCHECK(v != nullptr && v->record == w.record) << "an in-place write of key " << w.key << " has no read";
    std::memcpy(w.record->value(), v->data, w.size);
  }
}

void TxnExecutor::ExecContext::Prefetch(std::span<const Key> keys) {
  for (Key k : keys) store_->Prefetch(k);        // every bucket at once,
  for (Key k : keys) store_->PrefetchRecord(k);  // then every first record
}

absl::StatusOr<std::string_view> TxnExecutor::ExecContext::ReadReplicated(Key key) {
  replicated_views_ |= WriteBit(key);  // no in-place Update of it (BufferedWrite::in_place)
  return StoredValue(key);
}

absl::StatusOr<std::string_view> TxnExecutor::ExecContext::StoredValue(Key key) {
  IntentToRead(agent_, key);
  const Record* r = store_->Get(key);
  if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
  return std::string_view(r->value(), store_->GetTable(KeyTable(key))->value_size());
}

absl::Status TxnExecutor::ExecContext::Scan(Key lo, Key hi, bool reverse,
                                            absl::FunctionRef<bool(Key key, std::string_view value)> visit) {
  const Table* table = store_->GetTable(KeyTable(lo));
  Key cover;
  absl::Status s = CheckScanRange(range_cover_, table, lo, hi, &cover);
  if (!s.ok()) return s;
  if (!DeclaredWrite(cover) && FindRead(cover) == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("scan of [", lo, ", ", hi, "]: its cover ", cover, " is not in the txn's read or write set"));
  // Covered keys live on their cover's partition; another executor of a
  // multi-partition txn has no copy (see Read).
  if (partitioner_->PartitionOf(lo) != self_)
    return absl::FailedPreconditionError(absl::StrCat("scanned range [", lo, ", ", hi, "] is not on this partition"));
  IntentToRead(agent_, lo);  // IS on the partition and the table, as a covered read takes
  std::vector<OwnWrite> own;
  for (const BufferedWrite& w : st_->writes)
    if (w.key >= lo && w.key <= hi) own.push_back(OwnWrite{w.key, std::string_view(w.value, w.size), w.erase});
  ++scan_depth_;  // a depth: a visit may scan again
  // Every visited key is covered by `cover` (the RangeCover's promise), so none
  // is declared or updated in place (see Update). Checked in debug builds only.
  if (DCHECK_IS_ON()) {
    auto checked = [&](Key k, std::string_view value) {
      CHECK(cover_ != nullptr && cover_(k) == cover && k != cover)
          << "scan of [" << lo << ", " << hi << "] visits key " << k << ", which its cover " << cover
          << " does not cover (the workload's RangeCover and KeyCover disagree)";
      return visit(k, value);
    };
    ScanWithOwnWrites(*table, lo, hi, reverse, &own, checked);
  } else {
    ScanWithOwnWrites(*table, lo, hi, reverse, &own, visit);
  }
  --scan_depth_;
  return absl::OkStatus();
}

}  // namespace detdb
