// OrderedIndex (ordered_index.h): random operations against std::map, the
// shapes TPC-C gives it (ascending inserts, erases from the front), and
// randomized concurrent inserts, erases, lookups and scans with epoch-based
// reclamation of unlinked nodes (run under TSan and ASan too); ordered
// tables (Table with TableOptions::ordered).
#include "storage/ordered_index.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "storage/elided_latch.h"
#include "storage/epoch.h"
#include "storage/partition_store.h"

namespace detdb {
namespace {

// Values are opaque to the index: any non-null pointer will do. The value
// of key k is V(k), so a reader can check that it got k's own value (null
// only for a key no test uses).
constexpr Key kNoKey = 0xA5A5A5A5A5A5A5A5;
Record* V(Key k) { return reinterpret_cast<Record*>(static_cast<uintptr_t>(k ^ kNoKey)); }

std::vector<std::pair<Key, Record*>> ScanAll(const OrderedIndex& ix, Key lo, Key hi, bool reverse,
                                             size_t limit = SIZE_MAX) {
  std::vector<std::pair<Key, Record*>> out;
  ix.Scan(lo, hi, reverse, [&](Key k, Record* v) {
    out.emplace_back(k, v);
    return out.size() < limit;
  });
  return out;
}

std::vector<std::pair<Key, Record*>> ModelScan(const std::map<Key, Record*>& m, Key lo, Key hi, bool reverse,
                                               size_t limit = SIZE_MAX) {
  std::vector<std::pair<Key, Record*>> out;
  if (lo > hi) return out;
  if (!reverse) {
    for (auto it = m.lower_bound(lo); it != m.end() && it->first <= hi && out.size() < limit; ++it)
      out.emplace_back(*it);
  } else {
    auto it = m.upper_bound(hi);
    while (it != m.begin() && out.size() < limit) {
      --it;
      if (it->first < lo) break;
      out.emplace_back(*it);
    }
  }
  return out;
}

struct Shape {
  int leaf, inner;
};
const Shape kShapes[] = {{2, 3}, {3, 4}, {4, 5}, {OrderedIndex::kMaxLeafCapacity, OrderedIndex::kMaxInnerCapacity}};

OrderedIndex::Options OptionsOf(const Shape& s) { return {.leaf_capacity = s.leaf, .inner_capacity = s.inner}; }

// Operations per shape of the random and the concurrent tests (per thread
// in the latter): DETDB_ORDERED_INDEX_OPS, 40,000 by default. The sanitizer
// and debug test presets (CMakePresets.json) ask for fewer: under TSan on a
// loaded 2-core host the default takes minutes.
int OpsPerRun() {
  const char* v = std::getenv("DETDB_ORDERED_INDEX_OPS");
  return v != nullptr ? std::max(1000, std::atoi(v)) : 40000;
}

TEST(StorageOrderedIndex, EmptyIndex) {
  OrderedIndex ix;
  EXPECT_EQ(ix.Find(7), nullptr);
  EXPECT_EQ(ix.Erase(7), nullptr);
  EXPECT_TRUE(ScanAll(ix, 0, ~Key{0}, false).empty());
  EXPECT_TRUE(ScanAll(ix, 0, ~Key{0}, true).empty());
  EXPECT_EQ(ix.size(), 0u);
  EXPECT_EQ(ix.height(), 1);
  EXPECT_TRUE(ix.CheckStructure().ok());
}

TEST(StorageOrderedIndex, InsertFindEraseAndExtremeKeys) {
  OrderedIndex ix(OptionsOf(kShapes[0]));
  const Key keys[] = {0, 1, ~Key{0}, ~Key{0} - 1, Key{1} << 63, 42};
  for (Key k : keys) EXPECT_EQ(ix.Insert(k, V(k)), nullptr) << k;
  for (Key k : keys) EXPECT_EQ(ix.Insert(k, V(k + 1)), V(k)) << "a present key keeps its value";
  for (Key k : keys) EXPECT_EQ(ix.Find(k), V(k));
  EXPECT_EQ(ix.Find(2), nullptr);
  const auto all = ScanAll(ix, 0, ~Key{0}, false);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all.front().first, 0u);
  EXPECT_EQ(all.back().first, ~Key{0});
  const auto rev = ScanAll(ix, 0, ~Key{0}, true);
  ASSERT_EQ(rev.size(), 6u);
  EXPECT_EQ(rev.front().first, ~Key{0});
  EXPECT_EQ(rev.back().first, 0u);
  EXPECT_EQ(ix.Erase(0), V(0));
  EXPECT_EQ(ix.Erase(0), nullptr);
  EXPECT_EQ(ix.Erase(~Key{0}), V(~Key{0}));
  EXPECT_EQ(ix.size(), 4u);
  EXPECT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
}

// Random inserts, erases, lookups and scans (both directions, with limits)
// against std::map, for node shapes from tiny (deep trees, a split or an
// unlink every few operations) to the default.
TEST(StorageOrderedIndex, RandomOperationsMatchAStdMap) {
  for (const Shape& shape : kShapes) {
    for (Key universe : {Key{64}, Key{5000}}) {
      SCOPED_TRACE(testing::Message() << "leaf " << shape.leaf << " inner " << shape.inner << " keys < " << universe);
      OrderedIndex ix(OptionsOf(shape));
      std::map<Key, Record*> model;
      std::mt19937_64 rng(shape.leaf * 1000 + universe);
      // One hint for every FindOrInsert: its leaf splits, is unlinked and
      // goes out of range in between (nothing is freed until the end).
      OrderedIndex::Hint hint;
      const int steps = OpsPerRun();
      for (int step = 0; step < steps; ++step) {
        const Key k = rng() % universe;
        const int op = static_cast<int>(rng() % 10);
        if (op < 3) {
          auto [it, inserted] = model.emplace(k, V(k));
          ASSERT_EQ(ix.Insert(k, V(k)), inserted ? nullptr : V(k)) << "insert " << k;
        } else if (op < 4) {
          const bool inserted = model.emplace(k, V(k)).second;
          Record* made;
          ASSERT_EQ(ix.FindOrInsert(k, [k] { return V(k); }, &made, rng() % 4 == 0 ? nullptr : &hint), V(k))
              << "find or insert " << k;
          ASSERT_EQ(made, inserted ? V(k) : nullptr) << "made only when absent: " << k;
        } else if (op < 8) {
          const bool present = model.erase(k) > 0;
          ASSERT_EQ(ix.Erase(k), present ? V(k) : nullptr) << "erase " << k;
        } else if (op < 9) {
          ASSERT_EQ(ix.Find(k), model.count(k) ? V(k) : nullptr) << "find " << k;
        } else {
          const Key lo = rng() % universe, hi = lo + rng() % (universe / 4 + 1);
          const bool reverse = rng() % 2;
          const size_t limit = rng() % 3 == 0 ? 1 + rng() % 4 : SIZE_MAX;
          ASSERT_EQ(ScanAll(ix, lo, hi, reverse, limit), ModelScan(model, lo, hi, reverse, limit))
              << "scan [" << lo << ", " << hi << "] reverse " << reverse << " limit " << limit;
        }
        if (step % (steps / 8) == 0) {
          ASSERT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
        }
      }
      ASSERT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
      EXPECT_EQ(ix.size(), model.size());
      std::vector<std::pair<Key, Record*>> all;
      ix.ForEach([&](Key k, Record* v) { all.emplace_back(k, v); });
      EXPECT_EQ(all, ModelScan(model, 0, ~Key{0}, false));
      // Empty it: every node but a path to one leaf is unlinked.
      for (const auto& [k, v] : model) ASSERT_EQ(ix.Erase(k), v);
      EXPECT_EQ(ix.size(), 0u);
      EXPECT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
      EXPECT_EQ(ix.leaves(), 1u);
      EXPECT_EQ(ix.inner_nodes(), static_cast<uint64_t>(ix.height() - 1));
      EXPECT_GT(ix.FreeRetiredNow(), 0u);
    }
  }
}

// Ascending inserts (order ids) leave full leaves: the leaf keeps its
// entries and the new key starts the next leaf.
TEST(StorageOrderedIndex, AscendingInsertsFillLeaves) {
  OrderedIndex ix;
  constexpr Key kN = 100000;
  for (Key k = 1; k <= kN; ++k) ASSERT_EQ(ix.Insert(k, V(k)), nullptr);
  EXPECT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
  EXPECT_EQ(ix.leaves(), (kN + OrderedIndex::kMaxLeafCapacity - 1) / OrderedIndex::kMaxLeafCapacity);
  EXPECT_EQ(ix.height(), 3);  // 3125 leaves under 49 inner nodes under the root
  // Ascending within many ranges at once (a district's orders each, the
  // districts interleaved): nearly full leaves too.
  // The same through hints, one per range (as a txn's inserts of a
  // table): the same shape.
  OrderedIndex hinted;
  for (Key k = 1; k <= kN; ++k) {
    OrderedIndex::Hint hint;
    Record* made;
    ASSERT_EQ(hinted.FindOrInsert(k, [k] { return V(k); }, &made, &hint), V(k));
  }
  EXPECT_TRUE(hinted.CheckStructure().ok()) << hinted.CheckStructure();
  EXPECT_EQ(hinted.leaves(), ix.leaves());
  OrderedIndex ranges;
  constexpr Key kRanges = 20, kPerRange = 5000;
  for (Key i = 0; i < kPerRange; ++i)
    for (Key r = 0; r < kRanges; ++r) ASSERT_EQ(ranges.Insert(r << 32 | i, V(i)), nullptr);
  EXPECT_TRUE(ranges.CheckStructure().ok()) << ranges.CheckStructure();
  EXPECT_LT(ranges.leaves(), kRanges * kPerRange / OrderedIndex::kMaxLeafCapacity * 11 / 10);
}

// A queue (TPC-C's NEW_ORDER): appended at the back, erased at the front.
// Emptied leaves are unlinked, so the tree stays the size of what is in it
// and the first key of the range is found without walking past empty ones.
TEST(StorageOrderedIndex, QueueKeepsItsSize) {
  OrderedIndex ix(OptionsOf(kShapes[1]));
  Key head = 0, tail = 0;
  for (int round = 0; round < 200000; ++round) {
    ASSERT_EQ(ix.Insert(tail, V(tail)), nullptr);
    ++tail;
    if (tail - head > 90) {
      const auto first = ScanAll(ix, 0, ~Key{0}, false, 1);
      ASSERT_EQ(first.size(), 1u);
      ASSERT_EQ(first[0].first, head);
      ASSERT_EQ(ix.Erase(head), V(head));
      ++head;
    }
  }
  EXPECT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
  EXPECT_EQ(ix.size(), tail - head);
  // 90 keys in leaves of 3: 30 full leaves plus what splits and the kept
  // paths leave, far from the 66K leaves 200K inserts made.
  EXPECT_LT(ix.leaves(), 100u);
  EXPECT_LT(ix.height(), 12);
  EXPECT_GT(ix.FreeRetiredNow(), 60000u);
}

// ---- Concurrency ----

// Keys k < kUniverse belong to writer k % (kWriters + 1) when that is <
// kWriters; the rest are "stable": inserted before the threads start and
// never touched. Keys are interleaved, so every writer changes the same
// leaves as the others and splits and unlinks nodes under everybody.
// Writers check their own keys exactly (no one else changes them: as a
// txn's lock covers a range, ownership covers a writer's keys); every
// thread checks the stable keys, which must never go missing, and the
// order and bounds of every scan. Unlinked nodes are reclaimed by epochs
// while the threads run (ASan would see a node freed too early).
class ConcurrentIndex {
 public:
  static constexpr int kWriters = 3, kReaders = 2;
  static constexpr Key kUniverse = 6000;

