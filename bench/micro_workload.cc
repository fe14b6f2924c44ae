#include "bench/micro_workload.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace detdb {

absl::StatusOr<MicroTxnSet> MicroTxnSet::Generate(const MicroWorkloadOptions& o, uint64_t num_txns) {
  if (!(o.contention > 0 && o.contention <= 1))
    return absl::InvalidArgumentError(absl::StrCat("contention index must be in (0, 1], got ", o.contention));
  if (!(o.write_fraction >= 0 && o.write_fraction <= 1))
    return absl::InvalidArgumentError(absl::StrCat("write fraction must be in [0, 1], got ", o.write_fraction));
  if (o.keys_per_txn == 0 || o.keys_per_txn > 1000)
    return absl::InvalidArgumentError(absl::StrCat("keys per txn must be in [1, 1000], got ", o.keys_per_txn));
  if (o.cold_records < 4 * uint64_t{o.keys_per_txn})
    return absl::InvalidArgumentError("too few cold records for the keys per txn");
  MicroTxnSet set;
  set.hot_records_ = std::max<uint64_t>(1, std::llround(1.0 / o.contention));
  set.keys_.reserve(num_txns * o.keys_per_txn);
  set.offsets_.reserve(num_txns + 1);
  set.num_writes_.reserve(num_txns);
  set.offsets_.push_back(0);
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<uint64_t> rows(o.keys_per_txn);
  std::vector<bool> is_write(o.keys_per_txn);
  for (uint64_t i = 0; i < num_txns; ++i) {
    rows[0] = rng() % set.hot_records_;  // the hot record
    for (uint32_t j = 1; j < o.keys_per_txn; ++j) {
      bool dup;
      do {
        rows[j] = set.hot_records_ + rng() % o.cold_records;
        dup = false;
        for (uint32_t k = 1; k < j; ++k) dup |= rows[k] == rows[j];
      } while (dup);
    }
    uint32_t w = 0;
    for (uint32_t j = 0; j < o.keys_per_txn; ++j) {
      is_write[j] = o.write_fraction >= 1.0 || coin(rng) < o.write_fraction;
      w += is_write[j];
    }
    for (uint32_t j = 0; j < o.keys_per_txn; ++j)
      if (is_write[j]) set.keys_.push_back(MakeKey(o.table, rows[j]));
    for (uint32_t j = 0; j < o.keys_per_txn; ++j)
      if (!is_write[j]) set.keys_.push_back(MakeKey(o.table, rows[j]));
    set.num_writes_.push_back(w);
    set.offsets_.push_back(set.keys_.size());
  }
  return set;
}

}  // namespace detdb
