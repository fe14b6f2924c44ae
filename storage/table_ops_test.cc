// Whole-table operations (table.h, partition_store.h): Clear, Reserve (the
// index grown at once), BulkLoad and Truncate, ForFirstInKeyOrder; each
// also in the middle of an online growth's migration, and on ordered tables
// (the B+tree retired and reclaimed; its sealed nodes freed with the table).
#include <bit>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "storage/epoch.h"
#include "storage/ordered_index.h"
#include "storage/partition_store.h"
#include "storage/table.h"

namespace detdb {
namespace {

constexpr uint32_t kT = 5;

uint64_t Load64(const Record* r) {
  uint64_t v;
  std::memcpy(&v, r->value(), 8);
  return v;
}
void Store64(Record* r, uint64_t v) { std::memcpy(r->value(), &v, 8); }

// Inserts until a migration is under way (and stops there).
uint64_t FillUntilMigrating(Table* t) {
  uint64_t n = 0;
  while (!t->migrating() || n < 100) {
    Store64(t->Insert(MakeKey(kT, n)), n + 1);
    ++n;
    if (n > 1000000) break;
  }
  return n;
}

TEST(StorageTableOps, ClearRemovesEveryRecordAndRetiresThem) {
  Table t({.id = kT, .name = "c", .value_size = 8, .expected_records = 16});
  const uint64_t first = t.bucket_count();
  EXPECT_EQ(first, 16 * Table::kBucketsPerExpectedRecord);
  const uint64_t n = FillUntilMigrating(&t);
  ASSERT_TRUE(t.migrating());
  EXPECT_EQ(t.Clear(), n);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.migrating());
  EXPECT_EQ(t.bucket_count(), first);  // back to the first size
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(t.Get(MakeKey(kT, i)), nullptr) << i;
  uint64_t visited = 0;
  t.ForEachInKeyOrder([&](const Record&) { ++visited; });
  EXPECT_EQ(visited, 0u);
  // The records were retired, not leaked: a quiescent reclaim frees them
  // all, and the table grows again from scratch.
  EXPECT_EQ(t.ReclaimErased(), n);
  for (uint64_t i = 0; i < 1000; ++i) Store64(t.Insert(MakeKey(kT, i)), 7);
  EXPECT_EQ(t.size(), 1000u);
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(Load64(t.Get(MakeKey(kT, i))), 7u);
}

TEST(StorageTableOps, ReserveGrowsAtOnceAndEndsAMigration) {
  Table t({.id = kT, .name = "r", .value_size = 8, .expected_records = 16});
  const uint64_t n = FillUntilMigrating(&t);
  ASSERT_TRUE(t.migrating());
  const uint64_t growths = t.growths();
  t.Reserve(100000);
  EXPECT_FALSE(t.migrating());
  EXPECT_EQ(t.bucket_count(), std::bit_ceil(100000 * Table::kBucketsPerExpectedRecord));
  EXPECT_EQ(t.growths(), growths + 1);
  EXPECT_EQ(t.size(), n);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(Load64(t.Get(MakeKey(kT, i))), i + 1) << i;
  for (uint64_t i = n; i < n + 1000; ++i) ASSERT_EQ(t.Get(MakeKey(kT, i)), nullptr) << i;
  // Filling up to the reserved size starts no growth.
  for (uint64_t i = n; i < 90000; ++i) Store64(t.Insert(MakeKey(kT, i)), i + 1);
  EXPECT_EQ(t.growths(), growths + 1);
  for (uint64_t i = 0; i < 90000; ++i) ASSERT_EQ(Load64(t.Get(MakeKey(kT, i))), i + 1) << i;
  const uint64_t buckets = t.bucket_count();
  t.Reserve(10);  // never shrinks
  EXPECT_EQ(t.bucket_count(), buckets);
  EXPECT_EQ(t.ReclaimErased(), 0u);  // the old arrays went to the retired list, no record did
}

// Reserve rehashes only when online growth would be due: a table past its
// first load of 0.5 (but below kGrowLoad) takes a few more rows as it is.
// (grow_index = false: online growth, which a noisy stripe starts early,
// stays out of the way.)
TEST(StorageTableOps, ReserveBelowTheGrowthLoadKeepsTheIndex) {
  Table t({.id = kT, .name = "r", .value_size = 8, .expected_records = 1000, .grow_index = false});
  const uint64_t buckets = t.bucket_count();
  ASSERT_EQ(buckets, std::bit_ceil(1000 * Table::kBucketsPerExpectedRecord));
  const uint64_t n = buckets * 3 / 4 * Table::kGrowLoad;
  for (uint64_t i = 0; i < n; ++i) Store64(t.Insert(MakeKey(kT, i)), i + 1);
  ASSERT_EQ(t.growths(), 0u);
  t.Reserve(n + 10);
  EXPECT_EQ(t.bucket_count(), buckets);
  EXPECT_EQ(t.growths(), 0u);
  t.Reserve(buckets * Table::kGrowLoad);  // exactly due: still none
  EXPECT_EQ(t.growths(), 0u);
  t.Reserve(buckets * Table::kGrowLoad + 1);  // past it: sized as a new index
  EXPECT_EQ(t.growths(), 1u);
  EXPECT_EQ(t.bucket_count(), std::bit_ceil((buckets * Table::kGrowLoad + 1) * Table::kBucketsPerExpectedRecord));
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(Load64(t.Get(MakeKey(kT, i))), i + 1) << i;
}

TEST(StorageTableOps, ForFirstInKeyOrderIsBoundedAndStartsAtFrom) {
  Table t({.id = kT, .name = "s", .value_size = 8, .expected_records = 64});
  for (uint64_t i = 0; i < 1000; i += 2) Store64(t.Insert(MakeKey(kT, i)), i);
  std::vector<uint64_t> rows;
  t.ForFirstInKeyOrder(MakeKey(kT, 101), 5, [&](const Record& r) { rows.push_back(KeyRow(r.key)); });
  EXPECT_EQ(rows, (std::vector<uint64_t>{102, 104, 106, 108, 110}));
  rows.clear();
  t.ForFirstInKeyOrder(MakeKey(kT, 990), 100, [&](const Record& r) { rows.push_back(KeyRow(r.key)); });
  EXPECT_EQ(rows, (std::vector<uint64_t>{990, 992, 994, 996, 998}));
}

TEST(StorageTableOps, BulkLoadAndTruncateOnAStore) {
  PartitionStore store;
  ASSERT_TRUE(store.CreateTable({.id = kT, .name = "b", .value_size = 8, .expected_records = 16}).ok());
  ASSERT_TRUE(store.CreateTable({.id = kT + 1, .name = "other", .value_size = 8, .expected_records = 16}).ok());
  Store64(store.Insert(MakeKey(kT + 1, 1)), 1);
  std::vector<uint64_t> values(5000);
  std::vector<std::pair<Key, std::string_view>> rows;
  for (uint64_t i = 0; i < values.size(); ++i) {
    values[i] = i * 3;
    rows.emplace_back(MakeKey(kT, i), std::string_view(reinterpret_cast<const char*>(&values[i]), 8));
  }
  ASSERT_TRUE(store.BulkLoad(kT, rows).ok());
  Table* t = store.GetTable(kT);
  EXPECT_EQ(t->size(), 5000u);
  EXPECT_GE(t->bucket_count() * Table::kGrowLoad, 5000u);
  EXPECT_EQ(t->growths(), 1u);  // one rehash, no doublings
  for (uint64_t i = 0; i < 5000; ++i) ASSERT_EQ(Load64(t->Get(MakeKey(kT, i))), i * 3);
  // Overwrites; and a bad row changes nothing.
  values[0] = 99;
  rows.resize(1);
  ASSERT_TRUE(store.BulkLoad(kT, rows).ok());
  EXPECT_EQ(Load64(t->Get(MakeKey(kT, 0))), 99u);
  const uint64_t digest = store.Digest();
  const std::string short_value = "abc";
  EXPECT_FALSE(store.BulkLoad(kT, {{MakeKey(kT, 1), short_value}}).ok());
  EXPECT_FALSE(store.BulkLoad(kT, {{MakeKey(kT + 1, 1), rows[0].second}}).ok());
  EXPECT_FALSE(store.BulkLoad(77, rows).ok());
  EXPECT_EQ(store.Digest(), digest);
  auto removed = store.Truncate(kT);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 5000u);
  EXPECT_EQ(t->size(), 0u);
  EXPECT_EQ(store.GetTable(kT + 1)->size(), 1u);  // only that table
  EXPECT_FALSE(store.Truncate(77).ok());
  // The same contents as a store that never had the rows.
  PartitionStore fresh;
  ASSERT_TRUE(fresh.CreateTable({.id = kT, .name = "b", .value_size = 8, .expected_records = 16}).ok());
  ASSERT_TRUE(fresh.CreateTable({.id = kT + 1, .name = "other", .value_size = 8, .expected_records = 16}).ok());
  Store64(fresh.Insert(MakeKey(kT + 1, 1)), 1);
  EXPECT_EQ(store.Digest(), fresh.Digest());
}


