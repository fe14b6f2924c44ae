// The TPC-C input generator: mix parsing and proportions, the input rules
// of clause 2 (ranges, remote and rollback shares, selection by last name),
// the read and write sets of procedures.h for every kind, FromRecon, and the
// last-name index.
#include "workloads/tpcc/generator.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "workloads/tpcc/new_order_lines.h"
#include "workloads/tpcc/procedures.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {
namespace {

namespace tp = pb::tpcc;

std::vector<Key> Keys(const google::protobuf::RepeatedField<uint64_t>& f) { return {f.begin(), f.end()}; }

// New-Order's lines as the generator writes them: one word per line only.
std::vector<tp::OrderLineInput> LinesOf(const tp::NewOrderArgs& a) {
  EXPECT_EQ(a.lines_size(), 0) << "the generator writes the word encoding";
  EXPECT_EQ(a.i_ids_size() + a.supply_w_ids_size() + a.quantities_size(), 0)
      << "the generator writes the word encoding";
  std::vector<tp::OrderLineInput> out(a.line_words_size());
  for (int i = 0; i < a.line_words_size(); ++i) {
    const OrderLine l = OrderLineOfWord(a.line_words(i));
    out[i].set_i_id(l.i_id);
    out[i].set_supply_w_id(l.supply_w_id);
    out[i].set_quantity(l.quantity);
  }
  return out;
}

std::vector<Key> SortedUnique(std::vector<Key> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

GeneratorOptions Options(uint32_t warehouses, const std::string& mix = "full", uint64_t seed = 3) {
  GeneratorOptions o;
  o.scale = Scale::Small(warehouses);
  o.load_seed = 11;
  o.seed = seed;
  o.mix = Mix::Parse(mix).value();
  return o;
}

TEST(TpccMix, Parse) {
  absl::StatusOr<Mix> m = Mix::Parse("full");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->percent, (std::array<double, kNumKinds>{45, 43, 4, 4, 4}));
  m = Mix::Parse("no+payment");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->percent, (std::array<double, kNumKinds>{50, 50, 0, 0, 0}));
  m = Mix::Parse(" 10, 20.5,30,19.5 ,20");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->percent, (std::array<double, kNumKinds>{10, 20.5, 30, 19.5, 20}));
  m = Mix::Parse("0,0,0,0,100");
  ASSERT_TRUE(m.ok());
  for (const char* bad : {"", "bogus", "45,43,4,4", "45,43,4,4,4,0", "50,50,0,0,1", "a,b,c,d,e", "-5,55,50,0,0",
                          "45,43,4,4,", "nan,50,50,0,0", "101,-1,0,0,0"}) {
    EXPECT_FALSE(Mix::Parse(bad).ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(Mix::Parse(bad).status())) << bad;
  }
}

TEST(TpccGenerator, KindNames) {
  EXPECT_STREQ(KindName(TxnKind::kNewOrder), "new_order");
  EXPECT_STREQ(KindName(TxnKind::kPayment), "payment");
  EXPECT_STREQ(KindName(TxnKind::kOrderStatus), "order_status");
  EXPECT_STREQ(KindName(TxnKind::kDelivery), "delivery");
  EXPECT_STREQ(KindName(TxnKind::kStockLevel), "stock_level");
}

TEST(TpccGenerator, MixProportions) {
  Generator gen(Options(2));
  const int n = 100000;
  std::array<int, kNumKinds> count{};
  for (int i = 0; i < n; ++i) ++count[static_cast<int>(gen.Next().kind)];
  const std::array<double, kNumKinds> want = {45, 43, 4, 4, 4};
  for (int k = 0; k < kNumKinds; ++k)
    EXPECT_NEAR(100.0 * count[k] / n, want[k], 1.0) << KindName(static_cast<TxnKind>(k));

  Generator only(Options(2, "no+payment"));
  std::array<int, kNumKinds> c2{};
  for (int i = 0; i < 20000; ++i) ++c2[static_cast<int>(only.Next().kind)];
  EXPECT_NEAR(100.0 * c2[0] / 20000, 50, 1.5);
  EXPECT_EQ(c2[2] + c2[3] + c2[4], 0);
}

