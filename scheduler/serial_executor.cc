#include "scheduler/serial_executor.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {
namespace {

class SerialContext final : public TxnContext {
 public:
  SerialContext(const pb::Txn& txn, const Partitioner* partitioner, KeyCover cover, RangeCover range_cover,
                const std::vector<PartitionStore*>& stores)
      : txn_(txn), partitioner_(partitioner), cover_(cover), range_cover_(range_cover), stores_(stores) {
    reads_.assign(txn.read_set().begin(), txn.read_set().end());
    std::sort(reads_.begin(), reads_.end());
    declared_writes_.assign(txn.write_set().begin(), txn.write_set().end());
    std::sort(declared_writes_.begin(), declared_writes_.end());
  }

  const pb::Txn& txn() const override { return txn_; }

  absl::StatusOr<std::string_view> Read(Key key) override {
    if (std::binary_search(reads_.begin(), reads_.end(), key)) return StoreValue(key);
    if (Covered(key, /*for_write=*/false)) {
      auto it = write_index_.find(key);
      if (it != write_index_.end()) {
        if (writes_[it->second].erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
        return std::string_view(writes_[it->second].value);
      }
      return StoreValue(key);
    }
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
  }

  absl::Status Write(Key key, std::string_view value) override {
    absl::Status s = CheckWrite(key);
    if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
    if (s.ok()) s = CheckWriteTarget(stores_[partitioner_->PartitionOf(key)]->GetTable(KeyTable(key)), key, &value);
    if (!s.ok()) return s;
    BufferedWrite& w = Buffer(key);
    w.value.assign(value.data(), value.size());
    w.erase = false;
    return absl::OkStatus();
  }

  absl::Status Delete(Key key) override {
    absl::Status s = CheckWrite(key);
    if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
    if (s.ok()) s = CheckWriteTarget(stores_[partitioner_->PartitionOf(key)]->GetTable(KeyTable(key)), key, nullptr);
    if (!s.ok()) return s;
    BufferedWrite& w = Buffer(key);
    w.value.clear();
    w.erase = true;
    return absl::OkStatus();
  }

  absl::StatusOr<absl::Span<char>> Update(Key key) override {
    // Read's checks first, then Write's, as a Read and a Write would fail.
    const bool declared_read = std::binary_search(reads_.begin(), reads_.end(), key);
    if (!declared_read && !Covered(key, /*for_write=*/false))
      return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
    if (auto it = write_index_.find(key); it != write_index_.end()) {  // written before: go on from there
      if (scan_depth_ > 0) return WriteInScan();
      BufferedWrite& w = writes_[it->second];
      if (w.erase) return absl::NotFoundError(absl::StrCat("no record with key ", key));
      return absl::Span<char>(w.value.data(), w.value.size());
    }
    absl::StatusOr<std::string_view> v = Read(key);
    if (!v.ok()) return v.status();
    absl::Status s = CheckWrite(key);
    if (s.ok() && scan_depth_ > 0) s = WriteInScan();  // the first error stands
    if (s.ok()) s = CheckWriteTarget(stores_[partitioner_->PartitionOf(key)]->GetTable(KeyTable(key)), key, &*v);
    if (!s.ok()) return s;
    BufferedWrite& w = Buffer(key);
    w.value.assign(v->data(), v->size());
    w.erase = false;
    return absl::Span<char>(w.value.data(), w.value.size());
  }

  absl::StatusOr<std::string_view> ReadReplicated(Key key) override {
    // Every partition holds the same copy; read the first one's.
    PartitionStore* store = stores_[0];
    const Record* r = store->Get(key);
    if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    return std::string_view(r->value(), store->GetTable(KeyTable(key))->value_size());
  }

  absl::Status Scan(Key lo, Key hi, bool reverse,
                    absl::FunctionRef<bool(Key key, std::string_view value)> visit) override {
    const PartitionStore* store = stores_[partitioner_->PartitionOf(lo)];
    const Table* table = store->GetTable(KeyTable(lo));
    Key cover;
    absl::Status s = CheckScanRange(range_cover_, table, lo, hi, &cover);
    if (!s.ok()) return s;
    if (!DeclaredWrite(cover) && !std::binary_search(reads_.begin(), reads_.end(), cover))
      return absl::InvalidArgumentError(
          absl::StrCat("scan of [", lo, ", ", hi, "]: its cover ", cover, " is not in the txn's read or write set"));
    std::vector<OwnWrite> own;
    for (const BufferedWrite& w : writes_)
      if (w.key >= lo && w.key <= hi) own.push_back(OwnWrite{w.key, w.value, w.erase});
    ++scan_depth_;  // a depth: a visit may scan again
    ScanWithOwnWrites(*table, lo, hi, reverse, &own, visit);
    --scan_depth_;
    return absl::OkStatus();
  }

  void Apply() {
    for (const BufferedWrite& w : writes_) {
      PartitionStore* store = stores_[partitioner_->PartitionOf(w.key)];
      if (w.erase) {
        store->Erase(w.key);
        continue;
      }
      Record* r = store->Get(w.key);
      if (r == nullptr) r = store->Insert(w.key);
      CHECK(r != nullptr);
      std::memcpy(r->value(), w.value.data(), w.value.size());
    }
  }

 private:
  struct BufferedWrite {
    Key key;
    std::string value;
    bool erase;
  };

  absl::StatusOr<std::string_view> StoreValue(Key key) const {
    PartitionStore* store = stores_[partitioner_->PartitionOf(key)];
    const Record* r = store->Get(key);
    if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    return std::string_view(r->value(), store->GetTable(KeyTable(key))->value_size());
  }
  bool DeclaredWrite(Key key) const {
    return std::binary_search(declared_writes_.begin(), declared_writes_.end(), key);
  }
  bool Covered(Key key, bool for_write) const {
    if (cover_ == nullptr) return false;
    const Key c = cover_(key);
    if (c == key) return false;
    return DeclaredWrite(c) || (!for_write && std::binary_search(reads_.begin(), reads_.end(), c));
  }
  absl::Status CheckWrite(Key key) const {
    if (DeclaredWrite(key) || Covered(key, /*for_write=*/true)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's write set"));
  }
  BufferedWrite& Buffer(Key key) {
    auto [it, inserted] = write_index_.try_emplace(key, writes_.size());
    if (inserted) writes_.push_back(BufferedWrite{key, std::string(), false});
    return writes_[it->second];
  }

  const pb::Txn& txn_;
  const Partitioner* const partitioner_;
  const KeyCover cover_;
  const RangeCover range_cover_;
  const std::vector<PartitionStore*>& stores_;
  std::vector<Key> reads_, declared_writes_;  // sorted
  std::deque<BufferedWrite> writes_;  // a deque: Update's pointers into values stay put
  absl::flat_hash_map<Key, size_t> write_index_;
  int scan_depth_ = 0;  // Scans whose visits run now (nested ones too): no Write or Delete
};

}  // namespace

SerialExecutor::SerialExecutor(const Partitioner* partitioner, const ProcedureRegistry* procedures,
                               std::vector<PartitionStore*> stores)
    : partitioner_(partitioner), procedures_(procedures), stores_(std::move(stores)) {}

pb::TxnResult SerialExecutor::Execute(const pb::Txn& txn) {
  pb::TxnResult r;
  r.set_txn_id(txn.id());
  r.set_client_id(txn.client_id());
  r.set_client_seq(txn.client_seq());
  if (txn.has_table_op()) {  // every partition's part (one thread: no locks to take)
    const pb::TableOp& op = txn.table_op();
    std::vector<std::vector<std::pair<Key, std::string_view>>> rows(stores_.size());
    for (const pb::KeyValue& kv : op.rows()) rows[partitioner_->PartitionOf(kv.key())].emplace_back(kv.key(), kv.value());
    for (size_t p = 0; p < stores_.size(); ++p) {
      absl::Status s = op.kind() == pb::TableOp::TRUNCATE ? stores_[p]->Truncate(op.table()).status()
                                                          : stores_[p]->BulkLoad(op.table(), rows[p]);
      CHECK(s.ok()) << "table operation of txn " << txn.id() << ": " << s;
    }
    r.set_status(pb::STATUS_OK);
    return r;
  }
  std::string result;
  absl::Status s;
  Procedure proc = procedures_->Find(txn.type());
  SerialContext ctx(txn, partitioner_, procedures_->key_cover(), procedures_->range_cover(), stores_);
  if (proc == nullptr) {
    s = absl::InvalidArgumentError(absl::StrCat("unknown txn type ", txn.type()));
  } else {
    s = proc(&ctx, &result);
  }
  if (s.ok()) {
    ctx.Apply();
    r.set_status(pb::STATUS_OK);
    r.set_result(std::move(result));
  } else {
    r.set_status(pb::STATUS_ABORTED);
    r.set_error(std::string(s.message()));
  }
  return r;
}

}  // namespace detdb
