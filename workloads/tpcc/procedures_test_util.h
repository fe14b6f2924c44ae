// Shared by the procedures_*_test.cc files (tests of procedures.h): TinyDb,
// a TPC-C database of a few rows filled by hand and run by the serial
// executor; the builders of New-Order, Payment and Order-Status txns with
// the read and write sets of procedures.h; the one-warehouse fill and the
// ProceduresTest fixture over it. Helpers used by one file stay in it.
#ifndef DETDB_WORKLOADS_TPCC_PROCEDURES_TEST_UTIL_H_
#define DETDB_WORKLOADS_TPCC_PROCEDURES_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "glog/logging.h"
#include "absl/strings/str_cat.h"
#include "workloads/tpcc/new_order_lines.h"
#include "workloads/tpcc/procedures.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"
#include "scheduler/serial_executor.h"
#include "storage/partition_store.h"

namespace detdb {
namespace tpcc {

namespace tp = pb::tpcc;

inline bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

template <typename Row>
Row Zeroed() {
  Row r;
  std::memset(&r, 0, sizeof(r));
  return r;
}

// A TPC-C database of a few rows, filled by hand.
class TinyDb {
 public:
  explicit TinyDb(uint32_t partitions) : partitioner_(partitions) {
    const std::pair<uint32_t, uint32_t> tables[] = {
        {kWarehouse, sizeof(WarehouseRow)},   {kDistrict, sizeof(DistrictRow)},
        {kCustomer, sizeof(CustomerRow)},     {kHistory, sizeof(HistoryRow)},
        {kNewOrder, sizeof(NewOrderRow)},     {kOrder, sizeof(OrderRow)},
        {kOrderLine, sizeof(OrderLineRow)},   {kItem, sizeof(ItemRow)},
        {kStock, sizeof(StockRow)},           {kCustomerLastOrder, sizeof(OrderIdRow)},
        {kWarehouseYtd, sizeof(WarehouseYtdRow)}, {kDistrictYtd, sizeof(DistrictYtdRow)},
        {kDistrictNext, sizeof(DistrictNextRow)},
    };
    for (uint32_t p = 0; p < partitions; ++p) {
      stores_.push_back(std::make_unique<PartitionStore>());
      for (const auto& [id, size] : tables)
        CHECK(stores_.back()->CreateTable({.id = id, .name = absl::StrCat("t", id), .value_size = size,
                                            .expected_records = 4096, .ordered = IsOrdered(id)}).ok());
    }
    CHECK(RegisterProcedures(&registry_).ok());
    std::vector<PartitionStore*> raw;
    for (auto& s : stores_) raw.push_back(s.get());
    exec_ = std::make_unique<SerialExecutor>(&partitioner_, &registry_, raw);
  }

  const WarehousePartitioner& partitioner() const { return partitioner_; }
  const ProcedureRegistry& registry() const { return registry_; }
  PartitionStore* store(uint32_t p) { return stores_[p].get(); }
  uint32_t partitions() const { return static_cast<uint32_t>(stores_.size()); }

  template <typename Row>
  void Put(Key k, const Row& row) {
    for (uint32_t p = 0; p < stores_.size(); ++p) {
      if (KeyTable(k) != kItem && partitioner_.PartitionOf(k) != p) continue;
      Record* r = stores_[p]->Get(k);
      if (r == nullptr) r = stores_[p]->Insert(k);
      CHECK(r != nullptr);
      std::memcpy(r->value(), &row, sizeof(Row));
    }
  }
  bool Has(Key k) const { return stores_[partitioner_.PartitionOf(k)]->Get(k) != nullptr; }
  template <typename Row>
  Row Get(Key k) const {
    const Record* r = stores_[partitioner_.PartitionOf(k)]->Get(k);
    CHECK(r != nullptr) << "no record " << k;
    Row row;
    std::memcpy(&row, r->value(), sizeof(Row));
    return row;
  }

