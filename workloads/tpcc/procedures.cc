// The TPC-C stored procedures (clause 2.4 - 2.8). See procedures.h for the
// read and write sets each one expects.
//
// Two rules shape the code:
//  - A multi-partition txn (New-Order with a remote supply warehouse,
//    Payment of a remote customer) runs on every writing partition with the
//    same reads, and each partition applies only its own writes. So the
//    result and the abort decision depend only on the txn and its declared
//    reads, never on which partition runs the procedure.
//  - Reads of declared keys do not see the txn's own writes (covered reads
//    do). A row read and written whole is changed in place through
//    TxnContext::Update (one copy into the write buffer, and the apply
//    writes through the record found by the read), whose second call for a
//    key sees the first one's changes (a STOCK row of an item ordered
//    twice).
#include "workloads/tpcc/procedures.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "workloads/tpcc/new_order_lines.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {
namespace {

namespace tp = pb::tpcc;

template <typename Row>
void Zero(Row* row) {
  std::memset(row, 0, sizeof(Row));
}

// Reads key's row: the status of Read (InvalidArgument: not declared or
// covered; NotFound: no record), or Internal for a row of the wrong size.
template <typename Row>
absl::Status ReadRow(TxnContext* ctx, Key key, Row* row) {
  absl::StatusOr<std::string_view> v = ctx->Read(key);
  if (!v.ok()) return v.status();
  if (!Parse(*v, row))
    return absl::InternalError(absl::StrCat("record of key ", key, " has ", v->size(), " bytes, not ", sizeof(Row)));
  return absl::OkStatus();
}

template <typename Row>
absl::Status WriteRow(TxnContext* ctx, Key key, const Row& row) {
  return ctx->Write(key, Bytes(row));
}

// Key's row as the txn's buffered write, to change in place
// (TxnContext::Update: no copies out and back), or Update's error; Internal
// for a row of the wrong size.
template <typename Row>
absl::StatusOr<Row*> UpdateRow(TxnContext* ctx, Key key) {
  static_assert(std::is_trivially_copyable_v<Row> && alignof(Row) <= 8, "Update's bytes are 8-byte aligned");
  absl::StatusOr<absl::Span<char>> v = ctx->Update(key);
  if (!v.ok()) return v.status();
  if (v->size() != sizeof(Row))
    return absl::InternalError(absl::StrCat("record of key ", key, " has ", v->size(), " bytes, not ", sizeof(Row)));
  return std::launder(reinterpret_cast<Row*>(v->data()));
}

// This thread's message of type M, cleared: the two hot procedures
// (New-Order, Payment) reuse one per worker instead of building and freeing
// one per txn. A procedure never runs inside another on the same thread,
// and its message is not used after it returns.
template <typename M>
M& ThreadMessage() {
  thread_local M m;
  m.Clear();
  return m;
}

// Args of at most this many bytes (every well-formed New-Order or Payment:
// 15 lines take ~150 bytes) are parsed into the thread's message; larger
// ones into a message of their own (*own), so that one oversized txn does
// not leave its memory held by the worker's message for good (Clear keeps
// capacity).
constexpr size_t kReusedArgsBytes = 4096;

template <typename Args>
Args& ArgsMessage(TxnContext* ctx, std::optional<Args>* own) {
  if (ctx->txn().args().size() <= kReusedArgsBytes) return ThreadMessage<Args>();
  return own->emplace();
}

template <typename Args>
absl::Status ParseArgs(TxnContext* ctx, Args* args) {
  if (!args->ParseFromString(ctx->txn().args()))
    return absl::InvalidArgumentError(absl::StrCat("cannot parse ", args->GetTypeName()));
  return absl::OkStatus();
}

// Debian's Abseil has its own string_view: absl::StrCat takes std::string_view
// only through this.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }

bool ValidWarehouse(uint32_t w) { return w >= 1 && w <= kMaxWarehouses; }
bool ValidDistrict(uint32_t d) { return d >= 1 && d <= kDistrictsPerWarehouse; }
// Customer and order ids live in the low 32 bits of a key (order lines: 28).
bool ValidOrderId(uint32_t o) { return o >= 1 && o < (1u << 28); }

int64_t Timestamp(TxnContext* ctx) { return static_cast<int64_t>(ctx->txn().id()); }

// "12.34" for 1234 cents.
std::string Dollars(int64_t cents) {
  const bool neg = cents < 0;
  const uint64_t abs = neg ? 0 - static_cast<uint64_t>(cents) : static_cast<uint64_t>(cents);
  const uint64_t frac = abs % 100;
  return absl::StrCat(neg ? "-" : "", abs / 100, frac < 10 ? ".0" : ".", frac);
}

absl::Status Mismatch(std::string_view what) {
  return absl::AbortedError(absl::StrCat(AV(kOllpMismatch), ": ", AV(what)));
}

// The order id of a NEW_ORDER or ORDER key.
uint32_t OrderIdOf(Key k) { return static_cast<uint32_t>(KeyRow(k) & 0xFFFFFFFFu); }

// The oldest undelivered orders of (w, d), at most `max`, oldest first: the
// district's first NEW_ORDER keys. A covered scan: DISTRICT_NEXT(w, d) must
// be declared.
absl::Status OldestNewOrders(TxnContext* ctx, uint32_t w, uint32_t d, size_t max, std::vector<uint32_t>* out) {
  out->clear();
  return ctx->Scan(FirstNewOrderKey(w, d), LastNewOrderKey(w, d), /*reverse=*/false,
                   [&](Key k, std::string_view) {
                     out->push_back(OrderIdOf(k));
                     return out->size() < max;
                   });
}

// The order lines of (w, d)'s orders [first_o, last_o], in key order, as
// (key, row). A covered scan.
absl::Status OrderLines(TxnContext* ctx, uint32_t w, uint32_t d, uint32_t first_o, uint32_t last_o,
                        std::vector<std::pair<Key, OrderLineRow>>* out) {
  out->clear();
  absl::Status bad;
  absl::Status s = ctx->Scan(FirstOrderLineKey(w, d, first_o), LastOrderLineKey(w, d, last_o), /*reverse=*/false,
                             [&](Key k, std::string_view v) {
                               out->emplace_back(k, OrderLineRow{});
                               if (Parse(v, &out->back().second)) return true;
                               bad = absl::InternalError(absl::StrCat("ORDER_LINE row of ", v.size(), " bytes"));
                               return false;
                             });
  return s.ok() ? bad : s;
}

// Distinct item ids, ascending, of the order lines of (w, d)'s orders
// [next_o_id - 20, next_o_id) (clause 2.8.2.2): one covered scan.
absl::StatusOr<std::vector<uint32_t>> RecentItems(TxnContext* ctx, uint32_t w, uint32_t d, int32_t next_o_id) {
  std::vector<uint32_t> items;
  const int32_t first = std::max<int32_t>(1, next_o_id - 20);
  if (first > next_o_id - 1) return items;
  std::vector<std::pair<Key, OrderLineRow>> lines;
  absl::Status s =
      OrderLines(ctx, w, d, static_cast<uint32_t>(first), static_cast<uint32_t>(next_o_id - 1), &lines);
  if (!s.ok()) return s;
  for (const auto& [k, line] : lines) items.push_back(static_cast<uint32_t>(line.i_id));
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return items;
}

}  // namespace

