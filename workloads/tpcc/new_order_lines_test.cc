#include "workloads/tpcc/new_order_lines.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace tpcc {
namespace {

namespace tp = pb::tpcc;

// a with lines in the packed encoding (packed) or as sub-messages.
tp::NewOrderArgs Args(const std::vector<OrderLine>& lines, bool packed) {
  tp::NewOrderArgs a;
  a.set_w_id(1);
  a.set_d_id(1);
  a.set_c_id(1);
  for (const OrderLine& l : lines) {
    if (packed) {
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

TEST(NewOrderLines, BothEncodingsDecodeToTheSameLines) {
  const std::vector<OrderLine> want = {{7, 1, 5}, {99999, 2, 10}, {7, 1, 1}, {100001, kMaxWarehouses, 3}};
  for (bool packed : {true, false}) {
    std::array<OrderLine, kMaxOrderLines> lines;
    int n = 0;
    ASSERT_TRUE(DecodeOrderLines(Args(want, packed), &lines, &n).ok()) << packed;
    ASSERT_EQ(n, static_cast<int>(want.size()));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(lines[i].i_id, want[i].i_id) << packed << " line " << i;
      EXPECT_EQ(lines[i].supply_w_id, want[i].supply_w_id) << packed << " line " << i;
      EXPECT_EQ(lines[i].quantity, want[i].quantity) << packed << " line " << i;
    }
  }
}

TEST(NewOrderLines, TheLineCountIsOneToFifteenInBothEncodings) {
  for (bool packed : {true, false}) {
    EXPECT_EQ(Error(Args({}, packed)), "New-Order with 0 lines") << packed;
    EXPECT_EQ(Error(Args(std::vector<OrderLine>(16, OrderLine{1, 1, 1}), packed)), "New-Order with 16 lines")
        << packed;
    EXPECT_EQ(Error(Args(std::vector<OrderLine>(15, OrderLine{1, 1, 1}), packed)), "") << packed;
    EXPECT_EQ(Error(Args({{1, 1, 1}}, packed)), "") << packed;
  }
}

TEST(NewOrderLines, BadSupplyWarehouseOrQuantityIsRefusedInBothEncodings) {
  for (bool packed : {true, false}) {
    EXPECT_EQ(Error(Args({{1, 1, 5}, {2, 0, 5}}, packed)), "bad New-Order line: supply warehouse 0, quantity 5");
    EXPECT_EQ(Error(Args({{1, kMaxWarehouses + 1, 5}}, packed)),
              "bad New-Order line: supply warehouse " + std::to_string(kMaxWarehouses + 1) + ", quantity 5");
    EXPECT_EQ(Error(Args({{1, 1, 0}}, packed)), "bad New-Order line: supply warehouse 1, quantity 0");
    EXPECT_EQ(Error(Args({{1, 1, 11}}, packed)), "bad New-Order line: supply warehouse 1, quantity 11");
  }
}

TEST(NewOrderLines, PackedArraysOfUnequalLengthOrBothEncodingsAreRefused) {
  tp::NewOrderArgs a = Args({{1, 1, 5}, {2, 1, 5}}, true);
  a.mutable_quantities()->RemoveLast();
  EXPECT_EQ(Error(a), "New-Order with 2 item ids, 2 supply warehouses and 1 quantities");
  a = Args({{1, 1, 5}, {2, 1, 5}}, true);
  a.mutable_supply_w_ids()->Add(1);
  EXPECT_EQ(Error(a), "New-Order with 2 item ids, 3 supply warehouses and 2 quantities");
  a = Args({{1, 1, 5}}, false);
  a.add_i_ids(1);  // one stray field of the other encoding is enough
  EXPECT_EQ(Error(a), "New-Order with its lines in both encodings");
  a = Args({{1, 1, 5}}, false);
  a.add_quantities(5);
  EXPECT_EQ(Error(a), "New-Order with its lines in both encodings");
}

}  // namespace
}  // namespace tpcc
}  // namespace detdb