  // The bytes of k's record.
  std::string Raw(Key k) const {
    const PartitionStore& s = *stores_[partitioner_.PartitionOf(k)];
    const Record* r = s.Get(k);
    CHECK(r != nullptr) << "no record " << k;
    return std::string(r->value(), s.GetTable(KeyTable(k))->value_size());
  }

  std::vector<uint64_t> Digests() const {
    std::vector<uint64_t> d;
    for (const auto& s : stores_) d.push_back(s->Digest());
    return d;
  }

  // A warehouse with its 10 districts (W_YTD 300,000.00, D_YTD 30,000.00,
  // D_NEXT_O_ID 1, no orders).
  void AddWarehouse(uint32_t w, int32_t w_tax, int32_t d_tax) {
    auto wh = Zeroed<WarehouseRow>();
    SetField(wh.name, absl::StrCat("WH", w));
    wh.tax = w_tax;
    Put(WarehouseKey(w), wh);
    Put(WarehouseYtdKey(w), WarehouseYtdRow{.ytd = 30000000});
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      auto dist = Zeroed<DistrictRow>();
      SetField(dist.name, absl::StrCat("DIST", w, "-", d));
      dist.tax = d_tax;
      Put(DistrictKey(w, d), dist);
      Put(DistrictYtdKey(w, d), DistrictYtdRow{.ytd = 3000000});
      Put(DistrictNextKey(w, d), DistrictNextRow{.next_o_id = 1, .unused = 0});
    }
  }
  void AddCustomer(uint32_t w, uint32_t d, uint32_t c, std::string_view credit, int32_t discount,
                   std::string_view last = "BARBARBAR", std::string_view data = "customer data") {
    auto row = Zeroed<CustomerRow>();
    SetField(row.first, absl::StrCat("first", c));
    SetField(row.last, last);
    SetField(row.credit, credit);
    row.discount = discount;
    row.balance = -1000;
    row.ytd_payment = 1000;
    row.payment_cnt = 1;
    SetField(row.data, data);
    Put(CustomerKey(w, d, c), row);
  }
  void AddItem(uint32_t i, int64_t price, std::string_view data = "plain item") {
    auto row = Zeroed<ItemRow>();
    row.im_id = static_cast<int32_t>(i);
    SetField(row.name, absl::StrCat("item", i));
    row.price = price;
    SetField(row.data, data);
    Put(ItemKey(i), row);
  }
  void AddStock(uint32_t w, uint32_t i, int32_t quantity, std::string_view data = "plain stock") {
    auto row = Zeroed<StockRow>();
    row.quantity = quantity;
    for (uint32_t d = 0; d < kDistrictsPerWarehouse; ++d) SetField(row.dist[d], DistInfo(w, i, d + 1));
    SetField(row.data, data);
    Put(StockKey(w, i), row);
  }
  static std::string DistInfo(uint32_t w, uint32_t i, uint32_t d) { return absl::StrCat("S_DIST_", w, "_", i, "_", d); }

  pb::TxnResult Run(const pb::Txn& txn) { return exec_->Execute(txn); }
  // A txn with the next id.
  pb::Txn MakeTxn(uint32_t type, const google::protobuf::Message& args, std::vector<Key> reads,
                  std::vector<Key> writes) {
    pb::Txn t;
    t.set_id(next_id_++);
    t.set_type(type);
    t.set_args(args.SerializeAsString());
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    std::sort(writes.begin(), writes.end());
    writes.erase(std::unique(writes.begin(), writes.end()), writes.end());
    for (Key k : reads) t.add_read_set(k);
    for (Key k : writes) t.add_write_set(k);
    return t;
  }
  uint64_t next_id() const { return next_id_; }

