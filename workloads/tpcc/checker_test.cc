// The TPC-C consistency checker: a fresh load passes (whole, split over
// partitions, partition by partition), consistent changes made the way the
// txns make them pass, and each kind of corruption is reported under its
// condition.
#include "workloads/tpcc/checker.h"

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "workloads/tpcc/loader.h"

namespace detdb {
namespace tpcc {
namespace {

constexpr uint64_t kSeed = 5;

// True if some failure names condition `condition`.
bool Reports(const CheckReport& r, int condition) {
  const std::string prefix = "condition " + std::to_string(condition) + " (";
  for (const std::string& f : r.failures)
    if (f.find(prefix) != std::string::npos) return true;
  return false;
}
bool Reports(const CheckReport& r, const std::string& text) {
  for (const std::string& f : r.failures)
    if (f.find(text) != std::string::npos) return true;
  return false;
}
std::string Failures(const CheckReport& r) {
  std::string s;
  for (const std::string& f : r.failures) s += f + "\n";
  return s;
}

template <typename Row>
Row Read(const PartitionStore& store, Key k) {
  Row row{};
  const Record* r = store.Get(k);
  EXPECT_NE(r, nullptr) << "no row " << k;
  if (r != nullptr) std::memcpy(&row, r->value(), sizeof(Row));
  return row;
}
template <typename Row>
void Write(PartitionStore* store, Key k, const Row& row) {
  Record* r = store->Insert(k);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(store->GetTable(KeyTable(k))->value_size(), sizeof(Row));
  std::memcpy(r->value(), &row, sizeof(Row));
}
template <typename Row>
void Change(PartitionStore* store, Key k, const std::function<void(Row*)>& f) {
  Row row = Read<Row>(*store, k);
  f(&row);
  Write(store, k, row);
}

class TpccChecker : public ::testing::Test {
 protected:
  // One partition, Small(2): warehouses 1 and 2.
  void SetUp() override {
    ASSERT_TRUE(LoadPartition(&store_, WarehousePartitioner(1), 0, scale_, kSeed).ok());
  }
  CheckReport Check() { return CheckConsistency({&store_}, scale_, true); }

  // The first (or, reverse, last) key of [lo, hi] in an ordered table; 0 if none.
  Key Edge(Key lo, Key hi, bool reverse) {
    Key found = 0;
    store_.GetTable(KeyTable(lo))->Scan(lo, hi, reverse, [&](Key k, const Record*) {
      found = k;
      return false;
    });
    return found;
  }

  // Delivers the oldest new order of (w, d) as Delivery does.
  void Deliver(uint32_t w, uint32_t d, int32_t carrier, int64_t date) {
    const Key first = Edge(FirstNewOrderKey(w, d), LastNewOrderKey(w, d), false);
    ASSERT_NE(first, 0u);
    const uint32_t o = static_cast<uint32_t>(KeyRow(first) & 0xFFFFFFFFu);
    ASSERT_TRUE(store_.Erase(NewOrderKey(w, d, o)));
    OrderRow order = Read<OrderRow>(store_, OrderKey(w, d, o));
    order.carrier_id = carrier;
    Write(&store_, OrderKey(w, d, o), order);
    int64_t total = 0;
    for (uint32_t ol = 1; ol <= static_cast<uint32_t>(order.ol_cnt); ++ol) {
      OrderLineRow line = Read<OrderLineRow>(store_, OrderLineKey(w, d, o, ol));
      line.delivery_d = date;
      total += line.amount;
      Write(&store_, OrderLineKey(w, d, o, ol), line);
    }
    Change<CustomerRow>(&store_, CustomerKey(w, d, order.c_id), [&](CustomerRow* c) {
      c->balance += total;
      ++c->delivery_cnt;
    });
  }