TEST(TpccGenerator, SameSeedSameStream) {
  Generator a(Options(3)), b(Options(3)), c(Options(3, "full", 4));
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const Generator::Request x = a.Next(), y = b.Next(), z = c.Next();
    ASSERT_EQ(x.txn.SerializeAsString(), y.txn.SerializeAsString());
    differ += x.txn.SerializeAsString() != z.txn.SerializeAsString();
  }
  EXPECT_GT(differ, 500);
}

// A client submits a txn by moving it out of its request and rebuilds it
// with Redraw for a resubmission: the rebuilt request must equal the first
// (txn bytes, kind and inputs), in any order, without changing the stream.
TEST(TpccGenerator, RedrawRebuildsTheSameRequestAndLeavesTheStreamAlone) {
  Generator gen(Options(3)), twin(Options(3));
  std::vector<Generator::Request> drawn;
  for (int i = 0; i < 500; ++i) {
    drawn.push_back(gen.Next());
    // Redraw an earlier request between draws: the stream goes on as the twin's.
    const Generator::Request& old = drawn[(i * 7919) % drawn.size()];
    const Generator::Request again = gen.Redraw(old.draw);
    ASSERT_EQ(again.txn.SerializeAsString(), old.txn.SerializeAsString()) << "request " << i;
    ASSERT_EQ(again.kind, old.kind);
    ASSERT_EQ(again.recon, old.recon);
    ASSERT_EQ(again.w, old.w);
    ASSERT_EQ(again.d, old.d);
    ASSERT_EQ(again.param, old.param);
    ASSERT_EQ(again.draw, old.draw);
  }
  for (int i = 0; i < 500; ++i) ASSERT_EQ(twin.Next().txn.SerializeAsString(), drawn[i].txn.SerializeAsString());
  EXPECT_EQ(gen.Next().txn.SerializeAsString(), twin.Next().txn.SerializeAsString());
  // Distinct draws have distinct states.
  EXPECT_NE(drawn[0].draw, drawn[1].draw);
}

TEST(TpccGenerator, HomeWarehouses) {
  GeneratorOptions o = Options(8);
  o.home_warehouses = {3, 5};
  Generator gen(o);
  std::set<uint32_t> seen;
  for (int i = 0; i < 2000; ++i) seen.insert(gen.Next().w);
  EXPECT_EQ(seen, (std::set<uint32_t>{3, 5}));
}