// ---- ordered tables (TableOptions::ordered)

std::vector<uint64_t> ScanRows(const Table& t, uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> rows;
  t.Scan(MakeKey(kT, lo), MakeKey(kT, hi), false, [&](Key k, const Record* r) {
    EXPECT_EQ(r->key, k);
    rows.push_back(KeyRow(k));
    return true;
  });
  return rows;
}

TEST(StorageTableOps, ClearOfAnOrderedTableRetiresItsTreeAndReclaimFreesIt) {
  const int64_t nodes_before = OrderedIndex::allocated_nodes();
  {
    Table t({.id = kT, .name = "o", .value_size = 8, .expected_records = 16, .ordered = true});
    for (uint64_t i = 0; i < 5000; ++i) Store64(t.Insert(MakeKey(kT, i)), i + 1);
    ASSERT_GT(OrderedIndex::allocated_nodes(), nodes_before + 100);
    const uint64_t buckets = t.bucket_count();
    EXPECT_EQ(t.Clear(), 5000u);
    EXPECT_EQ(t.size(), 0u);
    for (uint64_t i = 0; i < 5000; i += 7) ASSERT_EQ(t.Get(MakeKey(kT, i)), nullptr) << i;
    EXPECT_TRUE(ScanRows(t, 0, 10000).empty());
    uint64_t visited = 0;
    t.ForEachInKeyOrder([&](const Record&) { ++visited; });
    EXPECT_EQ(visited, 0u);
    EXPECT_EQ(t.bucket_count(), buckets);  // the unused hash index stays as it was
    EXPECT_GT(t.reclaim_stats().retired_nodes, 100u);
    // Records and nodes were retired, not leaked: a quiescent reclaim frees
    // them all (the new root leaf stays).
    EXPECT_EQ(t.ReclaimErased(), 5000u);
    EXPECT_EQ(t.reclaim_stats().retired_nodes, 0u);
    EXPECT_EQ(OrderedIndex::allocated_nodes(), nodes_before + 1);
    // The table works again from scratch, reusing the freed records.
    for (uint64_t i = 100; i > 0; --i) Store64(t.Insert(MakeKey(kT, i * 2)), i);
    EXPECT_EQ(t.size(), 100u);
    EXPECT_EQ(t.reclaim_stats().free_records, 4900u);
    EXPECT_EQ(ScanRows(t, 195, 10000), (std::vector<uint64_t>{196, 198, 200}));
    EXPECT_EQ(Load64(t.Get(MakeKey(kT, 200))), 100u);
  }
  EXPECT_EQ(OrderedIndex::allocated_nodes(), nodes_before);
}

