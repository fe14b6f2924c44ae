// The TPC-C loader: cardinalities of clause 4.3 (at the spec's scale and
// shrunk), the split of a database over partitions by warehouse with ITEM
// on every partition, the row contents the txns and the checker rely on,
// the index tables, and reproducibility from the seed.
#include "workloads/tpcc/loader.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "glog/logging.h"
#include "workloads/tpcc/random.h"

namespace detdb {
namespace tpcc {
namespace {

constexpr uint64_t kSeed = 42;

uint64_t Rows(const PartitionStore& store, uint32_t table) {
  const Table* t = store.GetTable(table);
  return t == nullptr ? 0 : t->size();
}

template <typename Row>
Row Read(const PartitionStore& store, Key k) {
  const Record* r = store.Get(k);
  CHECK(r != nullptr) << "no row " << k;
  Row row;
  CHECK(Parse(std::string_view(r->value(), store.GetTable(KeyTable(k))->value_size()), &row));
  return row;
}

// Calls f(key, row) for every row of a table, in key order.
template <typename Row, typename F>
void ForEach(const PartitionStore& store, uint32_t table, F f) {
  store.GetTable(table)->ForEachInKeyOrder([&](const Record& r) {
    Row row;
    std::memcpy(&row, r.value(), sizeof(Row));
    f(r.key, row);
  });
}

// The rows a load of `warehouses` warehouses at `scale` puts in each table.
void ExpectCounts(const PartitionStore& store, const Scale& scale, uint64_t warehouses) {
  const uint64_t districts = warehouses * kDistrictsPerWarehouse;
  const uint64_t customers = districts * scale.customers_per_district;
  EXPECT_EQ(Rows(store, kWarehouse), warehouses);
  EXPECT_EQ(Rows(store, kWarehouseYtd), warehouses);
  EXPECT_EQ(Rows(store, kDistrict), districts);
  EXPECT_EQ(Rows(store, kDistrictYtd), districts);
  EXPECT_EQ(Rows(store, kDistrictNext), districts);
  EXPECT_EQ(Rows(store, kCustomer), customers);
  EXPECT_EQ(Rows(store, kHistory), customers);
  EXPECT_EQ(Rows(store, kOrder), districts * scale.orders_per_district);
  EXPECT_EQ(Rows(store, kNewOrder), districts * scale.new_orders_per_district);
  EXPECT_GE(Rows(store, kOrderLine), 5 * Rows(store, kOrder));
  EXPECT_LE(Rows(store, kOrderLine), 15 * Rows(store, kOrder));
  EXPECT_EQ(Rows(store, kItem), scale.items);
  EXPECT_EQ(Rows(store, kStock), warehouses * scale.items);
  EXPECT_EQ(Rows(store, kCustomerLastOrder), customers);
  for (uint32_t id : store.table_ids()) {
    ASSERT_NE(store.GetTable(id), nullptr);
    EXPECT_EQ(store.GetTable(id)->ordered(), IsOrdered(id)) << "table " << id;
  }
  uint64_t ol_cnt = 0;
  if (store.GetTable(kOrder) != nullptr)
    ForEach<OrderRow>(store, kOrder, [&](Key, const OrderRow& o) { ol_cnt += o.ol_cnt; });
  EXPECT_EQ(Rows(store, kOrderLine), ol_cnt);
}

TEST(TpccLoader, SmallOnOnePartition) {
  const Scale scale = Scale::Small(2);
  PartitionStore store;
  ASSERT_TRUE(LoadPartition(&store, WarehousePartitioner(1), 0, scale, kSeed).ok());
  ExpectCounts(store, scale, 2);
  EXPECT_EQ(store.table_ids(), (std::vector<uint32_t>{kWarehouse, kDistrict, kCustomer, kHistory, kNewOrder,
                                                      kOrder, kOrderLine, kItem, kStock, kCustomerLastOrder,
                                                      kWarehouseYtd, kDistrictYtd, kDistrictNext}));
}

TEST(TpccLoader, SplitByWarehouseWithItemsEverywhere) {
  const Scale scale = Scale::Small(2);
  const WarehousePartitioner partitioner(2);
  PartitionStore whole, parts[2];
  ASSERT_TRUE(LoadPartition(&whole, WarehousePartitioner(1), 0, scale, kSeed).ok());
  for (PartitionId p = 0; p < 2; ++p) {
    ASSERT_TRUE(LoadPartition(&parts[p], partitioner, p, scale, kSeed).ok());
    ExpectCounts(parts[p], scale, 1);
    EXPECT_EQ(WarehousesOf(partitioner, p, scale), std::vector<uint32_t>{p + 1});
  }
  // Every row of a partition is its own (ITEM: replicated) and equal to the
  // same row of the one-partition load: partitions load independently.
  uint64_t rows = 0;
  for (PartitionId p = 0; p < 2; ++p) {
    for (uint32_t id : parts[p].table_ids()) {
      const size_t value_size = parts[p].GetTable(id)->value_size();
      parts[p].GetTable(id)->ForEachInKeyOrder([&](const Record& r) {
        if (id != kItem) {
          ASSERT_EQ(partitioner.PartitionOf(r.key), p) << "key " << r.key;
        }
        const Record* same = whole.Get(r.key);
        ASSERT_NE(same, nullptr) << "key " << r.key;
        ASSERT_EQ(std::memcmp(same->value(), r.value(), value_size), 0) << "key " << r.key;
        ++rows;
      });
    }
  }
  EXPECT_EQ(rows, whole.size() + whole.GetTable(kItem)->size());
  EXPECT_EQ(parts[0].GetTable(kItem)->size(), scale.items);
}

TEST(TpccLoader, PartitionWithoutWarehousesHoldsItems) {
  const Scale scale = Scale::Small(1);
  PartitionStore store;
  ASSERT_TRUE(LoadPartition(&store, WarehousePartitioner(3), 2, scale, kSeed).ok());
  EXPECT_TRUE(WarehousesOf(WarehousePartitioner(3), 2, scale).empty());
  EXPECT_EQ(Rows(store, kItem), scale.items);
  EXPECT_EQ(store.size(), scale.items);
  EXPECT_EQ(store.table_ids().size(), 13u);
}

// A fixed-width text field reads up to its first NUL, or whole when full.
TEST(TpccSchema, FieldsRoundTripAtEveryLength) {
  char f[8];
  for (size_t n = 0; n <= sizeof(f) + 2; ++n) {
    const std::string s(n, 'x');
    SetField(f, s);
    EXPECT_EQ(GetField(f), s.substr(0, sizeof(f))) << n;
  }
  const char full[4] = {'a', 'b', 'c', 'd'};  // no NUL at all
  EXPECT_EQ(GetField(full), "abcd");
  const char inner[4] = {'a', '\0', 'c', 'd'};  // bytes after the NUL are not text
  EXPECT_EQ(GetField(inner), "a");
}

// FieldHasOriginal answers as a search of GetField's text does: "ORIGINAL"
// at every position of fields of several widths (across the SSE2 path's
// 16-byte chunks and its tail), cut by a NUL before, inside or after it,
// beside near misses ('O's, "ORIGINA"), with and without text after a NUL.
template <size_t N>
void CheckFieldHasOriginal(Rng* rng) {
  const std::string_view kAlphabet = "OORIGINALabcxyz";
  for (int round = 0; round < 3000; ++round) {
    char f[N];
    for (char& ch : f) ch = kAlphabet[rng->Uniform(0, static_cast<int64_t>(kAlphabet.size()) - 1)];
    if constexpr (N >= 8) {
      if (rng->Uniform(0, 1) == 0) {
        const size_t at = static_cast<size_t>(rng->Uniform(0, N - 8));
        std::memcpy(f + at, rng->Uniform(0, 3) == 0 ? "ORIGINA_" : "ORIGINAL", 8);
      }
    }
    if (rng->Uniform(0, 2) == 0) f[rng->Uniform(0, N - 1)] = '\0';
    const bool want = GetField(f).find("ORIGINAL") != std::string_view::npos;
    ASSERT_EQ(FieldHasOriginal(f), want) << "width " << N << ": " << std::string_view(f, N);
  }
}

TEST(TpccSchema, FieldHasOriginalAgreesWithASearchOfTheText) {
  Rng rng(7);
  CheckFieldHasOriginal<2>(&rng);
  CheckFieldHasOriginal<7>(&rng);
  CheckFieldHasOriginal<8>(&rng);
  CheckFieldHasOriginal<15>(&rng);
  CheckFieldHasOriginal<16>(&rng);
  CheckFieldHasOriginal<17>(&rng);
  CheckFieldHasOriginal<23>(&rng);
  CheckFieldHasOriginal<24>(&rng);
  CheckFieldHasOriginal<31>(&rng);
  CheckFieldHasOriginal<39>(&rng);
  CheckFieldHasOriginal<50>(&rng);  // I_DATA, S_DATA
  CheckFieldHasOriginal<56>(&rng);
  char exact[50];
  std::memset(exact, 'x', sizeof(exact));
  std::memcpy(exact + 42, "ORIGINAL", 8);  // the last place it fits, no NUL
  EXPECT_TRUE(FieldHasOriginal(exact));
  exact[45] = '\0';
  EXPECT_FALSE(FieldHasOriginal(exact));
  char none[50] = {};
  EXPECT_FALSE(FieldHasOriginal(none));
}

TEST(TpccLoader, WarehousesOf) {
  const WarehousePartitioner partitioner(3);
  const Scale scale = Scale::Small(7);
  EXPECT_EQ(WarehousesOf(partitioner, 0, scale), (std::vector<uint32_t>{1, 4, 7}));
  EXPECT_EQ(WarehousesOf(partitioner, 1, scale), (std::vector<uint32_t>{2, 5}));
  EXPECT_EQ(WarehousesOf(partitioner, 2, scale), (std::vector<uint32_t>{3, 6}));
  EXPECT_TRUE(WarehousesOf(partitioner, 3, scale).empty());
}

// One load at the spec's scale, shared by the tests that inspect it.
class TpccLoaderSpec : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    store_ = new PartitionStore;
    const auto start = std::chrono::steady_clock::now();
    const absl::Status s = LoadPartition(store_, WarehousePartitioner(1), 0, Scale::Spec(1), kSeed);
    CHECK(s.ok()) << s;
    LOG(INFO) << "loaded Spec(1) in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s, "
              << store_->size() << " rows, " << (store_->memory_bytes() >> 20) << " MiB";
  }
  static void TearDownTestSuite() {
    delete store_;
    store_ = nullptr;
  }
  static PartitionStore* store_;
};
PartitionStore* TpccLoaderSpec::store_ = nullptr;

TEST_F(TpccLoaderSpec, Cardinalities) {
  const PartitionStore& s = *store_;
  EXPECT_EQ(Rows(s, kItem), 100000u);
  EXPECT_EQ(Rows(s, kStock), 100000u);
  EXPECT_EQ(Rows(s, kWarehouse), 1u);
  EXPECT_EQ(Rows(s, kWarehouseYtd), 1u);
  EXPECT_EQ(Rows(s, kDistrict), 10u);
  EXPECT_EQ(Rows(s, kDistrictYtd), 10u);
  EXPECT_EQ(Rows(s, kDistrictNext), 10u);
  EXPECT_EQ(Rows(s, kCustomer), 30000u);
  EXPECT_EQ(Rows(s, kHistory), 30000u);
  EXPECT_EQ(Rows(s, kOrder), 30000u);
  EXPECT_EQ(Rows(s, kNewOrder), 9000u);
  ExpectCounts(s, Scale::Spec(1), 1);
}

TEST_F(TpccLoaderSpec, WarehouseAndDistricts) {
  const PartitionStore& s = *store_;
  const WarehouseRow w = Read<WarehouseRow>(s, WarehouseKey(1));
  EXPECT_EQ(Read<WarehouseYtdRow>(s, WarehouseYtdKey(1)).ytd, 30000000);  // 300,000.00
  EXPECT_GE(w.tax, 0);
  EXPECT_LE(w.tax, 2000);
  EXPECT_GE(GetField(w.name).size(), 6u);
  EXPECT_EQ(GetField(w.zip).substr(4), "11111");
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    const DistrictRow row = Read<DistrictRow>(s, DistrictKey(1, d));
    EXPECT_EQ(Read<DistrictYtdRow>(s, DistrictYtdKey(1, d)).ytd, 3000000);  // 30,000.00
    EXPECT_EQ(Read<DistrictNextRow>(s, DistrictNextKey(1, d)).next_o_id, 3001);
    EXPECT_GE(row.tax, 0);
    EXPECT_LE(row.tax, 2000);
    // The oldest new order, and the last HISTORY seq, as the txns find them.
    Key first_new_order = 0, last_history = 0;
    s.GetTable(kNewOrder)->Scan(FirstNewOrderKey(1, d), LastNewOrderKey(1, d), false, [&](Key k, const Record*) {
      first_new_order = k;
      return false;
    });
    s.GetTable(kHistory)->Scan(FirstHistoryKey(1, d), LastHistoryKey(1, d), true, [&](Key k, const Record*) {
      last_history = k;
      return false;
    });
    EXPECT_EQ(first_new_order, NewOrderKey(1, d, 2101));
    EXPECT_EQ(last_history, HistoryKey(1, d, 2999));
  }
}

