#include "workloads/tpcc/loader.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "glog/logging.h"

namespace detdb {
namespace tpcc {

namespace {

// Money and rates of clause 4.3.3.1, in cents and ten-thousandths.
constexpr int64_t kHistoryAmount = 1000;       // H_AMOUNT 10.00
constexpr int64_t kCreditLimit = 5000000;      // C_CREDIT_LIM 50,000.00
constexpr int64_t kInitialBalance = -1000;     // C_BALANCE -10.00
constexpr int64_t kInitialYtdPayment = 1000;   // C_YTD_PAYMENT 10.00
constexpr int32_t kMaxTax = 2000;              // W_TAX, D_TAX 0.0000 .. 0.2000
constexpr int32_t kMaxDiscount = 5000;         // C_DISCOUNT 0.0000 .. 0.5000

// Tables that grow during a run are sized for this many times their
// initial rows (NEW_ORDER as ORDER: without Delivery, New-Order + Payment
// runs, it grows as fast).
constexpr uint64_t kGrowth = 4;

// The generator of (table, w, d)'s rows: independent of every other
// table, warehouse and district, so a partition loads alone and the same
// seed always gives the same rows.
Rng RngFor(uint64_t seed, uint32_t table, uint32_t w, uint32_t d) {
  return Rng(Mix64(Mix64(seed + 0x632BE59BD9B4E019ull) ^
                   (static_cast<uint64_t>(table) << 48 | static_cast<uint64_t>(w) << 8 | d)));
}

// Zip code of clause 4.3.2.7: four random digits, then "11111".
std::string Zip(Rng& r) { return r.NString(4, 4) + "11111"; }

// I_DATA / S_DATA: 26..50 random characters, 10% of them holding
// "ORIGINAL" at a random position (clause 4.3.3.1).
std::string DataWithOriginal(Rng& r) {
  std::string s = r.AString(26, 50);
  if (r.Uniform(1, 100) <= 10) {
    const size_t pos = static_cast<size_t>(r.Uniform(0, static_cast<int64_t>(s.size()) - 8));
    s.replace(pos, 8, "ORIGINAL");
  }
  return s;
}

template <typename Row>
void Put(Table* t, Key k, const Row& row) {
  static_assert(std::is_trivially_copyable_v<Row>);
  DCHECK_EQ(t->value_size(), sizeof(Row));
  std::memcpy(t->Insert(k)->value(), &row, sizeof(Row));
}

struct Tables {
  Table *warehouse, *district, *customer, *history, *new_order, *order, *order_line, *item, *stock,
      *customer_last_order, *warehouse_ytd, *district_ytd, *district_next;
};

absl::Status CreateTables(PartitionStore* store, const Scale& scale, uint64_t warehouses, Tables* t) {
  const uint64_t districts = warehouses * kDistrictsPerWarehouse;
  const uint64_t customers = districts * scale.customers_per_district;
  const uint64_t orders = districts * scale.orders_per_district;
  const uint64_t order_lines = orders * 10;  // O_OL_CNT averages 10
  struct Spec {
    uint32_t id;
    const char* name;
    uint32_t value_size;
    uint64_t expected_records;
    Table** out;
  };
  const Spec specs[] = {
      {kWarehouse, "tpcc.warehouse", sizeof(WarehouseRow), warehouses, &t->warehouse},
      {kDistrict, "tpcc.district", sizeof(DistrictRow), districts, &t->district},
      {kCustomer, "tpcc.customer", sizeof(CustomerRow), customers, &t->customer},
      {kHistory, "tpcc.history", sizeof(HistoryRow), kGrowth * customers, &t->history},
      {kNewOrder, "tpcc.new_order", sizeof(NewOrderRow), kGrowth * orders, &t->new_order},
      {kOrder, "tpcc.order", sizeof(OrderRow), kGrowth * orders, &t->order},
      {kOrderLine, "tpcc.order_line", sizeof(OrderLineRow), kGrowth * order_lines, &t->order_line},
      {kItem, "tpcc.item", sizeof(ItemRow), scale.items, &t->item},
      {kStock, "tpcc.stock", sizeof(StockRow), warehouses * scale.items, &t->stock},
      {kCustomerLastOrder, "tpcc.customer_last_order", sizeof(OrderIdRow), customers, &t->customer_last_order},
      {kWarehouseYtd, "tpcc.warehouse_ytd", sizeof(WarehouseYtdRow), warehouses, &t->warehouse_ytd},
      {kDistrictYtd, "tpcc.district_ytd", sizeof(DistrictYtdRow), districts, &t->district_ytd},
      {kDistrictNext, "tpcc.district_next", sizeof(DistrictNextRow), districts, &t->district_next},
  };
  for (const Spec& spec : specs) {
    absl::StatusOr<Table*> table =
        store->CreateTable({.id = spec.id, .name = spec.name, .value_size = spec.value_size,
                            .expected_records = std::min(spec.expected_records, Table::kMaxExpectedRecords),
                            .ordered = IsOrdered(spec.id)});
    if (!table.ok()) return table.status();
    *spec.out = *table;
  }
  return absl::OkStatus();
}

void LoadItems(const Tables& t, uint64_t seed, const Scale& scale) {
  Rng r = RngFor(seed, kItem, 0, 0);
  for (uint32_t i = 1; i <= scale.items; ++i) {
    ItemRow row{};
    row.im_id = static_cast<int32_t>(r.Uniform(1, 10000));
    SetField(row.name, r.AString(14, 24));
    row.price = r.Uniform(kMinItemPriceCents, kMaxItemPriceCents);
    SetField(row.data, DataWithOriginal(r));
    Put(t.item, ItemKey(i), row);
  }
}

void LoadStock(const Tables& t, uint64_t seed, const Scale& scale, uint32_t w) {
  Rng r = RngFor(seed, kStock, w, 0);
  for (uint32_t i = 1; i <= scale.items; ++i) {
    StockRow row{};
    row.quantity = static_cast<int32_t>(r.Uniform(10, 100));
    for (auto& dist : row.dist) SetField(dist, r.AString(24, 24));
    row.ytd = 0;
    row.order_cnt = 0;
    row.remote_cnt = 0;
    SetField(row.data, DataWithOriginal(r));
    Put(t.stock, StockKey(w, i), row);
  }
}

// D_YTD is the sum of the district's initial H_AMOUNTs (30,000.00 at the
// spec's 3,000 customers) and W_YTD the sum of its districts', so that
// conditions 1, 8 and 9 hold at every scale.
int64_t InitialDistrictYtd(const Scale& scale) { return kHistoryAmount * scale.customers_per_district; }

// The static columns WAREHOUSE and DISTRICT share (clause 4.3.3.1).
template <typename Row>
void FillNameAddressTax(Rng* r, Row* row) {
  SetField(row->name, r->AString(6, 10));
  SetField(row->street_1, r->AString(10, 20));
  SetField(row->street_2, r->AString(10, 20));
  SetField(row->city, r->AString(10, 20));
  SetField(row->state, r->AString(2, 2));
  SetField(row->zip, Zip(*r));
  row->tax = static_cast<int32_t>(r->Uniform(0, kMaxTax));
}

void LoadWarehouse(const Tables& t, uint64_t seed, const Scale& scale, uint32_t w) {
  Rng r = RngFor(seed, kWarehouse, w, 0);
  WarehouseRow row{};
  FillNameAddressTax(&r, &row);
  Put(t.warehouse, WarehouseKey(w), row);
  const WarehouseYtdRow ytd{.ytd = InitialDistrictYtd(scale) * kDistrictsPerWarehouse};
  Put(t.warehouse_ytd, WarehouseYtdKey(w), ytd);
}

void LoadDistrict(const Tables& t, uint64_t seed, const Scale& scale, uint32_t w, uint32_t d) {
  Rng r = RngFor(seed, kDistrict, w, d);
  DistrictRow row{};
  FillNameAddressTax(&r, &row);
  Put(t.district, DistrictKey(w, d), row);
  const DistrictYtdRow ytd{.ytd = InitialDistrictYtd(scale)};
  Put(t.district_ytd, DistrictYtdKey(w, d), ytd);
  const DistrictNextRow next{.next_o_id = static_cast<int32_t>(scale.orders_per_district + 1), .unused = 0};
  Put(t.district_next, DistrictNextKey(w, d), next);
}

void LoadCustomersAndHistory(const Tables& t, uint64_t seed, const NURandC& load, const Scale& scale,
                             uint32_t w, uint32_t d) {
  Rng r = RngFor(seed, kCustomer, w, d);
  Rng hr = RngFor(seed, kHistory, w, d);
  for (uint32_t c = 1; c <= scale.customers_per_district; ++c) {
    const CustomerName name = CustomerNameOf(scale, load, seed, w, d, c);
    CustomerRow row{};
    SetField(row.first, name.first);
    SetField(row.middle, "OE");
    SetField(row.last, name.last);
    SetField(row.street_1, r.AString(10, 20));
    SetField(row.street_2, r.AString(10, 20));
    SetField(row.city, r.AString(10, 20));
    SetField(row.state, r.AString(2, 2));
    SetField(row.zip, Zip(r));
    SetField(row.phone, r.NString(16, 16));
    row.since = kLoadTimestamp;
    SetField(row.credit, r.Uniform(1, 100) <= 10 ? "BC" : "GC");
    row.credit_lim = kCreditLimit;
    row.discount = static_cast<int32_t>(r.Uniform(0, kMaxDiscount));
    row.balance = kInitialBalance;
    row.ytd_payment = kInitialYtdPayment;
    row.payment_cnt = 1;
    row.delivery_cnt = 0;
    SetField(row.data, r.AString(300, 500));
    Put(t.customer, CustomerKey(w, d, c), row);

    HistoryRow h{};
    h.c_id = static_cast<int32_t>(c);
    h.c_d_id = h.d_id = static_cast<int32_t>(d);
    h.c_w_id = h.w_id = static_cast<int32_t>(w);
    h.date = kLoadTimestamp;
    h.amount = kHistoryAmount;
    SetField(h.data, hr.AString(12, 24));
    Put(t.history, HistoryKey(w, d, c - 1), h);
  }
}

void LoadOrders(const Tables& t, uint64_t seed, const Scale& scale, uint32_t w, uint32_t d) {
  Rng r = RngFor(seed, kOrder, w, d);
  Rng lr = RngFor(seed, kOrderLine, w, d);
  // O_C_ID: a random permutation of the customers (Fisher-Yates).
  std::vector<uint32_t> customer_of(scale.orders_per_district);
  for (uint32_t i = 0; i < customer_of.size(); ++i) customer_of[i] = i + 1;
  for (uint32_t i = static_cast<uint32_t>(customer_of.size()); i > 1; --i)
    std::swap(customer_of[i - 1], customer_of[static_cast<size_t>(r.Uniform(0, i - 1))]);

  const uint32_t delivered = scale.orders_per_district - scale.new_orders_per_district;
  for (uint32_t o = 1; o <= scale.orders_per_district; ++o) {
    const uint32_t c = customer_of[o - 1];
    const bool is_delivered = o <= delivered;
    OrderRow row{};
    row.c_id = static_cast<int32_t>(c);
    row.entry_d = kLoadTimestamp;
    row.carrier_id = is_delivered ? static_cast<int32_t>(r.Uniform(1, 10)) : 0;
    row.ol_cnt = static_cast<int32_t>(r.Uniform(5, kMaxOrderLines));
    row.all_local = 1;
    Put(t.order, OrderKey(w, d, o), row);

    for (uint32_t ol = 1; ol <= static_cast<uint32_t>(row.ol_cnt); ++ol) {
      OrderLineRow line{};
      line.i_id = static_cast<int32_t>(lr.Uniform(1, scale.items));
      line.supply_w_id = static_cast<int32_t>(w);
      line.quantity = 5;
      if (is_delivered) {
        line.amount = 0;
        line.delivery_d = kLoadTimestamp;
      } else {
        line.amount = static_cast<int32_t>(lr.Uniform(1, 999999));  // OL_AMOUNT 0.01 .. 9,999.99
        line.delivery_d = 0;
      }
      SetField(line.dist_info, lr.AString(24, 24));
      Put(t.order_line, OrderLineKey(w, d, o, ol), line);
    }

    if (!is_delivered) {
      const NewOrderRow no{.o_id = static_cast<int32_t>(o), .d_id = static_cast<int32_t>(d),
                           .w_id = static_cast<int32_t>(w), .unused = 0};
      Put(t.new_order, NewOrderKey(w, d, o), no);
    }
    const OrderIdRow last{.o_id = static_cast<int32_t>(o), .unused = 0};
    Put(t.customer_last_order, CustomerLastOrderKey(w, d, c), last);
  }
}

}  // namespace

std::vector<uint32_t> WarehousesOf(const WarehousePartitioner& partitioner, PartitionId p, const Scale& scale) {
  std::vector<uint32_t> ws;
  for (uint32_t w = 1; w <= scale.warehouses && w <= kMaxWarehouses; ++w)
    if (partitioner.PartitionOf(WarehouseKey(w)) == p) ws.push_back(w);
  return ws;
}

absl::Status LoadPartition(PartitionStore* store, const WarehousePartitioner& partitioner, PartitionId p,
                           const Scale& scale, uint64_t seed) {
  if (absl::Status s = scale.Validate(); !s.ok()) return s;
  if (p >= partitioner.num_partitions())
    return absl::InvalidArgumentError(
        absl::StrCat("partition ", p, " out of range (", partitioner.num_partitions(), " partitions)"));
  for (uint32_t id = kFirstTable; id <= kLastTable; ++id) {
    if (const Table* t = store->GetTable(id))
      return absl::AlreadyExistsError(
          absl::StrCat("the store already has TPC-C table ", id, " ('", t->name(), "')"));
  }

  const std::vector<uint32_t> warehouses = WarehousesOf(partitioner, p, scale);
  Tables t;
  if (absl::Status s = CreateTables(store, scale, warehouses.size(), &t); !s.ok()) return s;

  const NURandC load = LoadConstants(seed);
  LoadItems(t, seed, scale);
  for (uint32_t w : warehouses) {
    LoadWarehouse(t, seed, scale, w);
    LoadStock(t, seed, scale, w);
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      LoadDistrict(t, seed, scale, w, d);
      LoadCustomersAndHistory(t, seed, load, scale, w, d);
      LoadOrders(t, seed, scale, w, d);
    }
  }
  return absl::OkStatus();
}

}  // namespace tpcc
}  // namespace detdb