TEST(StorageTableOps, BulkLoadAndTruncateOfAnOrderedTableOnAStore) {
  PartitionStore store;
  Table* t =
      store.CreateTable({.id = kT, .name = "o", .value_size = 8, .expected_records = 16, .ordered = true}).value();
  const uint64_t buckets = t->bucket_count();
  std::vector<uint64_t> values(5000);
  std::vector<std::pair<Key, std::string_view>> rows;
  for (uint64_t i = 0; i < values.size(); ++i) {
    values[i] = i * 3;
    rows.emplace_back(MakeKey(kT, values.size() - 1 - i), std::string_view(reinterpret_cast<const char*>(&values[i]), 8));
  }
  ASSERT_TRUE(store.BulkLoad(kT, rows).ok());
  EXPECT_EQ(t->size(), 5000u);
  // Reserve is a no-op for a tree: no hash index sized for the rows (and
  // no records threaded into one).
  EXPECT_EQ(t->bucket_count(), buckets);
  EXPECT_EQ(t->growths(), 0u);
  std::vector<uint64_t> want;
  for (uint64_t i = 4990; i < 5000; ++i) want.push_back(i);
  EXPECT_EQ(ScanRows(*t, 4990, 100000), want);
  EXPECT_EQ(Load64(t->Get(MakeKey(kT, 4999))), 0u);
  EXPECT_EQ(Load64(t->Get(MakeKey(kT, 0))), 4999u * 3);
  std::vector<uint64_t> page;
  t->ForFirstInKeyOrder(MakeKey(kT, 17), 3, [&](const Record& r) { page.push_back(KeyRow(r.key)); });
  EXPECT_EQ(page, (std::vector<uint64_t>{17, 18, 19}));
  // Truncate, reclaim, then the table is usable and equals one that never
  // had the rows.
  auto removed = store.Truncate(kT);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 5000u);
  EXPECT_TRUE(ScanRows(*t, 0, 100000).empty());
  store.ReclaimSafe();
  store.ReclaimSafe();
  EXPECT_EQ(t->reclaim_stats().reclaimed_records, 5000u);
  EXPECT_EQ(t->reclaim_stats().retired_nodes, 0u);
  Store64(store.Insert(MakeKey(kT, 42)), 42);
  EXPECT_EQ(ScanRows(*t, 0, 100000), (std::vector<uint64_t>{42}));
  PartitionStore fresh;
  ASSERT_TRUE(fresh.CreateTable({.id = kT, .name = "o", .value_size = 8, .expected_records = 16, .ordered = true}).ok());
  Store64(fresh.Insert(MakeKey(kT, 42)), 42);
  EXPECT_EQ(store.Digest(), fresh.Digest());
}

