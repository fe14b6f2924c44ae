#include "workloads/tpcc/new_order_lines.h"

#include "absl/strings/str_cat.h"

namespace detdb {
namespace tpcc {

absl::Status DecodeOrderLines(const pb::tpcc::NewOrderArgs& a, std::array<OrderLine, kMaxOrderLines>* lines,
                              int* n) {
  const bool words = a.line_words_size() != 0;
  const bool arrays = a.i_ids_size() != 0 || a.supply_w_ids_size() != 0 || a.quantities_size() != 0;
  const bool nested = a.lines_size() != 0;
  if (int{words} + int{arrays} + int{nested} > 1)
    return absl::InvalidArgumentError("New-Order with its lines in more than one encoding");
  const int count = words ? a.line_words_size() : nested ? a.lines_size() : a.i_ids_size();
  if (arrays && (a.supply_w_ids_size() != count || a.quantities_size() != count))
    return absl::InvalidArgumentError(absl::StrCat("New-Order with ", count, " item ids, ", a.supply_w_ids_size(),
                                                   " supply warehouses and ", a.quantities_size(), " quantities"));
  if (count < 1 || count > static_cast<int>(kMaxOrderLines))
    return absl::InvalidArgumentError(absl::StrCat("New-Order with ", count, " lines"));
  for (int i = 0; i < count; ++i) {
    OrderLine& l = (*lines)[i];
    l = words    ? OrderLineOfWord(a.line_words(i))
        : nested ? OrderLine{a.lines(i).i_id(), a.lines(i).supply_w_id(), a.lines(i).quantity()}
                 : OrderLine{a.i_ids(i), a.supply_w_ids(i), a.quantities(i)};
    if (l.supply_w_id < 1 || l.supply_w_id > kMaxWarehouses || l.quantity < 1 || l.quantity > kMaxLineQuantity)
      return absl::InvalidArgumentError(
          absl::StrCat("bad New-Order line: supply warehouse ", l.supply_w_id, ", quantity ", l.quantity));
  }
  *n = count;
  return absl::OkStatus();
}

}  // namespace tpcc
}  // namespace detdb
