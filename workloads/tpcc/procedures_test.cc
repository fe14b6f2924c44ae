// The TPC-C procedures against a tiny database built by hand: every
// procedure's effect on the rows (New-Order's stock rule, amounts and
// totals, Payment's balances and HISTORY, Order-Status, Delivery,
// Stock-Level), the deterministic aborts that leave no trace (rollback, OLLP
// mismatch, undeclared keys), multi-partition New-Order and Payment run the
// way the engine runs them (every writing partition, local writes only),
// and the generator's txns end to end.
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

#include "glog/logging.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "workloads/tpcc/generator.h"
#include "workloads/tpcc/random.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"
#include "scheduler/serial_executor.h"
#include "storage/partition_store.h"

namespace detdb {
namespace tpcc {
namespace {

namespace tp = pb::tpcc;

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

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

// packed: the lines as the generator writes them (three packed arrays);
// false: as OrderLineInput sub-messages (the first encoding, still read).
pb::Txn NewOrderTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t c, const std::vector<Line>& lines,
                    std::vector<Key> skip = {}, bool packed = true) {
  tp::NewOrderArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  a.set_c_id(c);
  std::vector<Key> reads = {WarehouseKey(w), DistrictKey(w, d), CustomerKey(w, d, c), DistrictNextKey(w, d)};
  std::vector<Key> writes = {DistrictNextKey(w, d)};
  for (const Line& l : lines) {
    if (packed) {
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

pb::Txn PaymentTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t cw, uint32_t cd, uint32_t c, int64_t amount) {
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

pb::Txn OrderStatusTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t c) {
  tp::OrderStatusArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  a.set_c_id(c);
  return db->MakeTxn(kOrderStatusType, a, {CustomerKey(w, d, c), DistrictNextKey(w, d)}, {});
}

pb::Txn ReconDeliveryTxn(TinyDb* db, uint32_t w) {
  tp::ReconDeliveryArgs a;
  a.set_w_id(w);
  std::vector<Key> reads;
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) reads.push_back(DistrictNextKey(w, d));
  return db->MakeTxn(kReconDeliveryType, a, reads, {});
}

pb::Txn DeliveryTxn(TinyDb* db, uint32_t w, uint32_t carrier, const tp::ReconDeliveryResult& recon) {
  tp::DeliveryArgs a;
  a.set_w_id(w);
  a.set_carrier_id(carrier);
  std::vector<Key> keys;
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) keys.push_back(DistrictNextKey(w, d));
  for (const auto& p : recon.plans()) {
    *a.add_plans() = p;
    if (p.o_id() != 0) keys.push_back(CustomerKey(w, p.d_id(), p.c_id()));
  }
  return db->MakeTxn(kDeliveryType, a, keys, keys);
}

pb::Txn ReconStockLevelTxn(TinyDb* db, uint32_t w, uint32_t d) {
  tp::ReconStockLevelArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  return db->MakeTxn(kReconStockLevelType, a, {DistrictNextKey(w, d)}, {});
}

pb::Txn StockLevelTxn(TinyDb* db, uint32_t w, uint32_t d, uint32_t threshold, const tp::ReconStockLevelResult& recon) {
  tp::StockLevelArgs a;
  a.set_w_id(w);
  a.set_d_id(d);
  a.set_threshold(threshold);
  a.set_next_o_id(recon.next_o_id());
  std::vector<Key> reads = {DistrictNextKey(w, d)};
  for (uint32_t i : recon.i_ids()) reads.push_back(StockKey(w, i));
  return db->MakeTxn(kStockLevelType, a, reads, {});
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
void FillOneWarehouse(TinyDb* db, uint32_t w) {
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
void FillItems(TinyDb* db) {
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

TEST_F(ProceduresTest, NewOrderUpdatesStockAndInsertsTheOrder) {
  const pb::Txn txn = NewOrderTxn(&db_, 1, 4, 1, {{1, 1, 5}, {2, 1, 8}, {3, 1, 2}});
  const auto r = Ok<tp::NewOrderResult>(db_.Run(txn));
  EXPECT_EQ(r.o_id(), 1u);
  EXPECT_EQ(db_.Get<DistrictNextRow>(DistrictNextKey(1, 4)).next_o_id, 2);
  EXPECT_EQ(db_.Get<DistrictNextRow>(DistrictNextKey(1, 5)).next_o_id, 1);
  EXPECT_EQ(r.c_last(), "BARBARBAR");
  EXPECT_EQ(r.c_credit(), "GC");
  EXPECT_EQ(r.c_discount(), 1000);
  EXPECT_EQ(r.w_tax(), 1000);
  EXPECT_EQ(r.d_tax(), 500);
  // 50 >= 5 + 10: 45. 15 < 8 + 10: 15 - 8 + 91 = 98. 50 - 2 = 48.
  ASSERT_EQ(r.s_quantity_size(), 3);
  EXPECT_EQ(r.s_quantity(0), 45);
  EXPECT_EQ(r.s_quantity(1), 98);
  EXPECT_EQ(r.s_quantity(2), 48);
  EXPECT_EQ(r.ol_amount(0), 500);
  EXPECT_EQ(r.ol_amount(1), 1600);
  EXPECT_EQ(r.ol_amount(2), 600);
  EXPECT_EQ(r.brand_generic(), "GGB");
  // 2700 * 0.9 * 1.15 = 2794.5, rounded half up.
  EXPECT_EQ(r.total_amount(), 2795);

  const StockRow s2 = db_.Get<StockRow>(StockKey(1, 2));
  EXPECT_EQ(s2.quantity, 98);
  EXPECT_EQ(s2.ytd, 8);
  EXPECT_EQ(s2.order_cnt, 1);
  EXPECT_EQ(s2.remote_cnt, 0);
  EXPECT_EQ(db_.Get<StockRow>(StockKey(1, 4)).order_cnt, 0);

  const OrderRow o = db_.Get<OrderRow>(OrderKey(1, 4, 1));
  EXPECT_EQ(o.c_id, 1);
  EXPECT_EQ(o.entry_d, static_cast<int64_t>(txn.id()));
  EXPECT_EQ(o.carrier_id, 0);
  EXPECT_EQ(o.ol_cnt, 3);
  EXPECT_EQ(o.all_local, 1);
  const NewOrderRow no = db_.Get<NewOrderRow>(NewOrderKey(1, 4, 1));
  EXPECT_EQ(no.o_id, 1);
  EXPECT_EQ(no.d_id, 4);
  EXPECT_EQ(no.w_id, 1);
  const OrderLineRow l2 = db_.Get<OrderLineRow>(OrderLineKey(1, 4, 1, 2));
  EXPECT_EQ(l2.i_id, 2);
  EXPECT_EQ(l2.supply_w_id, 1);
  EXPECT_EQ(l2.quantity, 8);
  EXPECT_EQ(l2.amount, 1600);
  EXPECT_EQ(l2.delivery_d, 0);
  EXPECT_EQ(std::string(l2.dist_info, TinyDb::DistInfo(1, 2, 4).size()), TinyDb::DistInfo(1, 2, 4));
  EXPECT_FALSE(db_.Has(OrderLineKey(1, 4, 1, 4)));
  EXPECT_EQ(db_.Get<OrderIdRow>(CustomerLastOrderKey(1, 4, 1)).o_id, 1);

  // The next order of the district gets the next id.
  const auto r2 = Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 4, 3, {{5, 1, 1}})));
  EXPECT_EQ(r2.o_id(), 2u);
  EXPECT_EQ(r2.total_amount(), 575);  // 500 * 1.0 * 1.15
  EXPECT_EQ(db_.Get<DistrictNextRow>(DistrictNextKey(1, 4)).next_o_id, 3);
}

TEST_F(ProceduresTest, NewOrderWithAnItemTwiceUpdatesItsStockTwice) {
  const auto r = Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 10}, {1, 1, 10}})));
  EXPECT_EQ(r.s_quantity(0), 40);
  EXPECT_EQ(r.s_quantity(1), 30);
  const StockRow s = db_.Get<StockRow>(StockKey(1, 1));
  EXPECT_EQ(s.quantity, 30);
  EXPECT_EQ(s.ytd, 20);
  EXPECT_EQ(s.order_cnt, 2);
}

