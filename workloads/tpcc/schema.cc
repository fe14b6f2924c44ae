#include "workloads/tpcc/schema.h"

namespace detdb {
namespace tpcc {

Key Cover(Key k) {
  switch (KeyTable(k)) {
    case kOrder:
    case kNewOrder:
    case kOrderLine:
    case kCustomerLastOrder:
      return DistrictNextKey(WarehouseOf(k), DistrictOf(k));
    case kHistory:
      return DistrictYtdKey(WarehouseOf(k), DistrictOf(k));
    default:
      return k;
  }
}

bool RangeCover(Key lo, Key hi, Key* cover) {
  if (KeyTable(lo) != KeyTable(hi) || WarehouseOf(lo) != WarehouseOf(hi) || DistrictOf(lo) != DistrictOf(hi))
    return false;
  const Key c = Cover(lo);
  if (c == lo || IsDistrictLevel(KeyTable(lo))) return false;  // not a covered table
  *cover = c;
  return true;
}

}  // namespace tpcc
}  // namespace detdb