TEST(TpccGenerator, NewOrderInputs) {
  for (uint32_t warehouses : {1u, 4u}) {
    GeneratorOptions o = Options(warehouses, "100,0,0,0,0");
    Generator gen(o);
    const Scale& sc = o.scale;
    const int n = 30000;
    int lines = 0, remote = 0, rollbacks = 0, remote_txns = 0;
    std::map<int, int> line_counts;
    for (int i = 0; i < n; ++i) {
      const Generator::Request req = gen.Next();
      ASSERT_EQ(req.kind, TxnKind::kNewOrder);
      ASSERT_FALSE(req.recon);
      ASSERT_EQ(req.txn.type(), kNewOrderType);
      tp::NewOrderArgs a;
      ASSERT_TRUE(a.ParseFromString(req.txn.args()));
      ASSERT_EQ(a.w_id(), req.w);
      ASSERT_GE(a.w_id(), 1u);
      ASSERT_LE(a.w_id(), warehouses);
      ASSERT_GE(a.d_id(), 1u);
      ASSERT_LE(a.d_id(), 10u);
      ASSERT_GE(a.c_id(), 1u);
      ASSERT_LE(a.c_id(), sc.customers_per_district);
      const std::vector<tp::OrderLineInput> lines_of = LinesOf(a);
      const int n_lines = static_cast<int>(lines_of.size());
      ASSERT_GE(n_lines, 5);
      ASSERT_LE(n_lines, 15);
      ++line_counts[n_lines];
      bool any_remote = false;
      for (int l = 0; l < n_lines; ++l) {
        const auto& in = lines_of[l];
        ++lines;
        if (in.i_id() == sc.items + 1) {
          ASSERT_EQ(l, n_lines - 1) << "only the last line has the unused item";
          ++rollbacks;
        } else {
          ASSERT_GE(in.i_id(), 1u);
          ASSERT_LE(in.i_id(), sc.items);
        }
        ASSERT_GE(in.quantity(), 1u);
        ASSERT_LE(in.quantity(), 10u);
        ASSERT_GE(in.supply_w_id(), 1u);
        ASSERT_LE(in.supply_w_id(), warehouses);
        if (in.supply_w_id() != a.w_id()) {
          ++remote;
          any_remote = true;
        }
      }
      remote_txns += any_remote;
      // The sets of procedures.h.
      std::vector<Key> reads = {WarehouseKey(a.w_id()), DistrictKey(a.w_id(), a.d_id()),
                                CustomerKey(a.w_id(), a.d_id(), a.c_id()), DistrictNextKey(a.w_id(), a.d_id())};
      std::vector<Key> writes = {DistrictNextKey(a.w_id(), a.d_id())};
      for (const auto& in : lines_of) {
        reads.push_back(StockKey(in.supply_w_id(), in.i_id()));
        writes.push_back(StockKey(in.supply_w_id(), in.i_id()));
      }
      ASSERT_EQ(Keys(req.txn.read_set()), SortedUnique(reads));
      ASSERT_EQ(Keys(req.txn.write_set()), SortedUnique(writes));
    }
    EXPECT_EQ(line_counts.size(), 11u);
    EXPECT_NEAR(100.0 * rollbacks / n, 1.0, 0.25);
    if (warehouses == 1) {
      EXPECT_EQ(remote, 0);
    } else {
      EXPECT_NEAR(100.0 * remote / lines, 1.0, 0.15);
      EXPECT_NEAR(100.0 * remote_txns / n, 10.0, 1.5);  // ~10 lines each
    }
  }
}

TEST(TpccGenerator, NewOrderItemsAreNonUniform) {
  Generator gen(Options(1, "100,0,0,0,0"));
  std::map<uint32_t, int> hits;
  for (int i = 0; i < 20000; ++i) {
    tp::NewOrderArgs a;
    ASSERT_TRUE(a.ParseFromString(gen.Next().txn.args()));
    for (const auto& in : LinesOf(a)) ++hits[in.i_id()];
  }
  int mx = 0;
  for (const auto& [i, h] : hits) mx = std::max(mx, h);
  EXPECT_GT(mx, 3 * 200000 / 10000);  // NURand: some items far above the uniform ~20 hits
}

TEST(TpccGenerator, PaymentInputs) {
  for (uint32_t warehouses : {1u, 3u}) {
    GeneratorOptions o = Options(warehouses, "0,100,0,0,0");
    Generator gen(o);
    LastNameIndex names(o.scale, LoadConstants(o.load_seed), o.load_seed);
    const int n = 20000;
    int remote = 0, by_name = 0;
    for (int i = 0; i < n; ++i) {
      const Generator::Request req = gen.Next();
      ASSERT_EQ(req.kind, TxnKind::kPayment);
      ASSERT_EQ(req.txn.type(), kPaymentType);
      tp::PaymentArgs a;
      ASSERT_TRUE(a.ParseFromString(req.txn.args()));
      ASSERT_EQ(a.w_id(), req.w);
      ASSERT_GE(a.d_id(), 1u);
      ASSERT_LE(a.d_id(), 10u);
      ASSERT_GE(a.c_d_id(), 1u);
      ASSERT_LE(a.c_d_id(), 10u);
      ASSERT_GE(a.c_id(), 1u);
      ASSERT_LE(a.c_id(), o.scale.customers_per_district);
      ASSERT_GE(a.amount(), 100);
      ASSERT_LE(a.amount(), 500000);
      if (a.c_w_id() != a.w_id()) {
        ++remote;
        ASSERT_LE(a.c_w_id(), warehouses);
      } else {
        ASSERT_EQ(a.c_d_id(), a.d_id());
      }
      if (a.by_last_name()) {
        ++by_name;
        // The customer is the index's pick for its own last name.
        const std::string last =
            CustomerNameOf(o.scale, LoadConstants(o.load_seed), o.load_seed, a.c_w_id(), a.c_d_id(), a.c_id()).last;
        ASSERT_EQ(names.Lookup(a.c_w_id(), a.c_d_id(), last), a.c_id());
      }
      const std::vector<Key> writes = {WarehouseYtdKey(a.w_id()), DistrictYtdKey(a.w_id(), a.d_id()),
                                       CustomerKey(a.c_w_id(), a.c_d_id(), a.c_id())};
      std::vector<Key> reads = writes;
      reads.push_back(WarehouseKey(a.w_id()));
      reads.push_back(DistrictKey(a.w_id(), a.d_id()));
      ASSERT_EQ(Keys(req.txn.read_set()), SortedUnique(reads));
      ASSERT_EQ(Keys(req.txn.write_set()), SortedUnique(writes));
    }
    EXPECT_NEAR(100.0 * by_name / n, 60.0, 1.5);
    if (warehouses == 1) {
      EXPECT_EQ(remote, 0);
    } else {
      EXPECT_NEAR(100.0 * remote / n, 15.0, 1.0);
    }
  }
}