TEST_F(ProceduresTest, RollbackOfAnUnusedItemChangesNothing) {
  const std::vector<uint64_t> before = db_.Digests();
  const pb::TxnResult r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}, {2, 1, 5}, {11, 1, 5}}));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_TRUE(StartsWith(r.error(), kRollback)) << r.error();
  EXPECT_EQ(db_.Digests(), before);
  EXPECT_EQ(db_.Get<DistrictNextRow>(DistrictNextKey(1, 1)).next_o_id, 1);
}

TEST_F(ProceduresTest, UndeclaredKeysAreRefused) {
  const std::vector<uint64_t> before = db_.Digests();
  // STOCK(1, 2) missing from the read and write sets.
  pb::TxnResult r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}, {2, 1, 5}}, {StockKey(1, 2)}));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_TRUE(absl::StrContains(r.error(), "read set")) << r.error();
  // DISTRICT_NEXT only read: the order rows it covers cannot be written.
  pb::Txn t = NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}});
  t.clear_write_set();
  t.add_write_set(StockKey(1, 1));
  r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_TRUE(absl::StrContains(r.error(), "write set")) << r.error();
  // Order-Status without DISTRICT_NEXT: its orders are not covered.
  t = OrderStatusTxn(&db_, 1, 1, 1);
  t.clear_read_set();
  t.add_read_set(CustomerKey(1, 1, 1));
  r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_EQ(db_.Digests(), before);
}

