// The targeted corner cases of LOCKING.md 6.5 (C1-C12), each run against
// every lock manager it applies to, with the exact set of txns each step
// dispatches. Lock() always normalises requests (1.2), so the "raw request"
// cases (C9, C11) are tested through their normalised behaviour: a key both
// read and written, or listed twice, is one request and is granted at once;
// and VLL's head rule runs in Poll(), not in Release(). Every scenario runs
// through LockTestDriver, which checks G1, G4, G5 and the manager's own
// invariants after every operation.
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_test_driver.h"
#include "lockmgr/lock_test_util.h"

namespace detdb {
namespace {

using Ids = std::vector<TxnId>;

constexpr uint32_t kTableSize = 1u << 16;
constexpr uint32_t kSmallTable = 4;  // for hash collisions (C2, C3)

const Key kX = MakeKey(1, 24);
const Key kA = MakeKey(1, 1);
const Key kB = MakeKey(1, 2);

// Dispatches of one step that the spec compares as a set.
Ids Sorted(Ids v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The lock slot a hashed manager gives key k (vll, vll_sca, dclp, dclp_frag).
uint64_t SlotOf(Key k, uint32_t table_size) { return Mix64(k) & (table_size - 1); }

LockManagerOptions Options(uint32_t table_size = kTableSize) {
  LockManagerOptions o;
  o.table_size = table_size;
  o.sca_bits = std::max<uint32_t>(table_size, 64);
  o.check_invariants = false;  // the driver checks them after every operation
  return o;
}


// Locks one txn alone on a fresh manager, outside the driver so that its
// normalised request list (LockTxn::lm, read white-box) can be inspected:
// it must be granted at once, hold `want_requests` requests, and leave the
// manager quiescent once released.
void ExpectSoloTxn(std::string_view name, const LockManagerOptions& o, const std::vector<Key>& reads,
                   const std::vector<Key>& writes, uint32_t want_requests) {
  auto lm = Make(name, o);
  ASSERT_NE(lm, nullptr);
  LockTxn t;
  t.id = 1;
  t.reads = reads;
  t.writes = writes;
  ReadyList ready;
  EXPECT_TRUE(lm->Lock(&t, &ready));
  EXPECT_EQ(ready, (ReadyList{&t}));
  EXPECT_EQ(t.lm.num_requests, want_requests);
  EXPECT_TRUE(lm->CheckInvariants().ok()) << lm->CheckInvariants();
  ready.clear();
  lm->Poll(/*input_idle=*/true, &ready);
  EXPECT_TRUE(ready.empty());
  lm->Release(&t, &ready);
  lm->Poll(/*input_idle=*/true, &ready);
  EXPECT_TRUE(ready.empty());
  EXPECT_TRUE(lm->CheckInvariants().ok()) << lm->CheckInvariants();
  EXPECT_TRUE(lm->IsQuiescent());
}

// Two distinct keys on the same slot of a kSmallTable-slot table.
std::pair<Key, Key> CollidingKeys() {
  const Key k1 = MakeKey(1, 7);
  Key k2 = k1 + 1;
  while (SlotOf(k2, kSmallTable) != SlotOf(k1, kSmallTable)) ++k2;
  return {k1, k2};
}

// ---------------------------------------------------------------------------
// Cases that apply to every lock manager.

class CornerCases : public ::testing::TestWithParam<std::string> {};

// C1: T1 reads and writes x, alone: dispatched at admission, one X request.
TEST_P(CornerCases, C1ReadAndWrittenKeyIsOneRequestGrantedAtAdmission) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {kX}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(lm->stats().blocked_at_admission, 0u);
  EXPECT_EQ(d.Done(1), (Ids{}));
  ExpectCleanEnd(d, *lm);
  ExpectSoloTxn(GetParam(), Options(), {kX}, {kX}, 1);
}

// C2: slot(k1) == slot(k2); T1 R{k1} W{k2}, alone: dispatched at admission
// (the hashed managers fold both keys into one X request); quiescent after
// `done T1` (dclp: rn back to 0, lwt NULL).
TEST_P(CornerCases, C2CollidingReadAndWriteGrantedAtAdmission) {
  const auto [k1, k2] = CollidingKeys();
  ASSERT_NE(k1, k2);
  ASSERT_EQ(SlotOf(k1, kSmallTable), SlotOf(k2, kSmallTable));
  auto lm = Make(GetParam(), Options(kSmallTable));
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {k1}, {k2}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{}));
  ExpectCleanEnd(d, *lm);
  // det2pl locks exact keys: two requests; the others one slot.
  ExpectSoloTxn(GetParam(), Options(kSmallTable), {k1}, {k2}, GetParam() == "det2pl" ? 2 : 1);
}