TEST_F(TpccLoaderSpec, Customers) {
  const PartitionStore& s = *store_;
  const Scale scale = Scale::Spec(1);
  const NURandC load = LoadConstants(kSeed);
  uint64_t bad_credit = 0, n = 0;
  std::set<std::string> last_names;
  ForEach<CustomerRow>(s, kCustomer, [&](Key k, const CustomerRow& c) {
    const uint32_t w = WarehouseOf(k), d = DistrictOf(k), id = static_cast<uint32_t>(KeyRow(k) & 0xFFFFFFFF);
    const CustomerName name = CustomerNameOf(scale, load, kSeed, w, d, id);
    ASSERT_EQ(GetField(c.first), name.first);
    ASSERT_EQ(GetField(c.last), name.last);
    last_names.insert(name.last);
    ASSERT_EQ(GetField(c.middle), "OE");
    ASSERT_TRUE(GetField(c.credit) == "GC" || GetField(c.credit) == "BC");
    bad_credit += GetField(c.credit) == "BC";
    ASSERT_EQ(c.credit_lim, 5000000);
    ASSERT_GE(c.discount, 0);
    ASSERT_LE(c.discount, 5000);
    ASSERT_EQ(c.balance, -1000);
    ASSERT_EQ(c.ytd_payment, 1000);
    ASSERT_EQ(c.payment_cnt, 1);
    ASSERT_EQ(c.delivery_cnt, 0);
    ASSERT_EQ(c.since, kLoadTimestamp);
    ASSERT_EQ(GetField(c.phone).size(), 16u);
    ASSERT_GE(GetField(c.data).size(), 300u);
    ASSERT_LE(GetField(c.data).size(), 500u);

    const HistoryRow h = Read<HistoryRow>(s, HistoryKey(w, d, id - 1));
    ASSERT_EQ(h.c_id, static_cast<int32_t>(id));
    ASSERT_EQ(h.c_d_id, static_cast<int32_t>(d));
    ASSERT_EQ(h.d_id, static_cast<int32_t>(d));
    ASSERT_EQ(h.c_w_id, 1);
    ASSERT_EQ(h.w_id, 1);
    ASSERT_EQ(h.amount, 1000);
    ASSERT_EQ(h.date, kLoadTimestamp);
    ASSERT_GE(GetField(h.data).size(), 12u);
    ++n;
  });
  EXPECT_EQ(n, 30000u);
  EXPECT_EQ(last_names.size(), 1000u);  // every last name is used
  EXPECT_GT(bad_credit, 2000u);         // ~10% of 30,000
  EXPECT_LT(bad_credit, 4000u);
}