TEST_F(ProceduresTest, PaymentUpdatesBalancesAndInsertsHistory) {
  const pb::Txn txn = PaymentTxn(&db_, 1, 3, 1, 3, 1, 12345);
  const auto r = Ok<tp::PaymentResult>(db_.Run(txn));
  EXPECT_EQ(r.c_balance(), -1000 - 12345);
  EXPECT_EQ(r.c_credit(), "GC");
  EXPECT_EQ(r.c_data(), "");
  EXPECT_EQ(db_.Get<WarehouseYtdRow>(WarehouseYtdKey(1)).ytd, 30000000 + 12345);
  EXPECT_EQ(db_.Get<DistrictYtdRow>(DistrictYtdKey(1, 3)).ytd, 3000000 + 12345);
  EXPECT_EQ(db_.Get<DistrictYtdRow>(DistrictYtdKey(1, 4)).ytd, 3000000);
  const CustomerRow c = db_.Get<CustomerRow>(CustomerKey(1, 3, 1));
  EXPECT_EQ(c.balance, -1000 - 12345);
  EXPECT_EQ(c.ytd_payment, 1000 + 12345);
  EXPECT_EQ(c.payment_cnt, 2);
  EXPECT_EQ(GetField(c.data), "customer data");
  const HistoryRow h = db_.Get<HistoryRow>(HistoryKey(1, 3, 0));
  EXPECT_EQ(h.c_id, 1);
  EXPECT_EQ(h.c_d_id, 3);
  EXPECT_EQ(h.c_w_id, 1);
  EXPECT_EQ(h.d_id, 3);
  EXPECT_EQ(h.w_id, 1);
  EXPECT_EQ(h.amount, 12345);
  EXPECT_EQ(h.date, static_cast<int64_t>(txn.id()));
  EXPECT_EQ(GetField(h.data), "WH1    DIST1-3");

  // The next HISTORY row of the district takes the next seq.
  Ok<tp::PaymentResult>(db_.Run(PaymentTxn(&db_, 1, 3, 1, 3, 3, 100)));
  EXPECT_EQ(db_.Get<HistoryRow>(HistoryKey(1, 3, 1)).c_id, 3);
  EXPECT_FALSE(db_.Has(HistoryKey(1, 3, 2)));
  EXPECT_FALSE(db_.Has(HistoryKey(1, 4, 0)));
}

// A district whose HISTORY holds seq 2^32 - 1: the next seq does not fit
// HistoryKey's 32 bits (it would wrap to seq 0 and overwrite that row), so
// Payment aborts and changes nothing.
TEST_F(ProceduresTest, PaymentRefusesAHistorySeqPast32Bits) {
  Ok<tp::PaymentResult>(db_.Run(PaymentTxn(&db_, 1, 3, 1, 3, 1, 100)));  // seq 0
  HistoryRow last = db_.Get<HistoryRow>(HistoryKey(1, 3, 0));
  last.amount = 7;
  db_.Put(HistoryKey(1, 3, 0xFFFFFFFFu), last);
  const std::vector<uint64_t> before = db_.Digests();
  const pb::TxnResult r = db_.Run(PaymentTxn(&db_, 1, 3, 1, 3, 3, 200));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("HISTORY of 1/3 is full"), std::string::npos) << r.error();
  EXPECT_EQ(db_.Get<HistoryRow>(HistoryKey(1, 3, 0)).amount, 100);
  EXPECT_EQ(db_.Digests(), before);
}

