#include "bench/latch_bench.h"

#include <cstdio>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "bench/bench_btree.h"

namespace detdb {
namespace {

TEST(BenchBTree, BulkLoadsEverySize) {
  for (uint64_t n : {1, 2, 21, 31, 32, 33, 42, 43, 700, 1000, 100000}) {
    BenchBTree t(BenchBTree::NodesFor(n, 0));
    t.BulkLoad(n, [](uint64_t i) { return 2 * i; });
    EXPECT_EQ(t.Check(), "") << n;
    EXPECT_EQ(t.size(), n);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t v = 0;
      ASSERT_TRUE(t.Lookup(2 * i, &v)) << n << " " << i;
      EXPECT_EQ(v, BenchBTree::ValueOf(2 * i));
      EXPECT_FALSE(t.Lookup(2 * i + 1, &v));
    }
  }
}

TEST(BenchBTree, InsertsSplitNodesAndKeepTheTreeValid) {
  constexpr uint64_t kKeys = 5000, kInserts = 40000;
  BenchBTree t(BenchBTree::NodesFor(kKeys, kInserts));
  t.BulkLoad(kKeys, [](uint64_t i) { return 2 * i; });
  std::mt19937_64 rng(7);
  std::set<uint64_t> odd;
  for (uint64_t i = 0; i < kInserts; ++i) {
    const uint64_t key = 2 * (rng() % (4 * kKeys)) + 1;  // beyond the loaded range too
    EXPECT_EQ(t.Insert(key), odd.insert(key).second) << key;
    if (i % 5000 == 0) {
      ASSERT_EQ(t.Check(), "") << i;
    }
  }
  EXPECT_EQ(t.Check(), "");
  EXPECT_EQ(t.size(), kKeys + odd.size());
  for (uint64_t key : odd) {
    uint64_t v = 0;
    ASSERT_TRUE(t.Lookup(key, &v)) << key;
    EXPECT_EQ(v, BenchBTree::ValueOf(key));
  }
  const size_t before = t.nodes_used();
  EXPECT_FALSE(t.Insert(*odd.begin()));  // a duplicate
  EXPECT_EQ(t.nodes_used(), before);
  EXPECT_LE(t.nodes_used(), BenchBTree::NodesFor(kKeys, kInserts));
}

// Each scheme with several threads and inserts: the run checks that no
// lookup missed a present key and that the tree is intact with every
// insert in it (a latch that failed to exclude would break either).
void RunScheme(const std::string& scheme, uint32_t threads, double share) {
  LatchBenchOptions o;
  o.scheme = scheme;
  o.threads = threads;
  o.insert_share = share;
  o.keys = 20000;
  o.ops_per_thread = 30000;
  auto r = RunLatchBench(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ops, uint64_t{threads} * o.ops_per_thread);
  EXPECT_EQ(r->lookups + r->inserts, r->ops);
  if (share > 0) {
    EXPECT_GT(r->inserted, 0u);
  } else {
    EXPECT_EQ(r->inserts, 0u);
  }
  EXPECT_GT(r->ops_per_sec, 0);
  std::printf("%s %ut %.0f%%: %.3f Mops/s, %.0f cpu ns/op, %lu lookup retries, %lu elided, %lu aborts\n",
              scheme.c_str(), threads, 100 * share, r->ops_per_sec / 1e6, r->cpu_ns_per_op,
              static_cast<unsigned long>(r->lookup_retries), static_cast<unsigned long>(r->elision.elided),
              static_cast<unsigned long>(r->elision.aborts));
}

TEST(LatchBench, ReaderWriterLatch) {
  RunScheme("rw", 3, 0.2);
  RunScheme("rw", 2, 1);
}

TEST(LatchBench, SpinLatch) {
  RunScheme("spin", 3, 0.2);
  RunScheme("spin", 2, 1);
}

TEST(LatchBench, OptimisticLookups) {
  RunScheme("optimistic", 3, 0.2);
  RunScheme("optimistic", 3, 0.5);
  RunScheme("optimistic", 2, 0);
}

TEST(LatchBench, ElidedWhereRtm) {
  std::string why;
  if (!LatchSchemeAvailable("elided", &why)) {
    LatchBenchOptions o;
    o.scheme = "elided";
    EXPECT_EQ(RunLatchBench(o).status().code(), absl::StatusCode::kInvalidArgument);
    GTEST_SKIP() << "elided scheme not run on this machine: " << why;
  }
  RunScheme("elided", 3, 0.2);
  RunScheme("elided", 2, 1);
}

TEST(LatchBench, SweepTableAndJsonSayWhatDidNotRun) {
  LatchSweepOptions o;
  o.schemes = LatchSchemes();
  o.threads = {1, 2};
  o.insert_shares = {0, 1};
  o.keys = 2000;
  o.ops_per_thread = 2000;
  o.rounds = 3;
  int runs = 0;
  auto cells = RunLatchSweep(o, [&](const LatchBenchResult&) { ++runs; });
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 4u * 2 * 2);
  std::string why;
  const bool elided = LatchSchemeAvailable("elided", &why);
  EXPECT_EQ(runs, (elided ? 4 : 3) * 2 * 2 * 3);
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  PrintLatchTable(f, o, *cells);
  std::fclose(f);
  const std::string table(buf, len);
  std::free(buf);
  std::printf("%s", table.c_str());
  for (const LatchCell& c : *cells) {
    const std::string json = LatchCellJson(o, c);
    EXPECT_EQ(json.front(), '{');
    EXPECT_EQ(json.back(), '}');
    EXPECT_EQ(c.available, c.scheme != "elided" || elided);
    if (!c.available) {
      EXPECT_NE(json.find("\"available\":false"), std::string::npos) << json;
      EXPECT_NE(c.why.find("RTM"), std::string::npos) << c.why;
    } else {
      EXPECT_NE(json.find("\"ops_per_sec\""), std::string::npos) << json;
      EXPECT_GT(c.median.ops, 0u);
    }
  }
  if (!elided) {
    EXPECT_NE(table.find("elided"), std::string::npos);
    EXPECT_NE(table.find("not available"), std::string::npos);
  }
}

}  // namespace
}  // namespace detdb
