// The five TPC-C txns (clause 2) and the two reconnaissance queries of the
// dependent ones, as deterministic stored procedures. Arguments and results
// are the messages of proto/tpcc.proto in pb::Txn.args / TxnResult.result.
// Money is int64 cents; O_ENTRY_D, H_DATE and OL_DELIVERY_D are the txn id
// (never the clock); nothing random happens inside a procedure.
//
// Read and write sets (what a client must declare; tpcc::Generator builds
// them). WAREHOUSE and DISTRICT hold only static columns (schema.h), so
// their read locks never wait; New-Order and Payment of one district share
// no key that either writes.
//   New-Order     read WAREHOUSE(w) (W_TAX), DISTRICT(w,d) (D_TAX),
//                 CUSTOMER(w,d,c); read+write DISTRICT_NEXT(w,d)
//                 (D_NEXT_O_ID), STOCK(supply_w, i) per line. Inserts ORDER,
//                 NEW_ORDER, ORDER_LINE rows and updates CUSTOMER_LAST_ORDER
//                 under DISTRICT_NEXT's cover; reads ITEM (replicated). An
//                 unused item id aborts with kRollback (the spec's 1%
//                 rollback): no write.
//   Payment       read WAREHOUSE(w), DISTRICT(w,d) (names for H_DATA);
//                 read+write WAREHOUSE_YTD(w), DISTRICT_YTD(w,d),
//                 CUSTOMER(c_w,c_d,c). Inserts HISTORY under DISTRICT_YTD's
//                 cover, at the district's last HISTORY seq + 1 (a scan).
//   Order-Status  read CUSTOMER(w,d,c), DISTRICT_NEXT(w,d) (cover of the
//                 orders; the order's lines are a scan).
//   Delivery      read+write DISTRICT_NEXT(w,1..10) and CUSTOMER(w,d,c) of
//                 each planned order (from ReconDelivery). The oldest new
//                 order of a district and the order's lines are scans.
//   Stock-Level   read DISTRICT_NEXT(w,d) and STOCK(w,i) of the recon's items;
//                 the window is the 20 orders before the recon's D_NEXT_O_ID
//                 (Stock-Level need not be serializable, only read
//                 committed data no older than its start).
//   ReconDelivery read DISTRICT_NEXT(w,1..10) (cover of the NEW_ORDER scans).
//   ReconStockLevel read DISTRICT_NEXT(w,d) (cover of the ORDER_LINE scan).
// Scans (TxnContext::Scan) run over one district's rows of an ordered table
// (schema.h), under the district's cover (tpcc::RangeCover).
//
// A dependent txn whose reconnaissance no longer holds aborts with an error
// message starting with kOllpMismatch, on every participant alike; the
// client runs the reconnaissance again and resubmits (a restart).
//
// Thread-safety: procedures are pure functions of their txn and reads.
#ifndef DETDB_WORKLOADS_TPCC_PROCEDURES_H_
#define DETDB_WORKLOADS_TPCC_PROCEDURES_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "scheduler/procedure.h"

namespace detdb {
namespace tpcc {

inline constexpr uint32_t kNewOrderType = 20, kPaymentType = 21, kOrderStatusType = 22, kDeliveryType = 23,
                          kStockLevelType = 24, kReconDeliveryType = 25, kReconStockLevelType = 26;

// ReconDelivery returns, per district, this many orders from the oldest
// undelivered one on; Delivery locks all their customers and delivers
// whichever is the oldest when it runs, so that concurrent Deliveries of one
// warehouse do not invalidate each other's reconnaissance.
inline constexpr uint32_t kDeliveryCandidates = 8;

// Error-message prefixes of the deterministic aborts.
inline constexpr std::string_view kOllpMismatch = "OLLP mismatch";
inline constexpr std::string_view kRollback = "rollback";

// Registers the seven procedures, the key cover (tpcc::Cover) and the range
// cover (tpcc::RangeCover).
absl::Status RegisterProcedures(ProcedureRegistry* registry);

absl::Status NewOrder(TxnContext* ctx, std::string* result);
absl::Status Payment(TxnContext* ctx, std::string* result);
absl::Status OrderStatus(TxnContext* ctx, std::string* result);
absl::Status Delivery(TxnContext* ctx, std::string* result);
absl::Status StockLevel(TxnContext* ctx, std::string* result);
absl::Status ReconDelivery(TxnContext* ctx, std::string* result);
absl::Status ReconStockLevel(TxnContext* ctx, std::string* result);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_PROCEDURES_H_