TEST_F(ProceduresTest, PaymentOfABadCreditCustomerPrependsToCData) {
  const auto r = Ok<tp::PaymentResult>(db_.Run(PaymentTxn(&db_, 1, 2, 1, 7, 2, 50005)));
  EXPECT_EQ(r.c_credit(), "BC");
  EXPECT_EQ(r.c_data(), "2 7 1 2 1 500.05 |old data");
  EXPECT_EQ(GetField(db_.Get<CustomerRow>(CustomerKey(1, 7, 2)).data), "2 7 1 2 1 500.05 |old data");
  // C_DATA keeps 500 characters; the result shows 200.
  for (int i = 0; i < 40; ++i) Ok<tp::PaymentResult>(db_.Run(PaymentTxn(&db_, 1, 2, 1, 7, 2, 7)));
  const auto r2 = Ok<tp::PaymentResult>(db_.Run(PaymentTxn(&db_, 1, 2, 1, 7, 2, 99)));
  EXPECT_EQ(r2.c_data().size(), 200u);
  EXPECT_TRUE(StartsWith(r2.c_data(), "2 7 1 2 1 0.99 |2 7 1 2 1 0.07 |")) << r2.c_data();
  EXPECT_EQ(GetField(db_.Get<CustomerRow>(CustomerKey(1, 7, 2)).data).size(), 500u);
}

TEST_F(ProceduresTest, OrderStatusReturnsTheLatestOrder) {
  auto r = Ok<tp::OrderStatusResult>(db_.Run(OrderStatusTxn(&db_, 1, 2, 3)));
  EXPECT_EQ(r.o_id(), 0u);  // no order yet
  EXPECT_EQ(r.c_balance(), -1000);

  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 2, 3, {{1, 1, 1}})));
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 2, 1, {{1, 1, 1}})));
  const pb::Txn latest = NewOrderTxn(&db_, 1, 2, 3, {{4, 1, 2}, {6, 1, 3}});
  Ok<tp::NewOrderResult>(db_.Run(latest));
  r = Ok<tp::OrderStatusResult>(db_.Run(OrderStatusTxn(&db_, 1, 2, 3)));
  EXPECT_EQ(r.o_id(), 3u);
  EXPECT_EQ(r.o_entry_d(), static_cast<int64_t>(latest.id()));
  EXPECT_EQ(r.o_carrier_id(), 0u);
  ASSERT_EQ(r.ol_i_id_size(), 2);
  EXPECT_EQ(r.ol_i_id(0), 4u);
  EXPECT_EQ(r.ol_i_id(1), 6u);
  EXPECT_EQ(r.ol_amount(0), 800);
  EXPECT_EQ(r.ol_amount(1), 1800);
  EXPECT_EQ(r.ol_delivery_d(0), 0);
}

TEST_F(ProceduresTest, DeliveryDeliversTheOldestOrderOfEachDistrict) {
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 1, 2, {{1, 1, 2}, {4, 1, 1}})));  // 200 + 400
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 1, 3, {{5, 1, 1}})));
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 6, 1, {{7, 1, 3}})));              // 2100
  const auto recon = Ok<tp::ReconDeliveryResult>(db_.Run(ReconDeliveryTxn(&db_, 1)));
  // District 1 has two undelivered orders: both are candidates, oldest first.
  ASSERT_EQ(recon.plans_size(), 11);
  ASSERT_EQ(recon.plans(0).d_id(), 1u);
  EXPECT_EQ(recon.plans(0).o_id(), 1u);
  EXPECT_EQ(recon.plans(0).c_id(), 2u);
  ASSERT_EQ(recon.plans(1).d_id(), 1u);
  EXPECT_EQ(recon.plans(1).o_id(), 2u);
  EXPECT_EQ(recon.plans(1).c_id(), 3u);
  for (const auto& p : recon.plans()) {
    if (p.d_id() == 1) {
      continue;
    } else if (p.d_id() == 6) {
      EXPECT_EQ(p.o_id(), 1u);
      EXPECT_EQ(p.c_id(), 1u);
    } else {
      EXPECT_EQ(p.o_id(), 0u);
    }
  }
  const pb::Txn txn = DeliveryTxn(&db_, 1, 7, recon);
  const auto r = Ok<tp::DeliveryResult>(db_.Run(txn));
  ASSERT_EQ(r.delivered_size(), 10);
  EXPECT_EQ(r.delivered(0).o_id(), 1u);
  EXPECT_EQ(r.delivered(0).c_id(), 2u);
  EXPECT_EQ(r.delivered(5).o_id(), 1u);
  EXPECT_EQ(r.delivered(1).o_id(), 0u);

  EXPECT_FALSE(db_.Has(NewOrderKey(1, 1, 1)));
  EXPECT_TRUE(db_.Has(NewOrderKey(1, 1, 2)));
  EXPECT_FALSE(db_.Has(NewOrderKey(1, 6, 1)));
  EXPECT_EQ(db_.Get<OrderRow>(OrderKey(1, 1, 1)).carrier_id, 7);
  EXPECT_EQ(db_.Get<OrderRow>(OrderKey(1, 1, 2)).carrier_id, 0);
  EXPECT_EQ(db_.Get<OrderLineRow>(OrderLineKey(1, 1, 1, 1)).delivery_d, static_cast<int64_t>(txn.id()));
  EXPECT_EQ(db_.Get<OrderLineRow>(OrderLineKey(1, 1, 1, 2)).delivery_d, static_cast<int64_t>(txn.id()));
  EXPECT_EQ(db_.Get<OrderLineRow>(OrderLineKey(1, 1, 2, 1)).delivery_d, 0);
  const CustomerRow c = db_.Get<CustomerRow>(CustomerKey(1, 1, 2));
  EXPECT_EQ(c.balance, -1000 + 600);
  EXPECT_EQ(c.delivery_cnt, 1);
  EXPECT_EQ(db_.Get<CustomerRow>(CustomerKey(1, 6, 1)).balance, -1000 + 2100);

  // Order-Status sees the delivery.
  const auto os = Ok<tp::OrderStatusResult>(db_.Run(OrderStatusTxn(&db_, 1, 1, 2)));
  EXPECT_EQ(os.o_carrier_id(), 7u);
  EXPECT_EQ(os.ol_delivery_d(0), static_cast<int64_t>(txn.id()));

  // The next recon plans district 1's second order.
  const auto recon2 = Ok<tp::ReconDeliveryResult>(db_.Run(ReconDeliveryTxn(&db_, 1)));
  ASSERT_EQ(recon2.plans_size(), 10);
  EXPECT_EQ(recon2.plans(0).o_id(), 2u);
  EXPECT_EQ(recon2.plans(0).c_id(), 3u);
  EXPECT_EQ(recon2.plans(5).o_id(), 0u);
}