TEST_F(TpccLoaderSpec, OrdersAndIndexes) {
  const PartitionStore& s = *store_;
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    std::vector<uint32_t> order_of(3001, 0);  // customer -> its order
    for (uint32_t o = 1; o <= 3000; ++o) {
      const OrderRow row = Read<OrderRow>(s, OrderKey(1, d, o));
      ASSERT_GE(row.c_id, 1);
      ASSERT_LE(row.c_id, 3000);
      ASSERT_EQ(order_of[row.c_id], 0u) << "O_C_ID is not a permutation";
      order_of[row.c_id] = o;
      ASSERT_GE(row.ol_cnt, 5);
      ASSERT_LE(row.ol_cnt, 15);
      ASSERT_EQ(row.all_local, 1);
      ASSERT_EQ(row.entry_d, kLoadTimestamp);
      const bool delivered = o <= 2100;
      if (delivered) {
        ASSERT_GE(row.carrier_id, 1);
        ASSERT_LE(row.carrier_id, 10);
        ASSERT_EQ(s.Get(NewOrderKey(1, d, o)), nullptr);
      } else {
        ASSERT_EQ(row.carrier_id, 0);
        const NewOrderRow no = Read<NewOrderRow>(s, NewOrderKey(1, d, o));
        ASSERT_EQ(no.o_id, static_cast<int32_t>(o));
        ASSERT_EQ(no.d_id, static_cast<int32_t>(d));
        ASSERT_EQ(no.w_id, 1);
      }
      for (uint32_t ol = 1; ol <= kMaxOrderLines; ++ol) {
        const Record* r = s.Get(OrderLineKey(1, d, o, ol));
        ASSERT_EQ(r != nullptr, ol <= static_cast<uint32_t>(row.ol_cnt)) << o << " " << ol;
        if (r == nullptr) continue;
        const OrderLineRow line = Read<OrderLineRow>(s, OrderLineKey(1, d, o, ol));
        ASSERT_GE(line.i_id, 1);
        ASSERT_LE(line.i_id, 100000);
        ASSERT_EQ(line.supply_w_id, 1);
        ASSERT_EQ(line.quantity, 5);
        ASSERT_EQ(GetField(line.dist_info).size(), 24u);
        if (delivered) {
          ASSERT_EQ(line.amount, 0);
          ASSERT_EQ(line.delivery_d, kLoadTimestamp);
        } else {
          ASSERT_GE(line.amount, 1);
          ASSERT_LE(line.amount, 999999);
          ASSERT_EQ(line.delivery_d, 0);
        }
      }
    }
    for (uint32_t c = 1; c <= 3000; ++c)
      ASSERT_EQ(Read<OrderIdRow>(s, CustomerLastOrderKey(1, d, c)).o_id, static_cast<int32_t>(order_of[c]));
  }
}

