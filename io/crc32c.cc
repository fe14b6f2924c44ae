#include "io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "glog/logging.h"

namespace detdb {
namespace crc32c_internal {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

// kTable[k][b]: the CRC of byte b followed by k zero bytes (slicing-by-8).
struct Tables {
  uint32_t t[8][256];
  constexpr Tables() : t() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
    }
  }
};
constexpr Tables kTables;

inline uint64_t LoadLE64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "detdb assumes a little-endian host");
  return v;
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  const auto& t = kTables.t;
  uint32_t l = ~crc;
  // Byte at a time up to an 8-byte boundary, then 8 bytes at a time.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    l = t[0][(l ^ *p++) & 0xFF] ^ (l >> 8);
    --n;
  }
  while (n >= 8) {
    const uint64_t v = LoadLE64(p) ^ l;
    l = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^ t[4][(v >> 24) & 0xFF] ^
        t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    l = t[0][(l ^ *p++) & 0xFF] ^ (l >> 8);
    --n;
  }
  return ~l;
}

#if defined(__x86_64__)
bool HardwareAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t l = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    l = _mm_crc32_u8(static_cast<uint32_t>(l), *p++);
    --n;
  }
  while (n >= 8) {
    l = _mm_crc32_u64(l, LoadLE64(p));
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    l = _mm_crc32_u8(static_cast<uint32_t>(l), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(l);
}
#else
bool HardwareAvailable() { return false; }
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
  LOG(FATAL) << "crc32c: no hardware CRC32C on this architecture";
}
#endif

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  static const bool hw = crc32c_internal::HardwareAvailable();
  return hw ? crc32c_internal::ExtendHardware(crc, data, n) : crc32c_internal::ExtendPortable(crc, data, n);
}

}  // namespace detdb