 private:
  WarehousePartitioner partitioner_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;
  ProcedureRegistry registry_;
  std::unique_ptr<SerialExecutor> exec_;
  uint64_t next_id_ = 1000;
};

// ---- Txn builders with the read and write sets of procedures.h ----

struct Line {
  uint32_t i, supply_w, qty;
};

// How NewOrderTxn encodes the lines (proto/tpcc.proto): one word per line
// (what the generator writes), three packed arrays, or OrderLineInput
// sub-messages (the older two, still read).
enum class LineEncoding { kWords, kArrays, kNested };

inline pb::Txn NewOrderTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t c, const std::vector<Line>& lines,
                           std::vector<Key> skip = {}, LineEncoding encoding = LineEncoding::kWords) {
  tp::NewOrderArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  a.set_c_id(c);
  std::vector<Key> reads = {WarehouseKey(w), DistrictKey(w, d), CustomerKey(w, d, c), DistrictNextKey(w, d)};
  std::vector<Key> writes = {DistrictNextKey(w, d)};
  for (const Line& l : lines) {
    if (encoding == LineEncoding::kWords) {
      a.add_line_words(OrderLineWord(OrderLine{l.i, l.supply_w, l.qty}));
    } else if (encoding == LineEncoding::kArrays) {
      a.add_i_ids(l.i);
      a.add_supply_w_ids(l.supply_w);
      a.add_quantities(l.qty);
    } else {
      auto* in = a.add_lines();
      in->set_i_id(l.i);
      in->set_supply_w_id(l.supply_w);
      in->set_quantity(l.qty);
    }
    const Key sk = StockKey(l.supply_w, l.i);
    if (std::find(skip.begin(), skip.end(), sk) != skip.end()) continue;
    reads.push_back(sk);
    writes.push_back(sk);
  }
  return db->MakeTxn(kNewOrderType, a, reads, writes);
}

inline pb::Txn PaymentTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t cw, uint32_t cd, uint32_t c, int64_t amount) {
  tp::PaymentArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  a.set_c_w_id(cw);
  a.set_c_d_id(cd);
  a.set_c_id(c);
  a.set_amount(amount);
  const std::vector<Key> writes = {WarehouseYtdKey(w), DistrictYtdKey(w, d), CustomerKey(cw, cd, c)};
  std::vector<Key> reads = writes;
  reads.push_back(WarehouseKey(w));
  reads.push_back(DistrictKey(w, d));
  return db->MakeTxn(kPaymentType, a, reads, writes);
}

inline pb::Txn OrderStatusTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t c) {
  tp::OrderStatusArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  a.set_c_id(c);
  return db->MakeTxn(kOrderStatusType, a, {CustomerKey(w, d, c), DistrictNextKey(w, d)}, {});
}

template <typename Result>
Result Ok(const pb::TxnResult& r) {
  EXPECT_EQ(r.status(), pb::STATUS_OK) << r.error();
  Result out;
  EXPECT_TRUE(out.ParseFromString(r.result()));
  return out;
}

// One warehouse (W_TAX 10%, D_TAX 5%), customers 1..3 of every district
// (customer 2 "BC", discount 10%), items 1..10 at i dollars (item 3 and its
// stock "ORIGINAL"), stock quantities 50 except item 2 (15).
inline void FillOneWarehouse(TinyDb* db, uint32_t w) {
  db->AddWarehouse(w, 1000, 500);
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    db->AddCustomer(w, d, 1, "GC", 1000, "BARBARBAR");
    db->AddCustomer(w, d, 2, "BC", 1000, "OUGHTOUGHTOUGHT", "old data");
    db->AddCustomer(w, d, 3, "GC", 0, "ABLEABLEABLE");
  }
  for (uint32_t i = 1; i <= 10; ++i) {
    db->AddStock(w, i, i == 2 ? 15 : 50, i == 3 ? "has ORIGINAL stuff" : "plain stock");
  }
}
inline void FillItems(TinyDb* db) {
  for (uint32_t i = 1; i <= 10; ++i) db->AddItem(i, int64_t{i} * 100, i == 3 ? "xxORIGINALxx" : "plain item");
}

class ProceduresTest : public ::testing::Test {
 protected:
  ProceduresTest() : db_(1) {
    FillItems(&db_);
    FillOneWarehouse(&db_, 1);
  }
  TinyDb db_;
};

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_PROCEDURES_TEST_UTIL_H_