TEST_F(TpccLoaderSpec, ItemsAndStock) {
  const PartitionStore& s = *store_;
  uint64_t original_items = 0, original_stock = 0;
  ForEach<ItemRow>(s, kItem, [&](Key, const ItemRow& i) {
    ASSERT_GE(i.im_id, 1);
    ASSERT_LE(i.im_id, 10000);
    ASSERT_GE(i.price, 100);
    ASSERT_LE(i.price, 10000);
    ASSERT_GE(GetField(i.name).size(), 14u);
    ASSERT_LE(GetField(i.name).size(), 24u);
    ASSERT_GE(GetField(i.data).size(), 26u);
    original_items += GetField(i.data).find("ORIGINAL") != std::string_view::npos;
  });
  ForEach<StockRow>(s, kStock, [&](Key k, const StockRow& st) {
    ASSERT_EQ(WarehouseOf(k), 1u);
    ASSERT_GE(st.quantity, 10);
    ASSERT_LE(st.quantity, 100);
    ASSERT_EQ(st.ytd, 0);
    ASSERT_EQ(st.order_cnt, 0);
    ASSERT_EQ(st.remote_cnt, 0);
    for (const auto& dist : st.dist) ASSERT_EQ(GetField(dist).size(), 24u);
    ASSERT_GE(GetField(st.data).size(), 26u);
    original_stock += GetField(st.data).find("ORIGINAL") != std::string_view::npos;
  });
  EXPECT_GT(original_items, 8000u);  // ~10% of 100,000
  EXPECT_LT(original_items, 12000u);
  EXPECT_GT(original_stock, 8000u);
  EXPECT_LT(original_stock, 12000u);
}

