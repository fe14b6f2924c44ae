#include "workloads/tpcc/checker.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {
namespace tpcc {

namespace {

constexpr size_t kMaxFailures = 20;

// One order of a district, as the later scans need it.
struct OrderInfo {
  uint32_t o_id;
  int32_t c_id, carrier_id, ol_cnt;
  int32_t lines = 0;          // ORDER_LINE rows seen
  bool has_new_order = false;  // NEW_ORDER row seen
};

struct DistrictState {
  bool present = false;                    // DISTRICT row seen
  bool has_ytd = false, has_next = false;  // DISTRICT_YTD, DISTRICT_NEXT rows seen
  int64_t ytd = 0;                         // D_YTD
  int32_t next_o_id = 0;                   // D_NEXT_O_ID
  // ORDER: in increasing o_id (the scan is in key order).
  std::vector<OrderInfo> orders;
  uint64_t max_o_id = 0, sum_ol_cnt = 0, order_lines = 0;
  // NEW_ORDER.
  uint64_t new_orders = 0, min_no = 0, max_no = 0;
  // HISTORY.
  int64_t history_amount = 0;
  uint64_t history_rows = 0, history_max_seq_plus_1 = 0;
  // Highest O_ID per customer (index c), 0 if none.
  std::vector<uint32_t> last_order;
  size_t cursor = 0;  // ORDER_LINE merge position in `orders`

  // The order o_id, or nullptr. Order lines and NEW_ORDER rows arrive in
  // key order, so the cursor usually points at the order already.
  OrderInfo* FindOrder(uint32_t o_id) {
    if (cursor < orders.size() && orders[cursor].o_id == o_id) return &orders[cursor];
    auto it = std::lower_bound(orders.begin(), orders.end(), o_id,
                               [](const OrderInfo& a, uint32_t o) { return a.o_id < o; });
    if (it == orders.end() || it->o_id != o_id) return nullptr;
    cursor = static_cast<size_t>(it - orders.begin());
    return &*it;
  }
};

struct WarehouseState {
  uint32_t w = 0;
  bool has_ytd = false;  // WAREHOUSE_YTD row seen
  int64_t ytd = 0;       // W_YTD
  int64_t history_amount = 0;
  std::array<DistrictState, kDistrictsPerWarehouse> districts;
};

class Checker {
 public:
  Checker(const Scale& scale, bool all_warehouses, CheckReport* report)
      : scale_(scale), all_(all_warehouses), report_(report) {
    if (all_) {
      const uint64_t customers =
          uint64_t{scale.warehouses} * kDistrictsPerWarehouse * scale.customers_per_district;
      delivered_.assign(customers, 0);
      paid_.assign(customers, 0);
      seen_warehouse_.assign(uint64_t{kMaxWarehouses} + 1, false);
    }
  }

  // Everything but the customers: conditions 1-9, the index table and the
  // HISTORY keys, and
  // the per-customer sums of 10 and 12.
  void CheckOrderSide(const PartitionStore& store);
  // 10 and 12, once every store's CheckOrderSide has run.
  void CheckCustomers(const PartitionStore& store);
  // With all_warehouses: every warehouse of the scale was found.
  void CheckAllWarehousesSeen();

 private:
  template <typename... Args>
  void Fail(const Args&... args) {
    report_->ok = false;
    if (report_->failures.size() < kMaxFailures) report_->failures.push_back(absl::StrCat(args...));
  }

  // Calls f(key, row) for every row of table id, in key order; reports a
  // missing table or one with the wrong row size.
  template <typename Row, typename F>
  void Scan(const PartitionStore& store, uint32_t id, F f) {
    const Table* t = store.GetTable(id);
    if (t == nullptr) {
      Fail("table ", id, " is missing");
      return;
    }
    if (t->value_size() != sizeof(Row)) {
      Fail("table ", id, " has rows of ", t->value_size(), " bytes, not ", sizeof(Row));
      return;
    }
    t->ForEachInKeyOrder([&](const Record& r) {
      Row row;
      std::memcpy(&row, r.value(), sizeof(Row));
      f(r.key, row);
    });
  }