  explicit ConcurrentIndex(const OrderedIndex::Options& options) : ix_(options) {}

  static bool Stable(Key k) { return k % (kWriters + 1) == kWriters; }

  void Run(int ops_per_thread) {
    for (Key k = 0; k < kUniverse; ++k)
      if (Stable(k)) ix_.Insert(k, V(k));
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) threads.emplace_back([this, w, ops_per_thread] { Writer(w, ops_per_thread); });
    for (int r = 0; r < kReaders; ++r) threads.emplace_back([this, r, ops_per_thread] { Reader(r, ops_per_thread); });
    for (auto& t : threads) t.join();
    Reclaim(nullptr);
  }

  OrderedIndex& index() { return ix_; }
  std::map<Key, Record*> Expected() const {
    std::map<Key, Record*> all;
    for (Key k = 0; k < kUniverse; ++k)
      if (Stable(k)) all.emplace(k, V(k));
    for (const auto& m : models_) all.insert(m.begin(), m.end());
    return all;
  }
  uint64_t freed_nodes() const { return freed_nodes_; }
  int failures() const { return failures_.load(); }

 private:
  // Checks a scan's result: in order, within [lo, hi], every key's own
  // value, and every stable key of the range present.
  bool CheckScan(const std::vector<std::pair<Key, Record*>>& got, Key lo, Key hi, bool reverse, size_t limit) {
    for (size_t i = 0; i < got.size(); ++i) {
      const Key k = got[i].first;
      if (k < lo || k > hi || got[i].second != V(k)) return false;
      if (i > 0 && (reverse ? got[i - 1].first <= k : got[i - 1].first >= k)) return false;
    }
    if (got.size() < limit) {  // the whole range was visited: no stable key missing
      size_t stable = 0;
      for (Key k = lo; k <= hi && k < kUniverse; ++k) stable += Stable(k);
      size_t seen = 0;
      for (const auto& [k, v] : got) seen += Stable(k);
      if (seen != stable) return false;
    }
    return true;
  }