  // A payment of `amount` at (w, d) by customer (c_w, c_d, c), as Payment does.
  void Pay(uint32_t w, uint32_t d, uint32_t c_w, uint32_t c_d, uint32_t c, int64_t amount) {
    Change<WarehouseYtdRow>(&store_, WarehouseYtdKey(w), [&](WarehouseYtdRow* r) { r->ytd += amount; });
    Change<DistrictYtdRow>(&store_, DistrictYtdKey(w, d), [&](DistrictYtdRow* r) { r->ytd += amount; });
    Change<CustomerRow>(&store_, CustomerKey(c_w, c_d, c), [&](CustomerRow* r) {
      r->balance -= amount;
      r->ytd_payment += amount;
      ++r->payment_cnt;
    });
    const Key last = Edge(FirstHistoryKey(w, d), LastHistoryKey(w, d), true);
    const uint64_t seq = last == 0 ? 0 : (KeyRow(last) & 0xFFFFFFFFu) + 1;
    HistoryRow h{};
    h.c_id = static_cast<int32_t>(c);
    h.c_d_id = static_cast<int32_t>(c_d);
    h.c_w_id = static_cast<int32_t>(c_w);
    h.d_id = static_cast<int32_t>(d);
    h.w_id = static_cast<int32_t>(w);
    h.date = 99;
    h.amount = amount;
    Write(&store_, HistoryKey(w, d, seq), h);
  }

  // A new order of customer c at (w, d) with `lines` lines, as New-Order does.
  void NewOrder(uint32_t w, uint32_t d, uint32_t c, uint32_t lines) {
    DistrictNextRow next = Read<DistrictNextRow>(store_, DistrictNextKey(w, d));
    const uint32_t o = static_cast<uint32_t>(next.next_o_id++);
    Write(&store_, DistrictNextKey(w, d), next);
    Write(&store_, OrderKey(w, d, o),
          OrderRow{.c_id = static_cast<int32_t>(c), .entry_d = 77, .carrier_id = 0,
                   .ol_cnt = static_cast<int32_t>(lines), .all_local = 1});
    Write(&store_, NewOrderKey(w, d, o),
          NewOrderRow{.o_id = static_cast<int32_t>(o), .d_id = static_cast<int32_t>(d),
                      .w_id = static_cast<int32_t>(w), .unused = 0});
    for (uint32_t ol = 1; ol <= lines; ++ol) {
      OrderLineRow line{};
      line.i_id = 1;
      line.supply_w_id = static_cast<int32_t>(w);
      line.quantity = 3;
      line.amount = 1234;
      Write(&store_, OrderLineKey(w, d, o, ol), line);
    }
    Write(&store_, CustomerLastOrderKey(w, d, c), OrderIdRow{.o_id = static_cast<int32_t>(o), .unused = 0});
  }

  const Scale scale_ = Scale::Small(2);
  PartitionStore store_;
};

TEST_F(TpccChecker, FreshLoadPasses) {
  const CheckReport r = Check();
  EXPECT_TRUE(r.ok) << Failures(r);
  EXPECT_TRUE(r.failures.empty());
  EXPECT_EQ(r.conditions, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12}));
  EXPECT_EQ(r.warehouses, 2u);
  EXPECT_EQ(r.orders, 2u * 10 * 300);
  EXPECT_EQ(r.new_orders, 2u * 10 * 90);
  EXPECT_EQ(r.history, 2u * 10 * 300);
  EXPECT_EQ(r.order_lines, store_.GetTable(kOrderLine)->size());

