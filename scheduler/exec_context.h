// TxnExecutor::ExecContext: the TxnContext a stored procedure runs against
// at one partition (scheduler/procedure.h has the contract). Reads come from
// the txn's read entries (local records and remote reads), or from the store
// for keys a declared key covers; writes are buffered in the PartitionTxn
// (their values on the run's value arena) and applied by TxnExecutor::Run after the
// procedure, except an Update of a declared local record, which changes the
// record in place and keeps an undo image (docs/ENGINE.md, "In-place
// Update"). Internal to the scheduler library: only partition_txn.cc and
// exec_context.cc include this header.
//
// Thread-safety: one per running procedure, used by the worker running it.
// REQUIRES: the txn holds every local lock it declared, and the procedure's
// views (Read, Update, Scan) are used only until the procedure returns.
#ifndef DETDB_SCHEDULER_EXEC_CONTEXT_H_
#define DETDB_SCHEDULER_EXEC_CONTEXT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "scheduler/partition_txn.h"
#include "scheduler/procedure.h"

namespace detdb {

class TxnExecutor::ExecContext final : public TxnContext {
 public:
  // values: where buffered values and undo copies go (see TxnExecutor::Run).
  ExecContext(PartitionTxn* st, ByteArena* values, PartitionStore* store, KeyCover cover, RangeCover range_cover,
              const Partitioner* partitioner, PartitionId self, IntentAgent* agent)
      : st_(st),
        values_(values),
        store_(store),
        cover_(cover),
        range_cover_(range_cover),
        partitioner_(partitioner),
        self_(self),
        agent_(agent) {}

  // TxnContext (scheduler/procedure.h).
  const pb::Txn& txn() const override { return *st_->txn; }
  absl::StatusOr<std::string_view> Read(Key key) override;
  absl::Status Write(Key key, std::string_view value) override;
  absl::Status Delete(Key key) override;
  absl::StatusOr<absl::Span<char>> Update(Key key) override;
  void Prefetch(std::span<const Key> keys) override;
  absl::StatusOr<std::string_view> ReadReplicated(Key key) override;
  absl::Status Scan(Key lo, Key hi, bool reverse,
                    absl::FunctionRef<bool(Key key, std::string_view value)> visit) override;

  // Puts back the stored values that in-place Updates changed (the
  // procedure failed: none of its writes may be applied). Procedures do
  // not throw: an exception out of one ends the process (nothing on the
  // worker's path catches it), so there is no unwinding to roll back on.
  void Rollback();

 private:
  using BufferedWrite = PartitionTxn::BufferedWrite;

  // The stored value of key (a covered or replicated key, outside the
  // txn's read entries), after IS intents on the partition and its table.
  absl::StatusOr<std::string_view> StoredValue(Key key);

  const PartitionTxn::Value* FindRead(Key key) const {
    if (st_->indexed) {
      auto it = std::lower_bound(st_->reads.begin(), st_->reads.end(), key,
                                 [](const PartitionTxn::Value& a, Key k) { return a.key < k; });
      return it != st_->reads.end() && it->key == key ? &*it : nullptr;
    }
    for (const PartitionTxn::Value& x : st_->reads)
      if (x.key == key) return &x;
    return nullptr;
  }
  // The txn's own read entry behind v (a pointer FindRead gave).
  PartitionTxn::Value* MutableRead(const PartitionTxn::Value* v) {
    return &st_->reads[static_cast<size_t>(v - st_->reads.data())];
  }
  bool DeclaredWrite(Key key) const {
    const auto& ws = st_->txn->write_set();
    return st_->indexed ? std::binary_search(st_->declared_writes.begin(), st_->declared_writes.end(), key)
                        : std::find(ws.begin(), ws.end(), key) != ws.end();
  }
  // Whether key is covered by a key the txn locked (for reading: in the read
  // or write set; for writing: in the write set).
  bool Covered(Key key, bool for_write) const {
    if (cover_ == nullptr) return false;
    const Key c = cover_(key);
    if (c == key) return false;
    return DeclaredWriteCover(c) || (!for_write && FindRead(c) != nullptr);
  }
  // DeclaredWrite of a cover, remembering the last one found: a txn's
  // covered writes mostly share one cover (New-Order's order rows).
  bool DeclaredWriteCover(Key c) const {
    if (has_write_cover_ && c == write_cover_) return true;
    if (!DeclaredWrite(c)) return false;
    has_write_cover_ = true;
    write_cover_ = c;
    return true;
  }
  absl::Status CheckWrite(Key key) const {
    // The cover first: covered keys are rarely declared themselves.
    if (Covered(key, /*for_write=*/true) || DeclaredWrite(key)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's write set"));
  }
  static uint64_t WriteBit(Key key) { return uint64_t{1} << ((key * 0x9E3779B97F4A7C15ull) >> 58); }
  BufferedWrite* FindWrite(Key key) {
    if ((st_->write_filter & WriteBit(key)) == 0) return nullptr;
    if (st_->indexed) {
      auto it = st_->write_index.find(key);
      return it == st_->write_index.end() ? nullptr : &st_->writes[it->second];
    }
    for (BufferedWrite& w : st_->writes)
      if (w.key == key) return &w;
    return nullptr;
  }
  BufferedWrite& Buffer(Key key) {
    if (BufferedWrite* w = FindWrite(key)) return *w;
    return NewWrite(key);
  }
  // REQUIRES: FindWrite(key) == nullptr.
  BufferedWrite& NewWrite(Key key) {
    st_->write_filter |= WriteBit(key);
    if (st_->indexed) st_->write_index.emplace(key, static_cast<uint32_t>(st_->writes.size()));
    st_->writes.push_back(BufferedWrite{key, nullptr, 0, false, nullptr});
    return st_->writes.back();
  }

  PartitionTxn* const st_;
  ByteArena* const values_;
  PartitionStore* const store_;
  const KeyCover cover_;
  const RangeCover range_cover_;
  const Partitioner* const partitioner_;
  const PartitionId self_;
  IntentAgent* const agent_;
  mutable bool has_write_cover_ = false;
  mutable Key write_cover_ = 0;
  int scan_depth_ = 0;             // Scans whose visits run now (nested ones too): no Write or Delete
  uint64_t replicated_views_ = 0;  // WriteBit of every key ReadReplicated gave a view of
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_EXEC_CONTEXT_H_