// C2, both keys read: one S request on the shared slot.
TEST_P(CornerCases, C2CollidingReadsGrantedAtAdmission) {
  const auto [k1, k2] = CollidingKeys();
  auto lm = Make(GetParam(), Options(kSmallTable));
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {k1, k2}, {}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{}));
  ExpectCleanEnd(d, *lm);
  ExpectSoloTxn(GetParam(), Options(kSmallTable), {k1, k2}, {}, GetParam() == "det2pl" ? 2 : 1);
}

// C3: same collision; T1 W{k1} W{k2}: dispatched at admission (dclp: the
// second X sees lwt == T1).
TEST_P(CornerCases, C3CollidingWritesGrantedAtAdmission) {
  const auto [k1, k2] = CollidingKeys();
  auto lm = Make(GetParam(), Options(kSmallTable));
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {k1, k2}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{}));
  ExpectCleanEnd(d, *lm);
  ExpectSoloTxn(GetParam(), Options(kSmallTable), {}, {k1, k2}, GetParam() == "det2pl" ? 2 : 1);
}

// C4: T1 W{x}; done T1; then T2 R{x}: dispatched at admission.
TEST_P(CornerCases, C4ReadAfterLastWriterReleasedGrantedAtAdmission) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kX}}, {2, {kX}, {}}});
  EXPECT_EQ(d.AdmitOne(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{}));
  EXPECT_EQ(d.AdmitOne(), (Ids{2}));
  EXPECT_EQ(d.Done(2), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// C5: T1 R{x}, T2 R{x}, T3 W{x}; done T2, then done T1: T3 ready only after
// `done T1`.
TEST_P(CornerCases, C5WriterWaitsForLastReaderOfRun) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {kX}, {}}, {2, {kX}, {}}, {3, {}, {kX}}});
  EXPECT_EQ(Sorted(d.AdmitAll()), (Ids{1, 2}));
  EXPECT_EQ(d.Done(2), (Ids{}));
  EXPECT_EQ(d.Poll(), (Ids{}));
  EXPECT_EQ(d.Done(1), (Ids{3}));
  EXPECT_EQ(d.Done(3), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// C6: T1, T2, T3 all W{x}; done T1: only T2 ready. VLL: the head rule picks
// T2 although Cx[x] == 2.
TEST_P(CornerCases, C6WriterChainWakesOnlyTheNext) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kX}}, {2, {}, {kX}}, {3, {}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{2}));
  if (GetParam() == "vll" || GetParam() == "vll_sca") {
    EXPECT_EQ(lm->stats().head_rule_grants, 1u);
  }
  EXPECT_EQ(lm->stats().blocked, 1u);
  EXPECT_EQ(d.Done(2), (Ids{3}));
  EXPECT_EQ(d.Done(3), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// C7's dispatch sets, which every manager must give: T1 R{x}, T2 W{x},
// T3 R{x}, T4 W{x}; done T1, T2, T3 in order. (The DCLP-specific VT
// bookkeeping is checked below.)
TEST_P(CornerCases, C7AlternatingReadsAndWritesRunInIdOrder) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {kX}, {}}, {2, {}, {kX}}, {3, {kX}, {}}, {4, {}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(lm->stats().blocked, 3u);
  EXPECT_EQ(d.Done(1), (Ids{2}));
  EXPECT_EQ(d.Done(2), (Ids{3}));
  EXPECT_EQ(d.Done(3), (Ids{4}));
  EXPECT_EQ(d.Done(4), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// C11: x in both sets and listed twice among the writes: no crash, one
// request, dispatched at admission, quiescent after its one release.
TEST_P(CornerCases, C11KeyInBothSetsAndRepeatedIsOneRequest) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {kX}, {kX, kX}}, {2, {kX}, {}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{2}));
  EXPECT_EQ(d.Done(2), (Ids{}));
  ExpectCleanEnd(d, *lm);
  ExpectSoloTxn(GetParam(), Options(), {kX, kX}, {kX, kX}, 1);
}

// C12: a txn with no local keys at this partition: admitted and dispatched
// at once (a passive participant, 1.5).
TEST_P(CornerCases, C12TxnWithNoLocalKeysDispatchedAtAdmission) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{}));
  ExpectCleanEnd(d, *lm);
  ExpectSoloTxn(GetParam(), Options(), {}, {}, 0);
}

