// The procedures run the way the engine runs them (procedures_test_util.h's
// TinyDb): multi-partition New-Order and Payment on every writing partition
// with local writes only, matching the serial executor; the locks New-Order
// and Payment of one district rely on (no conflict); and RangeCover, the
// scans' determinism rule.
#include "workloads/tpcc/procedures.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "workloads/tpcc/procedures_test_util.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"
#include "storage/partition_store.h"

namespace detdb {
namespace tpcc {
namespace {

// ---- Multi-partition txns, run the way the engine runs them ----

// The engine's view of a txn at one executing partition (scheduler.cc's
// ExecContext): declared reads from every partition (exchanged), covered
// reads only from this partition, writes buffered and applied only here.
// Records the locks the txn's accesses rely on: the key itself if declared,
// else its cover.
class PartitionContext final : public TxnContext {
 public:
  PartitionContext(const pb::Txn& txn, TinyDb* db, PartitionId self) : txn_(txn), db_(db), self_(self) {}
  const pb::Txn& txn() const override { return txn_; }

  absl::StatusOr<std::string_view> Read(Key key) override {
    const auto& rs = txn_.read_set();
    if (std::find(rs.begin(), rs.end(), key) != rs.end()) {
      locks_read_.insert(key);
      return Stored(db_->partitioner().PartitionOf(key), key);
    }
    if (Covered(key, false)) {
      locks_read_.insert(Cover(key));
      auto it = writes_.find(key);
      if (it != writes_.end()) {
        if (!it->second.has_value()) return absl::NotFoundError("deleted");
        return std::string_view(*it->second);
      }
      if (db_->partitioner().PartitionOf(key) != self_)
        return absl::FailedPreconditionError(absl::StrCat("covered key ", key, " is not on this partition"));
      return Stored(self_, key);
    }
    return absl::InvalidArgumentError(absl::StrCat("key ", key, " is not in the txn's read set"));
  }
  absl::Status Write(Key key, std::string_view value) override {
    if (!Declared(key) && !Covered(key, true)) return absl::InvalidArgumentError("not in the write set");
    locks_written_.insert(Declared(key) ? key : Cover(key));
    writes_[key] = std::string(value);
    return absl::OkStatus();
  }
  absl::Status Delete(Key key) override {
    if (!Declared(key) && !Covered(key, true)) return absl::InvalidArgumentError("not in the write set");
    locks_written_.insert(Declared(key) ? key : Cover(key));
    writes_[key] = std::nullopt;
    return absl::OkStatus();
  }
  absl::StatusOr<absl::Span<char>> Update(Key key) override {  // Read, then Write
    auto it = writes_.find(key);
    if (it == writes_.end()) {
      absl::StatusOr<std::string_view> v = Read(key);
      if (!v.ok()) return v.status();
      if (!Declared(key) && !Covered(key, true)) return absl::InvalidArgumentError("not in the write set");
      it = writes_.emplace(key, std::string(*v)).first;
    }
    locks_written_.insert(Declared(key) ? key : Cover(key));
    if (!it->second.has_value()) return absl::NotFoundError("deleted");
    return absl::Span<char>(it->second->data(), it->second->size());
  }
  // The declared keys (or covers) read and written so far.
  const std::set<Key>& locks_read() const { return locks_read_; }
  const std::set<Key>& locks_written() const { return locks_written_; }
  absl::StatusOr<std::string_view> ReadReplicated(Key key) override { return Stored(self_, key); }
  absl::Status Scan(Key lo, Key hi, bool reverse,
                    absl::FunctionRef<bool(Key key, std::string_view value)> visit) override {
    const Table* table = db_->store(db_->partitioner().PartitionOf(lo))->GetTable(KeyTable(lo));
    Key cover;
    absl::Status s = CheckScanRange(db_->registry().range_cover(), table, lo, hi, &cover);
    if (!s.ok()) return s;
    const auto& rs = txn_.read_set();
    if (!Declared(cover) && std::find(rs.begin(), rs.end(), cover) == rs.end())
      return absl::InvalidArgumentError("scan not covered by the read or write set");
    locks_read_.insert(cover);
    if (db_->partitioner().PartitionOf(lo) != self_)
      return absl::FailedPreconditionError(absl::StrCat("scanned range ", lo, " is not on this partition"));
    std::vector<OwnWrite> own;
    for (auto it = writes_.lower_bound(lo); it != writes_.end() && it->first <= hi; ++it)
      own.push_back(OwnWrite{it->first, it->second.has_value() ? std::string_view(*it->second) : "", !it->second});
    ScanWithOwnWrites(*table, lo, hi, reverse, &own, visit);
    return absl::OkStatus();
  }

