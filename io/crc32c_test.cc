#include "io/crc32c.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace detdb {
namespace {

using Fn = uint32_t (*)(uint32_t, const void*, size_t);

std::vector<std::pair<const char*, Fn>> Paths() {
  std::vector<std::pair<const char*, Fn>> out = {{"portable", crc32c_internal::ExtendPortable}};
  if (crc32c_internal::HardwareAvailable()) out.push_back({"sse4.2", crc32c_internal::ExtendHardware});
  return out;
}

// RFC 3720, appendix B.4 (CRC bytes listed there little-endian).
TEST(Crc32cTest, Rfc3720Vectors) {
  uint8_t buf[48];
  for (auto [name, fn] : Paths()) {
    SCOPED_TRACE(name);
    std::fill(buf, buf + 32, 0x00);
    EXPECT_EQ(0x8A9136AAu, fn(0, buf, 32));
    std::fill(buf, buf + 32, 0xFF);
    EXPECT_EQ(0x62A8AB43u, fn(0, buf, 32));
    for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
    EXPECT_EQ(0x46DD794Eu, fn(0, buf, 32));
    for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
    EXPECT_EQ(0x113FDB5Cu, fn(0, buf, 32));
    const uint8_t iscsi_read[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(0xD9963A56u, fn(0, iscsi_read, sizeof(iscsi_read)));
    EXPECT_EQ(0u, fn(0, buf, 0));
  }
}

TEST(Crc32cTest, PublicFunctionMatchesVectors) {
  const std::string s = "123456789";
  EXPECT_EQ(0xE3069283u, Crc32c(s.data(), s.size()));  // the standard check value
  EXPECT_EQ(Crc32c(s.data(), s.size()), Crc32cExtend(Crc32c(s.data(), 4), s.data() + 4, 5));
}

TEST(Crc32cTest, PathsAgreeOnEveryLengthAndAlignment) {
  if (!crc32c_internal::HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937_64 rng(42);
  std::vector<uint8_t> buf(300 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t start = 0; start < 8; ++start) {
    for (size_t len = 0; len <= 300; ++len) {
      const uint8_t* p = buf.data() + start;
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32c_internal::ExtendPortable(0, p, len), crc32c_internal::ExtendHardware(0, p, len))
          << "start " << start << " len " << len;
      ASSERT_EQ(crc32c_internal::ExtendPortable(seed, p, len), crc32c_internal::ExtendHardware(seed, p, len));
    }
  }
}

TEST(Crc32cTest, ExtendComposesAtEverySplit) {
  std::mt19937_64 rng(7);
  std::string s(257, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  for (auto [name, fn] : Paths()) {
    SCOPED_TRACE(name);
    const uint32_t whole = fn(0, s.data(), s.size());
    for (size_t k = 0; k <= s.size(); ++k) {
      ASSERT_EQ(whole, fn(fn(0, s.data(), k), s.data() + k, s.size() - k)) << "split " << k;
    }
  }
}

TEST(Crc32cTest, DetectsEverySingleBitFlip) {
  std::string s(64, 'x');
  const uint32_t base = Crc32c(s.data(), s.size());
  for (size_t bit = 0; bit < s.size() * 8; ++bit) {
    std::string t = s;
    t[bit / 8] = static_cast<char>(t[bit / 8] ^ (1 << (bit % 8)));
    ASSERT_NE(base, Crc32c(t.data(), t.size())) << bit;
  }
}

}  // namespace
}  // namespace detdb