// ---- New-Order (clause 2.4.2) ----

absl::Status NewOrder(TxnContext* ctx, std::string* result) {
  // Arguments and result are the worker thread's own messages, reused
  // (ParseFromString and Clear keep their fields' capacity): no heap
  // allocation in the steady state, and no arena to set up and tear down.
  std::optional<tp::NewOrderArgs> own;
  tp::NewOrderArgs& a = ArgsMessage(ctx, &own);
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id(), d = a.d_id(), c = a.c_id();
  if (!ValidWarehouse(w) || !ValidDistrict(d) || c < 1)
    return absl::InvalidArgumentError(absl::StrCat("bad New-Order warehouse/district/customer ", w, "/", d, "/", c));
  // The lines, from whichever encoding the client used.
  std::array<OrderLine, kMaxOrderLines> lines;
  int n = 0;
  if (!(s = DecodeOrderLines(a, &lines, &n)).ok()) return s;

  // Items first: an unused item rolls the whole txn back (clause 2.4.2.3).
  std::array<ItemRow, kMaxOrderLines> items;
  std::array<Key, kMaxOrderLines> item_keys;
  for (int i = 0; i < n; ++i) item_keys[i] = ItemKey(lines[i].i_id);
  ctx->Prefetch(std::span<const Key>(item_keys.data(), n));
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::string_view> v = ctx->ReadReplicated(item_keys[i]);
    if (absl::IsNotFound(v.status()))
      return absl::AbortedError(absl::StrCat(AV(kRollback), ": item ", lines[i].i_id, " is unused"));
    if (!v.ok()) return v.status();
    if (!Parse(*v, &items[i])) return absl::InternalError("ITEM record of the wrong size");
  }

  // W_TAX and D_TAX from the static rows, D_NEXT_O_ID from DISTRICT_NEXT.
  WarehouseRow wh;
  DistrictRow district;
  CustomerRow customer;
  if (!(s = ReadRow(ctx, WarehouseKey(w), &wh)).ok()) return s;
  if (!(s = ReadRow(ctx, DistrictKey(w, d), &district)).ok()) return s;
  absl::StatusOr<DistrictNextRow*> next = UpdateRow<DistrictNextRow>(ctx, DistrictNextKey(w, d));
  if (!next.ok()) return next.status();
  if (!(s = ReadRow(ctx, CustomerKey(w, d, c), &customer)).ok()) return s;

  const int32_t o_id = (*next)->next_o_id;
  if (o_id < 1 || !ValidOrderId(static_cast<uint32_t>(o_id) + 1))
    return absl::InternalError(absl::StrCat("D_NEXT_O_ID of ", w, "/", d, " is ", o_id));
  (*next)->next_o_id = o_id + 1;

  tp::NewOrderResult& r = ThreadMessage<tp::NewOrderResult>();
  r.set_o_id(static_cast<uint32_t>(o_id));
  r.set_c_last(GetField(customer.last).data(), GetField(customer.last).size());
  r.set_c_credit(GetField(customer.credit).data(), GetField(customer.credit).size());
  r.set_c_discount(customer.discount);
  r.set_w_tax(wh.tax);
  r.set_d_tax(district.tax);

  bool all_local = true;
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    const OrderLine& in = lines[i];
    const uint32_t supply_w = in.supply_w_id;
    const int32_t qty = static_cast<int32_t>(in.quantity);
    // The STOCK row in place: an item on two lines gets the first line's
    // row back (Update), changed again.
    absl::StatusOr<StockRow*> row = UpdateRow<StockRow>(ctx, StockKey(supply_w, in.i_id));
    if (!row.ok()) return row.status();
    StockRow& stock = **row;
    // Clause 2.4.2.2.
    if (stock.quantity >= qty + 10) {
      stock.quantity -= qty;
    } else {
      stock.quantity = stock.quantity - qty + 91;
    }
    stock.ytd += qty;
    stock.order_cnt += 1;
    if (supply_w != w) {
      stock.remote_cnt += 1;
      all_local = false;
    }

    const int64_t amount = static_cast<int64_t>(qty) * items[i].price;
    sum += amount;
    const bool original = FieldHasOriginal(items[i].data) && FieldHasOriginal(stock.data);

    OrderLineRow line;
    Zero(&line);
    line.i_id = static_cast<int32_t>(in.i_id);
    line.supply_w_id = static_cast<int32_t>(supply_w);
    line.delivery_d = 0;
    line.quantity = qty;
    line.amount = static_cast<int32_t>(amount);  // <= kMaxLineQuantity x kMaxItemPriceCents (schema.h)
    std::memcpy(line.dist_info, stock.dist[d - 1], sizeof(line.dist_info));
    if (!(s = WriteRow(ctx, OrderLineKey(w, d, static_cast<uint32_t>(o_id), static_cast<uint32_t>(i + 1)), line))
             .ok())
      return s;

    r.add_s_quantity(stock.quantity);
    r.add_ol_amount(amount);
    r.mutable_brand_generic()->push_back(original ? 'B' : 'G');
  }

  OrderRow order;
  Zero(&order);
  order.c_id = static_cast<int32_t>(c);
  order.entry_d = Timestamp(ctx);
  order.carrier_id = 0;
  order.ol_cnt = n;
  order.all_local = all_local ? 1 : 0;
  if (!(s = WriteRow(ctx, OrderKey(w, d, static_cast<uint32_t>(o_id)), order)).ok()) return s;

  NewOrderRow no;
  Zero(&no);
  no.o_id = o_id;
  no.d_id = static_cast<int32_t>(d);
  no.w_id = static_cast<int32_t>(w);
  if (!(s = WriteRow(ctx, NewOrderKey(w, d, static_cast<uint32_t>(o_id)), no)).ok()) return s;

  OrderIdRow last;
  Zero(&last);
  last.o_id = o_id;
  if (!(s = WriteRow(ctx, CustomerLastOrderKey(w, d, c), last)).ok()) return s;

  // total = sum * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), rates in 1/10,000:
  // exact in int64 (sum <= 15 * 10 * 100.00), rounded half up to a cent.
  const int64_t scaled =
      sum * (10000 - static_cast<int64_t>(customer.discount)) * (10000 + int64_t{wh.tax} + int64_t{district.tax});
  r.set_total_amount((scaled + 50000000) / 100000000);
  r.SerializeToString(result);
  return absl::OkStatus();
}

