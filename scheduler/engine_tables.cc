// Engine: whole-table reads while txns run (a scan under S intent locks).
// The whole-table writes (truncate, bulk load) are txns in the order
// (pb::Txn::table_op; TxnExecutor::RunTableOp). Split from engine.cc for
// size; engine.h documents the class.
#include <algorithm>
#include <charconv>

#include "absl/strings/str_cat.h"
#include "scheduler/engine.h"

namespace detdb {

absl::StatusOr<Engine::TableScan> Engine::ScanTable(std::string_view table, uint64_t from_row, size_t limit,
                                                    std::chrono::milliseconds timeout) {
  const PartitionStore* schema_store = schema();
  const Table* schema_table = nullptr;
  uint32_t id = 0;
  if (auto [end, ec] = std::from_chars(table.data(), table.data() + table.size(), id);
      ec == std::errc() && end == table.data() + table.size() && !table.empty() && id <= Table::kMaxTableId)
    schema_table = schema_store->GetTable(id);
  for (uint32_t t : schema_store->table_ids())
    if (schema_table == nullptr && schema_store->GetTable(t)->name() == table) schema_table = schema_store->GetTable(t);
  if (schema_table == nullptr) return absl::NotFoundError(absl::StrCat("no table '", std::string(table), "'"));
  TableScan out;
  out.table = schema_table->id();
  out.name = schema_table->name();
  out.value_size = schema_table->value_size();
  const Key from = MakeKey(out.table, std::min(from_row, kRowMask));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (PartitionId p : local_) {
    PartitionStore* store = stores_[p].get();
    const Table* t = store->GetTable(out.table);
    const std::unique_ptr<IntentAgent> locks = store->intents().NewAgent();
    absl::Status s = locks->AcquireUntil(IntentLockTable::kPartitionLock, IntentMode::kIS, deadline);
    if (s.ok()) s = locks->AcquireUntil(IntentLockTable::TableLock(out.table), IntentMode::kS, deadline);
    if (!s.ok())
      return absl::DeadlineExceededError(absl::StrCat("scan of table ", out.name, ": partition ", p,
                                                      " kept writing it for ", timeout.count(), " ms"));
    // A reader of the store while workers run: a participant of its epochs
    // (under S nothing of this table is retired meanwhile anyway).
    EpochParticipant reader(&store->epochs());
    t->ForFirstInKeyOrder(from, limit + 1, [&](const Record& r) {
      out.rows.push_back({p, r.key, std::string(r.value(), out.value_size)});
    });
    locks->EndTxn();
  }
  std::sort(out.rows.begin(), out.rows.end(), [](const ScanRow& a, const ScanRow& b) { return a.key < b.key; });
  if (out.rows.size() > limit) {
    out.more = true;
    out.rows.resize(limit);
  }
  return out;
}

}  // namespace detdb
