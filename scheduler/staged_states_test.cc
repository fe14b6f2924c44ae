// StagedStates (staged_states.h): a sub-batch's memory goes back only when
// its last txn is released, in any order; states and everything they
// allocate live on their arenas; the destructor drops what was not released.
#include "scheduler/staged_states.h"

#include <cstring>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace detdb {
namespace {

TEST(StagedStates, AGroupsMemoryGoesBackWithItsLastTxnInAnyOrder) {
  StagedStates s(16 << 10);
  s.OpenGroup(3);
  std::vector<PartitionTxn*> a = {s.New(4), s.New(4), s.New(4)};
  s.OpenGroup(2);
  std::vector<PartitionTxn*> b = {s.New(4), s.New(4)};
  EXPECT_EQ(s.stats().groups_open, 2u);
  EXPECT_EQ(s.stats().states_live, 5u);
  for (PartitionTxn* st : a) st->local_reads.assign({1, 2, 3});
  s.Release(a[1]);
  s.Release(b[0]);
  s.Release(a[0]);
  EXPECT_EQ(s.stats().groups_open, 2u);  // each group has a txn left
  for (Key k : a[2]->local_reads) EXPECT_LE(k, 3u);  // still valid (ASan: not freed)
  const uint64_t out = s.stats().pool.slabs_out;
  s.Release(a[2]);
  EXPECT_EQ(s.stats().groups_open, 1u);
  EXPECT_LT(s.stats().pool.slabs_out, out);  // group a's slab went back
  s.Release(b[1]);
  EXPECT_EQ(s.stats().groups_open, 0u);
  EXPECT_EQ(s.stats().pool.slabs_out, 0u);
  EXPECT_EQ(s.stats().states_live, 0u);
}

TEST(StagedStates, AGroupStaysWhileTxnsOfItAreStillToBeMade) {
  StagedStates s(16 << 10);
  s.OpenGroup(2);
  PartitionTxn* first = s.New(1);
  s.Release(first);  // released before its sibling was made
  EXPECT_EQ(s.stats().groups_open, 1u);
  PartitionTxn* second = s.New(1);  // from the same group, still open
  s.Release(second);
  EXPECT_EQ(s.stats().groups_open, 0u);
  EXPECT_EQ(s.stats().pool.slabs_out, 0u);
}

TEST(StagedStates, EverythingATxnAllocatesIsOnItsArenaAndLargeTxnsTakeSlabs) {
  StagedStates s(16 << 10);
  s.OpenGroup(1);
  PartitionTxn* st = s.New(2);
  ASSERT_NE(st->staged, nullptr);
  EXPECT_EQ(st->local_reads.get_allocator().resource(), st->staged);
  EXPECT_EQ(st->reads.get_allocator().resource(), st->staged);
  EXPECT_EQ(st->writes.get_allocator().resource(), st->staged);
  EXPECT_EQ(st->write_index.get_allocator().resource(), st->staged);
  // Far more than the first chunk of a 2-key txn: slabs of its own, and a
  // value above a quarter slab, a block of its own.
  for (Key k = 0; k < 5000; ++k) st->local_writes.push_back(k);
  for (Key k = 0; k < 500; ++k) st->write_index.emplace(k, static_cast<uint32_t>(k));
  char* big = st->arena.Allocate(10000);
  std::memset(big, 1, 10000);
  EXPECT_GT(s.stats().pool.slabs_out, 1u);
  EXPECT_GE(s.stats().pool.large_blocks, 1u);
  s.Release(st);
  EXPECT_GT(s.stats().overflow_slabs, 0u);
  EXPECT_EQ(s.stats().pool.slabs_out, 0u);
}

TEST(StagedStates, TheDestructorDropsTheOwnersOfTxnsNotReleased) {
  auto owner = std::make_shared<int>(1);
  {
    StagedStates s(16 << 10);
    s.OpenGroup(3);
    s.New(1)->owner = owner;
    s.Release(s.New(1));
    EXPECT_EQ(owner.use_count(), 2);
  }  // one txn live, one never made: the group goes all the same
  EXPECT_EQ(owner.use_count(), 1);
}

TEST(StagedStatesDeathTest, NewNeedsAnOpenGroupWithTxnsLeft) {
  StagedStates s(16 << 10);
  EXPECT_DEATH(s.New(1), "without an open group");
  s.OpenGroup(1);
  PartitionTxn* st = s.New(1);
  EXPECT_DEATH(s.New(1), "without an open group");
  s.Release(st);
}

#if defined(__SANITIZE_ADDRESS__)
// A state touched after its group went back is reported.
TEST(StagedStatesDeathTest, AStateUsedAfterItsGroupIsReleasedIsReported) {
  StagedStates s(16 << 10);
  s.OpenGroup(1);
  PartitionTxn* st = s.New(1);
  volatile bool* flag = &st->reader;
  s.Release(st);
  EXPECT_DEATH(*flag = true, "use-after-poison");
}
#endif

}  // namespace
}  // namespace detdb