// ---- Payment (clause 2.5.2) ----

absl::Status Payment(TxnContext* ctx, std::string* result) {
  std::optional<tp::PaymentArgs> own;
  tp::PaymentArgs& a = ArgsMessage(ctx, &own);
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id(), d = a.d_id(), c_w = a.c_w_id(), c_d = a.c_d_id(), c = a.c_id();
  if (!ValidWarehouse(w) || !ValidDistrict(d) || !ValidWarehouse(c_w) || !ValidDistrict(c_d) || c < 1)
    return absl::InvalidArgumentError(absl::StrCat("bad Payment ids ", w, "/", d, " customer ", c_w, "/", c_d, "/", c));
  if (a.amount() <= 0) return absl::InvalidArgumentError(absl::StrCat("Payment of ", a.amount(), " cents"));
  const int64_t amount = a.amount();

  // The static rows for H_DATA's names; the YTDs from their own rows.
  WarehouseRow wh;
  DistrictRow district;
  if (!(s = ReadRow(ctx, WarehouseKey(w), &wh)).ok()) return s;
  if (!(s = ReadRow(ctx, DistrictKey(w, d), &district)).ok()) return s;
  absl::StatusOr<WarehouseYtdRow*> w_ytd = UpdateRow<WarehouseYtdRow>(ctx, WarehouseYtdKey(w));
  if (!w_ytd.ok()) return w_ytd.status();
  absl::StatusOr<DistrictYtdRow*> d_ytd = UpdateRow<DistrictYtdRow>(ctx, DistrictYtdKey(w, d));
  if (!d_ytd.ok()) return d_ytd.status();
  absl::StatusOr<CustomerRow*> customer_row = UpdateRow<CustomerRow>(ctx, CustomerKey(c_w, c_d, c));
  if (!customer_row.ok()) return customer_row.status();
  CustomerRow& customer = **customer_row;

  (*w_ytd)->ytd += amount;
  (*d_ytd)->ytd += amount;

  customer.balance -= amount;
  customer.ytd_payment += amount;
  customer.payment_cnt += 1;
  const bool bad_credit = GetField(customer.credit) == "BC";
  if (bad_credit) {
    std::string data = absl::StrCat(c, " ", c_d, " ", c_w, " ", d, " ", w, " ", Dollars(amount), " |",
                                    AV(GetField(customer.data)));
    if (data.size() > sizeof(customer.data)) data.resize(sizeof(customer.data));
    SetField(customer.data, data);
  }

  // The HISTORY row at the district's next sequence number: its last
  // HISTORY key + 1 (a reverse scan of the district's range, covered by
  // DISTRICT_YTD), so a district's HISTORY keys are 0, 1, 2, ... The scan is
  // possible only on the district's partition: when a remote customer's
  // partition runs this txn, it fails there with FailedPrecondition
  // (procedure.h) and the HISTORY write, which that partition would not
  // apply anyway, is skipped. Neither the outcome nor the result depends on
  // it.
  uint64_t next_seq = 0;
  s = ctx->Scan(FirstHistoryKey(w, d), LastHistoryKey(w, d), /*reverse=*/true, [&](Key k, std::string_view) {
    next_seq = (KeyRow(k) & 0xFFFFFFFFu) + 1;
    return false;
  });
  // HistoryKey keeps 32 bits of the seq: the 2^32nd payment of a district
  // would wrap to seq 0 and overwrite that row. Refused instead, as
  // New-Order refuses an order id past ValidOrderId. (Only the district's
  // partition sees the seq: a remote customer's partition would commit its
  // part. Unreachable in practice: 2^32 payments in one district.)
  if (s.ok() && next_seq > 0xFFFFFFFFu)
    return absl::InternalError(absl::StrCat("HISTORY of ", w, "/", d, " is full (", next_seq, " rows)"));
  if (s.ok()) {
    HistoryRow h;
    Zero(&h);
    h.c_id = static_cast<int32_t>(c);
    h.c_d_id = static_cast<int32_t>(c_d);
    h.c_w_id = static_cast<int32_t>(c_w);
    h.d_id = static_cast<int32_t>(d);
    h.w_id = static_cast<int32_t>(w);
    h.date = Timestamp(ctx);
    h.amount = amount;
    SetField(h.data, absl::StrCat(AV(GetField(wh.name)), "    ", AV(GetField(district.name))));
    if (!(s = WriteRow(ctx, HistoryKey(w, d, next_seq), h)).ok()) return s;
  } else if (!absl::IsFailedPrecondition(s)) {
    return s;
  }

  tp::PaymentResult& r = ThreadMessage<tp::PaymentResult>();
  r.set_c_balance(customer.balance);
  r.set_c_credit(GetField(customer.credit).data(), GetField(customer.credit).size());
  if (bad_credit) {
    const std::string_view data = GetField(customer.data).substr(0, 200);
    r.set_c_data(data.data(), data.size());
  }
  r.SerializeToString(result);
  return absl::OkStatus();
}