  // The state of the district of k, or nullptr (reported) if this store
  // has no WAREHOUSE row for it or the district is out of range.
  DistrictState* DistrictFor(Key k, const char* table) {
    WarehouseState* ws = WarehouseFor(k, table);
    if (ws == nullptr) return nullptr;
    const uint32_t d = DistrictOf(k);
    if (d < 1 || d > kDistrictsPerWarehouse) {
      Fail(table, " row ", KeyRow(k), " (w ", ws->w, "): district ", d, " out of range");
      return nullptr;
    }
    return &ws->districts[d - 1];
  }
  WarehouseState* WarehouseFor(Key k, const char* table) {
    const int32_t i = slot_[WarehouseOf(k)];
    if (i < 0) {
      Fail(table, " row ", KeyRow(k), ": no WAREHOUSE row for its warehouse ", WarehouseOf(k));
      return nullptr;
    }
    return &warehouses_[i];
  }

  // Index of customer (w, d, c) in delivered_ / paid_, or -1 if out of range.
  int64_t CustomerIndex(int64_t w, int64_t d, int64_t c) const {
    if (w < 1 || w > scale_.warehouses || d < 1 || d > kDistrictsPerWarehouse || c < 1 ||
        c > scale_.customers_per_district)
      return -1;
    return ((w - 1) * kDistrictsPerWarehouse + (d - 1)) * scale_.customers_per_district + (c - 1);
  }

  void CheckDistrict(const WarehouseState& ws, uint32_t d, const DistrictState& ds);

