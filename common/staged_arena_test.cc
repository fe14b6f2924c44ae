#include "common/staged_arena.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace {

TEST(SlabPool, RecyclesSlabsAndFreesLargeBlocks) {
  SlabPool pool(4096, 8);
  SlabChain c;
  SlabHeader* a = pool.Take();
  SlabHeader* big = pool.TakeLarge(100000);
  c.Push(a);
  c.Push(big);
  EXPECT_EQ(pool.stats().slabs_out, 1u);
  EXPECT_EQ(pool.stats().large_blocks, 1u);
  std::memset(big->data(), 1, 100000);  // ASan checks the size
  pool.Give(&c);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(pool.stats().slabs_out, 0u);
  EXPECT_EQ(pool.stats().slabs_free, 1u);  // the slab, not the large block
  EXPECT_EQ(pool.Take(), a);               // reused, not a new heap slab
  EXPECT_EQ(pool.stats().heap_slabs, 1u);
  SlabChain back;
  back.Push(a);
  pool.Give(&back);
}

TEST(SlabPool, KeepsAtMostMaxFreeSlabs) {
  SlabPool pool(4096, 2);
  SlabChain c;
  for (int i = 0; i < 5; ++i) c.Push(pool.Take());
  pool.Give(&c);
  EXPECT_EQ(pool.stats().slabs_free, 2u);
  EXPECT_EQ(pool.stats().slabs_out, 0u);
}

TEST(SlabGroup, AlignedDisjointBlocksAllGoBackInOneRelease) {
  SlabPool pool(4096, 64);
  SlabGroup g(&pool);
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t i = 0; i < 200; ++i) {
    const size_t n = 1 + (i * 37) % 300;
    const size_t align = size_t{1} << (i % 7);  // 1 ... 64
    char* p = static_cast<char*>(g.Allocate(n, align));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
    std::memset(p, static_cast<int>(i), n);
    blocks.emplace_back(p, n);
  }
  char* large = static_cast<char*>(g.Allocate(5000, 8));  // larger than a slab: a block of its own
  std::memset(large, 7, 5000);
  for (size_t i = 0; i < blocks.size(); ++i)  // nothing overwrote an earlier block
    for (size_t j = 0; j < blocks[i].second; ++j) ASSERT_EQ(blocks[i].first[j], static_cast<char>(i));
  EXPECT_GT(pool.stats().slabs_out, 1u);
  EXPECT_EQ(pool.stats().large_blocks, 1u);
  g.Release();
  EXPECT_EQ(pool.stats().slabs_out, 0u);
  EXPECT_TRUE(g.empty());
}

TEST(TxnArena, ContainersGrowPastTheFirstChunkIntoSlabsTheGroupAdopts) {
  SlabPool pool(4096, 64);
  SlabGroup group(&pool);
  void* first = group.Allocate(256, 64);
  const uint64_t slabs_before = pool.stats().slabs_out;
  {
    TxnArena arena(&pool, first, 256);
    std::pmr::vector<uint64_t> v(&arena);
    for (uint64_t i = 0; i < 2000; ++i) v.push_back(i);  // 16 KB: several slabs
    for (uint64_t i = 0; i < 2000; ++i) ASSERT_EQ(v[i], i);
    EXPECT_GT(arena.used(), 2000 * sizeof(uint64_t));
    EXPECT_GT(pool.stats().slabs_out, slabs_before);
    v = {};  // deallocate: a no-op
    SlabChain mine = arena.TakeSlabs();
    EXPECT_FALSE(mine.empty());
    group.Adopt(&mine);
  }
  group.Release();
  EXPECT_EQ(pool.stats().slabs_out, 0u);
}

TEST(TxnArena, WithoutAFirstChunkItStartsOnASlab) {
  SlabPool pool(4096, 64);
  TxnArena arena(&pool, nullptr, 0);
  std::pmr::string s("a string longer than the small-string buffer", &arena);
  EXPECT_EQ(pool.stats().slabs_out, 1u);
  SlabChain mine = arena.TakeSlabs();
  pool.Give(&mine);
  EXPECT_EQ(pool.stats().slabs_out, 0u);
}

#if defined(__SANITIZE_ADDRESS__)
// A pointer kept past the bulk release is caught (the free list is poisoned).
TEST(SlabGroupDeathTest, UseAfterReleaseIsReported) {
  SlabPool pool(4096, 64);
  SlabGroup g(&pool);
  volatile char* p = static_cast<char*>(g.Allocate(64, 8));
  p[0] = 1;
  g.Release();
  EXPECT_DEATH(p[0] = 2, "use-after-poison");
}
#endif

}  // namespace
}  // namespace detdb