// ---- Order-Status (clause 2.6.2) ----

absl::Status OrderStatus(TxnContext* ctx, std::string* result) {
  tp::OrderStatusArgs a;
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id(), d = a.d_id(), c = a.c_id();
  if (!ValidWarehouse(w) || !ValidDistrict(d) || c < 1)
    return absl::InvalidArgumentError(absl::StrCat("bad Order-Status ids ", w, "/", d, "/", c));

  CustomerRow customer;
  if (!(s = ReadRow(ctx, CustomerKey(w, d, c), &customer)).ok()) return s;
  tp::OrderStatusResult r;
  r.set_c_balance(customer.balance);

  OrderIdRow last;
  s = ReadRow(ctx, CustomerLastOrderKey(w, d, c), &last);
  if (s.ok() && last.o_id >= 1) {
    const uint32_t o = static_cast<uint32_t>(last.o_id);
    OrderRow order;
    if (!(s = ReadRow(ctx, OrderKey(w, d, o), &order)).ok()) return s;
    r.set_o_id(o);
    r.set_o_entry_d(order.entry_d);
    r.set_o_carrier_id(static_cast<uint32_t>(order.carrier_id));
    std::vector<std::pair<Key, OrderLineRow>> lines;
    if (!(s = OrderLines(ctx, w, d, o, o, &lines)).ok()) return s;
    for (const auto& [k, line] : lines) {
      r.add_ol_i_id(static_cast<uint32_t>(line.i_id));
      r.add_ol_amount(line.amount);
      r.add_ol_delivery_d(line.delivery_d);
    }
  } else if (!s.ok() && !absl::IsNotFound(s)) {
    return s;  // NotFound: the customer has no order yet (o_id 0)
  }
  *result = r.SerializeAsString();
  return absl::OkStatus();
}