  void ApplyLocal() {
    PartitionStore* store = db_->store(self_);
    for (const auto& [key, value] : writes_) {
      if (db_->partitioner().PartitionOf(key) != self_) continue;
      if (!value.has_value()) {
        store->Erase(key);
        continue;
      }
      Record* r = store->Get(key);
      if (r == nullptr) r = store->Insert(key);
      std::memcpy(r->value(), value->data(), value->size());
    }
  }

 private:
  absl::StatusOr<std::string_view> Stored(PartitionId p, Key key) const {
    const Record* r = db_->store(p)->Get(key);
    if (r == nullptr) return absl::NotFoundError("no record");
    return std::string_view(r->value(), db_->store(p)->GetTable(KeyTable(key))->value_size());
  }
  bool Declared(Key key) const {
    const auto& ws = txn_.write_set();
    return std::find(ws.begin(), ws.end(), key) != ws.end();
  }
  bool Covered(Key key, bool for_write) const {
    const Key c = Cover(key);
    if (c == key) return false;
    const auto& rs = txn_.read_set();
    return Declared(c) || (!for_write && std::find(rs.begin(), rs.end(), c) != rs.end());
  }

  const pb::Txn& txn_;
  TinyDb* const db_;
  const PartitionId self_;
  std::map<Key, std::optional<std::string>> writes_;
  std::set<Key> locks_read_, locks_written_;
};

// Runs txn on every writing partition of db; every run must return the same
// status and result. Then applies each partition's local writes.
pb::TxnResult RunLikeTheEngine(TinyDb* db, const pb::Txn& txn) {
  std::set<PartitionId> writers;
  for (Key k : txn.write_set()) writers.insert(db->partitioner().PartitionOf(k));
  Procedure proc = db->registry().Find(txn.type());
  std::vector<std::unique_ptr<PartitionContext>> contexts;
  pb::TxnResult first;
  for (PartitionId p : writers) {
    contexts.push_back(std::make_unique<PartitionContext>(txn, db, p));
    std::string result;
    const absl::Status s = proc(contexts.back().get(), &result);
    pb::TxnResult r;
    r.set_status(s.ok() ? pb::STATUS_OK : pb::STATUS_ABORTED);
    r.set_result(result);
    r.set_error(std::string(s.message()));
    if (contexts.size() == 1) {
      first = r;
    } else {
      EXPECT_EQ(r.status(), first.status()) << "partition " << p;
      EXPECT_EQ(r.result(), first.result()) << "partition " << p;
      EXPECT_EQ(r.error(), first.error()) << "partition " << p;
    }
  }
  if (first.status() == pb::STATUS_OK)
    for (auto& c : contexts) c->ApplyLocal();
  return first;
}

// ---- Locks of New-Order and Payment (the vertical partitioning) ----

// A New-Order and a Payment of the same district (different customers)
// share no lock that either writes: declared keys, and what they actually
// touch (the key or, for covered rows, its cover). Both read the static
// WAREHOUSE and DISTRICT rows, which nothing writes.
TEST(ProceduresLocks, NewOrderAndPaymentOfADistrictDoNotConflict) {
  TinyDb db(1);
  FillItems(&db);
  FillOneWarehouse(&db, 1);
  const pb::Txn no = NewOrderTxn(&db, 1, 4, 1, {{1, 1, 5}, {3, 1, 2}, {3, 1, 1}});
  const pb::Txn pay = PaymentTxn(&db, 1, 4, 1, 4, 2, 500);
  auto set_of = [](const google::protobuf::RepeatedField<uint64_t>& f) { return std::set<Key>(f.begin(), f.end()); };
  // Keys of `writes` in `reads` or `writes2`.
  auto clash = [](const std::set<Key>& writes, const std::set<Key>& reads, const std::set<Key>& writes2) {
    std::vector<Key> keys;
    for (Key k : writes)
      if (reads.count(k) || writes2.count(k)) keys.push_back(k);
    return keys;
  };
  const std::set<Key> no_r = set_of(no.read_set()), no_w = set_of(no.write_set());
  const std::set<Key> pay_r = set_of(pay.read_set()), pay_w = set_of(pay.write_set());
  EXPECT_TRUE(clash(no_w, pay_r, pay_w).empty());
  EXPECT_TRUE(clash(pay_w, no_r, no_w).empty());

  PartitionContext no_ctx(no, &db, 0), pay_ctx(pay, &db, 0);
  std::string result;
  ASSERT_TRUE(NewOrder(&no_ctx, &result).ok());
  ASSERT_TRUE(Payment(&pay_ctx, &result).ok());
  EXPECT_TRUE(clash(no_ctx.locks_written(), pay_ctx.locks_read(), pay_ctx.locks_written()).empty());
  EXPECT_TRUE(clash(pay_ctx.locks_written(), no_ctx.locks_read(), no_ctx.locks_written()).empty());
  // The order rows ride on DISTRICT_NEXT, the HISTORY rows on DISTRICT_YTD.
  EXPECT_TRUE(no_ctx.locks_written().count(DistrictNextKey(1, 4)));
  EXPECT_TRUE(pay_ctx.locks_written().count(DistrictYtdKey(1, 4)));
  EXPECT_TRUE(pay_ctx.locks_written().count(WarehouseYtdKey(1)));
  for (Key k : {WarehouseKey(1), DistrictKey(1, 4)}) {
    EXPECT_TRUE(no_ctx.locks_read().count(k)) << k;
    EXPECT_TRUE(pay_ctx.locks_read().count(k)) << k;
    EXPECT_FALSE(no_ctx.locks_written().count(k)) << k;
    EXPECT_FALSE(pay_ctx.locks_written().count(k)) << k;
  }
}

// Warehouses 1 and 2 on partitions 0 and 1.
void FillTwoWarehouses(TinyDb* db) {
  FillItems(db);
  FillOneWarehouse(db, 1);
  FillOneWarehouse(db, 2);
}

TEST(ProceduresMultiPartition, RemoteNewOrderAndPaymentMatchTheSerialExecutor) {
  TinyDb serial(2), engine(2);
  FillTwoWarehouses(&serial);
  FillTwoWarehouses(&engine);
  ASSERT_EQ(serial.partitioner().PartitionOf(WarehouseKey(2)), 1u);
  ASSERT_EQ(serial.Digests(), engine.Digests());

  std::vector<pb::Txn> txns;
  txns.push_back(NewOrderTxn(&serial, 1, 3, 2, {{1, 1, 5}, {2, 2, 8}, {3, 2, 1}}));  // remote lines
  txns.push_back(PaymentTxn(&serial, 1, 4, 2, 6, 2, 777));                            // remote BC customer
  txns.push_back(PaymentTxn(&serial, 2, 1, 1, 1, 3, 1500));                           // remote GC customer
  txns.push_back(NewOrderTxn(&serial, 2, 3, 1, {{2, 1, 1}, {11, 1, 1}}));              // rollback
  txns.push_back(NewOrderTxn(&serial, 2, 3, 1, {{2, 1, 1}, {2, 2, 1}}));
  txns.push_back(NewOrderTxn(&serial, 1, 3, 1, {{4, 1, 1}}));                         // single partition
  for (const pb::Txn& t : txns) {
    const pb::TxnResult s = serial.Run(t);
    const pb::TxnResult e = RunLikeTheEngine(&engine, t);
    EXPECT_EQ(s.status(), e.status()) << s.error() << " / " << e.error();
    EXPECT_EQ(s.result(), e.result());
    EXPECT_EQ(s.error(), e.error());
    EXPECT_EQ(serial.Digests(), engine.Digests()) << "after txn " << t.id();
  }

  const auto r = Ok<tp::NewOrderResult>(serial.Run(NewOrderTxn(&serial, 1, 3, 2, {{5, 2, 1}})));
  EXPECT_EQ(r.o_id(), 3u);
  EXPECT_EQ(serial.Get<StockRow>(StockKey(2, 2)).remote_cnt, 1);
  EXPECT_EQ(serial.Get<StockRow>(StockKey(2, 5)).remote_cnt, 1);
  EXPECT_EQ(serial.Get<StockRow>(StockKey(2, 2)).quantity, 15 - 8 + 91 - 1);
  EXPECT_EQ(serial.Get<StockRow>(StockKey(1, 1)).remote_cnt, 0);
  EXPECT_EQ(serial.Get<StockRow>(StockKey(1, 2)).remote_cnt, 1);
  EXPECT_EQ(serial.Get<OrderRow>(OrderKey(1, 3, 1)).all_local, 0);
  EXPECT_EQ(serial.Get<OrderRow>(OrderKey(1, 3, 2)).all_local, 1);
  EXPECT_EQ(serial.Get<OrderLineRow>(OrderLineKey(1, 3, 1, 2)).supply_w_id, 2);
  EXPECT_EQ(std::string(GetField(serial.Get<OrderLineRow>(OrderLineKey(1, 3, 1, 2)).dist_info)),
            TinyDb::DistInfo(2, 2, 3));
  EXPECT_EQ(serial.Get<DistrictNextRow>(DistrictNextKey(2, 3)).next_o_id, 2);  // one commit, one rollback
  // Payment by warehouse 1 of customer (2, 6, 2): the money goes to warehouse 1 and
  // district (1, 4), the HISTORY row to district (1, 4).
  EXPECT_EQ(serial.Get<CustomerRow>(CustomerKey(2, 6, 2)).balance, -1000 - 777);
  EXPECT_TRUE(StartsWith(GetField(serial.Get<CustomerRow>(CustomerKey(2, 6, 2)).data), "2 6 2 4 1 7.77 |"));
  EXPECT_EQ(serial.Get<DistrictYtdRow>(DistrictYtdKey(1, 4)).ytd, 3000000 + 777);
  EXPECT_EQ(serial.Get<WarehouseYtdRow>(WarehouseYtdKey(1)).ytd, 30000000 + 777);
  const HistoryRow h = serial.Get<HistoryRow>(HistoryKey(1, 4, 0));
  EXPECT_EQ(h.c_w_id, 2);
  EXPECT_EQ(h.c_d_id, 6);
  EXPECT_EQ(h.w_id, 1);
  EXPECT_EQ(h.amount, 777);
  EXPECT_FALSE(serial.Has(HistoryKey(1, 4, 1)));
  EXPECT_FALSE(serial.Has(HistoryKey(2, 6, 0)));  // the customer's district has none
  EXPECT_EQ(serial.Get<WarehouseYtdRow>(WarehouseYtdKey(2)).ytd, 30000000 + 1500);
  EXPECT_EQ(serial.Get<CustomerRow>(CustomerKey(1, 1, 3)).ytd_payment, 1000 + 1500);
}

// RangeCover is the one determinism rule no runtime check catches if it is
// too permissive: a range it accepts must lie within one district of one
// covered table, and its cover must be that district's KeyCover.
TEST(TpccRangeCover, OneDistrictOfOneCoveredTableOnly) {
  Key cover = 0;
  struct Range {
    Key lo, hi, cover;
  };
  const Range ok[] = {
      {FirstHistoryKey(2, 3), LastHistoryKey(2, 3), DistrictYtdKey(2, 3)},
      {FirstNewOrderKey(2, 3), LastNewOrderKey(2, 3), DistrictNextKey(2, 3)},
      {OrderKey(2, 3, 1), OrderKey(2, 3, 20), DistrictNextKey(2, 3)},
      {FirstOrderLineKey(2, 10, 5), LastOrderLineKey(2, 10, 25), DistrictNextKey(2, 10)},
      {CustomerLastOrderKey(7, 1, 1), CustomerLastOrderKey(7, 1, 3000), DistrictNextKey(7, 1)},
      {OrderKey(2, 3, 9), OrderKey(2, 3, 9), DistrictNextKey(2, 3)},  // one key
  };
  for (const Range& r : ok) {
    ASSERT_TRUE(RangeCover(r.lo, r.hi, &cover)) << r.lo << ".." << r.hi;
    EXPECT_EQ(cover, r.cover);
    EXPECT_EQ(Cover(r.lo), cover);
    EXPECT_EQ(Cover(r.hi), cover);
  }
  const std::pair<Key, Key> refused[] = {
      {OrderKey(2, 3, 1), OrderKey(2, 4, 1)},                      // two districts
      {LastNewOrderKey(2, 10), FirstNewOrderKey(3, 1)},            // two warehouses
      {FirstHistoryKey(2, 3), LastHistoryKey(3, 3)},               // same district number, two warehouses
      {OrderKey(2, 3, 1), NewOrderKey(2, 3, 1)},                   // two tables
      {NewOrderKey(2, 3, 1), OrderLineKey(2, 3, 1, 1)},            // two tables
      {CustomerKey(2, 3, 1), CustomerKey(2, 3, 100)},              // CUSTOMER: not covered
      {StockKey(2, 1), StockKey(2, 100)},                          // STOCK: not covered
      {ItemKey(1), ItemKey(100)},                                  // ITEM: not covered
      {DistrictNextKey(2, 1), DistrictNextKey(2, 10)},             // district-level rows
      {DistrictYtdKey(2, 3), DistrictYtdKey(2, 3)},                // a cover itself
      {WarehouseKey(1), WarehouseKey(2)},                          // warehouse-level rows
  };
  for (const auto& [lo, hi] : refused) EXPECT_FALSE(RangeCover(lo, hi, &cover)) << lo << ".." << hi;
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