TEST(TpccGenerator, OrderStatusDeliveryAndStockLevelSets) {
  GeneratorOptions o = Options(2, "0,0,34,33,33");
  Generator gen(o);
  int by_name = 0, order_status = 0;
  std::set<uint32_t> carriers, thresholds;
  for (int i = 0; i < 6000; ++i) {
    const Generator::Request req = gen.Next();
    switch (req.kind) {
      case TxnKind::kOrderStatus: {
        ++order_status;
        ASSERT_FALSE(req.recon);
        ASSERT_EQ(req.txn.type(), kOrderStatusType);
        tp::OrderStatusArgs a;
        ASSERT_TRUE(a.ParseFromString(req.txn.args()));
        ASSERT_EQ(a.w_id(), req.w);
        ASSERT_GE(a.c_id(), 1u);
        ASSERT_LE(a.c_id(), o.scale.customers_per_district);
        by_name += a.by_last_name();
        ASSERT_EQ(Keys(req.txn.read_set()),
                  SortedUnique({CustomerKey(a.w_id(), a.d_id(), a.c_id()), DistrictNextKey(a.w_id(), a.d_id())}));
        ASSERT_TRUE(req.txn.write_set().empty());
        break;
      }
      case TxnKind::kDelivery: {
        ASSERT_TRUE(req.recon);
        ASSERT_EQ(req.txn.type(), kReconDeliveryType);
        tp::ReconDeliveryArgs a;
        ASSERT_TRUE(a.ParseFromString(req.txn.args()));
        ASSERT_EQ(a.w_id(), req.w);
        std::vector<Key> reads;
        for (uint32_t d = 1; d <= 10; ++d) reads.push_back(DistrictNextKey(req.w, d));
        ASSERT_EQ(Keys(req.txn.read_set()), SortedUnique(reads));
        ASSERT_TRUE(req.txn.write_set().empty());
        carriers.insert(req.param);
        break;
      }
      case TxnKind::kStockLevel: {
        ASSERT_TRUE(req.recon);
        ASSERT_EQ(req.txn.type(), kReconStockLevelType);
        tp::ReconStockLevelArgs a;
        ASSERT_TRUE(a.ParseFromString(req.txn.args()));
        ASSERT_EQ(a.w_id(), req.w);
        ASSERT_EQ(a.d_id(), req.d);
        ASSERT_EQ(Keys(req.txn.read_set()), std::vector<Key>{DistrictNextKey(req.w, req.d)});
        ASSERT_TRUE(req.txn.write_set().empty());
        thresholds.insert(req.param);
        break;
      }
      default:
        FAIL() << "unexpected kind " << KindName(req.kind);
    }
  }
  EXPECT_NEAR(100.0 * by_name / order_status, 60.0, 4.0);
  EXPECT_EQ(carriers, (std::set<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(*thresholds.begin(), 10u);
  EXPECT_EQ(*thresholds.rbegin(), 20u);
  EXPECT_EQ(thresholds.size(), 11u);
}

// The vertical partitioning of WAREHOUSE and DISTRICT (schema.h): a
// New-Order and a Payment of the same district share no key that either
// writes (D_NEXT_O_ID vs W_YTD / D_YTD), and neither reads a key the other
// writes, except the customer's when both name the same customer.
TEST(TpccGenerator, NewOrderAndPaymentOfADistrictDoNotConflict) {
  Generator gen(Options(2, "no+payment"));
  struct Sets {
    std::set<Key> reads, writes;
    Key customer;  // the customer's key
  };
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Sets>> new_orders, payments;
  for (int i = 0; i < 4000; ++i) {
    const Generator::Request req = gen.Next();
    Sets s{{req.txn.read_set().begin(), req.txn.read_set().end()},
           {req.txn.write_set().begin(), req.txn.write_set().end()}, 0};
    if (req.kind == TxnKind::kNewOrder) {
      tp::NewOrderArgs a;
      ASSERT_TRUE(a.ParseFromString(req.txn.args()));
      s.customer = CustomerKey(a.w_id(), a.d_id(), a.c_id());
      new_orders[{a.w_id(), a.d_id()}].push_back(std::move(s));
    } else {
      ASSERT_EQ(req.kind, TxnKind::kPayment);
      tp::PaymentArgs a;
      ASSERT_TRUE(a.ParseFromString(req.txn.args()));
      s.customer = CustomerKey(a.c_w_id(), a.c_d_id(), a.c_id());
      payments[{a.w_id(), a.d_id()}].push_back(std::move(s));
    }
  }
  // Keys of `writer`'s write set that `other` reads or writes.
  auto clash = [](const Sets& writer, const Sets& other) {
    std::vector<Key> keys;
    for (Key k : writer.writes)
      if (other.reads.count(k) || other.writes.count(k)) keys.push_back(k);
    return keys;
  };
  uint64_t pairs = 0, same_customer = 0;
  ASSERT_EQ(new_orders.size(), 20u);
  for (const auto& [district, nos] : new_orders) {
    ASSERT_FALSE(payments[district].empty());
    for (const Sets& no : nos) {
      for (const Sets& pay : payments[district]) {
        ++pairs;
        std::vector<Key> keys = clash(no, pay);
        for (Key k : clash(pay, no)) keys.push_back(k);
        if (no.customer == pay.customer) {
          ++same_customer;
          for (Key k : keys) ASSERT_EQ(k, no.customer);
        } else {
          ASSERT_TRUE(keys.empty()) << "district " << district.first << "/" << district.second << ": key "
                                    << keys[0] << " of table " << KeyTable(keys[0]);
        }
      }
    }
  }
  EXPECT_GT(pairs, 100000u);
  EXPECT_LT(same_customer, pairs / 50);
}

TEST(TpccGenerator, FromReconBuildsTheRealTxn) {
  Generator gen(Options(2, "0,0,0,50,50"));
  Generator::Request delivery, stock;
  bool have_delivery = false, have_stock = false;
  while (!have_delivery || !have_stock) {
    Generator::Request r = gen.Next();
    if (r.kind == TxnKind::kDelivery && !have_delivery) {
      delivery = r;
      have_delivery = true;
    }
    if (r.kind == TxnKind::kStockLevel && !have_stock) {
      stock = r;
      have_stock = true;
    }
  }

  tp::ReconDeliveryResult dr;
  for (uint32_t d = 1; d <= 10; ++d) {
    tp::DeliveryPlan* p = dr.add_plans();
    p->set_d_id(d);
    if (d % 3 != 0) {  // districts 3, 6, 9 have nothing to deliver
      p->set_o_id(2000 + d);
      p->set_c_id(d * 7);
    }
  }
  absl::StatusOr<pb::Txn> t = gen.FromRecon(delivery, dr.SerializeAsString());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->type(), kDeliveryType);
  tp::DeliveryArgs da;
  ASSERT_TRUE(da.ParseFromString(t->args()));
  EXPECT_EQ(da.w_id(), delivery.w);
  EXPECT_EQ(da.carrier_id(), delivery.param);
  ASSERT_EQ(da.plans_size(), 10);
  EXPECT_EQ(da.plans(3).SerializeAsString(), dr.plans(3).SerializeAsString());
  std::vector<Key> keys;
  for (uint32_t d = 1; d <= 10; ++d) {
    keys.push_back(DistrictNextKey(delivery.w, d));
    if (d % 3 != 0) keys.push_back(CustomerKey(delivery.w, d, d * 7));
  }
  EXPECT_EQ(Keys(t->read_set()), SortedUnique(keys));
  EXPECT_EQ(Keys(t->write_set()), SortedUnique(keys));

  tp::ReconStockLevelResult sr;
  sr.set_next_o_id(3001);
  for (uint32_t i : {4u, 17u, 99u, 5000u}) sr.add_i_ids(i);
  t = gen.FromRecon(stock, sr.SerializeAsString());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->type(), kStockLevelType);
  tp::StockLevelArgs sa;
  ASSERT_TRUE(sa.ParseFromString(t->args()));
  EXPECT_EQ(sa.w_id(), stock.w);
  EXPECT_EQ(sa.d_id(), stock.d);
  EXPECT_EQ(sa.threshold(), stock.param);
  EXPECT_EQ(sa.next_o_id(), 3001u);
  EXPECT_EQ(Keys(t->read_set()),
            SortedUnique({DistrictNextKey(stock.w, stock.d), StockKey(stock.w, 4), StockKey(stock.w, 17),
                          StockKey(stock.w, 99), StockKey(stock.w, 5000)}));
  EXPECT_TRUE(t->write_set().empty());

  // Not a reconnaissance, or not its result.
  Generator no(Options(1, "100,0,0,0,0"));
  EXPECT_FALSE(gen.FromRecon(no.Next(), "").ok());
  EXPECT_FALSE(gen.FromRecon(stock, "\xff\xff\xff").ok());
}

