#include "workloads/tpcc/random.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace detdb {
namespace tpcc {

Scale Scale::Spec(uint32_t warehouses) {
  Scale s;
  s.warehouses = warehouses;
  return s;
}

Scale Scale::Small(uint32_t warehouses) {
  Scale s;
  s.warehouses = warehouses;
  s.items = 10000;
  s.customers_per_district = 300;
  s.orders_per_district = 300;
  s.new_orders_per_district = 90;
  return s;
}

absl::Status Scale::Validate() const {
  if (warehouses < 1 || warehouses > 65535) return absl::InvalidArgumentError("warehouses must be in 1..65535");
  if (items < 1000 || items > (1u << 20)) return absl::InvalidArgumentError("items must be in 1000..2^20");
  if (customers_per_district < 30 || customers_per_district > (1u << 20))
    return absl::InvalidArgumentError("customers per district must be in 30..2^20");
  if (orders_per_district != customers_per_district)
    return absl::InvalidArgumentError("orders per district must equal customers per district");
  if (new_orders_per_district > orders_per_district)
    return absl::InvalidArgumentError("new orders per district must not exceed orders");
  return absl::OkStatus();
}

Rng::Rng(uint64_t seed) : state_(Mix64(seed ^ 0x9E3779B97F4A7C15ull)) {}

uint64_t Rng::Next() {
  // splitmix64
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t Rng::Uniform(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(Next() % span);
}

uint32_t Rng::NURand(uint32_t a, uint32_t x, uint32_t y, uint32_t c) {
  const uint32_t r = static_cast<uint32_t>(Uniform(0, a)) | static_cast<uint32_t>(Uniform(x, y));
  return ((r + c) % (y - x + 1)) + x;
}

std::string Rng::AString(int lo, int hi) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const int n = static_cast<int>(Uniform(lo, hi));
  std::string s(n, ' ');
  for (char& ch : s) ch = kChars[Next() % (sizeof(kChars) - 1)];
  return s;
}

std::string Rng::NString(int lo, int hi) {
  const int n = static_cast<int>(Uniform(lo, hi));
  std::string s(n, '0');
  for (char& ch : s) ch = static_cast<char>('0' + Next() % 10);
  return s;
}

NURandC LoadConstants(uint64_t seed) {
  Rng r(seed * 31 + 7);
  NURandC c;
  c.c_last = static_cast<uint32_t>(r.Uniform(0, 255));
  c.c_id = static_cast<uint32_t>(r.Uniform(0, 1023));
  c.ol_i_id = static_cast<uint32_t>(r.Uniform(0, 8191));
  return c;
}

NURandC RunConstants(const NURandC& load, uint64_t seed) {
  Rng r(seed * 37 + 11);
  NURandC c;
  for (;;) {
    c.c_last = static_cast<uint32_t>(r.Uniform(0, 255));
    const int delta = std::abs(static_cast<int>(c.c_last) - static_cast<int>(load.c_last));
    if (delta >= 65 && delta <= 119 && delta != 96 && delta != 112) break;
  }
  c.c_id = static_cast<uint32_t>(r.Uniform(0, 1023));
  c.ol_i_id = static_cast<uint32_t>(r.Uniform(0, 8191));
  return c;
}

std::string LastName(uint32_t num) {
  static constexpr const char* kSyllables[] = {"BAR", "OUGHT", "ABLE", "PRI",   "PRES",
                                               "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  return absl::StrCat(kSyllables[(num / 100) % 10], kSyllables[(num / 10) % 10], kSyllables[num % 10]);
}

CustomerName CustomerNameOf(const Scale& scale, const NURandC& load, uint64_t seed, uint32_t w, uint32_t d,
                            uint32_t c) {
  Rng r(Mix64(seed ^ Mix64((static_cast<uint64_t>(w) << 40) | (static_cast<uint64_t>(d) << 32) | c)));
  CustomerName n;
  const uint32_t range = scale.LastNameRange();
  n.last = c <= range ? LastName(c - 1) : LastName(r.NURand(255, 0, range - 1, load.c_last));
  n.first = r.AString(8, 16);
  return n;
}

}  // namespace tpcc
}  // namespace detdb
