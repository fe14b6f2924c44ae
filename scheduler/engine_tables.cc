// Engine: whole-table operations. Reads while txns run (a scan under S
// intent locks); the check of the whole-table writes (truncate, bulk load)
// before they are sequenced like txns (pb::Txn::table_op, run by
// TxnExecutor::RunTableOp). Split from engine.cc for size; engine.h
// documents the class.
#include <algorithm>
#include <charconv>
#include <thread>

#include "absl/strings/str_cat.h"
#include "scheduler/engine.h"

namespace detdb {

absl::Status Engine::ValidateTableOp(const pb::Txn& txn, bool from_peer) const {
  if (!options_.allow_table_ops && !from_peer)  // a peer applied its own node's policy
    return absl::InvalidArgumentError("table operations are not allowed on this node (--allow_table_ops)");
  const pb::TableOp& op = txn.table_op();
  if (txn.type() != 0 || !txn.args().empty() || txn.read_set_size() > 0 || txn.write_set_size() > 0)
    return absl::InvalidArgumentError("a table operation has no type, arguments, read or write set");
  const Table* t = schema()->GetTable(op.table());
  if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("table operation on unknown table ", op.table()));
  if (op.kind() == pb::TableOp::TRUNCATE) {
    if (op.rows_size() > 0) return absl::InvalidArgumentError("a truncate has no rows");
    return absl::OkStatus();
  }
  if (op.kind() != pb::TableOp::BULK_LOAD)
    return absl::InvalidArgumentError(absl::StrCat("unknown table operation ", static_cast<int>(op.kind())));
  if (static_cast<size_t>(op.rows_size()) > options_.max_keys_per_txn)
    return absl::InvalidArgumentError(
        absl::StrCat("bulk load of ", op.rows_size(), " rows; the limit is ", options_.max_keys_per_txn));
  if (op.ByteSizeLong() > options_.max_args_bytes)
    return absl::InvalidArgumentError(
        absl::StrCat("bulk load of ", op.ByteSizeLong(), " bytes; the limit is ", options_.max_args_bytes));
  for (const pb::KeyValue& kv : op.rows()) {
    if (KeyTable(kv.key()) != op.table())
      return absl::InvalidArgumentError(absl::StrCat("bulk load row key ", kv.key(), " is not of table ", op.table()));
    if (kv.value().size() != t->value_size())
      return absl::InvalidArgumentError(absl::StrCat("bulk load row of ", kv.value().size(), " bytes; table ",
                                                     op.table(), " has records of ", t->value_size()));
    if (partitioner_->PartitionOf(kv.key()) >= stores_.size())
      return absl::InvalidArgumentError(absl::StrCat("key ", kv.key(), " is outside every partition"));
    if (options_.key_check) {
      absl::Status s = options_.key_check(kv.key());
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::WaitApplied(PartitionId p, uint64_t epoch, std::chrono::steady_clock::time_point deadline) {
  if (p >= schedulers_.size() || schedulers_[p] == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("partition ", p, " is not on this node"));
  // A client names the epoch of a result it holds: at most the window
  // ahead of what this node merged (peers' batches beyond it are refused
  // too). Beyond it the wait could only run out (and hold the node's admin
  // thread meanwhile).
  const uint64_t window = PeerWindowEpochs(options_);
  if (epoch >= EpochBatcher::kMaxEpoch || epoch > merged_epoch() + window)
    return absl::InvalidArgumentError(absl::StrCat("scan after epoch ", epoch, ": beyond this node's epochs (merged ",
                                                   merged_epoch(), ", window ", window, ")"));
  Scheduler* s = schedulers_[p].get();
  auto gone = [&]() -> absl::Status {
    if (log_failed()) return absl::UnavailableError("the input log failed: this node answers nothing more");
    if (!accepting_.load(std::memory_order_acquire)) return absl::UnavailableError("the node is not running");
    return absl::OkStatus();
  };
  for (;;) {
    if (absl::Status g = gone(); !g.ok()) return g;
    // Hold at a boundary past `epoch` the partition has not merged into
    // yet; once it is there and idle, every txn below it has run.
    const uint64_t at = std::max(epoch + 1, s->merged_epoch() + 1);
    if (s->HoldAt(at)) {
      absl::Status st = absl::OkStatus();
      while (!(s->merged_epoch() >= at && s->Idle())) {
        if (st = gone(); !st.ok()) break;
        if (std::chrono::steady_clock::now() >= deadline) {
          st = absl::DeadlineExceededError(absl::StrCat("partition ", p, " has not run every txn of epoch ", epoch,
                                                        " (merged below ", s->merged_epoch(), ")"));
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      s->ReleaseHold(at);
      return st;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return absl::DeadlineExceededError(absl::StrCat("partition ", p, " kept merging past every boundary asked"));
  }
}

absl::StatusOr<Engine::TableScan> Engine::ScanTable(std::string_view table, uint64_t from_row, size_t limit,
                                                    std::chrono::milliseconds timeout, uint64_t after_epoch) {
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
    if (after_epoch > 0) {
      absl::Status s = WaitApplied(p, after_epoch, deadline);
      if (!s.ok()) return s;
    }
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