TEST_F(ProceduresTest, StaleDeliveryPlanAbortsWithoutChanges) {
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 1, 2, {{1, 1, 2}})));
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 1, 3, {{1, 1, 2}})));
  const auto recon = Ok<tp::ReconDeliveryResult>(db_.Run(ReconDeliveryTxn(&db_, 1)));
  // Only the first candidate of each district: a plan that order 1 only.
  tp::ReconDeliveryResult first_only;
  uint32_t last_d = 0;
  for (const auto& p : recon.plans())
    if (p.d_id() != last_d) {
      *first_only.add_plans() = p;
      last_d = p.d_id();
    }
  Ok<tp::DeliveryResult>(db_.Run(DeliveryTxn(&db_, 1, 1, recon)));  // consumes order 1
  std::vector<uint64_t> before = db_.Digests();
  pb::TxnResult r = db_.Run(DeliveryTxn(&db_, 1, 2, first_only));   // stale: order 1 is gone
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_TRUE(StartsWith(r.error(), kOllpMismatch)) << r.error();
  EXPECT_EQ(db_.Digests(), before);
  // The full plan named order 2 as well: a concurrent Delivery with the
  // same reconnaissance still succeeds.
  const auto second = Ok<tp::DeliveryResult>(db_.Run(DeliveryTxn(&db_, 1, 2, recon)));
  EXPECT_EQ(second.delivered(0).o_id(), 2u);
  before = db_.Digests();

  // A plan that saw no order in a district that has one now.
  const auto recon2 = Ok<tp::ReconDeliveryResult>(db_.Run(ReconDeliveryTxn(&db_, 1)));
  EXPECT_EQ(recon2.plans(3).o_id(), 0u);
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 4, 1, {{1, 1, 2}})));
  before = db_.Digests();
  r = db_.Run(DeliveryTxn(&db_, 1, 2, recon2));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_TRUE(StartsWith(r.error(), kOllpMismatch)) << r.error();
  EXPECT_EQ(db_.Digests(), before);

  // With a fresh recon it goes through.
  const auto recon3 = Ok<tp::ReconDeliveryResult>(db_.Run(ReconDeliveryTxn(&db_, 1)));
  const auto done = Ok<tp::DeliveryResult>(db_.Run(DeliveryTxn(&db_, 1, 2, recon3)));
  EXPECT_EQ(done.delivered(0).o_id(), 0u);  // district 1: both orders delivered above
  EXPECT_EQ(done.delivered(3).o_id(), 1u);  // district 4: the new order
  EXPECT_EQ(done.delivered(3).o_id(), 1u);

  // Delivery of a district with no orders at all leaves it alone.
  EXPECT_EQ(done.delivered(8).o_id(), 0u);
}