TEST(TpccLastNameIndex, PicksTheMiddleCustomerByFirstName) {
  Scale scale = Scale::Spec(1);  // 3,000 customers over 1,000 names: names repeat
  const NURandC load = LoadConstants(21);
  LastNameIndex index(scale, load, 21);
  for (uint32_t d : {1u, 7u}) {
    std::map<std::string, std::vector<std::pair<std::string, uint32_t>>> by_last;
    for (uint32_t c = 1; c <= scale.customers_per_district; ++c) {
      const CustomerName n = CustomerNameOf(scale, load, 21, 1, d, c);
      by_last[n.last].emplace_back(n.first, c);
    }
    std::set<size_t> sizes;
    for (const auto& [last, customers] : by_last) {
      const uint32_t c = index.Lookup(1, d, last);
      ASSERT_NE(c, 0u) << last;
      ASSERT_EQ(CustomerNameOf(scale, load, 21, 1, d, c).last, last);
      const std::string first = CustomerNameOf(scale, load, 21, 1, d, c).first;
      // Position ceil(n / 2), 1-based, in the order of first names.
      size_t before = 0;
      for (const auto& [f, id] : customers) before += f < first || (f == first && id < c);
      const size_t n = customers.size();
      ASSERT_EQ(before + 1, (n + 1) / 2) << last << " with " << n << " customers";
      sizes.insert(n);
    }
    EXPECT_GT(sizes.size(), 3u);  // singles, pairs, and larger groups were all checked
    EXPECT_TRUE(sizes.count(1) && sizes.count(2) && sizes.count(3));
  }
  EXPECT_EQ(index.Lookup(1, 1, "NOSUCHNAME"), 0u);
  // Customers 1..1000 carry the names 0..999 in order (clause 4.3.3.1).
  EXPECT_EQ(CustomerNameOf(scale, load, 21, 1, 1, index.Lookup(1, 1, LastName(0))).last, LastName(0));
  // By number (the generator's way): the same customer as by the name's string.
  for (uint32_t d : {1u, 7u})
    for (uint32_t num = 0; num < scale.LastNameRange(); ++num)
      ASSERT_EQ(index.LookupNumber(1, d, num), index.Lookup(1, d, LastName(num))) << d << " " << num;
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
