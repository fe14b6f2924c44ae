// New-Order's order lines, decoded from any of the three encodings of
// NewOrderArgs (proto/tpcc.proto): one fixed-width word per line (what the
// generator writes), three packed arrays of equal length, or OrderLineInput
// sub-messages. All give the same lines, and so the same txn: results and
// state do not depend on the encoding.
// Thread-safety: pure functions.
#ifndef DETDB_WORKLOADS_TPCC_NEW_ORDER_LINES_H_
#define DETDB_WORKLOADS_TPCC_NEW_ORDER_LINES_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "glog/logging.h"
#include "workloads/tpcc/schema.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {

struct OrderLine {
  uint32_t i_id = 0, supply_w_id = 0, quantity = 0;
};

static_assert(kMaxWarehouses < (1u << 16), "a supply warehouse fits in 16 bits of a line word");

// A line as one word of NewOrderArgs.line_words: i_id in bits 0-31,
// supply_w_id in 32-47, quantity in 48-63.
// REQUIRES: supply_w_id and quantity < 2^16 (a valid line's are).
inline uint64_t OrderLineWord(const OrderLine& l) {
  DCHECK_LT(l.supply_w_id, 1u << 16);
  DCHECK_LT(l.quantity, 1u << 16);
  return uint64_t{l.i_id} | uint64_t{l.supply_w_id} << 32 | uint64_t{l.quantity} << 48;
}
// The line of a word; every word is some line (DecodeOrderLines judges it).
inline OrderLine OrderLineOfWord(uint64_t w) {
  return OrderLine{static_cast<uint32_t>(w), static_cast<uint32_t>(w >> 32) & 0xffff,
                   static_cast<uint32_t>(w >> 48)};
}

// Fills (*lines)[0, *n) with a's lines, in order. InvalidArgument (and *n
// unspecified) if a has lines in more than one encoding, packed arrays of
// unequal length, fewer than 1 or more than kMaxOrderLines lines, or a line
// whose supply warehouse is not 1..kMaxWarehouses or whose quantity is not
// 1..10. Item ids are not checked here (an unused one rolls the txn back).
absl::Status DecodeOrderLines(const pb::tpcc::NewOrderArgs& a, std::array<OrderLine, kMaxOrderLines>* lines,
                              int* n);

}  // namespace tpcc
}  // namespace detdb

#endif  // DETDB_WORKLOADS_TPCC_NEW_ORDER_LINES_H_
