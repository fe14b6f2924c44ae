// The New-Order, Payment and Order-Status procedures against TinyDb
// (procedures_test_util.h): New-Order's stock rule, amounts and totals,
// all three encodings of its lines; Payment's balances and HISTORY; Order-Status;
// and the deterministic aborts that leave no trace (rollback, undeclared
// keys, malformed lines, bad arguments).
#include "workloads/tpcc/procedures.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "workloads/tpcc/procedures_test_util.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {
namespace {

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

TEST(TpccProcedures, NewOrderReadsAllThreeEncodingsOfItsLines) {
  // The same New-Orders, lines as words in one database, as packed arrays in
  // another and as sub-messages in the third: equal results and equal state.
  const LineEncoding encodings[] = {LineEncoding::kWords, LineEncoding::kArrays, LineEncoding::kNested};
  TinyDb dbs[3] = {TinyDb(1), TinyDb(1), TinyDb(1)};
  for (TinyDb& db : dbs) {
    FillItems(&db);
    FillOneWarehouse(&db, 1);
  }
  // The third rolls back: its last item is unused (clause 2.4.1.4).
  const uint32_t unused = 11;  // FillItems adds items 1..10
  const std::vector<std::vector<Line>> orders = {{{1, 1, 5}, {2, 1, 8}, {3, 1, 2}},
                                                 {{2, 1, 10}, {2, 1, 1}},
                                                 {{1, 1, 3}, {unused, 1, 1}},
                                                 {{4, 1, 3}, {5, 1, 9}, {1, 1, 1}, {6, 1, 4}}};
  for (size_t i = 0; i < orders.size(); ++i) {
    pb::TxnResult r[3];
    for (int e = 0; e < 3; ++e) r[e] = dbs[e].Run(NewOrderTxn(&dbs[e], 1, 3, 2, orders[i], {}, encodings[e]));
    if (i == 2) {
      EXPECT_EQ(r[0].status(), pb::STATUS_ABORTED);
      EXPECT_TRUE(StartsWith(r[0].error(), kRollback)) << r[0].error();
    } else {
      ASSERT_EQ(r[0].status(), pb::STATUS_OK) << r[0].error();
    }
    for (int e = 1; e < 3; ++e) {
      EXPECT_EQ(r[0].status(), r[e].status()) << e;
      EXPECT_EQ(r[0].error(), r[e].error()) << e;
      EXPECT_EQ(r[0].result(), r[e].result()) << e;
    }
  }
  EXPECT_EQ(dbs[0].Digests(), dbs[1].Digests());
  EXPECT_EQ(dbs[0].Digests(), dbs[2].Digests());
}

TEST_F(ProceduresTest, NewOrderRefusesMalformedLines) {
  const std::vector<uint64_t> before = db_.Digests();
  // Packed arrays of unequal length.
  pb::Txn t = NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}, {2, 1, 5}}, {}, LineEncoding::kArrays);
  tp::NewOrderArgs a;
  ASSERT_TRUE(a.ParseFromString(t.args()));
  a.mutable_quantities()->RemoveLast();
  t.set_args(a.SerializeAsString());
  pb::TxnResult r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("2 item ids, 2 supply warehouses and 1 quantities"), std::string::npos) << r.error();
  // Two encodings at once.
  t = NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 5}});
  ASSERT_TRUE(a.ParseFromString(t.args()));
  auto* in = a.add_lines();
  in->set_i_id(1);
  in->set_supply_w_id(1);
  in->set_quantity(5);
  t.set_args(a.SerializeAsString());
  r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("more than one encoding"), std::string::npos) << r.error();
  // No lines, 16 lines, a bad line (new_order_lines_test.cc has every case).
  r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, {}));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("with 0 lines"), std::string::npos) << r.error();
  r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, std::vector<Line>(16, Line{1, 1, 1})));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("with 16 lines"), std::string::npos) << r.error();
  r = db_.Run(NewOrderTxn(&db_, 1, 1, 1, {{1, 1, 11}}, {}, LineEncoding::kNested));
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("bad New-Order line"), std::string::npos) << r.error();
  EXPECT_EQ(db_.Digests(), before);
}

// New-Order and Payment parse small args into a message each worker
// thread reuses and oversized ones into their own (procedures.cc,
// kReusedArgsBytes): an oversized txn is refused on its merits, and the
// normal txns on either side of it run as ever; an oversized valid one
// runs too.
TEST_F(ProceduresTest, OversizedArgsBesideTheReusedMessages) {
  Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 2, 1, {{1, 1, 5}, {2, 1, 8}})));
  pb::Txn t = NewOrderTxn(&db_, 1, 2, 1, std::vector<Line>(2000, Line{1, 1, 1}), {}, LineEncoding::kArrays);
  ASSERT_GT(t.args().size(), 4096u);
  pb::TxnResult r = db_.Run(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("with 2000 lines"), std::string::npos) << r.error();
  // A Payment with an unknown field of 5000 bytes (field 100, length-
  // delimited; proto3 keeps unknown fields): oversized, yet valid.
  pb::Txn p = PaymentTxn(&db_, 1, 2, 1, 2, 1, 100);
  p.mutable_args()->append("\xa2\x06\x88\x27");  // tag (100 << 3 | 2), then length 5000
  p.mutable_args()->append(5000, 'x');
  ASSERT_GT(p.args().size(), 4096u);
  Ok<tp::PaymentResult>(db_.Run(p));
  const auto no = Ok<tp::NewOrderResult>(db_.Run(NewOrderTxn(&db_, 1, 2, 1, {{3, 1, 2}})));
  EXPECT_EQ(no.o_id(), 2u);
  ASSERT_EQ(no.s_quantity_size(), 1);
  EXPECT_EQ(no.brand_generic().size(), 1u);
  Ok<tp::PaymentResult>(db_.Run(PaymentTxn(&db_, 1, 2, 1, 2, 1, 100)));
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

}  // namespace
}  // namespace tpcc
}  // namespace detdb
