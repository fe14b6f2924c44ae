#include "scheduler/procedure.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "storage/table.h"

namespace detdb {

absl::Status ProcedureRegistry::Register(uint32_t type, std::string name, Procedure proc) {
  if (proc == nullptr) return absl::InvalidArgumentError("null procedure");
  if (type > 1u << 16) return absl::InvalidArgumentError(absl::StrCat("txn type ", type, " too large"));
  if (type < procs_.size() && procs_[type].proc != nullptr)
    return absl::InvalidArgumentError(absl::StrCat("txn type ", type, " already registered as ",
                                                   procs_[type].name));
  if (type >= procs_.size()) procs_.resize(type + 1);
  procs_[type] = Entry{std::move(name), proc};
  return absl::OkStatus();
}

absl::Status CheckWriteTarget(const Table* table, Key key, const std::string_view* value) {
  if (table == nullptr) return absl::InvalidArgumentError(absl::StrCat("no table ", KeyTable(key)));
  if (value != nullptr && value->size() != table->value_size())
    return absl::InvalidArgumentError(absl::StrCat("value of ", value->size(), " bytes for table ", KeyTable(key),
                                                   " of ", table->value_size()));
  return absl::OkStatus();
}

absl::Status CheckScanRange(RangeCover range_cover, const Table* table, Key lo, Key hi, Key* cover) {
  if (lo > hi) return absl::InvalidArgumentError(absl::StrCat("scan of [", lo, ", ", hi, "]: lo > hi"));
  if (KeyTable(lo) != KeyTable(hi))
    return absl::InvalidArgumentError(absl::StrCat("scan of [", lo, ", ", hi, "] spans tables"));
  if (table == nullptr) return absl::InvalidArgumentError(absl::StrCat("no table ", KeyTable(lo)));
  if (!table->ordered())
    return absl::InvalidArgumentError(absl::StrCat("table ", KeyTable(lo), " is not ordered: no scans"));
  if (range_cover == nullptr || !range_cover(lo, hi, cover))
    return absl::InvalidArgumentError(absl::StrCat("scan of [", lo, ", ", hi, "]: no key covers the range"));
  return absl::OkStatus();
}

void ScanWithOwnWrites(const Table& table, Key lo, Key hi, bool reverse, std::vector<OwnWrite>* own,
                       absl::FunctionRef<bool(Key key, std::string_view value)> visit) {
  const uint32_t size = table.value_size();
  if (own->empty()) {  // the common case: only stored records
    table.Scan(lo, hi, reverse,
               [&](Key k, const Record* r) { return visit(k, std::string_view(r->value(), size)); });
    return;
  }
  std::sort(own->begin(), own->end(), [reverse](const OwnWrite& a, const OwnWrite& b) {
    return reverse ? a.key > b.key : a.key < b.key;
  });
  auto before = [reverse](Key a, Key b) { return reverse ? a > b : a < b; };
  size_t i = 0;
  bool stopped = false;
  // Own writes up to (not including) key k, in scan order; false if visit stopped.
  auto own_before = [&](Key k, bool all) {
    for (; i < own->size() && (all || before((*own)[i].key, k)); ++i)
      if (!(*own)[i].erase && !visit((*own)[i].key, (*own)[i].value)) return false;
    return true;
  };
  table.Scan(lo, hi, reverse, [&](Key k, const Record* r) {
    if (!own_before(k, false)) return !(stopped = true);
    if (i < own->size() && (*own)[i].key == k) {
      const OwnWrite& w = (*own)[i++];
      if (w.erase) return true;
      if (!visit(k, w.value)) return !(stopped = true);
      return true;
    }
    if (!visit(k, std::string_view(r->value(), size))) return !(stopped = true);
    return true;
  });
  if (!stopped) own_before(0, true);
}

absl::Status WriteInScan() {
  // Not FailedPrecondition, which procedures take for "another partition's
  // key: skip it": this is a bug in the procedure and must abort the txn.
  return absl::InvalidArgumentError("Write or Delete while a Scan visits: write after the scan");
}

std::string_view ProcedureRegistry::NameOf(uint32_t type) const {
  return type < procs_.size() ? std::string_view(procs_[type].name) : std::string_view();
}

}  // namespace detdb
