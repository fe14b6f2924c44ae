#include "scheduler/serial_executor.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {
namespace {

class SerialContext final : public TxnContext {
 public:
  SerialContext(const pb::Txn& txn, const Partitioner* partitioner, const std::vector<PartitionStore*>& stores)
      : txn_(txn), partitioner_(partitioner), stores_(stores) {
    reads_.assign(txn.read_set().begin(), txn.read_set().end());
    std::sort(reads_.begin(), reads_.end());
    declared_writes_.assign(txn.write_set().begin(), txn.write_set().end());
    std::sort(declared_writes_.begin(), declared_writes_.end());
  }

  const pb::Txn& txn() const override { return txn_; }

  absl::StatusOr<std::string_view> Read(Key key) override {
    if (!std::binary_search(reads_.begin(), reads_.end(), key))
      return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
    PartitionStore* store = stores_[partitioner_->PartitionOf(key)];
    const Record* r = store->Get(key);
    if (r == nullptr) return absl::NotFoundError(absl::StrCat("no record with key ", key));
    return std::string_view(r->value(), store->GetTable(KeyTable(key))->value_size());
  }

  absl::Status Write(Key key, std::string_view value) override {
    if (!std::binary_search(declared_writes_.begin(), declared_writes_.end(), key))
      return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's write set"));
    const Table* table = stores_[partitioner_->PartitionOf(key)]->GetTable(KeyTable(key));
    if (table == nullptr) return absl::InvalidArgumentError(absl::StrCat("no table ", KeyTable(key)));
    if (value.size() != table->value_size())
      return absl::InvalidArgumentError(absl::StrCat("value of ", value.size(), " bytes for table ",
                                                     KeyTable(key), " of ", table->value_size()));
    auto [it, inserted] = write_index_.try_emplace(key, writes_.size());
    if (!inserted) {
      writes_[it->second].second.assign(value.data(), value.size());
      return absl::OkStatus();
    }
    writes_.emplace_back(key, std::string(value));
    return absl::OkStatus();
  }

  void Apply() {
    for (const auto& [key, value] : writes_) {
      PartitionStore* store = stores_[partitioner_->PartitionOf(key)];
      Record* r = store->Get(key);
      if (r == nullptr) r = store->Insert(key);
      CHECK(r != nullptr);
      std::memcpy(r->value(), value.data(), value.size());
    }
  }

 private:
  const pb::Txn& txn_;
  const Partitioner* const partitioner_;
  const std::vector<PartitionStore*>& stores_;
  std::vector<Key> reads_, declared_writes_;  // sorted
  std::vector<std::pair<Key, std::string>> writes_;
  absl::flat_hash_map<Key, size_t> write_index_;
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
  std::string result;
  absl::Status s;
  Procedure proc = procedures_->Find(txn.type());
  SerialContext ctx(txn, partitioner_, stores_);
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