TEST_F(ProceduresTest, StockLevelCountsLowStockOfTheLastTwentyOrders) {
  // Stock after these orders: 1: 50-5-5=40, 2: 15-9+91=97, 3: 48, 4: 50-40=10 (quantity 10 four times),
  // 5: never ordered in this district.
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 1, {{1, 1, 5}, {2, 1, 9}})));
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 2, {{1, 1, 5}, {3, 1, 2}})));
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 3, {{4, 1, 10}, {4, 1, 10}, {4, 1, 10}, {4, 1, 10}})));
  EXPECT_EQ(db_.Get<StockRow>(StockKey(1, 4)).quantity, 10);
  const auto recon = Ok<tp::ReconStockLevelResult>(db_.Run(ReconStockLevelTxn(&db_, 1, 5)));
  EXPECT_EQ(recon.next_o_id(), 4u);
  EXPECT_EQ(std::vector<uint32_t>(recon.i_ids().begin(), recon.i_ids().end()), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 11, recon))).low_stock(), 1u);   // 4
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 10, recon))).low_stock(), 0u);
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 41, recon))).low_stock(), 2u);   // 4, 1
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 100, recon))).low_stock(), 4u);

  // Only the last 20 orders count: 20 more orders of item 6 push 1..4 out.
  for (int i = 0; i < 20; ++i) Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 1, {{6, 1, 1}})));
  const auto recon2 = Ok<tp::ReconStockLevelResult>(db_.Run(ReconStockLevelTxn(&db_, 1, 5)));
  EXPECT_EQ(recon2.next_o_id(), 24u);
  EXPECT_EQ(std::vector<uint32_t>(recon2.i_ids().begin(), recon2.i_ids().end()), (std::vector<uint32_t>{6}));
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 100, recon2))).low_stock(), 1u);
}

TEST_F(ProceduresTest, StockLevelUsesTheReconWindowAndAbortsWhenItsStockIsMissing) {
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 1, {{1, 1, 5}, {2, 1, 9}})));
  const auto recon = Ok<tp::ReconStockLevelResult>(db_.Run(ReconStockLevelTxn(&db_, 1, 5)));
  // New orders since the reconnaissance, one with a new item (7): the
  // window is the 20 orders before the recon's D_NEXT_O_ID, so they do not
  // count and nothing restarts.
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 1, {{2, 1, 1}})));
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 5, 1, {{7, 1, 1}})));
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 100, recon))).low_stock(), 2u);
  // A txn whose read set lacks a stock row of the window: OLLP mismatch, no change.
  pb::Txn missing = StockLevelTxn(&db_, 1, 5, 100, recon);
  std::vector<uint64_t> kept;
  for (uint64_t k : missing.read_set())
    if (k != StockKey(1, 2)) kept.push_back(k);
  missing.clear_read_set();
  for (uint64_t k : kept) missing.add_read_set(k);
  const std::vector<uint64_t> before = db_.Digests();
  const pb::TxnResult r = db_.Run(missing);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_TRUE(StartsWith(r.error(), kOllpMismatch)) << r.error();
  EXPECT_EQ(db_.Digests(), before);
  // A fresh reconnaissance sees the new orders.
  const auto recon2 = Ok<tp::ReconStockLevelResult>(db_.Run(ReconStockLevelTxn(&db_, 1, 5)));
  EXPECT_EQ(Ok<tp::StockLevelResult>(db_.Run(StockLevelTxn(&db_, 1, 5, 100, recon2))).low_stock(), 3u);
}

TEST(TpccProcedures, NewOrderReadsBothEncodingsOfItsLines) {
  // The same New-Orders, lines packed in one database and as sub-messages
  // in the other: equal results and equal state.
  TinyDb packed(1), nested(1);
  for (TinyDb* db : {&packed, &nested}) {
    FillItems(db);
    FillOneWarehouse(db, 1);
  }
  // The third rolls back: its last item is unused (clause 2.4.1.4).
  const uint32_t unused = 11;  // FillItems adds items 1..10
  const std::vector<std::vector<Line>> orders = {{{1, 1, 5}, {2, 1, 8}, {3, 1, 2}},
                                                 {{2, 1, 10}, {2, 1, 1}},
                                                 {{1, 1, 3}, {unused, 1, 1}},
                                                 {{4, 1, 3}, {5, 1, 9}, {1, 1, 1}, {6, 1, 4}}};
  for (size_t i = 0; i < orders.size(); ++i) {
    const pb::TxnResult a = packed.Run(NewOrderTxn(&packed, 1, 3, 2, orders[i], {}, true));
    const pb::TxnResult b = nested.Run(NewOrderTxn(&nested, 1, 3, 2, orders[i], {}, false));
    if (i == 2) {
      EXPECT_EQ(a.status(), pb::STATUS_ABORTED);
      EXPECT_TRUE(StartsWith(a.error(), kRollback)) << a.error();
    } else {
      ASSERT_EQ(a.status(), pb::STATUS_OK) << a.error();
    }
    EXPECT_EQ(a.status(), b.status());
    EXPECT_EQ(a.error(), b.error());
    EXPECT_EQ(a.result(), b.result());
  }
  EXPECT_EQ(packed.Digests(), nested.Digests());
}