  void Fail() { failures_.fetch_add(1); }

  void Writer(int w, int ops) {
    EpochParticipant me(&epochs_);
    std::mt19937_64 rng(w + 1);
    std::map<Key, Record*>& model = models_[w];
    for (int i = 0; i < ops; ++i) {
      const Key k = (rng() % (kUniverse / (kWriters + 1))) * (kWriters + 1) + w;
      const int op = static_cast<int>(rng() % 8);
      if (op < 2) {
        const bool inserted = model.emplace(k, V(k)).second;
        if (ix_.Insert(k, V(k)) != (inserted ? nullptr : V(k))) Fail();
      } else if (op < 3) {
        // A burst of the writer's next keys through one hint (a txn's
        // adjacent rows); the hint lives until the quiescent point.
        OrderedIndex::Hint hint;
        for (Key b = k; b < k + 4 * (kWriters + 1) && b < kUniverse; b += kWriters + 1) {
          const bool inserted = model.emplace(b, V(b)).second;
          Record* made;
          if (ix_.FindOrInsert(b, [b] { return V(b); }, &made, &hint) != V(b) ||
              made != (inserted ? V(b) : nullptr))
            Fail();
        }
      } else if (op < 6) {
        const bool present = model.erase(k) > 0;
        if (ix_.Erase(k) != (present ? V(k) : nullptr)) Fail();
      } else if (op < 7) {
        if (ix_.Find(k) != (model.count(k) ? V(k) : nullptr)) Fail();
      } else {
        // Its own keys of a range, exactly; the others' as CheckScan.
        const Key lo = rng() % kUniverse, hi = lo + rng() % 400;
        const bool reverse = rng() % 2;
        const auto got = ScanAll(ix_, lo, hi, reverse);
        if (!CheckScan(got, lo, hi, reverse, SIZE_MAX)) Fail();
        std::vector<std::pair<Key, Record*>> mine;
        for (const auto& e : got)
          if (e.first % (kWriters + 1) == static_cast<Key>(w)) mine.push_back(e);
        if (mine != ModelScan(model, lo, hi, reverse)) Fail();
      }
      me.Quiescent();
      if (i % 64 == 0) Reclaim(&me);
      if (i % 1000 == 999) {  // now and then offline, as a sleeping worker
        me.Offline();
        std::this_thread::yield();
        me.Online();
      }
    }
  }