  const Scale scale_;
  const bool all_;
  CheckReport* const report_;
  // Per customer (CustomerIndex), with all_: OL_AMOUNT of delivered lines
  // and H_AMOUNT of payments.
  std::vector<int64_t> delivered_, paid_;
  std::vector<bool> seen_warehouse_;
  // The current store's warehouses and slot_[w], their index (-1: none).
  std::vector<WarehouseState> warehouses_;
  std::vector<int32_t> slot_;
};

void Checker::CheckOrderSide(const PartitionStore& store) {
  warehouses_.clear();
  slot_.assign(uint64_t{kMaxWarehouses} + 1, -1);

  Scan<WarehouseRow>(store, kWarehouse, [&](Key k, const WarehouseRow&) {
    const uint32_t w = WarehouseOf(k);
    if (all_) {
      if (w < 1 || w > scale_.warehouses) Fail("warehouse ", w, " is beyond the scale's ", scale_.warehouses);
      if (seen_warehouse_[w]) Fail("warehouse ", w, " is in more than one store");
      seen_warehouse_[w] = true;
    }
    slot_[w] = static_cast<int32_t>(warehouses_.size());
    warehouses_.emplace_back();
    warehouses_.back().w = w;
  });
  report_->warehouses += warehouses_.size();
  Scan<WarehouseYtdRow>(store, kWarehouseYtd, [&](Key k, const WarehouseYtdRow& row) {
    if (WarehouseState* ws = WarehouseFor(k, "WAREHOUSE_YTD")) {
      ws->has_ytd = true;
      ws->ytd = row.ytd;
    }
  });

  Scan<DistrictRow>(store, kDistrict, [&](Key k, const DistrictRow&) {
    if (DistrictState* ds = DistrictFor(k, "DISTRICT")) ds->present = true;
  });
  Scan<DistrictYtdRow>(store, kDistrictYtd, [&](Key k, const DistrictYtdRow& row) {
    if (DistrictState* ds = DistrictFor(k, "DISTRICT_YTD")) {
      ds->has_ytd = true;
      ds->ytd = row.ytd;
    }
  });
  Scan<DistrictNextRow>(store, kDistrictNext, [&](Key k, const DistrictNextRow& row) {
    if (DistrictState* ds = DistrictFor(k, "DISTRICT_NEXT")) {
      ds->has_next = true;
      ds->next_o_id = row.next_o_id;
    }
  });
  for (WarehouseState& ws : warehouses_)
    for (DistrictState& ds : ws.districts) ds.last_order.assign(scale_.customers_per_district + 1, 0);

  Scan<OrderRow>(store, kOrder, [&](Key k, const OrderRow& row) {
    ++report_->orders;
    DistrictState* ds = DistrictFor(k, "ORDER");
    if (ds == nullptr) return;
    const uint32_t o = static_cast<uint32_t>(KeyRow(k) & 0xFFFFFFFFu);
    ds->orders.push_back({.o_id = o, .c_id = row.c_id, .carrier_id = row.carrier_id, .ol_cnt = row.ol_cnt});
    ds->max_o_id = std::max<uint64_t>(ds->max_o_id, o);
    ds->sum_ol_cnt += static_cast<uint64_t>(std::max(row.ol_cnt, 0));
    if (row.c_id >= 1 && static_cast<uint32_t>(row.c_id) <= scale_.customers_per_district) {
      uint32_t& last = ds->last_order[row.c_id];
      last = std::max(last, o);
    } else {
      Fail("ORDER (w ", WarehouseOf(k), ", d ", DistrictOf(k), ", o ", o, "): O_C_ID ", row.c_id,
           " out of range");
    }
  });

  Scan<NewOrderRow>(store, kNewOrder, [&](Key k, const NewOrderRow& row) {
    ++report_->new_orders;
    DistrictState* ds = DistrictFor(k, "NEW_ORDER");
    if (ds == nullptr) return;
    const uint32_t w = WarehouseOf(k), d = DistrictOf(k);
    const uint32_t o = static_cast<uint32_t>(KeyRow(k) & 0xFFFFFFFFu);
    if (row.o_id != static_cast<int32_t>(o) || row.d_id != static_cast<int32_t>(d) ||
        row.w_id != static_cast<int32_t>(w))
      Fail("NEW_ORDER (w ", w, ", d ", d, ", o ", o, "): row holds (", row.w_id, ", ", row.d_id, ", ",
           row.o_id, ")");
    if (ds->new_orders == 0) ds->min_no = o;
    ds->min_no = std::min<uint64_t>(ds->min_no, o);
    ds->max_no = std::max<uint64_t>(ds->max_no, o);
    ++ds->new_orders;
    if (OrderInfo* oi = ds->FindOrder(o)) {
      oi->has_new_order = true;
    } else {
      Fail("condition 5 (w ", w, ", d ", d, "): NEW_ORDER ", o, " has no ORDER row");
    }
  });

  for (WarehouseState& ws : warehouses_)
    for (DistrictState& ds : ws.districts) ds.cursor = 0;
  Scan<OrderLineRow>(store, kOrderLine, [&](Key k, const OrderLineRow& row) {
    ++report_->order_lines;
    DistrictState* ds = DistrictFor(k, "ORDER_LINE");
    if (ds == nullptr) return;
    const uint32_t w = WarehouseOf(k), d = DistrictOf(k);
    const uint32_t o = static_cast<uint32_t>((KeyRow(k) >> 4) & 0xFFFFFFFu);
    const uint32_t ol = static_cast<uint32_t>(KeyRow(k) & 0xF);
    ++ds->order_lines;
    OrderInfo* oi = ds->FindOrder(o);
    if (oi == nullptr) {
      Fail("condition 6 (w ", w, ", d ", d, "): ORDER_LINE (", o, ", ", ol, ") has no ORDER row");
      return;
    }
    ++oi->lines;
    if ((row.delivery_d == 0) != (oi->carrier_id == 0))
      Fail("condition 7 (w ", w, ", d ", d, "): order ", o, " line ", ol, ": OL_DELIVERY_D ", row.delivery_d,
           " but O_CARRIER_ID ", oi->carrier_id);
    if (all_ && row.delivery_d != 0) {
      const int64_t c = CustomerIndex(w, d, oi->c_id);
      if (c >= 0) delivered_[c] += row.amount;
    }
  });

  Scan<HistoryRow>(store, kHistory, [&](Key k, const HistoryRow& row) {
    ++report_->history;
    DistrictState* ds = DistrictFor(k, "HISTORY");
    if (ds == nullptr) return;
    const uint64_t seq = KeyRow(k) & 0xFFFFFFFFu;
    ds->history_amount += row.amount;
    ++ds->history_rows;
    ds->history_max_seq_plus_1 = std::max(ds->history_max_seq_plus_1, seq + 1);
    warehouses_[slot_[WarehouseOf(k)]].history_amount += row.amount;
    if (all_) {
      const int64_t c = CustomerIndex(row.c_w_id, row.c_d_id, row.c_id);
      if (c >= 0) {
        paid_[c] += row.amount;
      } else {
        Fail("condition 10 (w ", WarehouseOf(k), ", d ", DistrictOf(k), "): HISTORY ", seq,
             " names customer (", row.c_w_id, ", ", row.c_d_id, ", ", row.c_id, "), out of range");
      }
    }
  });

  // CUSTOMER_LAST_ORDER: a row, with the highest O_ID, for every customer
  // that has orders; none for the others.
  Scan<OrderIdRow>(store, kCustomerLastOrder, [&](Key k, const OrderIdRow& row) {
    DistrictState* ds = DistrictFor(k, "CUSTOMER_LAST_ORDER");
    if (ds == nullptr) return;
    const uint32_t c = static_cast<uint32_t>(KeyRow(k) & 0xFFFFFFFFu);
    const uint32_t expected = c >= 1 && c <= scale_.customers_per_district ? ds->last_order[c] : 0;
    if (row.o_id < 0 || static_cast<uint32_t>(row.o_id) != expected)
      Fail("index CUSTOMER_LAST_ORDER (w ", WarehouseOf(k), ", d ", DistrictOf(k), ", c ", c, "): ", row.o_id,
           " but the customer's highest O_ID is ", expected);
    if (c >= 1 && c <= scale_.customers_per_district) ds->last_order[c] = 0;  // seen
  });

  for (const WarehouseState& ws : warehouses_) {
    int64_t sum_d_ytd = 0;
    bool every_d_ytd = true;
    for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      const DistrictState& ds = ws.districts[d - 1];
      if (!ds.present) Fail("warehouse ", ws.w, " has no DISTRICT ", d);
      if (!ds.has_ytd) Fail("warehouse ", ws.w, " has no DISTRICT_YTD ", d);
      if (!ds.has_next) Fail("warehouse ", ws.w, " has no DISTRICT_NEXT ", d);
      every_d_ytd = every_d_ytd && ds.has_ytd;
      sum_d_ytd += ds.ytd;
      CheckDistrict(ws, d, ds);
    }
    if (!ws.has_ytd) {
      Fail("warehouse ", ws.w, " has no WAREHOUSE_YTD row");
      continue;
    }
    if (every_d_ytd && ws.ytd != sum_d_ytd)
      Fail("condition 1 (w ", ws.w, "): W_YTD ", ws.ytd, " != sum(D_YTD) ", sum_d_ytd);
    if (ws.ytd != ws.history_amount)
      Fail("condition 8 (w ", ws.w, "): W_YTD ", ws.ytd, " != sum(H_AMOUNT) ", ws.history_amount);
  }
  warehouses_.clear();
}

// The parts that need a missing DISTRICT_YTD / DISTRICT_NEXT row (reported
// by the caller) are skipped.
void Checker::CheckDistrict(const WarehouseState& ws, uint32_t d, const DistrictState& ds) {
  const uint32_t w = ws.w;
  const int64_t next = ds.next_o_id;
  // 2
  if (ds.has_next && static_cast<uint64_t>(next - 1) != ds.max_o_id)
    Fail("condition 2 (w ", w, ", d ", d, "): D_NEXT_O_ID - 1 = ", next - 1, " != max(O_ID) ", ds.max_o_id);
  if (ds.has_next && ds.new_orders > 0 && static_cast<uint64_t>(next - 1) != ds.max_no)
    Fail("condition 2 (w ", w, ", d ", d, "): D_NEXT_O_ID - 1 = ", next - 1, " != max(NO_O_ID) ", ds.max_no);
  // 3
  if (ds.new_orders > 0 && ds.max_no - ds.min_no + 1 != ds.new_orders)
    Fail("condition 3 (w ", w, ", d ", d, "): max(NO_O_ID) - min(NO_O_ID) + 1 = ", ds.max_no - ds.min_no + 1,
         " != ", ds.new_orders, " NEW_ORDER rows");
  // 4
  if (ds.sum_ol_cnt != ds.order_lines)
    Fail("condition 4 (w ", w, ", d ", d, "): sum(O_OL_CNT) ", ds.sum_ol_cnt, " != ", ds.order_lines,
         " ORDER_LINE rows");
  // 5, 6
  for (const OrderInfo& oi : ds.orders) {
    if ((oi.carrier_id == 0) != oi.has_new_order)
      Fail("condition 5 (w ", w, ", d ", d, "): order ", oi.o_id, " has O_CARRIER_ID ", oi.carrier_id, " and ",
           oi.has_new_order ? "a" : "no", " NEW_ORDER row");
    if (oi.ol_cnt != oi.lines)
      Fail("condition 6 (w ", w, ", d ", d, "): order ", oi.o_id, " has O_OL_CNT ", oi.ol_cnt, " but ", oi.lines,
           " ORDER_LINE rows");
  }
  // 9
  if (ds.has_ytd && ds.ytd != ds.history_amount)
    Fail("condition 9 (w ", w, ", d ", d, "): D_YTD ", ds.ytd, " != sum(H_AMOUNT) ", ds.history_amount);
  // HISTORY keys: Payment appends at the district's highest seq + 1, so a
  // district's seqs are 0, 1, 2, ... without a gap.
  if (ds.history_max_seq_plus_1 != ds.history_rows)
    Fail("HISTORY keys (w ", w, ", d ", d, "): ", ds.history_rows, " rows but the highest seq + 1 is ",
         ds.history_max_seq_plus_1);
  for (uint32_t c = 1; c < ds.last_order.size(); ++c) {
    if (ds.last_order[c] != 0)
      Fail("index CUSTOMER_LAST_ORDER (w ", w, ", d ", d, ", c ", c, "): missing, the customer's highest O_ID is ",
           ds.last_order[c]);
  }
}

void Checker::CheckCustomers(const PartitionStore& store) {
  Scan<CustomerRow>(store, kCustomer, [&](Key k, const CustomerRow& row) {
    const uint32_t w = WarehouseOf(k), d = DistrictOf(k);
    const uint32_t c = static_cast<uint32_t>(KeyRow(k) & 0xFFFFFFFFu);
    const int64_t i = CustomerIndex(w, d, c);
    if (i < 0) {
      Fail("condition 10 (w ", w, ", d ", d, "): CUSTOMER ", c, " out of range");
      return;
    }
    if (row.balance != delivered_[i] - paid_[i])
      Fail("condition 10 (w ", w, ", d ", d, ", c ", c, "): C_BALANCE ", row.balance,
           " != sum(delivered OL_AMOUNT) ", delivered_[i], " - sum(H_AMOUNT) ", paid_[i]);
    if (row.balance + row.ytd_payment != delivered_[i])
      Fail("condition 12 (w ", w, ", d ", d, ", c ", c, "): C_BALANCE + C_YTD_PAYMENT = ",
           row.balance + row.ytd_payment, " != sum(delivered OL_AMOUNT) ", delivered_[i]);
  });
}

void Checker::CheckAllWarehousesSeen() {
  uint32_t missing = 0, first = 0;
  for (uint32_t w = 1; w <= scale_.warehouses; ++w) {
    if (!seen_warehouse_[w]) {
      if (missing++ == 0) first = w;
    }
  }
  if (missing > 0) Fail(missing, " of ", scale_.warehouses, " warehouses missing from the stores (first: ", first, ")");
}

}  // namespace

CheckReport CheckConsistency(const std::vector<const PartitionStore*>& stores, const Scale& scale,
                             bool all_warehouses) {
  CheckReport report;
  report.conditions = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  if (all_warehouses) {
    report.conditions.push_back(10);
    report.conditions.push_back(12);
  }
  if (absl::Status s = scale.Validate(); !s.ok()) {
    report.ok = false;
    report.failures.push_back(absl::StrCat("bad scale: ", s.ToString()));
    return report;
  }
  Checker checker(scale, all_warehouses, &report);
  for (const PartitionStore* store : stores) {
    CHECK(store != nullptr);
    checker.CheckOrderSide(*store);
  }
  if (all_warehouses) {
    for (const PartitionStore* store : stores) checker.CheckCustomers(*store);
    checker.CheckAllWarehousesSeen();
  }
  return report;
}

}  // namespace tpcc
}  // namespace detdb
