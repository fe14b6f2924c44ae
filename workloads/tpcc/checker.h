// The TPC-C consistency conditions of clause 3.3.2, checked on the data of
// a quiescent database (after a run, or at an epoch boundary while the
// schedulers are paused: Engine::AtEpochBoundary).
//
// Conditions checked per warehouse (all data on the warehouse's partition;
// W_YTD, D_YTD and D_NEXT_O_ID are read from WAREHOUSE_YTD, DISTRICT_YTD and
// DISTRICT_NEXT, whose rows must all be there):
//  1 W_YTD = sum(D_YTD)
//  2 D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) (when the district has new orders)
//  3 max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW_ORDER rows of the district
//  4 sum(O_OL_CNT) = number of ORDER_LINE rows of the district
//  5 O_CARRIER_ID is null iff the order has a NEW_ORDER row
//  6 O_OL_CNT = number of ORDER_LINE rows of the order
//  7 OL_DELIVERY_D is null iff O_CARRIER_ID is null
//  8 W_YTD = sum(H_AMOUNT) of the warehouse's HISTORY rows
//  9 D_YTD = sum(H_AMOUNT) of the district's HISTORY rows
// and, when every warehouse whose payments may touch the customer is in the
// stores given (in one process: always):
// 10 C_BALANCE = sum(OL_AMOUNT of the customer's delivered lines) - sum(H_AMOUNT of the customer's payments)
// 12 C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of the customer's delivered lines)
// (11, about the initial order counts, does not hold once Delivery runs with
// a shrunk scale and is not checked.) detdb's own invariants are checked
// too: CUSTOMER_LAST_ORDER (an index table) names the customer's highest
// O_ID, and a district's HISTORY keys are 0, 1, 2, ... without a gap (Payment
// takes the highest + 1).
//
// Thread-safety: reads the stores; REQUIRES nobody writes them meanwhile.
#ifndef DETDB_WORKLOADS_TPCC_CHECKER_H_
#define DETDB_WORKLOADS_TPCC_CHECKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/tpcc/random.h"
#include "workloads/tpcc/schema.h"
#include "storage/partition_store.h"

namespace detdb {
namespace tpcc {

struct CheckReport {
  bool ok = true;
  std::vector<int> conditions;        // the condition numbers checked
  std::vector<std::string> failures;  // at most 20, each naming the condition, warehouse, district, values
  uint64_t warehouses = 0, orders = 0, new_orders = 0, order_lines = 0, history = 0;
};

// stores: the partitions to check (any subset of the database's; each
// checked for the warehouses it holds). all_warehouses: true when the
// stores hold every warehouse (enables 10 and 12).
CheckReport CheckConsistency(const std::vector<const PartitionStore*>& stores, const Scale& scale,
                             bool all_warehouses);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_CHECKER_H_
