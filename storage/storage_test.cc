// PartitionStore: tables, lookups, inserts, digests.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "common/partitioner.h"
#include "storage/partition_store.h"

namespace detdb {
namespace {

TEST(StoragePartitionStore, CreateAndGetTables) {
  PartitionStore store;
  EXPECT_EQ(store.GetTable(3), nullptr);
  EXPECT_EQ(store.GetTable(1000), nullptr);
  absl::StatusOr<Table*> t3 = store.CreateTable({.id = 3, .name = "three", .value_size = 4});
  ASSERT_TRUE(t3.ok()) << t3.status();
  EXPECT_EQ(store.GetTable(3), *t3);
  EXPECT_EQ((*t3)->name(), "three");

  absl::StatusOr<Table*> dup = store.CreateTable({.id = 3, .name = "again", .value_size = 9});
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists) << dup.status();
  EXPECT_EQ(store.GetTable(3)->name(), "three");
  EXPECT_EQ(store.CreateTable({.id = 300, .name = "big"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store.CreateTable({.id = 0, .name = "zero", .value_size = 1}).ok());
  EXPECT_EQ(store.table_ids(), (std::vector<uint32_t>{0, 3}));
}

TEST(StoragePartitionStore, DispatchesOnKeyTable) {
  PartitionStore store;
  ASSERT_TRUE(store.CreateTable({.id = 1, .name = "a", .value_size = 8}).ok());
  ASSERT_TRUE(store.CreateTable({.id = 2, .name = "b", .value_size = 8}).ok());
  Record* a = store.Insert(MakeKey(1, 10));
  Record* b = store.Insert(MakeKey(2, 10));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(store.Get(MakeKey(1, 10)), a);
  EXPECT_EQ(store.GetTable(1)->Get(MakeKey(1, 10)), a);
  EXPECT_EQ(store.GetTable(2)->Get(MakeKey(2, 10)), b);
  EXPECT_EQ(store.Get(MakeKey(1, 11)), nullptr);
  EXPECT_EQ(store.Get(MakeKey(9, 10)), nullptr);     // no table 9
  EXPECT_EQ(store.Insert(MakeKey(9, 10)), nullptr);  // no table 9
  EXPECT_FALSE(store.Erase(MakeKey(9, 10)));
  EXPECT_EQ(store.size(), 2u);
  EXPECT_TRUE(store.Erase(MakeKey(1, 10)));
  EXPECT_EQ(store.Get(MakeKey(1, 10)), nullptr);
  EXPECT_EQ(store.ReclaimErased(), 1u);
  EXPECT_EQ(store.size(), 1u);
}

// Fills a store with tables 2 (value 12 bytes) and 5 (value 8 bytes) whose
// row r holds bytes derived from r, inserting rows in the given order.
void Fill(PartitionStore* store, const std::vector<uint64_t>& order, uint64_t expected) {
  ASSERT_TRUE(
      store->CreateTable({.id = 5, .name = "five", .value_size = 8, .expected_records = expected})
          .ok());
  ASSERT_TRUE(
      store->CreateTable({.id = 2, .name = "two", .value_size = 12, .expected_records = expected})
          .ok());
  for (uint64_t r : order) {
    const uint64_t v = Mix64(r);
    std::memcpy(store->Insert(MakeKey(5, r))->value(), &v, 8);
    if (r % 2 == 0) std::memcpy(store->Insert(MakeKey(2, r * 3))->value(), &v, 8);
  }
}

TEST(StoragePartitionStore, DigestDependsOnContentsOnly) {
  std::vector<uint64_t> order(3000);
  std::iota(order.begin(), order.end(), 0);
  PartitionStore a, b, c;
  Fill(&a, order, 16);  // tiny index: long chains
  std::mt19937_64 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  Fill(&b, order, 5000);  // other order, other bucket count
  std::reverse(order.begin(), order.end());
  Fill(&c, order, 0);
  EXPECT_EQ(a.Digest(), b.Digest());
  EXPECT_EQ(a.Digest(), c.Digest());
  EXPECT_EQ(a.Digest(), a.Digest());

  // Erasing and re-inserting the same value keeps the digest.
  const uint64_t before = c.Digest();
  const uint64_t v = Mix64(100);
  ASSERT_TRUE(c.Erase(MakeKey(5, 100)));
  EXPECT_NE(c.Digest(), before);
  std::memcpy(c.Insert(MakeKey(5, 100))->value(), &v, 8);
  EXPECT_EQ(c.Digest(), before);

  // One byte differs: the digest differs.
  b.Get(MakeKey(2, 300))->value()[11] ^= 1;
  EXPECT_NE(a.Digest(), b.Digest());
  b.Get(MakeKey(2, 300))->value()[11] ^= 1;
  EXPECT_EQ(a.Digest(), b.Digest());
  // An extra (empty) table, or an extra record, differs too.
  ASSERT_TRUE(b.CreateTable({.id = 9, .name = "empty", .value_size = 8}).ok());
  EXPECT_NE(a.Digest(), b.Digest());
  a.Insert(MakeKey(5, 1u << 20));
  EXPECT_NE(a.Digest(), c.Digest());

  PartitionStore empty1, empty2;
  EXPECT_EQ(empty1.Digest(), empty2.Digest());
}

}  // namespace
}  // namespace detdb