  const CheckReport local = CheckConsistency({&store_}, scale_, false);
  EXPECT_TRUE(local.ok) << Failures(local);
  EXPECT_EQ(local.conditions, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(TpccCheckerPartitions, ThreePartitionsTogetherAndAlone) {
  const Scale scale = Scale::Small(3);
  const WarehousePartitioner partitioner(3);
  PartitionStore stores[3];
  for (PartitionId p = 0; p < 3; ++p) ASSERT_TRUE(LoadPartition(&stores[p], partitioner, p, scale, kSeed).ok());

  const CheckReport all = CheckConsistency({&stores[0], &stores[1], &stores[2]}, scale, true);
  EXPECT_TRUE(all.ok) << Failures(all);
  EXPECT_EQ(all.warehouses, 3u);
  EXPECT_EQ(all.orders, 3u * 10 * 300);
  for (PartitionId p = 0; p < 3; ++p) {
    const CheckReport one = CheckConsistency({&stores[p]}, scale, false);
    EXPECT_TRUE(one.ok) << "partition " << p << ":\n" << Failures(one);
    EXPECT_EQ(one.warehouses, 1u);
    EXPECT_EQ(one.history, 10u * 300);
  }
  // Claiming every warehouse with one store missing is caught.
  const CheckReport partial = CheckConsistency({&stores[0], &stores[2]}, scale, true);
  EXPECT_FALSE(partial.ok);
  EXPECT_TRUE(Reports(partial, "warehouses missing")) << Failures(partial);
}

TEST_F(TpccChecker, TxnLikeChangesKeepConsistency) {
  NewOrder(1, 4, 17, 7);
  NewOrder(2, 10, 300, 15);
  Deliver(1, 4, 3, 100);
  Deliver(2, 1, 9, 101);
  Pay(1, 2, 1, 2, 5, 12345);
  Pay(1, 3, 2, 7, 44, 500000);  // remote customer
  for (int i = 0; i < 90; ++i) Deliver(2, 5, 1, 200 + i);  // the district runs out of new orders
  NewOrder(2, 5, 3, 5);
  const CheckReport r = Check();
  EXPECT_TRUE(r.ok) << Failures(r);
  EXPECT_EQ(r.orders, 2u * 10 * 300 + 3);
  EXPECT_EQ(r.new_orders, 2u * 10 * 90 + 3 - 92);
  EXPECT_EQ(r.history, 2u * 10 * 300 + 2);
  // Without the other warehouse's stores, 10 and 12 are not checked: the
  // remote payment is fine for 1-9 either way.
  EXPECT_TRUE(CheckConsistency({&store_}, scale_, false).ok);
}

TEST_F(TpccChecker, Condition1And9DistrictYtd) {
  Change<DistrictYtdRow>(&store_, DistrictYtdKey(1, 3), [](DistrictYtdRow* r) { r->ytd += 1; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 1)) << Failures(r);
  EXPECT_TRUE(Reports(r, 9)) << Failures(r);
  EXPECT_TRUE(Reports(r, "(w 1, d 3)")) << Failures(r);
  EXPECT_FALSE(Reports(r, 8)) << Failures(r);
  EXPECT_FALSE(Reports(r, 2)) << Failures(r);
}

TEST_F(TpccChecker, Condition2NextOrderId) {
  Change<DistrictNextRow>(&store_, DistrictNextKey(2, 6), [](DistrictNextRow* r) { r->next_o_id += 1; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 2)) << Failures(r);
  EXPECT_TRUE(Reports(r, "(w 2, d 6)")) << Failures(r);
}

TEST_F(TpccChecker, Condition3And5MissingNewOrder) {
  ASSERT_TRUE(store_.Erase(NewOrderKey(1, 2, 250)));  // new orders are 211..300
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 3)) << Failures(r);
  EXPECT_TRUE(Reports(r, 5)) << Failures(r);
  EXPECT_FALSE(Reports(r, 2)) << Failures(r);
  EXPECT_FALSE(Reports(r, 4)) << Failures(r);
}

TEST_F(TpccChecker, Condition4And6OrderLineCount) {
  Change<OrderRow>(&store_, OrderKey(2, 9, 123), [](OrderRow* o) { o->ol_cnt = o->ol_cnt == 5 ? 6 : 5; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 4)) << Failures(r);
  EXPECT_TRUE(Reports(r, 6)) << Failures(r);
  EXPECT_TRUE(Reports(r, "order 123")) << Failures(r);
  EXPECT_FALSE(Reports(r, 7)) << Failures(r);
}

TEST_F(TpccChecker, Condition5CarrierWithNewOrder) {
  Change<OrderRow>(&store_, OrderKey(1, 1, 299), [](OrderRow* o) { o->carrier_id = 4; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 5)) << Failures(r);
  EXPECT_TRUE(Reports(r, 7)) << Failures(r);  // its lines have no delivery date
}

TEST_F(TpccChecker, Condition7DeliveryDate) {
  Change<OrderLineRow>(&store_, OrderLineKey(1, 7, 260, 2), [](OrderLineRow* l) { l->delivery_d = 55; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 7)) << Failures(r);
  EXPECT_TRUE(Reports(r, "order 260 line 2")) << Failures(r);
  EXPECT_FALSE(Reports(r, 5)) << Failures(r);
  EXPECT_FALSE(Reports(r, 6)) << Failures(r);
}

TEST_F(TpccChecker, Conditions8To10HistoryAmount) {
  Change<HistoryRow>(&store_, HistoryKey(2, 4, 10), [](HistoryRow* h) { h->amount += 250; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 8)) << Failures(r);
  EXPECT_TRUE(Reports(r, 9)) << Failures(r);
  EXPECT_TRUE(Reports(r, 10)) << Failures(r);
  EXPECT_FALSE(Reports(r, 1)) << Failures(r);
  EXPECT_FALSE(Reports(r, 12)) << Failures(r);

  const CheckReport local = CheckConsistency({&store_}, scale_, false);
  EXPECT_TRUE(Reports(local, 8) && Reports(local, 9));
  EXPECT_FALSE(Reports(local, 10)) << "10 needs every warehouse";
}

TEST_F(TpccChecker, Conditions10And12Balance) {
  Change<CustomerRow>(&store_, CustomerKey(1, 5, 77), [](CustomerRow* c) { c->balance -= 1; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, 10)) << Failures(r);
  EXPECT_TRUE(Reports(r, 12)) << Failures(r);
  EXPECT_TRUE(Reports(r, "(w 1, d 5, c 77)")) << Failures(r);
  EXPECT_TRUE(CheckConsistency({&store_}, scale_, false).ok);

  // A delivered line's amount changed: sum(OL_AMOUNT) no longer matches.
  PartitionStore other;
  ASSERT_TRUE(LoadPartition(&other, WarehousePartitioner(1), 0, scale_, kSeed).ok());
  Change<OrderLineRow>(&other, OrderLineKey(2, 2, 5, 1), [](OrderLineRow* l) { l->amount = 10; });
  const CheckReport r2 = CheckConsistency({&other}, scale_, true);
  EXPECT_TRUE(Reports(r2, 10) && Reports(r2, 12)) << Failures(r2);
}

TEST_F(TpccChecker, IndexTableAndHistoryKeys) {
  Change<OrderIdRow>(&store_, CustomerLastOrderKey(2, 3, 9), [](OrderIdRow* r) { r->o_id += 1; });
  ASSERT_TRUE(store_.Erase(CustomerLastOrderKey(2, 3, 10)));
  // The district's last HISTORY row moved up by 5: the same rows and
  // amounts, a gap in the keys.
  const Key last = HistoryKey(1, 1, scale_.customers_per_district - 1);
  const HistoryRow h = Read<HistoryRow>(store_, last);
  ASSERT_TRUE(store_.Erase(last));
  Write(&store_, HistoryKey(1, 1, scale_.customers_per_district + 4), h);
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, "index CUSTOMER_LAST_ORDER (w 2, d 3, c 9)")) << Failures(r);
  EXPECT_TRUE(Reports(r, "index CUSTOMER_LAST_ORDER (w 2, d 3, c 10)")) << Failures(r);
  EXPECT_TRUE(Reports(r, "HISTORY keys (w 1, d 1)")) << Failures(r);
  for (int c = 1; c <= 12; ++c) EXPECT_FALSE(Reports(r, c)) << Failures(r);
}

