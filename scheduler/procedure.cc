#include "scheduler/procedure.h"

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

std::string_view ProcedureRegistry::NameOf(uint32_t type) const {
  return type < procs_.size() ? std::string_view(procs_[type].name) : std::string_view();
}

}  // namespace detdb