// ---- Delivery (clause 2.7.4) ----

absl::Status Delivery(TxnContext* ctx, std::string* result) {
  tp::DeliveryArgs a;
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id();
  if (!ValidWarehouse(w) || a.carrier_id() < 1 || a.carrier_id() > 10)
    return absl::InvalidArgumentError(absl::StrCat("bad Delivery warehouse ", w, " or carrier ", a.carrier_id()));
  const int64_t now = Timestamp(ctx);

  // The plans: per district, the orders the reconnaissance saw from the
  // oldest undelivered one on, with their customers (whose keys are in the
  // write set). The order delivered now must be one of them; several
  // candidates let concurrent Deliveries of one warehouse all succeed
  // instead of restarting each other.
  std::vector<std::vector<const tp::DeliveryPlan*>> by_district(kDistrictsPerWarehouse + 1);
  for (const tp::DeliveryPlan& plan : a.plans()) {
    if (!ValidDistrict(plan.d_id()))
      return absl::InvalidArgumentError(absl::StrCat("Delivery plan for district ", plan.d_id()));
    by_district[plan.d_id()].push_back(&plan);
  }
  tp::DeliveryResult r;
  std::vector<uint32_t> oldest;
  std::vector<std::pair<Key, OrderLineRow>> lines;
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    if (by_district[d].empty()) continue;
    // The district's oldest NEW_ORDER row (clause 2.7.4.2: the lowest
    // NO_O_ID), by a scan covered by DISTRICT_NEXT.
    if (!(s = OldestNewOrders(ctx, w, d, 1, &oldest)).ok()) return s;
    tp::DeliveryPlan* done = r.add_delivered();
    done->set_d_id(d);
    if (oldest.empty()) continue;  // nothing to deliver in this district
    const uint32_t o = oldest[0];
    const tp::DeliveryPlan* planned = nullptr;
    for (const tp::DeliveryPlan* p : by_district[d])
      if (p->o_id() == o) planned = p;
    if (planned == nullptr)
      return Mismatch(absl::StrCat("district ", w, "/", d, " oldest undelivered order is ", o,
                                   ", not among the planned ones"));
    const tp::DeliveryPlan& plan = *planned;

    absl::StatusOr<OrderRow*> order_row = UpdateRow<OrderRow>(ctx, OrderKey(w, d, o));
    if (!order_row.ok()) return order_row.status();
    OrderRow& order = **order_row;
    if (order.c_id < 1 || static_cast<uint32_t>(order.c_id) != plan.c_id())
      return Mismatch(absl::StrCat("order ", w, "/", d, "/", o, " is customer ", order.c_id, "'s, planned ",
                                   plan.c_id()));
    const uint32_t c = plan.c_id();

    if (!(s = ctx->Delete(NewOrderKey(w, d, o))).ok()) return s;

    order.carrier_id = static_cast<int32_t>(a.carrier_id());

    // Every ORDER_LINE row of the order (clause 2.7.4.2): a covered scan.
    int64_t sum = 0;
    if (!(s = OrderLines(ctx, w, d, o, o, &lines)).ok()) return s;
    for (auto& [lk, line] : lines) {
      line.delivery_d = now;
      sum += line.amount;
      if (!(s = WriteRow(ctx, lk, line)).ok()) return s;
    }

    absl::StatusOr<CustomerRow*> customer = UpdateRow<CustomerRow>(ctx, CustomerKey(w, d, c));
    if (!customer.ok()) return customer.status();
    (*customer)->balance += sum;
    (*customer)->delivery_cnt += 1;

    done->set_o_id(o);
    done->set_c_id(c);
  }
  *result = r.SerializeAsString();
  return absl::OkStatus();
}

