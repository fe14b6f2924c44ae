#include "lockmgr/lock_manager.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/hash.h"
#include "lockmgr/dclp.h"
#include "lockmgr/det2pl.h"
#include "lockmgr/vll.h"

namespace detdb {

const std::vector<std::string>& LockManagerNames() {
  static const std::vector<std::string> kNames = {"dclp", "det2pl", "vll", "vll_sca", "dclp_frag"};
  return kNames;
}

absl::StatusOr<std::unique_ptr<LockManager>> NewLockManager(std::string_view name,
                                                            const LockManagerOptions& options) {
  if (!IsPowerOfTwo(options.table_size))
    return absl::InvalidArgumentError(
        absl::StrCat("lock table size must be a power of two, got ", options.table_size));
  if (!IsPowerOfTwo(options.sca_bits) || options.sca_bits < 64)
    return absl::InvalidArgumentError(
        absl::StrCat("SCA bit count must be a power of two >= 64, got ", options.sca_bits));
  if (options.vll_blocked_threshold == 0)
    return absl::InvalidArgumentError("VLL blocked threshold must be at least 1");
  if (name == "dclp") return NewDclpLockManager(options);
  if (name == "dclp_frag") return NewDclpFragLockManager(options);
  if (name == "det2pl") return NewDet2plLockManager(options);
  if (name == "vll") return NewVllLockManager(options, /*with_sca=*/false);
  if (name == "vll_sca") return NewVllLockManager(options, /*with_sca=*/true);
  return absl::InvalidArgumentError(absl::StrCat("unknown lock manager '", std::string(name),
                                                 "'; choose one of: ",
                                                 absl::StrJoin(LockManagerNames(), ", ")));
}

absl::StatusOr<std::vector<std::string>> ParseLockManagerList(std::string_view list) {
  if (list == "all") return LockManagerNames();
  std::vector<std::string> out;
  for (absl::string_view name : absl::StrSplit(absl::string_view(list.data(), list.size()), ',', absl::SkipWhitespace())) {
    bool known = false;
    for (const std::string& n : LockManagerNames()) known |= absl::string_view(n) == name;
    if (!known)
      return absl::InvalidArgumentError(absl::StrCat("unknown lock manager '", std::string(name),
                                                     "'; choose from: all, ",
                                                     absl::StrJoin(LockManagerNames(), ", ")));
    out.emplace_back(name.data(), name.size());
  }
  if (out.empty()) return absl::InvalidArgumentError("no lock manager named");
  return out;
}

}  // namespace detdb
