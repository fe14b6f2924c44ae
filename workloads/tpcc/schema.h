// TPC-C's schema in detdb: the nine tables of clause 1.3 with the spec's
// columns (fixed-size rows; strings as zero-padded char arrays, money as
// int64 cents, rates as int32 ten-thousandths, dates as int64 "timestamps"
// derived from txn ids), the key encoding, the partitioning by warehouse
// and the key cover that lets a district's lock cover its orders.
//
// WAREHOUSE and DISTRICT are partitioned vertically (clause 1.6): their
// rows keep only the columns no txn updates (names, addresses, W_TAX,
// D_TAX); W_YTD lives in WAREHOUSE_YTD, D_YTD in DISTRICT_YTD and
// D_NEXT_O_ID in DISTRICT_NEXT, so that New-Order (D_NEXT_O_ID) and Payment
// (W_YTD, D_YTD) lock disjoint keys.
//
// Keys: MakeKey(table, row), row = warehouse << 40 | rest (warehouse in
// 1..65535), so that the warehouse, and with it the partition, of every key
// but ITEM's is in the key:
//   WAREHOUSE            w << 40                      (static columns)
//   WAREHOUSE_YTD        w << 40                      -> W_YTD
//   DISTRICT             w << 40 | d                  (static columns)
//   DISTRICT_YTD         w << 40 | d                  -> D_YTD
//   DISTRICT_NEXT        w << 40 | d                  -> D_NEXT_O_ID
//   CUSTOMER             w << 40 | d << 32 | c
//   HISTORY              w << 40 | d << 32 | seq     (w, d: the paying district; seq per district)
//   NEW_ORDER, ORDER     w << 40 | d << 32 | o
//   ORDER_LINE           w << 40 | d << 32 | o << 4 | ol   (ol in 1..15)
//   ITEM                 i                            (replicated on every partition)
//   STOCK                w << 40 | i
// One index table, maintained by New-Order under a district-level lock:
//   CUSTOMER_LAST_ORDER  w << 40 | d << 32 | c  -> the customer's latest o_id
//
// Ordered tables (storage/ordered_index.h; TableOptions::ordered): NEW_ORDER,
// ORDER, ORDER_LINE and HISTORY are B+trees, so the accesses that are ordered
// by nature are range scans (TxnContext::Scan): the order lines of an order
// (w, d, o, 1..15), the oldest new order of a district (the first NEW_ORDER
// key of (w, d)), the last 20 orders' lines, a district's next HISTORY seq
// (its last HISTORY key + 1). Each table's rows of one district are one key
// range, which the district's cover below covers (RangeCover).
//
// Locking: WAREHOUSE and DISTRICT rows are never written after loading, so
// read locks on them never wait. The lock of DISTRICT_NEXT(w, d) covers
// (scheduler/procedure.h, KeyCover) every ORDER, NEW_ORDER, ORDER_LINE and
// CUSTOMER_LAST_ORDER row of that district; the lock of DISTRICT_YTD(w, d)
// covers its HISTORY rows. Order ids are only known inside New-Order
// (D_NEXT_O_ID), so inserts cannot be declared key by key; every txn
// touching those rows declares the cover instead: New-Order and Delivery
// write DISTRICT_NEXT, Order-Status and Stock-Level read it; Payment writes
// DISTRICT_YTD. DISTRICT covers nothing.
//
// Thread-safety: constants and pure functions.
#ifndef DETDB_WORKLOADS_TPCC_SCHEMA_H_
#define DETDB_WORKLOADS_TPCC_SCHEMA_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/partitioner.h"
#include "common/types.h"

