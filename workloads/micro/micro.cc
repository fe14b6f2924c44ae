#include "workloads/micro/micro.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/types.h"
#include "workloads/micro/micro_table.h"

namespace detdb {
namespace {

uint64_t Spin(uint64_t iters, uint64_t x) {
  for (uint64_t i = 0; i < iters; ++i) x = Mix64(x + i);
  return x;
}

uint64_t Load64(std::string_view v) {
  uint64_t x = 0;
  std::memcpy(&x, v.data(), std::min<size_t>(8, v.size()));
  return x;
}

}  // namespace

absl::Status MicroProcedure(TxnContext* ctx, std::string* result) {
  const pb::Txn& txn = ctx->txn();
  uint64_t iters = 0;
  if (txn.args().size() >= 8) iters = Load64(txn.args());
  uint64_t acc = txn.id();
  for (Key k : txn.read_set()) {
    auto v = ctx->Read(k);
    if (!v.ok()) return v.status();
    acc = Mix64(acc ^ Load64(*v));
    if (iters != 0) acc ^= Spin(iters, acc) & 1;  // keep the work; result unchanged in kind
  }
  for (Key k : txn.write_set()) {
    auto v = ctx->Read(k);  // written keys are in the read set (read-modify-write)
    uint64_t old = v.ok() ? Load64(*v) : 0;
    uint64_t nv = Mix64(old + txn.id());
    absl::Status s = ctx->Write(k, std::string_view(reinterpret_cast<const char*>(&nv), 8));
    if (!s.ok()) return s;
  }
  result->assign(reinterpret_cast<const char*>(&acc), 8);
  return absl::OkStatus();
}

absl::Status ValidateMicroTxn(const pb::Txn& txn) {
  if (txn.args().size() < 8) return absl::OkStatus();
  const uint64_t iters = Load64(txn.args());
  const uint64_t reads = static_cast<uint64_t>(txn.read_set_size());
  if (iters > kMaxMicroItersPerRead || (reads != 0 && iters > kMaxMicroItersPerTxn / reads))
    return absl::InvalidArgumentError(absl::StrCat("micro txn asks for ", iters, " compute iterations per read x ",
                                                   reads, " reads: at most ", kMaxMicroItersPerRead,
                                                   " per read and ", kMaxMicroItersPerTxn, " per txn"));
  return absl::OkStatus();
}

absl::Status RegisterMicroProcedures(ProcedureRegistry* registry) {
  return registry->Register(kMicroTxnType, "micro", &MicroProcedure);
}

double ComputeItersPerMicrosecond() {
  static const double kRate = [] {
    const auto start = std::chrono::steady_clock::now();
    volatile uint64_t sink = Spin(2000000, 7);
    (void)sink;
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return 2000000 / std::max(us, 1.0);
  }();
  return kRate;
}

absl::Status MicroGenerator::Validate(const MicroOptions& o) {
  if (o.partitions == 0) return absl::InvalidArgumentError("at least one partition");
  if (!(o.contention > 0 && o.contention <= 1))
    return absl::InvalidArgumentError(absl::StrCat("--contention must be in (0, 1], got ", o.contention));
  if (o.keys_per_txn < 1 || o.keys_per_txn > 1000)
    return absl::InvalidArgumentError(absl::StrCat("--keys_per_txn must be in [1, 1000], got ", o.keys_per_txn));
  if (!(o.write_fraction >= 0 && o.write_fraction <= 1))
    return absl::InvalidArgumentError(absl::StrCat("--write_fraction must be in [0, 1], got ", o.write_fraction));
  if (!(o.multipartition >= 0 && o.multipartition <= 1))
    return absl::InvalidArgumentError(absl::StrCat("--multipartition must be in [0, 1], got ", o.multipartition));
  if (o.multipartition > 0 && o.partitions < 2)
    return absl::InvalidArgumentError("--multipartition needs --partitions >= 2");
  if (o.multipartition > 0 && o.keys_per_txn < 2)
    return absl::InvalidArgumentError("--multipartition needs --keys_per_txn >= 2");
  if (!(o.compute_us >= 0 && o.compute_us <= 1e6))
    return absl::InvalidArgumentError("--compute_us must be in [0, 1000000]");
  const uint64_t hot = o.depth > 0 ? 1 : std::max<uint64_t>(1, std::llround(1.0 / o.contention));
  if (hot + 4 * uint64_t{o.keys_per_txn} > o.records_per_partition)
    return absl::InvalidArgumentError(absl::StrCat("--records (", o.records_per_partition,
                                                   ") too small for a hot set of ", hot, " and ",
                                                   o.keys_per_txn, " keys per txn"));
  return absl::OkStatus();
}

MicroGenerator::MicroGenerator(const MicroOptions& o)
    : o_(o),
      hot_(o.depth > 0 ? 1 : std::max<uint64_t>(1, std::llround(1.0 / o.contention))),
      compute_iters_(o.compute_us > 0 ? static_cast<uint64_t>(o.compute_us * ComputeItersPerMicrosecond()) : 0),
      state_(Mix64(o.seed) | 1) {
  if (compute_iters_ != 0) args_.assign(reinterpret_cast<const char*>(&compute_iters_), 8);
}

uint64_t MicroGenerator::Rand() {  // splitmix64
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Key MicroGenerator::KeyOf(uint32_t partition, uint64_t index) const {
  return MakeKey(kMicroTable, index * o_.partitions + partition);
}

void MicroGenerator::AddAccess(Key k, bool write, pb::Txn* txn) {
  txn->add_read_set(k);  // every access reads; written keys are read-modify-write
  if (write) txn->add_write_set(k);
}

void MicroGenerator::AddCold(uint32_t partition, uint32_t n, pb::Txn* txn) {
  const uint64_t cold = o_.records_per_partition - hot_;
  const int first = txn->read_set_size();
  for (uint32_t i = 0; i < n; ++i) {
    Key k;
    bool dup;
    do {
      k = KeyOf(partition, hot_ + Rand() % cold);
      dup = false;
      for (int j = first; j < txn->read_set_size(); ++j) dup |= txn->read_set(j) == k;
    } while (dup);
    AddAccess(k, o_.write_fraction >= 1.0 || Uniform() < o_.write_fraction, txn);
  }
}

void MicroGenerator::Next(pb::Txn* txn) {
  txn->Clear();
  txn->set_type(kMicroTxnType);
  if (!args_.empty()) txn->set_args(args_);
  const uint64_t n = count_++;
  const bool multi = o_.multipartition > 0 && Uniform() < o_.multipartition;
  const uint32_t p1 = static_cast<uint32_t>(Rand() % o_.partitions);
  // The hot key: from the hot set, or the single hot record of the depth
  // workload, written once every depth+1 txns and read in between.
  const bool hot_write = o_.depth > 0 ? n % (o_.depth + 1) == 0
                                      : (o_.write_fraction >= 1.0 || Uniform() < o_.write_fraction);
  AddAccess(KeyOf(p1, Rand() % hot_), hot_write, txn);
  if (!multi) {
    AddCold(p1, o_.keys_per_txn - 1, txn);
    return;
  }
  // Multi-partition: the keys spread over two partitions, one hot key on each.
  uint32_t p2 = static_cast<uint32_t>(Rand() % (o_.partitions - 1));
  if (p2 >= p1) ++p2;
  const uint32_t rest = o_.keys_per_txn - 2;
  AddAccess(KeyOf(p2, Rand() % hot_), o_.write_fraction >= 1.0 || Uniform() < o_.write_fraction, txn);
  AddCold(p1, rest / 2, txn);
  AddCold(p2, rest - rest / 2, txn);
}

}  // namespace detdb