TEST_F(TpccChecker, FailuresAreCappedButAllCount) {
  for (uint32_t o = 1; o <= 100; ++o)
    Change<OrderRow>(&store_, OrderKey(1, 1, o), [](OrderRow* r) { r->ol_cnt = 20; });
  const CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failures.size(), 20u);
}

TEST_F(TpccChecker, MissingRowsAndTables) {
  ASSERT_TRUE(store_.Erase(DistrictKey(2, 10)));
  CheckReport r = Check();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, "no DISTRICT 10")) << Failures(r);

  // The vertical parts of WAREHOUSE and DISTRICT: each missing row is
  // reported, and the conditions that need it are not (falsely) failed.
  PartitionStore other;
  ASSERT_TRUE(LoadPartition(&other, WarehousePartitioner(1), 0, scale_, kSeed).ok());
  ASSERT_TRUE(other.Erase(WarehouseYtdKey(1)));
  ASSERT_TRUE(other.Erase(DistrictYtdKey(2, 4)));
  ASSERT_TRUE(other.Erase(DistrictNextKey(2, 7)));
  r = CheckConsistency({&other}, scale_, true);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, "warehouse 1 has no WAREHOUSE_YTD row")) << Failures(r);
  EXPECT_TRUE(Reports(r, "warehouse 2 has no DISTRICT_YTD 4")) << Failures(r);
  EXPECT_TRUE(Reports(r, "warehouse 2 has no DISTRICT_NEXT 7")) << Failures(r);
  EXPECT_FALSE(Reports(r, "no DISTRICT ")) << Failures(r);
  for (int c = 1; c <= 12; ++c) EXPECT_FALSE(Reports(r, c)) << Failures(r);
  EXPECT_EQ(r.failures.size(), 3u) << Failures(r);

  PartitionStore empty;
  r = CheckConsistency({&empty}, scale_, false);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(Reports(r, "missing")) << Failures(r);
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
