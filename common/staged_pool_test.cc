#include "common/staged_pool.h"

#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace {

struct Obj {
  explicit Obj(int v) : value(v) {}
  int value;
  double pad[3];
};

TEST(StagedPool, ReusesFreedObjectsWithoutGrowing) {
  StagedPool<Obj> pool(8);
  std::vector<Obj*> objs;
  for (int i = 0; i < 8; ++i) objs.push_back(pool.New(i));
  const size_t reserved = pool.bytes_reserved();
  EXPECT_EQ(pool.live(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(objs[i]->value, i);
  std::set<Obj*> seen(objs.begin(), objs.end());
  for (Obj* o : objs) pool.Delete(o);
  EXPECT_EQ(pool.live(), 0u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(seen.count(pool.New(i)));
  EXPECT_EQ(pool.bytes_reserved(), reserved);
  pool.New(99);  // the ninth object needs a new slab
  EXPECT_GT(pool.bytes_reserved(), reserved);
}

TEST(StagedArrayPool, SizeClassesAndReuse) {
  StagedArrayPool<uint64_t> pool;
  int c1, c2, c3;
  uint64_t* a = pool.Allocate(3, &c1);
  uint64_t* b = pool.Allocate(5, &c2);
  EXPECT_EQ(c1, 2);
  EXPECT_EQ(c2, 3);
  for (int i = 0; i < 5; ++i) b[i] = i;  // ASan checks the bounds
  pool.Free(b, c2);
  uint64_t* c = pool.Allocate(8, &c3);
  EXPECT_EQ(c3, 3);
  EXPECT_EQ(c, b);
  EXPECT_EQ(pool.bytes_live(), (4 + 8) * sizeof(uint64_t));
  pool.Free(a, c1);
  pool.Free(c, c3);
  EXPECT_EQ(pool.bytes_live(), 0u);
  int big;
  uint64_t* d = pool.Allocate(100000, &big);
  d[99999] = 1;
  pool.Free(d, big);
}

}  // namespace
}  // namespace detdb

namespace detdb {
namespace {

struct alignas(64) Wide {
  char bytes[64];
};
struct Odd {
  char bytes[3];
};

TEST(StagedArrayPool, ArraysAreAlignedForElementAndLink) {
  StagedArrayPool<Wide> wide;
  StagedArrayPool<Odd> odd;
  for (size_t n : {1, 3, 5, 9, 17}) {
    int c1, c2;
    Wide* w = wide.Allocate(n, &c1);
    Odd* o = odd.Allocate(n, &c2);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(o) % alignof(void*), 0u) << n;
    w[n - 1].bytes[0] = 1;
    o[n - 1].bytes[2] = 1;
  }
}

TEST(StagedArrayPoolDeathTest, RejectsArraysAboveTheLargestClass) {
  StagedArrayPool<char> pool;
  int c;
  EXPECT_DEATH(pool.Allocate(StagedArrayPool<char>::kMaxElements + 1, &c), "too large");
}

}  // namespace
}  // namespace detdb
