// Epoch-based reclamation (epoch.h, Table::SealRetired/FreeSealed,
// PartitionStore::ReclaimSafe): what is erased or retired is freed once,
// and only once, every participant has passed a quiescent point.
#include "storage/epoch.h"

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/partition_store.h"

namespace detdb {
namespace {

constexpr uint32_t kT = 5;

TEST(StorageEpoch, SafeEpochWaitsForOnlineParticipants) {
  EpochDomain d;
  EXPECT_EQ(d.SafeEpoch(), d.epoch());
  {
    EpochParticipant a(&d);
    EpochParticipant b(&d);
    EXPECT_EQ(d.participants(), 2u);
    const uint64_t e0 = d.epoch();
    const uint64_t l1 = d.Advance();
    EXPECT_EQ(l1, e0 + 1);
    EXPECT_EQ(d.SafeEpoch(), e0);  // a and b announced e0
    a.Quiescent();
    EXPECT_EQ(d.SafeEpoch(), e0);  // b has not passed a quiescent point
    b.Quiescent();
    EXPECT_EQ(d.SafeEpoch(), l1);
    d.Advance();
    b.Offline();  // an offline participant holds nothing back
    EXPECT_FALSE(b.online());
    EXPECT_EQ(d.SafeEpoch(), l1);  // a still announces l1
    a.Offline();
    EXPECT_EQ(d.SafeEpoch(), d.epoch());
    b.Online();  // announces the epoch of now
    EXPECT_TRUE(b.online());
    EXPECT_EQ(d.SafeEpoch(), d.epoch());
    d.Advance();
    EXPECT_EQ(d.SafeEpoch(), d.epoch() - 1);
  }
  EXPECT_EQ(d.participants(), 0u);
  EpochParticipant c(&d);  // a slot is reused
  EXPECT_EQ(d.participants(), 1u);
}

// Erased records are held while a participant may stand on them, then made
// reusable: re-inserting as many records allocates no new slab.
TEST(StorageEpoch, ErasedRecordsAreFreedAndReused) {
  PartitionStore store;
  Table* t = store.CreateTable({.id = kT, .name = "t", .value_size = 40, .expected_records = 1000}).value();
  constexpr uint64_t kN = 50000;  // several slabs
  for (uint64_t i = 0; i < kN; ++i) ASSERT_NE(t->Insert(MakeKey(kT, i)), nullptr);
  EpochParticipant reader(&store.epochs());
  const Record* view = t->Get(MakeKey(kT, 7));  // the reader holds a view
  ASSERT_NE(view, nullptr);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_TRUE(t->Erase(MakeKey(kT, i)));
  EXPECT_EQ(t->reclaim_stats().retired_records, kN);

  // Sealed, but the reader has not passed a quiescent point: nothing freed.
  EXPECT_EQ(store.ReclaimSafe(), 0u);
  Table::ReclaimStats st = t->reclaim_stats();
  EXPECT_EQ(st.retired_records, 0u);
  EXPECT_EQ(st.sealed_records, kN);
  EXPECT_EQ(st.sealed_batches, 1u);
  EXPECT_EQ(st.free_records, 0u);
  EXPECT_EQ(view->key, MakeKey(kT, 7));  // still readable

  reader.Quiescent();  // drops its view
  EXPECT_EQ(store.ReclaimSafe(), kN);
  st = t->reclaim_stats();
  EXPECT_EQ(st.sealed_records, 0u);
  EXPECT_EQ(st.free_records, kN);
  EXPECT_EQ(st.reclaimed_records, kN);

  // The freed blocks are reused: no new slab for as many new records.
  const size_t bytes = t->memory_bytes();
  for (uint64_t i = kN; i < 2 * kN; ++i) ASSERT_NE(t->Insert(MakeKey(kT, i)), nullptr);
  EXPECT_EQ(t->memory_bytes(), bytes);
  EXPECT_EQ(t->reclaim_stats().free_records, 0u);
  for (uint64_t i = kN; i < 2 * kN; ++i) ASSERT_EQ(t->Get(MakeKey(kT, i))->key, MakeKey(kT, i));
}

// While a checkpoint child shares the pages (HoldFrees), rounds seal but
// free nothing; the first round after the release frees it all.
TEST(StorageEpoch, HeldFreesSealButFreeNothing) {
  constexpr uint64_t kN = 100;
  PartitionStore store;
  Table* t = store.CreateTable({.id = kT, .name = "h", .value_size = 8, .expected_records = kN}).value();
  for (uint64_t i = 0; i < kN; ++i) ASSERT_NE(t->Insert(MakeKey(kT, i)), nullptr);
  store.HoldFrees();
  store.HoldFrees();  // holds nest
  for (uint64_t i = 0; i < kN / 2; ++i) ASSERT_TRUE(t->Erase(MakeKey(kT, i)));
  EXPECT_EQ(store.ReclaimSafe(), 0u);
  EXPECT_EQ(t->reclaim_stats().sealed_records, kN / 2);
  EXPECT_EQ(t->reclaim_stats().free_records, 0u);
  store.ReleaseFrees();
  EXPECT_EQ(store.ReclaimSafe(), 0u);
  EXPECT_EQ(t->reclaim_stats().free_records, 0u);
  store.ReleaseFrees();
  EXPECT_EQ(store.ReclaimSafe(), kN / 2);
  EXPECT_EQ(t->reclaim_stats().sealed_records, 0u);
  EXPECT_EQ(t->reclaim_stats().free_records, kN / 2);
}

// Bucket arrays retired by growth go back to the heap once safe.
TEST(StorageEpoch, RetiredBucketArraysAreFreed) {
  PartitionStore store;
  Table* t = store.CreateTable({.id = kT, .name = "g", .value_size = 8, .expected_records = 16}).value();
  EpochParticipant writer(&store.epochs());
  const uint64_t first = t->bucket_count();
  uint64_t i = 0;
  while (t->growths() < 8 || t->migrating()) ASSERT_NE(t->Insert(MakeKey(kT, i++)), nullptr);
  const uint64_t buckets = t->bucket_count();
  Table::ReclaimStats st = t->reclaim_stats();
  // first + 2 first + ... + buckets/2 = buckets - first, 16 bytes and a
  // moved byte each.
  EXPECT_EQ(st.retired_index_bytes, (buckets - first) * 17);
  const size_t before = t->memory_bytes();
  EXPECT_EQ(store.ReclaimSafe(&writer), 0u);  // no records; arrays sealed, the caller passes
  EXPECT_EQ(t->reclaim_stats().retired_index_bytes, 0u);
  const size_t after = t->memory_bytes();
  EXPECT_GE(before - after, (buckets - first) * 17);         // the arrays
  EXPECT_LT(before - after, (buckets - first) * 17 + 4096);  // and the 8 migrations
  for (uint64_t k = 0; k < i; ++k) ASSERT_NE(t->Get(MakeKey(kT, k)), nullptr) << k;
}

// Writers insert and erase (each its own keys, as locking guarantees) while
// the index grows; readers hold views of records across many lookups and
// check them; everyone reclaims now and then. A record freed while a reader
// still holds it shows as a changed key, and under ASan as a read of
// poisoned memory; a bucket array freed too early as a heap-use-after-free.
TEST(StorageEpoch, ConcurrentReadersWritersGrowthAndReclamation) {
  PartitionStore store;
  Table* t = store.CreateTable({.id = kT, .name = "c", .value_size = 16, .expected_records = 16}).value();
  constexpr int kWriters = 2, kReaders = 2;
  constexpr uint64_t kRange = uint64_t{1} << 32;  // writer w owns rows [w * kRange, (w + 1) * kRange)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int kOps = 40000;
#else
  constexpr int kOps = 200000;
#endif
  std::atomic<int> writers_left{kWriters};
  std::atomic<uint64_t> next_row[kWriters];
  for (auto& n : next_row) n.store(0);
  std::atomic<uint64_t> bad{0}, views_checked{0};
  std::vector<std::vector<uint64_t>> live(kWriters);

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      EpochParticipant me(&store.epochs());
      std::mt19937_64 rng(w + 1);
      std::vector<uint64_t>& mine = live[w];
      for (int op = 0; op < kOps; ++op) {
        if (mine.empty() || rng() % 10 < 6) {
          const uint64_t row = w * kRange + next_row[w].fetch_add(1, std::memory_order_relaxed);
          Record* r = t->Insert(MakeKey(kT, row));
          if (r->key != MakeKey(kT, row)) bad.fetch_add(1);
          mine.push_back(row);
        } else {
          const size_t j = rng() % mine.size();
          if (!t->Erase(MakeKey(kT, mine[j]))) bad.fetch_add(1);
          mine[j] = mine.back();
          mine.pop_back();
        }
        me.Quiescent();
        if (op % 64 == 0) store.ReclaimSafe(&me);
        if (op % 5000 == 0) {  // now and then offline for a while
          me.Offline();
          std::this_thread::yield();
          me.Online();
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int rd = 0; rd < kReaders; ++rd) {
    threads.emplace_back([&, rd] {
      EpochParticipant me(&store.epochs());
      std::mt19937_64 rng(100 + rd);
      std::vector<std::pair<const Record*, Key>> views;
      while (writers_left.load() > 0) {
        // Hold up to 16 views over ~64 lookups, checking them all each time.
        for (int step = 0; step < 64; ++step) {
          const int w = static_cast<int>(rng() % (kWriters + 1));  // kWriters: rows never inserted
          const uint64_t issued = w < kWriters ? next_row[w].load(std::memory_order_relaxed) : 1000;
          const uint64_t row = w * kRange + rng() % (issued + 1);
          const Key k = MakeKey(kT, row);
          const Record* r = t->Get(k);
          if (w == kWriters && r != nullptr) bad.fetch_add(1);
          if (r != nullptr) {
            if (r->key != k) bad.fetch_add(1);
            if (views.size() < 16) views.emplace_back(r, k);
          }
          for (const auto& [v, vk] : views)
            if (v->key != vk) bad.fetch_add(1);
          views_checked.fetch_add(views.size(), std::memory_order_relaxed);
        }
        views.clear();
        me.Quiescent();
        if (rng() % 16 == 0) store.ReclaimSafe(&me);
        if (rng() % 64 == 0) {
          me.Offline();
          std::this_thread::yield();
          me.Online();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(views_checked.load(), 0u);
  EXPECT_GE(t->growths(), 4u);
  const uint64_t reclaimed_while_running = t->reclaim_stats().reclaimed_records;
  EXPECT_GT(reclaimed_while_running, 0u);

  // Everything left is freed once nobody participates.
  store.ReclaimSafe();
  store.ReclaimSafe();
  const Table::ReclaimStats st = t->reclaim_stats();
  EXPECT_EQ(st.retired_records, 0u);
  EXPECT_EQ(st.sealed_records, 0u);
  EXPECT_EQ(st.retired_index_bytes, 0u);
  uint64_t live_count = 0, issued = 0;
  for (int w = 0; w < kWriters; ++w) {
    live_count += live[w].size();
    issued += next_row[w].load();
    for (uint64_t row : live[w]) ASSERT_NE(t->Get(MakeKey(kT, row)), nullptr) << row;
  }
  EXPECT_EQ(t->size(), live_count);
  EXPECT_EQ(st.reclaimed_records, issued - live_count);  // every erased record, once
}

}  // namespace
}  // namespace detdb