  void Reader(int r, int ops) {
    EpochParticipant me(&epochs_);
    std::mt19937_64 rng(100 + r);
    for (int i = 0; i < ops; ++i) {
      const Key k = rng() % kUniverse;
      if (rng() % 2 == 0) {
        Record* v = ix_.Find(k);
        if (Stable(k) ? v != V(k) : (v != nullptr && v != V(k))) Fail();
      } else {
        const Key lo = rng() % kUniverse, hi = lo + rng() % 300;
        const bool reverse = rng() % 2;
        const size_t limit = rng() % 4 == 0 ? 1 + rng() % 8 : SIZE_MAX;
        if (!CheckScan(ScanAll(ix_, lo, hi, reverse, limit), lo, hi, reverse, limit)) Fail();
      }
      me.Quiescent();
      if (i % 256 == 0) Reclaim(&me);
    }
  }

  // One round of epoch-based reclamation (as PartitionStore::ReclaimSafe).
  void Reclaim(EpochParticipant* self) {
    std::lock_guard<std::mutex> l(reclaim_mu_);
    if (self != nullptr) self->Quiescent();
    std::vector<void*> nodes = ix_.TakeRetired();
    if (!nodes.empty()) sealed_.emplace_back(epochs_.Advance(), std::move(nodes));
    const uint64_t safe = epochs_.SafeEpoch();
    while (!sealed_.empty() && sealed_.front().first <= safe) {
      freed_nodes_ += sealed_.front().second.size();
      OrderedIndex::FreeNodes(sealed_.front().second);
      sealed_.erase(sealed_.begin());
    }
  }

