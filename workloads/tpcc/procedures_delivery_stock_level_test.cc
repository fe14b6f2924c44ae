// The dependent txns, run after their reconnaissance query, against TinyDb
// (procedures_test_util.h): Delivery (the oldest order of each district, a
// stale plan's OLLP mismatch), Stock-Level (the recon's window, a missing
// stock row), and the generator's txns end to end (recon, then the real txn).
#include "workloads/tpcc/procedures.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "workloads/tpcc/generator.h"
#include "workloads/tpcc/procedures_test_util.h"
#include "workloads/tpcc/random.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {
namespace {

// ---- Txn builders of the dependent txns and their reconnaissance ----

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
      ASSERT_GT(a.line_words_size(), 0);  // the generator's encoding
      if (OrderLineOfWord(a.line_words(a.line_words_size() - 1)).i_id == scale.items + 1) {
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

}  // namespace
}  // namespace tpcc
}  // namespace detdb