// ---- Stock-Level (clause 2.8.2) ----

absl::Status StockLevel(TxnContext* ctx, std::string* result) {
  tp::StockLevelArgs a;
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id(), d = a.d_id();
  if (!ValidWarehouse(w) || !ValidDistrict(d))
    return absl::InvalidArgumentError(absl::StrCat("bad Stock-Level district ", w, "/", d));

  DistrictNextRow district;
  if (!(s = ReadRow(ctx, DistrictNextKey(w, d), &district)).ok()) return s;
  // TPC-C does not require Stock-Level to be serializable: it must read
  // committed data no older than the txn's start (its reconnaissance). So
  // the window is the last 20 orders as of the reconnaissance
  // (args.next_o_id), not as of now: New-Orders that came in since do not
  // restart it. What it relied on, re-checked: the window still exists
  // (D_NEXT_O_ID has not gone back) and every item of its lines (order
  // lines never change item) has its stock in the read set.
  if (a.next_o_id() == 0 || static_cast<int64_t>(a.next_o_id()) > district.next_o_id)
    return Mismatch(absl::StrCat("district ", w, "/", d, " D_NEXT_O_ID is ", district.next_o_id, ", recon saw ",
                                 a.next_o_id()));
  absl::StatusOr<std::vector<uint32_t>> items = RecentItems(ctx, w, d, static_cast<int32_t>(a.next_o_id()));
  if (!items.ok()) return items.status();

  std::vector<Key> declared(ctx->txn().read_set().begin(), ctx->txn().read_set().end());
  std::sort(declared.begin(), declared.end());
  for (uint32_t i : *items) {
    if (!std::binary_search(declared.begin(), declared.end(), StockKey(w, i)))
      return Mismatch(absl::StrCat("district ", w, "/", d, " item ", i,
                                   " of the last 20 orders before ", a.next_o_id(), " has no stock in the read set"));
  }
  uint32_t low = 0;
  for (uint32_t i : *items) {
    StockRow stock;
    if (!(s = ReadRow(ctx, StockKey(w, i), &stock)).ok()) return s;
    if (stock.quantity < static_cast<int32_t>(a.threshold())) ++low;
  }
  tp::StockLevelResult r;
  r.set_low_stock(low);
  *result = r.SerializeAsString();
  return absl::OkStatus();
}