TEST(StorageTableOps, DestroyingAStoreFreesTheSealedNodesOfItsOrderedTables) {
  const int64_t nodes_before = OrderedIndex::allocated_nodes();
  {
    PartitionStore store;
    Table* t =
        store.CreateTable({.id = kT, .name = "o", .value_size = 8, .expected_records = 16, .ordered = true}).value();
    for (uint64_t i = 0; i < 3000; ++i) Store64(store.Insert(MakeKey(kT, i)), i);
    EpochParticipant worker(&store.epochs());  // online: nothing sealed can be freed
    for (uint64_t i = 0; i < 2000; ++i) ASSERT_TRUE(store.Erase(MakeKey(kT, i)));  // unlinks leaves
    store.ReclaimSafe();  // seals; the worker has not passed a quiescent point since
    ASSERT_TRUE(store.Truncate(kT).ok());  // retires the rest of the tree
    store.ReclaimSafe();
    EXPECT_TRUE(t->has_sealed());
    EXPECT_EQ(t->reclaim_stats().reclaimed_records, 0u);
    EXPECT_GT(t->reclaim_stats().retired_nodes, 50u);
  }  // the worker goes, then the store, with batches still sealed
  EXPECT_EQ(OrderedIndex::allocated_nodes(), nodes_before);
}

}  // namespace
}  // namespace detdb