TEST_F(ProceduresTest, NewOrderRefusesMalformedLines) {
  const std::vector<uint64_t> before = db_.Digests();
  // Packed arrays of unequal length.
  pb::Txn t = NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}, {2, 1, 5}});
  tp::NewOrderArgs a;
  ASSERT_TRUE(a.ParseFromString(t.args()));
  a.mutable_quantities()->RemoveLast();
  t.set_args(a.SerializeAsString());
  pb::TxnResult r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("2 item ids, 2 supply warehouses and 1 quantities"), std::string::npos) << r.error();
  // Both encodings at once.
  t = NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}});
  ASSERT_TRUE(a.ParseFromString(t.args()));
  auto* in = a.add_lines();
  in->set_i_id(1);
  in->set_supply_w_id(1);
  in->set_quantity(5);
  t.set_args(a.SerializeAsString());
  r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("both encodings"), std::string::npos) << r.error();
  // No lines, 16 lines, a bad line (new_order_lines_test.cc has every case).
  r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, {}));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("with 0 lines"), std::string::npos) << r.error();
  r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, std::vector<Line>(16, Line{1, 1, 1})));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("with 16 lines"), std::string::npos) << r.error();
  r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 11}}, {}, false));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("bad New-Order line"), std::string::npos) << r.error();
  EXPECT_EQ(db_.Digests(), before);
}

TEST_F(ProceduresTest, BadArgumentsAreRefused) {
  tp::NewOrderArgs a;
  a.set_w_id(1);
  a.set_d_id(11);
  a.set_c_id(1);
  a.add_lines()->set_i_id(1);
  pb::TxnResult r = db_.Run(db_.MakeTxn(kNewOrderType, a, {DistrictNextKey(1, 11)}, {DistrictNextKey(1, 11)}));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  pb::Txn t = PaymentTxn(&db_, 1, 1, 1, 1, 1, 100);
  t.set_args("\xff\xff garbage");
  EXPECT_EQ(db_.Run(t).status(), pb::STATUS_ABORTED);
}

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

// ---- The generator's txns, end to end ----

// A small database shaped like the loader's (no initial orders): customer
// names from CustomerNameOf so that the generator's last-name lookups agree.
void FillLikeTheLoader(TinyDb* db, const Scale& scale, uint64_t load_seed) {
  const NURandC load = LoadConstants(load_seed);
  Rng rng(load_seed);
  for (uint32_t i = 1; i <= scale.items; ++i)
    db->AddItem(i, rng.Uniform(100, 10000), rng.Uniform(0, 9) == 0 ? "ORIGINAL" : "plain");
  for (uint32_t w = 1; w <= scale.warehouses; ++w) {
    db->AddWarehouse(w, static_cast<int32_t>(rng.Uniform(0, 2000)), static_cast<int32_t>(rng.Uniform(0, 2000)));
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d)
      for (uint32_t c = 1; c <= scale.customers_per_district; ++c)
        db->AddCustomer(w, d, c, rng.Uniform(0, 9) == 0 ? "BC" : "GC", static_cast<int32_t>(rng.Uniform(0, 5000)),
                        CustomerNameOf(scale, load, load_seed, w, d, c).last);
    for (uint32_t i = 1; i <= scale.items; ++i)
      db->AddStock(w, i, static_cast<int32_t>(rng.Uniform(10, 100)), rng.Uniform(0, 9) == 0 ? "ORIGINAL" : "plain");
  }
}

