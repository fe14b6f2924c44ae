#include "workloads/tpcc/new_order_lines.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace tpcc {
namespace {

namespace tp = pb::tpcc;

enum class Enc { kWords, kArrays, kNested };
constexpr Enc kAll[] = {Enc::kWords, Enc::kArrays, Enc::kNested};

// a with its lines in encoding e.
tp::NewOrderArgs Args(const std::vector<OrderLine>& lines, Enc e) {
  tp::NewOrderArgs a;
  a.set_w_id(1);
  a.set_d_id(1);
  a.set_c_id(1);
  for (const OrderLine& l : lines) {
    if (e == Enc::kWords) {
      a.add_line_words(OrderLineWord(l));
    } else if (e == Enc::kArrays) {
      a.add_i_ids(l.i_id);
      a.add_supply_w_ids(l.supply_w_id);
      a.add_quantities(l.quantity);
    } else {
      tp::OrderLineInput* in = a.add_lines();
      in->set_i_id(l.i_id);
      in->set_supply_w_id(l.supply_w_id);
      in->set_quantity(l.quantity);
    }
  }
  return a;
}

// The error message of decoding a, or "" if it decoded.
std::string Error(const tp::NewOrderArgs& a) {
  std::array<OrderLine, kMaxOrderLines> lines;
  int n = 0;
  const absl::Status s = DecodeOrderLines(a, &lines, &n);
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(NewOrderLines, AllEncodingsDecodeToTheSameLines) {
  const std::vector<OrderLine> want = {
      {7, 1, 5}, {99999, 2, 10}, {7, 1, 1}, {100001, kMaxWarehouses, 3}, {UINT32_MAX, 1, 1}, {0, 1, 1}};
  for (Enc e : kAll) {
    std::array<OrderLine, kMaxOrderLines> lines;
    int n = 0;
    ASSERT_TRUE(DecodeOrderLines(Args(want, e), &lines, &n).ok()) << static_cast<int>(e);
    ASSERT_EQ(n, static_cast<int>(want.size()));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(lines[i].i_id, want[i].i_id) << static_cast<int>(e) << " line " << i;
      EXPECT_EQ(lines[i].supply_w_id, want[i].supply_w_id) << static_cast<int>(e) << " line " << i;
      EXPECT_EQ(lines[i].quantity, want[i].quantity) << static_cast<int>(e) << " line " << i;
    }
  }
}

TEST(NewOrderLines, AWordIsItsThreeFields) {
  EXPECT_EQ(OrderLineWord({0x12345678, 0xabcd, 0x0009}), 0x0009abcd12345678u);
  const OrderLine l = OrderLineOfWord(0xfffe'0002'ffff'fff0u);
  EXPECT_EQ(l.i_id, 0xfffffff0u);
  EXPECT_EQ(l.supply_w_id, 2u);
  EXPECT_EQ(l.quantity, 0xfffeu);
}

// The wire bytes of each encoding, written out by hand: old clients and old
// input logs depend on these field numbers and types, which a test that
// builds its inputs from the current .proto would not notice changing.
// The line (item 7, supply warehouse 2, quantity 5), w/d/c 1/3/9.
TEST(NewOrderLines, EachEncodingsWireBytesDecode) {
  const std::string head("\x08\x01\x10\x03\x18\x09", 6);  // w_id, d_id, c_id
  const std::string encodings[] = {
      // line_words = 8, packed fixed64: 7 | 2 << 32 | 5 << 48, little-endian
      head + std::string("\x42\x08\x07\x00\x00\x00\x02\x00\x05\x00", 10),
      // i_ids = 5, supply_w_ids = 6, quantities = 7, packed varints
      head + std::string("\x2a\x01\x07\x32\x01\x02\x3a\x01\x05", 9),
      // lines = 4, an OrderLineInput (its fields i_id 1, supply_w_id 2, quantity 3)
      head + std::string("\x22\x06\x08\x07\x10\x02\x18\x05", 8),
  };
  for (const std::string& bytes : encodings) {
    tp::NewOrderArgs a;
    ASSERT_TRUE(a.ParseFromString(bytes));
    EXPECT_EQ(a.w_id(), 1u);
    EXPECT_EQ(a.d_id(), 3u);
    EXPECT_EQ(a.c_id(), 9u);
    std::array<OrderLine, kMaxOrderLines> lines;
    int n = 0;
    ASSERT_TRUE(DecodeOrderLines(a, &lines, &n).ok());
    ASSERT_EQ(n, 1);
    EXPECT_EQ(lines[0].i_id, 7u);
    EXPECT_EQ(lines[0].supply_w_id, 2u);
    EXPECT_EQ(lines[0].quantity, 5u);
  }
  // And the generator's encoding serializes to exactly those bytes.
  tp::NewOrderArgs a = Args({{7, 2, 5}}, Enc::kWords);
  a.set_d_id(3);
  a.set_c_id(9);
  EXPECT_EQ(a.SerializeAsString(), encodings[0]);
}

TEST(NewOrderLines, TheLineCountIsOneToFifteenInEveryEncoding) {
  for (Enc e : kAll) {
    EXPECT_EQ(Error(Args({}, e)), "New-Order with 0 lines") << static_cast<int>(e);
    EXPECT_EQ(Error(Args(std::vector<OrderLine>(16, OrderLine{1, 1, 1}), e)), "New-Order with 16 lines")
        << static_cast<int>(e);
    EXPECT_EQ(Error(Args(std::vector<OrderLine>(15, OrderLine{1, 1, 1}), e)), "") << static_cast<int>(e);
    EXPECT_EQ(Error(Args({{1, 1, 1}}, e)), "") << static_cast<int>(e);
  }
}

TEST(NewOrderLines, BadSupplyWarehouseOrQuantityIsRefusedInEveryEncoding) {
  for (Enc e : kAll) {
    EXPECT_EQ(Error(Args({{1, 1, 5}, {2, 0, 5}}, e)), "bad New-Order line: supply warehouse 0, quantity 5");
    EXPECT_EQ(Error(Args({{1, 1, 0}}, e)), "bad New-Order line: supply warehouse 1, quantity 0");
    EXPECT_EQ(Error(Args({{1, 1, 11}}, e)), "bad New-Order line: supply warehouse 1, quantity 11");
    if (e == Enc::kWords) continue;  // 16 bits: a word cannot say more than kMaxWarehouses
    EXPECT_EQ(Error(Args({{1, kMaxWarehouses + 1, 5}}, e)),
              "bad New-Order line: supply warehouse " + std::to_string(kMaxWarehouses + 1) + ", quantity 5");
  }
  // A word's every bit pattern is some line, judged as any other.
  tp::NewOrderArgs a = Args({}, Enc::kWords);
  a.add_line_words(UINT64_MAX);
  EXPECT_EQ(Error(a), "bad New-Order line: supply warehouse 65535, quantity 65535");
  a.set_line_words(0, 0);
  EXPECT_EQ(Error(a), "bad New-Order line: supply warehouse 0, quantity 0");
}

TEST(NewOrderLines, PackedArraysOfUnequalLengthOrMixedEncodingsAreRefused) {
  tp::NewOrderArgs a = Args({{1, 1, 5}, {2, 1, 5}}, Enc::kArrays);
  a.mutable_quantities()->RemoveLast();
  EXPECT_EQ(Error(a), "New-Order with 2 item ids, 2 supply warehouses and 1 quantities");
  a = Args({{1, 1, 5}, {2, 1, 5}}, Enc::kArrays);
  a.mutable_supply_w_ids()->Add(1);
  EXPECT_EQ(Error(a), "New-Order with 2 item ids, 3 supply warehouses and 2 quantities");
  a = Args({{1, 1, 5}}, Enc::kArrays);
  a.clear_i_ids();  // arrays without item ids are still the arrays' encoding
  EXPECT_EQ(Error(a), "New-Order with 0 item ids, 1 supply warehouses and 1 quantities");
  // One stray field of another encoding is enough.
  a = Args({{1, 1, 5}}, Enc::kNested);
  a.add_i_ids(1);
  EXPECT_EQ(Error(a), "New-Order with its lines in more than one encoding");
  a = Args({{1, 1, 5}}, Enc::kNested);
  a.add_quantities(5);
  EXPECT_EQ(Error(a), "New-Order with its lines in more than one encoding");
  a = Args({{1, 1, 5}}, Enc::kWords);
  a.add_supply_w_ids(1);
  EXPECT_EQ(Error(a), "New-Order with its lines in more than one encoding");
  a = Args({{1, 1, 5}}, Enc::kWords);
  a.add_lines()->set_i_id(1);
  EXPECT_EQ(Error(a), "New-Order with its lines in more than one encoding");
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