namespace detdb {
namespace tpcc {

// Table ids.
// (20 and 21 were NEW_ORDER_HEAD and HISTORY_SEQ, index rows that the
// ordered tables replaced.)
inline constexpr uint32_t kWarehouse = 10, kDistrict = 11, kCustomer = 12, kHistory = 13, kNewOrder = 14,
                          kOrder = 15, kOrderLine = 16, kItem = 17, kStock = 18, kCustomerLastOrder = 19,
                          kWarehouseYtd = 22, kDistrictYtd = 23, kDistrictNext = 24;
// The first and last TPC-C table ids.
inline constexpr uint32_t kFirstTable = kWarehouse, kLastTable = kDistrictNext;

inline constexpr uint32_t kDistrictsPerWarehouse = 10;
inline constexpr uint32_t kMaxOrderLines = 15;
inline constexpr uint32_t kMaxWarehouses = 65535;
// OL_QUANTITY of a New-Order line (clause 2.4.1.5) and I_PRICE (clause
// 4.3.3.1, in cents): their product, a new line's OL_AMOUNT, fits the
// 32-bit OL_AMOUNT (OrderLineRow below), as do the loaded amounts.
inline constexpr int64_t kMaxLineQuantity = 10;
inline constexpr int64_t kMinItemPriceCents = 100, kMaxItemPriceCents = 10000;
static_assert(kMaxLineQuantity * kMaxItemPriceCents <= INT32_MAX, "OL_AMOUNT is 32-bit");

// ---- Rows (clause 1.3). All POD, copied with memcpy. ----

// WAREHOUSE and DISTRICT: the static columns only (never written after
// loading); the updated ones are in the rows below.
struct WarehouseRow {
  char name[10], street_1[20], street_2[20], city[20], state[2], zip[9];
  int32_t tax;   // W_TAX, ten-thousandths (0.1000 = 1000)
};

struct WarehouseYtdRow {  // WAREHOUSE_YTD
  int64_t ytd;            // W_YTD, cents
};

struct DistrictRow {
  char name[10], street_1[20], street_2[20], city[20], state[2], zip[9];
  int32_t tax;          // D_TAX, ten-thousandths
};

struct DistrictYtdRow {   // DISTRICT_YTD
  int64_t ytd;            // D_YTD, cents
};

struct DistrictNextRow {  // DISTRICT_NEXT
  int32_t next_o_id;      // D_NEXT_O_ID
  int32_t unused;
};

struct CustomerRow {
  char first[16], middle[2], last[16], street_1[20], street_2[20], city[20], state[2], zip[9], phone[16];
  int64_t since;        // C_SINCE
  char credit[2];       // "GC" or "BC"
  int64_t credit_lim;   // C_CREDIT_LIM, cents
  int32_t discount;     // C_DISCOUNT, ten-thousandths
  int64_t balance;      // C_BALANCE, cents
  int64_t ytd_payment;  // C_YTD_PAYMENT, cents
  int32_t payment_cnt, delivery_cnt;
  char data[500];       // C_DATA
};

struct HistoryRow {
  int32_t c_id, c_d_id, c_w_id, d_id, w_id;
  int64_t date;         // H_DATE
  int64_t amount;       // H_AMOUNT, cents
  char data[24];        // H_DATA
};

struct NewOrderRow {
  int32_t o_id, d_id, w_id, unused;
};

struct OrderRow {
  int32_t c_id;
  int64_t entry_d;      // O_ENTRY_D
  int32_t carrier_id;   // O_CARRIER_ID, 0 = null
  int32_t ol_cnt;       // O_OL_CNT
  int32_t all_local;    // O_ALL_LOCAL
};

struct OrderLineRow {
  int32_t i_id, supply_w_id;
  int64_t delivery_d;   // OL_DELIVERY_D, 0 = null
  int32_t quantity;
  int32_t amount;       // OL_AMOUNT, cents: at most 10 x 100.00 (new) or 9,999.99 (loaded)
  char dist_info[24];
};
// 48 bytes, so a record (16-byte header) is one 64-byte cache line: the
// table that grows fastest (10 rows per New-Order) writes one line per row
// with records 11% smaller than with a 64-bit OL_AMOUNT (56 + 16 bytes over
// two lines). docs/TPCC.md, eighteenth session.
static_assert(sizeof(OrderLineRow) == 48, "ORDER_LINE records are one cache line");

struct ItemRow {
  int32_t im_id;
  char name[24];
  int64_t price;        // I_PRICE, cents
  char data[50];
};

struct StockRow {
  int32_t quantity;
  char dist[kDistrictsPerWarehouse][24];  // S_DIST_01 .. S_DIST_10
  int64_t ytd;
  int32_t order_cnt, remote_cnt;
  char data[50];
};

struct OrderIdRow {   // CUSTOMER_LAST_ORDER
  int32_t o_id, unused;
};

// ---- Keys ----

inline constexpr uint64_t W(uint32_t w) { return static_cast<uint64_t>(w) << 40; }
inline constexpr uint64_t D(uint32_t d) { return static_cast<uint64_t>(d) << 32; }

inline constexpr Key WarehouseKey(uint32_t w) { return MakeKey(kWarehouse, W(w)); }
inline constexpr Key WarehouseYtdKey(uint32_t w) { return MakeKey(kWarehouseYtd, W(w)); }
inline constexpr Key DistrictKey(uint32_t w, uint32_t d) { return MakeKey(kDistrict, W(w) | d); }
inline constexpr Key DistrictYtdKey(uint32_t w, uint32_t d) { return MakeKey(kDistrictYtd, W(w) | d); }
inline constexpr Key DistrictNextKey(uint32_t w, uint32_t d) { return MakeKey(kDistrictNext, W(w) | d); }
inline constexpr Key CustomerKey(uint32_t w, uint32_t d, uint32_t c) { return MakeKey(kCustomer, W(w) | D(d) | c); }
inline constexpr Key HistoryKey(uint32_t w, uint32_t d, uint64_t seq) {
  return MakeKey(kHistory, W(w) | D(d) | (seq & 0xFFFFFFFFu));
}
inline constexpr Key NewOrderKey(uint32_t w, uint32_t d, uint32_t o) { return MakeKey(kNewOrder, W(w) | D(d) | o); }
inline constexpr Key OrderKey(uint32_t w, uint32_t d, uint32_t o) { return MakeKey(kOrder, W(w) | D(d) | o); }
inline constexpr Key OrderLineKey(uint32_t w, uint32_t d, uint32_t o, uint32_t ol) {
  return MakeKey(kOrderLine, W(w) | D(d) | static_cast<uint64_t>(o) << 4 | ol);
}
inline constexpr Key ItemKey(uint32_t i) { return MakeKey(kItem, i); }
inline constexpr Key StockKey(uint32_t w, uint32_t i) { return MakeKey(kStock, W(w) | i); }
inline constexpr Key CustomerLastOrderKey(uint32_t w, uint32_t d, uint32_t c) {
  return MakeKey(kCustomerLastOrder, W(w) | D(d) | c);
}

// The tables that are B+trees (TableOptions::ordered).
inline constexpr bool IsOrdered(uint32_t table) {
  return table == kNewOrder || table == kOrder || table == kOrderLine || table == kHistory;
}
// Key ranges of one district's rows (inclusive), for TxnContext::Scan.
inline constexpr uint32_t kMaxOrderId = (1u << 28) - 1;  // order lines keep 28 bits of o_id
inline constexpr Key FirstNewOrderKey(uint32_t w, uint32_t d) { return NewOrderKey(w, d, 0); }
inline constexpr Key LastNewOrderKey(uint32_t w, uint32_t d) { return NewOrderKey(w, d, kMaxOrderId); }
inline constexpr Key FirstHistoryKey(uint32_t w, uint32_t d) { return HistoryKey(w, d, 0); }
inline constexpr Key LastHistoryKey(uint32_t w, uint32_t d) { return HistoryKey(w, d, 0xFFFFFFFFu); }
// The order lines of orders [first_o, last_o] of (w, d).
inline constexpr Key FirstOrderLineKey(uint32_t w, uint32_t d, uint32_t first_o) {
  return OrderLineKey(w, d, first_o, 0);
}
inline constexpr Key LastOrderLineKey(uint32_t w, uint32_t d, uint32_t last_o) {
  return OrderLineKey(w, d, last_o, kMaxOrderLines);
}

// The warehouse of any key but ITEM's.
inline constexpr uint32_t WarehouseOf(Key k) { return static_cast<uint32_t>(KeyRow(k) >> 40) & 0xFFFF; }
// True for the tables keyed w << 40 | d (one row per district).
inline constexpr bool IsDistrictLevel(uint32_t table) {
  return table == kDistrict || table == kDistrictYtd || table == kDistrictNext;
}
// The district of a district-level key (DISTRICT, DISTRICT_YTD,
// DISTRICT_NEXT) or a row below a district
// (CUSTOMER, HISTORY, ORDER, ...).
inline constexpr uint32_t DistrictOf(Key k) {
  return IsDistrictLevel(KeyTable(k)) ? static_cast<uint32_t>(KeyRow(k) & 0xFF)
                                      : static_cast<uint32_t>(KeyRow(k) >> 32) & 0xFF;
}

// KeyCover: DISTRICT_NEXT(w, d) covers the order-side rows of (w, d)
// (ORDER, NEW_ORDER, ORDER_LINE, CUSTOMER_LAST_ORDER), DISTRICT_YTD(w, d)
// its HISTORY rows; every other key covers only itself.
Key Cover(Key k);

// RangeCover: a range of one covered table within one district (all keys
// between two such keys are of the same table, warehouse and district,
// since w and d are the high bits of the row) is covered by that
// district's cover key.
bool RangeCover(Key lo, Key hi, Key* cover);

// Warehouse w lives on partition (w - 1) % n; ITEM keys (replicated, never
// locked) map to partition 0.
class WarehousePartitioner final : public Partitioner {
 public:
  explicit WarehousePartitioner(uint32_t num_partitions) : n_(num_partitions == 0 ? 1 : num_partitions) {}
  uint32_t num_partitions() const override { return n_; }
  PartitionId PartitionOf(Key key) const override {
    if (n_ == 1) return 0;  // no division: ~30 calls per txn
    if (KeyTable(key) == kItem) return 0;
    const uint32_t w = WarehouseOf(key);
    return w == 0 ? 0 : (w - 1) % n_;
  }