// C12 behind a blocked txn: T3 has no local keys and runs at once while T2
// waits for T1.
TEST_P(CornerCases, C12TxnWithNoLocalKeysNeverWaits) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kX}}, {2, {}, {kX}}, {3, {}, {}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1, 3}));
  EXPECT_EQ(d.Done(3), (Ids{}));
  EXPECT_EQ(d.Done(1), (Ids{2}));
  EXPECT_EQ(d.Done(2), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, CornerCases, ::testing::ValuesIn(LockManagerNames()),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------
// C7 (DCLP): after admission vt.succ_ids = [T2, T4] with prednum 1 each;
// `done T1` hands its read to T2 (the first live id); `done T3` must prune
// the finished T2 from the VT's list and wake T4.
TEST(DclpCornerCases, C7VtListPrunesFinishedWriter) {
  auto lm = Make("dclp", Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {kX}, {}}, {2, {}, {kX}}, {3, {kX}, {}}, {4, {}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  uint64_t scans = lm->stats().vt_scan_steps;
  EXPECT_EQ(d.Done(1), (Ids{2}));  // VT scan: T2 live, prednum 1 -> 0
  EXPECT_EQ(lm->stats().vt_scan_steps - scans, 1u);
  EXPECT_EQ(d.Done(2), (Ids{3}));  // via T2.succ
  scans = lm->stats().vt_scan_steps;
  EXPECT_EQ(d.Done(3), (Ids{4}));  // VT scan: T2 finished -> pruned; T4 1 -> 0
  EXPECT_EQ(lm->stats().vt_scan_steps - scans, 2u);
  EXPECT_EQ(d.Done(4), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// ---------------------------------------------------------------------------
// C10: completion order inside a read run reversed: the following writer
// wakes only after the last reader, whichever it is. Managers that grant a
// read run together (det2pl, dclp, dclp_frag):
// T1 W{x}, T2 R{x}, T3 R{x}, T4 W{x}; done T1, then T3 before T2.

class ReadRunCornerCases : public ::testing::TestWithParam<std::string> {};

TEST_P(ReadRunCornerCases, C10ReversedReadRunWakesWriterAfterLastReader) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kX}}, {2, {kX}, {}}, {3, {kX}, {}}, {4, {}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(Sorted(d.Done(1)), (Ids{2, 3}));
  EXPECT_EQ(d.Done(3), (Ids{}));
  EXPECT_EQ(d.Done(2), (Ids{4}));
  EXPECT_EQ(d.Done(4), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

INSTANTIATE_TEST_SUITE_P(ReadRunManagers, ReadRunCornerCases,
                         ::testing::Values("det2pl", "dclp", "dclp_frag"),
                         [](const auto& info) { return info.param; });

// C10 for VLL+SCA: the head rule dispatches T2; SCA (idle trigger) then
// finds T3 clear, so the run {T2, T3} runs together and can finish reversed.
TEST(VllScaCornerCases, C10ReversedReadRunWakesWriterAfterLastReader) {
  LockManagerOptions o = Options();
  o.sca_when_idle = true;
  auto lm = Make("vll_sca", o);
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kX}}, {2, {kX}, {}}, {3, {kX}, {}}, {4, {}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{2}));  // head rule
  EXPECT_EQ(d.Poll(), (Ids{3}));   // SCA: T2 marks S x only; T4 fails
  EXPECT_EQ(d.Done(3), (Ids{}));   // SCA: T4 fails on T2's read
  EXPECT_EQ(d.Done(2), (Ids{4}));  // head rule
  EXPECT_EQ(d.Done(4), (Ids{}));
  EXPECT_EQ(lm->stats().head_rule_grants, 2u);
  EXPECT_EQ(lm->stats().sca_grants, 1u);
  ExpectCleanEnd(d, *lm);
}

// C10 for plain VLL: only the head runs a blocked txn, so the readers after
// a writer run one at a time and cannot finish reversed; the writer behind
// them still waits for the last one.
TEST(VllCornerCases, C10ReadRunAfterWriterRunsThroughTheHead) {
  auto lm = Make("vll", Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kX}}, {2, {kX}, {}}, {3, {kX}, {}}, {4, {}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{2}));
  EXPECT_EQ(d.Poll(), (Ids{}));
  EXPECT_EQ(d.Done(2), (Ids{3}));
  EXPECT_EQ(d.Done(3), (Ids{4}));
  EXPECT_EQ(d.Done(4), (Ids{}));
  EXPECT_EQ(lm->stats().head_rule_grants, 3u);
  ExpectCleanEnd(d, *lm);
}

// ---------------------------------------------------------------------------
// VLL-only cases, for vll and vll_sca.

class VllCornerCases : public ::testing::TestWithParam<std::string> {};