TEST(TpccLoader, ReproducibleFromTheSeed) {
  const Scale scale = Scale::Small(1);
  PartitionStore a, b, c;
  ASSERT_TRUE(LoadPartition(&a, WarehousePartitioner(1), 0, scale, 7).ok());
  ASSERT_TRUE(LoadPartition(&b, WarehousePartitioner(1), 0, scale, 7).ok());
  ASSERT_TRUE(LoadPartition(&c, WarehousePartitioner(1), 0, scale, 8).ok());
  EXPECT_EQ(a.Digest(), b.Digest());
  EXPECT_NE(a.Digest(), c.Digest());
}

TEST(TpccLoader, RejectsBadArguments) {
  PartitionStore store;
  Scale bad = Scale::Small(1);
  bad.warehouses = 0;
  EXPECT_EQ(LoadPartition(&store, WarehousePartitioner(1), 0, bad, kSeed).code(),
            absl::StatusCode::kInvalidArgument);
  bad = Scale::Small(1);
  bad.orders_per_district = bad.customers_per_district + 1;
  EXPECT_EQ(LoadPartition(&store, WarehousePartitioner(1), 0, bad, kSeed).code(),
            absl::StatusCode::kInvalidArgument);
  bad = Scale::Small(1);
  bad.items = 10;
  EXPECT_EQ(LoadPartition(&store, WarehousePartitioner(1), 0, bad, kSeed).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadPartition(&store, WarehousePartitioner(2), 2, Scale::Small(1), kSeed).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store.table_ids().empty()) << "a rejected load must not touch the store";
}

TEST(TpccLoader, LoadingTwiceIsAnError) {
  PartitionStore store;
  ASSERT_TRUE(LoadPartition(&store, WarehousePartitioner(1), 0, Scale::Small(1), kSeed).ok());
  const uint64_t digest = store.Digest();
  EXPECT_EQ(LoadPartition(&store, WarehousePartitioner(1), 0, Scale::Small(1), kSeed).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store.Digest(), digest);

  PartitionStore other;  // one TPC-C table is enough to refuse
  ASSERT_TRUE(other.CreateTable({.id = kDistrictNext, .name = "x", .value_size = 8}).ok());
  EXPECT_EQ(LoadPartition(&other, WarehousePartitioner(1), 0, Scale::Small(1), kSeed).code(),
            absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
