#include "workloads/tpcc/schema.h"

namespace detdb {
namespace tpcc {

Key Cover(Key k) {
  switch (KeyTable(k)) {
    case kOrder:
    case kNewOrder:
    case kOrderLine:
    case kCustomerLastOrder:
    case kNewOrderHead:
      return DistrictNextKey(WarehouseOf(k), DistrictOf(k));
    case kHistory:
    case kHistorySeq:
      return DistrictYtdKey(WarehouseOf(k), DistrictOf(k));
    default:
      return k;
  }
}

}  // namespace tpcc
}  // namespace detdb
