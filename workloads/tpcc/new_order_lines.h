// New-Order's order lines, decoded from either encoding of NewOrderArgs
// (proto/tpcc.proto): three packed arrays of equal length (what the
// generator writes) or OrderLineInput sub-messages (the first encoding).
// Both give the same lines, and so the same txn: results and state do not
// depend on the encoding.
// Thread-safety: a pure function.
#ifndef DETDB_WORKLOADS_TPCC_NEW_ORDER_LINES_H_
#define DETDB_WORKLOADS_TPCC_NEW_ORDER_LINES_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {

struct OrderLine {
  uint32_t i_id = 0, supply_w_id = 0, quantity = 0;
};

// Fills (*lines)[0, *n) with a's lines, in order. InvalidArgument (and *n
// unspecified) if a has lines in both encodings, packed arrays of unequal
// length, fewer than 1 or more than kMaxOrderLines lines, or a line whose
// supply warehouse is not 1..kMaxWarehouses or whose quantity is not 1..10.
// Item ids are not checked here (an unused one rolls the txn back).
absl::Status DecodeOrderLines(const pb::tpcc::NewOrderArgs& a, std::array<OrderLine, kMaxOrderLines>* lines,
                              int* n);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_NEW_ORDER_LINES_H_