// C8: threshold 1; T1 W{a}, T2 W{a}, T3 W{b}: T3 (conflict-free) is not
// admitted until the head rule dispatches T2 after `done T1`.
TEST_P(VllCornerCases, C8ThresholdHoldsBackConflictFreeTxn) {
  ASSERT_NE(SlotOf(kA, kTableSize), SlotOf(kB, kTableSize));
  LockManagerOptions o = Options();
  o.vll_blocked_threshold = 1;
  auto lm = Make(GetParam(), o);
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kA}}, {2, {}, {kA}}, {3, {}, {kB}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_FALSE(lm->CanAdmit());
  EXPECT_EQ(lm->stats().admitted, 2u);
  EXPECT_EQ(d.Poll(), (Ids{}));
  EXPECT_EQ(lm->stats().admitted, 2u);
  EXPECT_EQ(d.Done(1), (Ids{2}));
  EXPECT_EQ(lm->stats().head_rule_grants, 1u);
  EXPECT_TRUE(lm->CanAdmit());
  EXPECT_EQ(d.AdmitAll(), (Ids{3}));
  EXPECT_EQ(d.Done(2), (Ids{}));
  EXPECT_EQ(d.Done(3), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// C9, normalised: T1 R{x} + W{x} in an empty system is one X request, so it
// is not blocked by itself and runs at admission.
TEST_P(VllCornerCases, C9ReadAndWriteOfOneKeyDispatchedAtAdmission) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {kX}, {kX}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(lm->stats().blocked_at_admission, 0u);
  EXPECT_EQ(lm->stats().head_rule_grants, 0u);
  EXPECT_EQ(d.Done(1), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// C9's liveness point: a BLOCKED head is dispatched by the next Poll(); the
// head rule does not hang on Release (which never returns txns in VLL).
// T1 W{a}, T2 W{a}: `done T1` dispatches T2 through the head rule.
TEST_P(VllCornerCases, C9BlockedHeadDispatchedByTheNextPoll) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), {{1, {}, {kA}}, {2, {}, {kA}}});
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d.Done(1), (Ids{2}));
  EXPECT_EQ(lm->stats().head_rule_grants, 1u);
  EXPECT_EQ(d.Done(2), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// The same, driven by hand: Release(T1) hands out nothing; the very next
// Poll() dispatches T2, and a second Poll() nothing more.
TEST_P(VllCornerCases, C9HeadRuleRunsInPollNotInRelease) {
  auto lm = Make(GetParam(), Options());
  ASSERT_NE(lm, nullptr);
  const std::vector<Key> a = {kA};
  LockTxn t1, t2;
  t1.id = 1;
  t1.writes = a;
  t2.id = 2;
  t2.writes = a;
  ReadyList ready;
  EXPECT_TRUE(lm->Lock(&t1, &ready));
  EXPECT_FALSE(lm->Lock(&t2, &ready));
  EXPECT_EQ(ready, (ReadyList{&t1}));
  ready.clear();
  lm->Release(&t1, &ready);
  EXPECT_TRUE(ready.empty());
  EXPECT_EQ(lm->stats().blocked, 1u);
  EXPECT_TRUE(lm->CheckInvariants().ok()) << lm->CheckInvariants();
  lm->Poll(/*input_idle=*/true, &ready);
  EXPECT_EQ(ready, (ReadyList{&t2}));
  EXPECT_EQ(lm->stats().head_rule_grants, 1u);
  EXPECT_EQ(lm->stats().blocked, 0u);
  ready.clear();
  lm->Poll(/*input_idle=*/true, &ready);
  EXPECT_TRUE(ready.empty());
  lm->Release(&t2, &ready);
  lm->Poll(/*input_idle=*/true, &ready);
  EXPECT_TRUE(ready.empty());
  EXPECT_TRUE(lm->CheckInvariants().ok()) << lm->CheckInvariants();
  EXPECT_TRUE(lm->IsQuiescent());
}

INSTANTIATE_TEST_SUITE_P(VllManagers, VllCornerCases, ::testing::Values("vll", "vll_sca"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace detdb

namespace detdb {
namespace {

// Release() of a txn that is still blocked cancels it (LOCKING.md 2.3): the
// blocked count must follow, so the manager ends quiescent.
TEST(Det2plCancel, CancellingABlockedTxnKeepsCountsRight) {
  LockManagerOptions o;
  o.check_invariants = false;
  auto lm = NewLockManager("det2pl", o);
  ASSERT_TRUE(lm.ok());
  const std::vector<Key> x = {1};
  LockTxn t1, t2;
  t1.id = 1;
  t1.writes = x;
  t2.id = 2;
  t2.writes = x;
  ReadyList ready;
  EXPECT_TRUE((*lm)->Lock(&t1, &ready));
  EXPECT_FALSE((*lm)->Lock(&t2, &ready));
  (*lm)->Release(&t2, &ready);  // cancel
  EXPECT_TRUE((*lm)->CheckInvariants().ok()) << (*lm)->CheckInvariants();
  EXPECT_EQ((*lm)->stats().blocked, 0u);
  (*lm)->Release(&t1, &ready);
  EXPECT_EQ(ready.size(), 1u);  // only t1, granted at admission
  EXPECT_TRUE((*lm)->IsQuiescent());
}

}  // namespace
}  // namespace detdb
