// Loading TPC-C (clause 4.3): the tables of one partition, with its
// warehouses' rows and a full copy of ITEM (replicated on every partition),
// the vertical parts of WAREHOUSE and DISTRICT (WAREHOUSE_YTD, DISTRICT_YTD,
// DISTRICT_NEXT) and the index table New-Order maintains
// (CUSTOMER_LAST_ORDER; see schema.h). NEW_ORDER, ORDER, ORDER_LINE and
// HISTORY are ordered tables (B+trees; schema.h, IsOrdered).
//
// Per warehouse w on the partition (WarehousePartitioner): the WAREHOUSE
// row and its WAREHOUSE_YTD row (W_YTD 300,000.00); 10 DISTRICT rows, each
// with a DISTRICT_YTD row (D_YTD 30,000.00) and a DISTRICT_NEXT row
// (D_NEXT_O_ID = orders + 1); both YTDs scaled with the customers, D_YTD =
// customers x 10.00, so that conditions 1, 8 and 9 hold at a shrunk
// scale too; per district `customers` CUSTOMER rows (10%
// "BC" credit, C_BALANCE -10.00, C_YTD_PAYMENT 10.00, names from
// CustomerNameOf) and one HISTORY row each (H_AMOUNT 10.00, seq c - 1);
// `orders` ORDER rows, o_id 1..orders with O_C_ID a random permutation of
// the customers, O_OL_CNT 5..15, the first orders - new_orders delivered
// (O_CARRIER_ID 1..10, lines with OL_AMOUNT 0 and a delivery date), the
// rest undelivered (O_CARRIER_ID null, lines with OL_AMOUNT 0.01..9,999.99,
// no delivery date) with a NEW_ORDER row each; STOCK rows for every item.
// Randomness: Rng seeded from (seed, table, warehouse, district), so every
// partition's load is reproducible alone.
//
// Thread-safety: a set-up step; the store must not be in use.
#ifndef DETDB_WORKLOADS_TPCC_LOADER_H_
#define DETDB_WORKLOADS_TPCC_LOADER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "workloads/tpcc/random.h"
#include "workloads/tpcc/schema.h"
#include "storage/partition_store.h"

namespace detdb {
namespace tpcc {

// The timestamp the loader writes into date columns (C_SINCE, O_ENTRY_D, ...).
inline constexpr int64_t kLoadTimestamp = 1;

// Creates every TPC-C table in *store (sized for `scale` and room for growth)
// and loads partition p's rows. InvalidArgument for a bad scale or p out of
// range; AlreadyExists if the store has TPC-C tables.
absl::Status LoadPartition(PartitionStore* store, const WarehousePartitioner& partitioner, PartitionId p,
                           const Scale& scale, uint64_t seed);

// The warehouses partition p holds: w in 1..scale.warehouses with
// PartitionOf(WarehouseKey(w)) == p, ascending.
std::vector<uint32_t> WarehousesOf(const WarehousePartitioner& partitioner, PartitionId p, const Scale& scale);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_LOADER_H_