  OrderedIndex ix_;
  EpochDomain epochs_;
  std::map<Key, Record*> models_[kWriters];
  std::atomic<int> failures_{0};
  std::mutex reclaim_mu_;
  std::vector<std::pair<uint64_t, std::vector<void*>>> sealed_;  // guarded by reclaim_mu_
  uint64_t freed_nodes_ = 0;                                      // guarded by reclaim_mu_
};

TEST(StorageOrderedIndex, ConcurrentInsertsErasesAndScansMatchTheModel) {
  const ElidedLatch::Stats before = ElidedLatch::GlobalStats();
  for (const Shape& shape : {kShapes[0], kShapes[2], kShapes[3]}) {
    SCOPED_TRACE(testing::Message() << "leaf " << shape.leaf << " inner " << shape.inner);
    ConcurrentIndex c(OptionsOf(shape));
    c.Run(OpsPerRun());
    EXPECT_EQ(c.failures(), 0);
    ASSERT_TRUE(c.index().CheckStructure().ok()) << c.index().CheckStructure();
    const std::map<Key, Record*> expected = c.Expected();
    EXPECT_EQ(ScanAll(c.index(), 0, ~Key{0}, false), ModelScan(expected, 0, ~Key{0}, false));
    EXPECT_EQ(c.index().size(), expected.size());
    if (shape.leaf <= 4) {
      EXPECT_GT(c.freed_nodes(), 100u) << "nodes were unlinked and reclaimed while the threads ran";
    }
  }
  // The writers' latch paths (nested where a split or unlink takes several)
  // ran as hardware transactions where the CPU has RTM.
  const ElidedLatch::Stats d = ElidedLatch::GlobalStats() - before;
  std::printf("latches: %s; elided %lu, fallback %lu, aborts %lu (nested %lu, capacity %lu)\n",
              ElidedLatch::ElisionStatus().c_str(), static_cast<unsigned long>(d.elided),
              static_cast<unsigned long>(d.fallback), static_cast<unsigned long>(d.aborts),
              static_cast<unsigned long>(d.by(ElidedLatch::AbortCause::kNested)),
              static_cast<unsigned long>(d.by(ElidedLatch::AbortCause::kCapacity)));
  if (ElidedLatch::RtmAvailable() && ElidedLatch::ElisionEnabled()) {
    EXPECT_GT(d.elided, 0u) << "RTM is on, but no latch section was elided";
  } else {
    std::printf("RTM path not run: %s\n", ElidedLatch::ElisionStatus().c_str());
  }
}

// ---- Ordered tables ----

constexpr uint32_t kT = 7;

TEST(StorageOrderedTable, GetInsertEraseScanAndReclaim) {
  PartitionStore store;
  Table* t = store.CreateTable({.id = kT, .name = "ordered", .value_size = 8, .expected_records = 100, .ordered = true})
                 .value();
  ASSERT_TRUE(t->ordered());
  for (uint64_t i = 1000; i > 0; --i) {  // descending: half splits
    Record* r = store.Insert(MakeKey(kT, i * 3));
    ASSERT_NE(r, nullptr);
    std::memcpy(r->value(), &i, 8);
  }
  EXPECT_EQ(store.Insert(MakeKey(kT, 30)), store.Get(MakeKey(kT, 30)));  // present: the same record
  EXPECT_EQ(store.Get(MakeKey(kT, 31)), nullptr);
  EXPECT_EQ(t->size(), 1000u);
  std::vector<uint64_t> rows;
  t->Scan(MakeKey(kT, 10), MakeKey(kT, 20), false, [&](Key k, const Record* r) {
    EXPECT_EQ(r->key, k);
    rows.push_back(KeyRow(k));
    return true;
  });
  EXPECT_EQ(rows, (std::vector<uint64_t>{12, 15, 18}));
  rows.clear();
  t->Scan(MakeKey(kT, 0), MakeKey(kT, 3000), true, [&](Key k, const Record*) {
    rows.push_back(KeyRow(k));
    return rows.size() < 2;
  });
  EXPECT_EQ(rows, (std::vector<uint64_t>{3000, 2997}));
  // Key order without sorting, and the digest a hash table of the same rows has.
  PartitionStore hashed;
  Table* h = hashed.CreateTable({.id = kT, .name = "ordered", .value_size = 8, .expected_records = 100}).value();
  uint64_t prev = 0;
  t->ForEachInKeyOrder([&](const Record& r) {
    EXPECT_GT(r.key, prev);
    prev = r.key;
    std::memcpy(h->Insert(r.key)->value(), r.value(), 8);
  });
  EXPECT_EQ(store.Digest(), hashed.Digest());
  // Erased records and unlinked nodes come back through epochs.
  for (uint64_t i = 1; i <= 900; ++i) ASSERT_TRUE(store.Erase(MakeKey(kT, i * 3)));
  EXPECT_FALSE(store.Erase(MakeKey(kT, 3)));
  EXPECT_EQ(t->size(), 100u);
  EXPECT_GT(t->reclaim_stats().retired_nodes, 0u);
  EXPECT_EQ(t->reclaim_stats().retired_records, 900u);
  store.ReclaimSafe();
  store.ReclaimSafe();
  EXPECT_EQ(t->reclaim_stats().retired_nodes, 0u);
  EXPECT_EQ(t->reclaim_stats().reclaimed_records, 900u);
  EXPECT_EQ(t->reclaim_stats().free_records, 900u);
  for (uint64_t i = 1; i <= 900; ++i) ASSERT_NE(store.Insert(MakeKey(kT, i * 3 + 1)), nullptr);
  EXPECT_EQ(t->reclaim_stats().free_records, 0u);  // the freed records were reused
}

