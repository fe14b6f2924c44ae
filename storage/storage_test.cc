// PartitionStore and the microbenchmark table.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "common/partitioner.h"
#include "storage/micro_table.h"
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

TEST(StorageMicroTable, LoadsRowsOfItsPartition) {
  constexpr uint32_t kParts = 3;
  constexpr uint64_t kPerPartition = 1000;
  ModPartitioner partitioner(kParts);
  std::vector<PartitionStore> stores(kParts);
  uint64_t total = 0;
  for (uint32_t p = 0; p < kParts; ++p) {
    ASSERT_TRUE(LoadMicroTable(&stores[p], partitioner, p, kPerPartition).ok());
    const Table* t = stores[p].GetTable(kMicroTable);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->value_size(), kMicroValueSize);
    EXPECT_EQ(t->size(), kPerPartition);
    total += t->size();
  }
  EXPECT_EQ(total, kParts * kPerPartition);
  for (uint64_t r = 0; r < kParts * kPerPartition; ++r) {
    for (uint32_t p = 0; p < kParts; ++p) {
      const Record* rec = stores[p].Get(MakeKey(kMicroTable, r));
      if (p == r % kParts) {
        ASSERT_NE(rec, nullptr) << "row " << r;
        EXPECT_EQ(MicroValue(*rec), r);
      } else {
        EXPECT_EQ(rec, nullptr) << "row " << r << " on partition " << p;
      }
    }
  }
  EXPECT_EQ(stores[0].Get(MakeKey(kMicroTable, kParts * kPerPartition)), nullptr);
  // Little-endian counter.
  Record* rec = stores[1].Get(MakeKey(kMicroTable, 1));
  SetMicroValue(rec, 0x0102030405060708ULL);
  EXPECT_EQ(rec->value()[0], 0x08);
  EXPECT_EQ(rec->value()[7], 0x01);
  EXPECT_EQ(MicroValue(*rec), 0x0102030405060708ULL);
}

// Any partitioner works (the generic path); rows go to exactly one partition.
class HashPartitioner final : public Partitioner {
 public:
  explicit HashPartitioner(uint32_t n) : n_(n) {}
  uint32_t num_partitions() const override { return n_; }
  PartitionId PartitionOf(Key key) const override { return Mix64(key) % n_; }

 private:
  uint32_t n_;
};

TEST(StorageMicroTable, OtherPartitionerCoversEveryRowOnce) {
  HashPartitioner partitioner(3);
  uint64_t total = 0;
  for (uint32_t p = 0; p < 3; ++p) {
    PartitionStore store;
    ASSERT_TRUE(LoadMicroTable(&store, partitioner, p, 500).ok());
    store.GetTable(kMicroTable)->ForEachInKeyOrder([&](const Record& r) {
      EXPECT_EQ(partitioner.PartitionOf(r.key), p);
      EXPECT_EQ(MicroValue(r), KeyRow(r.key));
    });
    total += store.size();
  }
  EXPECT_EQ(total, 1500u);
}

TEST(StorageMicroTable, BadArgumentsChangeNothing) {
  ModPartitioner partitioner(2);
  PartitionStore store;
  EXPECT_EQ(LoadMicroTable(nullptr, partitioner, 0, 10).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadMicroTable(&store, partitioner, 2, 10).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadMicroTable(&store, partitioner, 0, uint64_t{1} << 60).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.GetTable(kMicroTable), nullptr);
  ASSERT_TRUE(LoadMicroTable(&store, partitioner, 0, 10).ok());
  const uint64_t digest = store.Digest();
  EXPECT_EQ(LoadMicroTable(&store, partitioner, 0, 10).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store.Digest(), digest);
}

TEST(StorageMicroTable, MillionRecordsLoadFastAndSmall) {
  constexpr uint64_t kRecords = 1000000;
  ModPartitioner partitioner(4);
  PartitionStore store;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(LoadMicroTable(&store, partitioner, 1, kRecords).ok());
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto digest_start = std::chrono::steady_clock::now();
  const uint64_t digest = store.Digest();
  const double digest_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - digest_start).count();
  ASSERT_EQ(store.size(), kRecords);
  const double per_record = static_cast<double>(store.memory_bytes()) / kRecords;
  std::printf("1M micro records: load %.3f s, digest %.3f s (%016lx), %.1f bytes/record\n", load_s,
              digest_s, static_cast<unsigned long>(digest), per_record);
  EXPECT_LT(per_record, 100.0);
  EXPECT_EQ(MicroValue(*store.Get(MakeKey(kMicroTable, 4 * 12345 + 1))), 4u * 12345 + 1);
  // Load time is reported above, not asserted: speed is a benchmark's job.
}

TEST(StorageMicroTable, FourPartitionsOfAMillionFitEasily) {
  constexpr uint32_t kParts = 4;
  constexpr uint64_t kRecords = 1000000;
  ModPartitioner partitioner(kParts);
  std::vector<PartitionStore> stores(kParts);
  size_t bytes = 0;
  for (uint32_t p = 0; p < kParts; ++p) {
    ASSERT_TRUE(LoadMicroTable(&stores[p], partitioner, p, kRecords).ok());
    EXPECT_EQ(stores[p].size(), kRecords);
    bytes += stores[p].memory_bytes();
  }
  std::printf("4 x 1M micro records: %.1f MiB\n", bytes / 1048576.0);
  EXPECT_LT(bytes, size_t{512} << 20);  // far under 2 GiB
}

}  // namespace
}  // namespace detdb
