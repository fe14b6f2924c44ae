#include "bench/tpcc/schema.h"

namespace detdb {
namespace tpcc {

Key Cover(Key k) {
  switch (KeyTable(k)) {
    case kOrder:
    case kNewOrder:
    case kOrderLine:
    case kHistory:
    case kCustomerLastOrder:
    case kNewOrderHead:
    case kHistorySeq:
      return DistrictKey(WarehouseOf(k), DistrictOf(k));
    default:
      return k;
  }
}

}  // namespace tpcc
}  // namespace detdb