// Concurrent Inserts of the SAME keys into an ordered table (the table's
// contract: one record wins and every caller gets it). Threads race on
// each key in different orders; the losers' records made by FindOrInsert
// go back to the slab (Table::InsertOrdered's Release).
TEST(StorageOrderedTable, ConcurrentInsertsOfTheSameKeysGetOneRecord) {
  constexpr int kThreads = 4;
  constexpr uint64_t kKeys = 3000;
  Table t({.id = kT, .name = "same", .value_size = 8, .expected_records = 16, .ordered = true});
  std::vector<std::vector<Record*>> got(kThreads, std::vector<Record*>(kKeys));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&t, &got, i] {
      std::vector<uint64_t> order(kKeys);
      for (uint64_t k = 0; k < kKeys; ++k) order[k] = k;
      std::mt19937_64 rng(i / 2);  // pairs of threads in the same order: head-on races
      std::shuffle(order.begin(), order.end(), rng);
      for (uint64_t k : order) got[i][k] = t.Insert(MakeKey(kT, k));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), kKeys);
  for (uint64_t k = 0; k < kKeys; ++k) {
    Record* r = t.Get(MakeKey(kT, k));
    ASSERT_NE(r, nullptr) << k;
    EXPECT_EQ(r->key, MakeKey(kT, k));
    for (int i = 0; i < kThreads; ++i) ASSERT_EQ(got[i][k], r) << "thread " << i << " key " << k;
  }
  // Nothing was retired (a loser's record is released, not erased) and the
  // tree holds exactly one record per key. (That the losers' records went
  // back to the slab is not checked here: the arena counts no blocks.)
  const Table::ReclaimStats st = t.reclaim_stats();
  EXPECT_EQ(st.retired_records, 0u);
  uint64_t visited = 0;
  t.ForEachInKeyOrder([&](const Record&) { ++visited; });
  EXPECT_EQ(visited, kKeys);
}


// A hint taken before RetireAll (a truncate) does not insert into a
// retired leaf: the insert goes to the new, empty tree.
TEST(StorageOrderedIndex, AHintTakenBeforeRetireAllIsNotUsed) {
  OrderedIndex ix;
  OrderedIndex::Hint hint;
  Record* made;
  for (Key k = 1; k <= 10; ++k) ASSERT_EQ(ix.FindOrInsert(k, [k] { return V(k); }, &made, &hint), V(k));
  ix.RetireAll();
  EXPECT_EQ(ix.Find(1), nullptr);
  ASSERT_EQ(ix.FindOrInsert(11, [] { return V(11); }, &made, &hint), V(11));
  EXPECT_EQ(ix.Find(11), V(11)) << "the insert went to a retired leaf";
  EXPECT_EQ(ix.Find(5), nullptr);
  EXPECT_EQ(ix.leaves(), 1u);
  EXPECT_TRUE(ix.CheckStructure().ok()) << ix.CheckStructure();
  OrderedIndex::FreeNodes(ix.TakeRetired());
}

}  // namespace
}  // namespace detdb