 private:
  const uint32_t n_;
};

// ---- Rows <-> bytes ----

template <typename Row>
inline std::string_view Bytes(const Row& r) {
  return std::string_view(reinterpret_cast<const char*>(&r), sizeof(Row));
}
// False if bytes has the wrong size.
template <typename Row>
inline bool Parse(std::string_view bytes, Row* r) {
  if (bytes.size() != sizeof(Row)) return false;
  std::memcpy(r, bytes.data(), sizeof(Row));
  return true;
}
// Copies s into a fixed char field, zero-padding (truncating if longer).
template <size_t N>
inline void SetField(char (&field)[N], std::string_view s) {
  std::memset(field, 0, N);
  std::memcpy(field, s.data(), s.size() < N ? s.size() : N);
}
template <size_t N>
inline std::string_view GetField(const char (&field)[N]) {
  // memchr, not a loop over bytes: C_DATA is 500 bytes, and New-Order
  // reads I_DATA and S_DATA of every line (4.4% of all instructions of a
  // New-Order + Payment run as a loop; bench/ir_per_txn.sh).
  const void* end = std::memchr(field, '\0', N);
  return std::string_view(field, end == nullptr ? N : static_cast<size_t>(static_cast<const char*>(end) - field));
}

// Whether GetField(field) contains "ORIGINAL" (I_DATA, S_DATA: New-Order's
// brand-generic, clause 2.4.2.2). With SSE2, one pass over the field finds
// its end and the candidate 'O's 16 bytes at a time, and each candidate is
// one 8-byte compare: GetField and string_view::find took ~1K more
// instructions per New-Order (memchr for the end, memchr per 'O' and the
// search's loop, per line; docs/TPCC.md, "twenty-first session").
template <size_t N>
inline bool FieldHasOriginal(const char (&field)[N]) {
  static constexpr char kPattern[] = "ORIGINAL";
#if defined(__SSE2__)
  uint64_t pattern;
  std::memcpy(&pattern, kPattern, 8);
  const __m128i o = _mm_set1_epi8('O');
  const __m128i zero = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 16 <= N; i += 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(field + i));
    const uint32_t ends = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, zero)));
    uint32_t candidates = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, o)));
    // Only 'O's before the field's end (its first NUL) count.
    if (ends != 0) candidates &= (ends & (0u - ends)) - 1;
    for (; candidates != 0; candidates &= candidates - 1) {
      const size_t at = i + static_cast<size_t>(__builtin_ctz(candidates));
      if (at + 8 > N) break;
      uint64_t word;
      std::memcpy(&word, field + at, 8);
      if (word == pattern) return true;  // no NUL inside: it equals the pattern
    }
    if (ends != 0) return false;
  }
  // The last N % 16 bytes: too few for a match to start there unless N % 16 >= 8.
  for (; i + 8 <= N && field[i] != '\0'; ++i)
    if (std::memcmp(field + i, kPattern, 8) == 0) return true;
  return false;
#else
  return GetField(field).find(kPattern) != std::string_view::npos;
#endif
}

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_SCHEMA_H_