// ---- Reconnaissance ----

absl::Status ReconDelivery(TxnContext* ctx, std::string* result) {
  tp::ReconDeliveryArgs a;
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id();
  if (!ValidWarehouse(w)) return absl::InvalidArgumentError(absl::StrCat("bad warehouse ", w));
  tp::ReconDeliveryResult r;
  std::vector<uint32_t> oldest;
  for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    // Up to kDeliveryCandidates orders from the oldest undelivered one on
    // (see Delivery).
    if (!(s = OldestNewOrders(ctx, w, d, kDeliveryCandidates, &oldest)).ok()) return s;
    if (oldest.empty()) {
      r.add_plans()->set_d_id(d);  // o_id 0: none undelivered
      continue;
    }
    for (uint32_t o : oldest) {
      OrderRow order;
      if (!(s = ReadRow(ctx, OrderKey(w, d, o), &order)).ok()) return s;
      tp::DeliveryPlan* plan = r.add_plans();
      plan->set_d_id(d);
      plan->set_o_id(o);
      plan->set_c_id(static_cast<uint32_t>(order.c_id));
    }
  }
  *result = r.SerializeAsString();
  return absl::OkStatus();
}

absl::Status ReconStockLevel(TxnContext* ctx, std::string* result) {
  tp::ReconStockLevelArgs a;
  absl::Status s = ParseArgs(ctx, &a);
  if (!s.ok()) return s;
  const uint32_t w = a.w_id(), d = a.d_id();
  if (!ValidWarehouse(w) || !ValidDistrict(d))
    return absl::InvalidArgumentError(absl::StrCat("bad district ", w, "/", d));
  DistrictNextRow district;
  if (!(s = ReadRow(ctx, DistrictNextKey(w, d), &district)).ok()) return s;
  absl::StatusOr<std::vector<uint32_t>> items = RecentItems(ctx, w, d, district.next_o_id);
  if (!items.ok()) return items.status();
  tp::ReconStockLevelResult r;
  r.set_next_o_id(static_cast<uint32_t>(district.next_o_id));
  for (uint32_t i : *items) r.add_i_ids(i);
  *result = r.SerializeAsString();
  return absl::OkStatus();
}

absl::Status RegisterProcedures(ProcedureRegistry* registry) {
  const std::pair<uint32_t, std::pair<const char*, Procedure>> procs[] = {
      {kNewOrderType, {"tpcc_new_order", &NewOrder}},
      {kPaymentType, {"tpcc_payment", &Payment}},
      {kOrderStatusType, {"tpcc_order_status", &OrderStatus}},
      {kDeliveryType, {"tpcc_delivery", &Delivery}},
      {kStockLevelType, {"tpcc_stock_level", &StockLevel}},
      {kReconDeliveryType, {"tpcc_recon_delivery", &ReconDelivery}},
      {kReconStockLevelType, {"tpcc_recon_stock_level", &ReconStockLevel}},
  };
  for (const auto& [type, entry] : procs) {
    absl::Status s = registry->Register(type, entry.first, entry.second);
    if (!s.ok()) return s;
  }
  registry->SetKeyCover(&Cover);
  registry->SetRangeCover(&RangeCover);
  return absl::OkStatus();
}

}  // namespace tpcc
}  // namespace detdb