TEST(ProceduresWithGenerator, GeneratedTxnsCommitExceptRollbacks) {
  Scale scale;
  scale.warehouses = 2;
  scale.items = 1000;
  scale.customers_per_district = 30;
  scale.orders_per_district = 30;
  scale.new_orders_per_district = 9;
  ASSERT_TRUE(scale.Validate().ok());
  TinyDb db(2);
  FillLikeTheLoader(&db, scale, 5);
  GeneratorOptions o;
  o.scale = scale;
  o.load_seed = 5;
  o.seed = 77;
  o.remote_line = 0.1;  // more multi-partition txns than the spec's
  Generator gen(o);
  // The static WAREHOUSE and DISTRICT rows, which no txn may change.
  std::map<Key, std::string> static_rows;
  for (uint32_t w = 1; w <= scale.warehouses; ++w) {
    static_rows[WarehouseKey(w)] = db.Raw(WarehouseKey(w));
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) static_rows[DistrictKey(w, d)] = db.Raw(DistrictKey(w, d));
  }

  std::map<TxnKind, int> committed;
  int rollbacks = 0, new_orders = 0, delivered = 0;
  int64_t paid = 0;
  for (int n = 0; n < 3000; ++n) {
    Generator::Request req = gen.Next();
    pb::Txn txn = req.txn;
    txn.set_id(db.next_id() + n * 2);
    pb::TxnResult r = db.Run(txn);
    if (req.recon) {
      ASSERT_EQ(r.status(), pb::STATUS_OK) << KindName(req.kind) << " recon: " << r.error();
      absl::StatusOr<pb::Txn> real = gen.FromRecon(req, r.result());
      ASSERT_TRUE(real.ok()) << real.status();
      txn = *real;
      txn.set_id(db.next_id() + n * 2 + 1);
      r = db.Run(txn);  // nothing ran in between: the recon holds
    }
    if (req.kind == TxnKind::kNewOrder) {
      tp::NewOrderArgs a;
      ASSERT_TRUE(a.ParseFromString(txn.args()));
      ASSERT_GT(a.i_ids_size(), 0);  // the generator's packed encoding
      if (a.i_ids(a.i_ids_size() - 1) == scale.items + 1) {
        EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
        EXPECT_TRUE(StartsWith(r.error(), kRollback)) << r.error();
        ++rollbacks;
        continue;
      }
      ++new_orders;
    }
    ASSERT_EQ(r.status(), pb::STATUS_OK) << KindName(req.kind) << ": " << r.error();
    ++committed[req.kind];
    if (req.kind == TxnKind::kPayment) {
      tp::PaymentArgs a;
      ASSERT_TRUE(a.ParseFromString(txn.args()));
      paid += a.amount();
    }
    if (req.kind == TxnKind::kDelivery) {
      tp::DeliveryResult d;
      ASSERT_TRUE(d.ParseFromString(r.result()));
      for (const auto& p : d.delivered()) delivered += p.o_id() != 0;
    }
  }
  for (int k = 0; k < kNumKinds; ++k) EXPECT_GT(committed[static_cast<TxnKind>(k)], 0) << k;
  EXPECT_GT(rollbacks, 0);
  EXPECT_GT(delivered, 0);
  // Consistency: orders counted by D_NEXT_O_ID, money by W_YTD = sum(D_YTD).
  int orders = 0;
  int64_t w_ytd = 0, d_ytd = 0;
  for (uint32_t w = 1; w <= scale.warehouses; ++w) {
    w_ytd += db.Get<WarehouseYtdRow>(WarehouseYtdKey(w)).ytd - 30000000;
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      const DistrictNextRow dist = db.Get<DistrictNextRow>(DistrictNextKey(w, d));
      orders += dist.next_o_id - 1;
      d_ytd += db.Get<DistrictYtdRow>(DistrictYtdKey(w, d)).ytd - 3000000;
      // NEW_ORDER rows: the undelivered orders, the newest ones.
      bool undelivered = false;
      for (int32_t o = 1; o < dist.next_o_id; ++o) {
        const bool has = db.Has(NewOrderKey(w, d, static_cast<uint32_t>(o)));
        EXPECT_TRUE(has || !undelivered) << w << "/" << d << "/" << o << ": a gap in NEW_ORDER";
        undelivered = undelivered || has;
        EXPECT_EQ(db.Get<OrderRow>(OrderKey(w, d, static_cast<uint32_t>(o))).carrier_id == 0, has);
      }
    }
  }
  EXPECT_EQ(orders, new_orders);
  EXPECT_EQ(w_ytd, paid);
  EXPECT_EQ(d_ytd, paid);
  for (const auto& [key, bytes] : static_rows) EXPECT_EQ(db.Raw(key), bytes) << "static row " << key << " changed";
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
