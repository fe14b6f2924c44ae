// The worked examples of LOCKING.md section 6 as unit tests, with the exact
// set of txns each step dispatches:
//   6.1  det2pl: a read run, a writer behind it, a read-modify-write txn;
//   6.2  vll (threshold 2): the head rule and the admission stall;
//   6.3  vll_sca: (a) threshold-only trigger, one-pass and first-hit, with
//        (b) noted in it, (c) the idle trigger, and the SCA micro-tests S1
//        (failed blocked txns are marked) and S2 (check first, then mark);
//   6.4  dclp and dclp_frag: the paper's A/B/C/D example, extended;
//   6.6  the lock-manager side of the multi-partition (WAITING) scenario,
//        two managers standing for partitions P1 and P2, for every manager.
// Every scenario runs through LockTestDriver, which checks G1, G4, G5 and the
// manager's own invariants after every operation.
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

// Dispatches of one step that the spec compares as a set (N4 leaves their
// order to the completion timing).
Ids Sorted(Ids v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The lock slot a hashed manager gives key k (vll, vll_sca, dclp, dclp_frag).
uint64_t SlotOf(Key k, uint32_t table_size) { return Mix64(k) & (table_size - 1); }
// The SCA bit of key k.
uint64_t BitOf(Key k, uint32_t table_size, uint32_t sca_bits) {
  return SlotOf(k, table_size) & (sca_bits - 1);
}

// Succeeds iff no two keys share an SCA bit (and so a hash slot).
::testing::AssertionResult DistinctBits(const std::vector<Key>& keys, uint32_t table_size,
                                        uint32_t sca_bits) {
  for (size_t i = 0; i < keys.size(); ++i)
    for (size_t j = i + 1; j < keys.size(); ++j)
      if (BitOf(keys[i], table_size, sca_bits) == BitOf(keys[j], table_size, sca_bits))
        return ::testing::AssertionFailure() << "keys #" << i << " and #" << j << " share a bit";
  return ::testing::AssertionSuccess();
}

LockManagerOptions ExampleOptions() {
  LockManagerOptions o;
  o.table_size = kTableSize;
  o.sca_bits = kTableSize;     // bit == slot: SCA sees exact slots
  o.check_invariants = false;  // the driver checks them after every operation
  return o;
}


// Keys of the examples (one table); their slots are asserted distinct.
const Key kA = MakeKey(1, 1);
const Key kB = MakeKey(1, 2);
const Key kC = MakeKey(1, 3);
const Key kD = MakeKey(1, 4);
const Key kX = MakeKey(1, 24);
const Key kY = MakeKey(1, 25);

// ---------------------------------------------------------------------------
// 6.1 Calvin 2PL

std::vector<TestTxn> Example61() {
  return {{1, {kX}, {}},       // T1 R{x}
          {2, {}, {kX}},       // T2 W{x}
          {3, {kX}, {kY}},     // T3 R{x} W{y}
          {4, {kX}, {}},       // T4 R{x}
          {5, {}, {kY}},       // T5 W{y}
          {6, {kX}, {kX}}};    // T6 R{x} W{x}: one X request
}

TEST(Example61Det2pl, DispatchSetsPerStep) {
  auto lm = Make("det2pl", ExampleOptions());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), Example61());
  // admit T1..T6: x=[S1 X2 S3 S4 X6], y=[X3 X5].
  EXPECT_EQ(d.AdmitAll(), (Ids{1}));
  EXPECT_EQ(lm->stats().admitted, 6u);
  EXPECT_EQ(lm->stats().blocked, 5u);  // WaitCount {2,3,4,5,6: 1 each}
  // done T1: x=[X2 S3 S4 X6].
  EXPECT_EQ(d.Done(1), (Ids{2}));
  // done T2: T3 and T4 share x; T3's y lock was granted at admission, yet it
  // was not dispatched before T2 finished.
  EXPECT_EQ(Sorted(d.Done(2)), (Ids{3, 4}));
  EXPECT_EQ(lm->stats().blocked, 2u);  // WaitCount {5:1, 6:1}
  // done T4: T3 still holds S on x, so X6 is not granted.
  EXPECT_EQ(d.Done(4), (Ids{}));
  EXPECT_EQ(lm->stats().blocked, 2u);
  // done T3: y then x (N4: T3's X on y is released first): T5, then T6.
  EXPECT_EQ(d.Done(3), (Ids{5, 6}));
  EXPECT_EQ(d.Done(5), (Ids{}));
  EXPECT_EQ(d.Done(6), (Ids{}));
  ExpectCleanEnd(d, *lm);
}

// 6.1 negative test, as far as the interface allows: Lock() normalises, so
// T6's R{x} + W{x} (x listed more than once) is one X request and T6 never
// waits for itself.
TEST(Example61Det2pl, ReadModifyWriteTxnIsOneRequestAndNeverWaitsForItself) {
  auto lm = Make("det2pl", ExampleOptions());
  ASSERT_NE(lm, nullptr);
  const std::vector<Key> reads = {kX, kX}, writes = {kX};
  LockTxn t6;
  t6.id = 6;
  t6.reads = reads;
  t6.writes = writes;
  ReadyList ready;
  EXPECT_TRUE(lm->Lock(&t6, &ready));
  EXPECT_EQ(ready, (ReadyList{&t6}));
  EXPECT_EQ(t6.lm.num_requests, 1u);  // white-box: the normalised request list
  EXPECT_TRUE(lm->CheckInvariants().ok());
  ready.clear();
  lm->Release(&t6, &ready);
  EXPECT_TRUE(ready.empty());
  EXPECT_TRUE(lm->IsQuiescent());
}

// ---------------------------------------------------------------------------
// 6.2 VLL without SCA and 6.3 VLL + SCA: same input, threshold 2,
// completion script 2, 1, 3, 4, 5, 6.

std::vector<TestTxn> Example62() {
  return {{1, {}, {kA}},      // T1 W{a}
          {2, {}, {kB}},      // T2 W{b}
          {3, {kB}, {kC}},    // T3 R{b} W{c}
          {4, {}, {kA}},      // T4 W{a}
          {5, {}, {kD}},      // T5 W{d}
          {6, {kC}, {}}};     // T6 R{c}
}

LockManagerOptions VllExampleOptions() {
  LockManagerOptions o = ExampleOptions();
  o.vll_blocked_threshold = 2;
  return o;
}

TEST(Example62Vll, DispatchSetsPerStep) {
  ASSERT_TRUE(DistinctBits({kA, kB, kC, kD}, kTableSize, kTableSize));
  auto lm = Make("vll", VllExampleOptions());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), Example62());
  EXPECT_EQ(d.AdmitOne(), (Ids{1}));  // admit T1: a:X1
  EXPECT_EQ(d.AdmitOne(), (Ids{2}));  // admit T2: b:X1
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit T3: blocked on b
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit T4: blocked on a (Cx[a] == 2)
  EXPECT_EQ(lm->stats().blocked, 2u);
  // Admission closes: T5, conflict-free, is held back.
  EXPECT_FALSE(lm->CanAdmit());
  EXPECT_EQ(d.AdmitAll(), (Ids{}));
  // done T2: T3 is now runnable, but plain VLL only looks at the head (T1).
  EXPECT_EQ(d.Done(2), (Ids{}));
  EXPECT_FALSE(lm->CanAdmit());
  EXPECT_EQ(lm->stats().admitted, 4u);  // T5 still not admitted
  // done T1: head rule on T3.
  EXPECT_EQ(d.Done(1), (Ids{3}));
  EXPECT_EQ(lm->stats().head_rule_grants, 1u);
  EXPECT_EQ(lm->stats().blocked, 1u);
  EXPECT_TRUE(lm->CanAdmit());
  // admit T5 (free), T6 (blocked on c).
  EXPECT_EQ(d.AdmitAll(), (Ids{5}));
  EXPECT_EQ(lm->stats().blocked, 2u);
  // done T3: head rule on T4.
  EXPECT_EQ(d.Done(3), (Ids{4}));
  // done T4: T6 runnable, not at the head (T5 is).
  EXPECT_EQ(d.Done(4), (Ids{}));
  // done T5: head rule on T6.
  EXPECT_EQ(d.Done(5), (Ids{6}));
  EXPECT_EQ(d.Done(6), (Ids{}));
  EXPECT_EQ(d.dispatch_order(), (Ids{1, 2, 3, 5, 4, 6}));
  EXPECT_EQ(lm->stats().head_rule_grants, 3u);
  EXPECT_EQ(lm->stats().sca_runs, 0u);
  ExpectCleanEnd(d, *lm);
}

// 6.3(a), threshold-only trigger; the one-pass and first-hit variants give
// the same dispatches. 6.3(b) is the `done T3` step: T6 is runnable there
// but waits until it reaches the head.
void RunExample63a(bool first_hit) {
  ASSERT_TRUE(DistinctBits({kA, kB, kC, kD}, kTableSize, kTableSize));
  LockManagerOptions o = VllExampleOptions();
  o.sca_first_hit = first_hit;
  auto lm = Make("vll_sca", o);
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), Example62());
  // After admit T4 (blocked = 2) SCA runs: T3 fails on b, T4 on a.
  EXPECT_EQ(d.AdmitAll(), (Ids{1, 2}));
  EXPECT_EQ(lm->stats().sca_runs, 1u);
  EXPECT_EQ(lm->stats().sca_grants, 0u);
  EXPECT_EQ(lm->stats().blocked, 2u);
  // done T2: SCA finds T3 clear (S b, X c); T4 still fails on a.
  EXPECT_EQ(d.Done(2), (Ids{3}));
  EXPECT_EQ(lm->stats().sca_grants, 1u);
  EXPECT_EQ(lm->stats().head_rule_grants, 0u);
  // admit T5 (free), admit T6 (blocked on c).
  EXPECT_EQ(d.AdmitAll(), (Ids{5}));
  if (!first_hit) {
    EXPECT_EQ(lm->stats().sca_runs, 2u);  // no completion since the last run
  }
  // done T1 (head T3 is free): SCA unblocks T4; T6 fails on c.
  EXPECT_EQ(d.Done(1), (Ids{4}));
  EXPECT_EQ(lm->stats().sca_grants, 2u);
  // done T3: blocked = 1 < threshold, SCA does not run (6.3b).
  const uint64_t runs = lm->stats().sca_runs;
  EXPECT_EQ(d.Done(3), (Ids{}));
  EXPECT_EQ(lm->stats().sca_runs, runs);
  EXPECT_EQ(d.Done(4), (Ids{}));
  // done T5: head rule on T6.
  EXPECT_EQ(d.Done(5), (Ids{6}));
  EXPECT_EQ(d.Done(6), (Ids{}));
  EXPECT_EQ(d.dispatch_order(), (Ids{1, 2, 3, 5, 4, 6}));
  EXPECT_EQ(lm->stats().sca_grants, 2u);
  EXPECT_EQ(lm->stats().head_rule_grants, 1u);
  ExpectCleanEnd(d, *lm);
}

TEST(Example63VllSca, ThresholdTriggerOnePass) { RunExample63a(/*first_hit=*/false); }

TEST(Example63VllSca, ThresholdTriggerFirstHit) { RunExample63a(/*first_hit=*/true); }

// 6.3(c): with the idle trigger, SCA also runs at `done T3` (input exhausted,
// T6 blocked) and T6 passes, right after T3.
TEST(Example63VllSca, IdleTriggerDispatchesT6AtDoneT3) {
  ASSERT_TRUE(DistinctBits({kA, kB, kC, kD}, kTableSize, kTableSize));
  LockManagerOptions o = VllExampleOptions();
  o.sca_when_idle = true;
  auto lm = Make("vll_sca", o);
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), Example62());
  EXPECT_EQ(d.AdmitAll(), (Ids{1, 2}));
  EXPECT_EQ(d.Done(2), (Ids{3}));
  EXPECT_EQ(d.AdmitAll(), (Ids{5}));
  EXPECT_EQ(d.Done(1), (Ids{4}));
  // done T3: SCA marks T4 (X a), T5 (X d); T6 (S c) passes.
  EXPECT_EQ(d.Done(3), (Ids{6}));
  EXPECT_EQ(lm->stats().sca_grants, 3u);
  EXPECT_EQ(d.Done(4), (Ids{}));
  EXPECT_EQ(d.Done(5), (Ids{}));
  EXPECT_EQ(d.Done(6), (Ids{}));
  EXPECT_EQ(lm->stats().head_rule_grants, 0u);
  ExpectCleanEnd(d, *lm);
}

// S1: T2 fails SCA on a and must still be marked, so T3 fails on b; an SCA
// that skipped marking T2 would run T3 before T2 (G1).
TEST(Example63VllSca, S1FailedBlockedTxnsAreMarked) {
  ASSERT_TRUE(DistinctBits({kA, kB}, kTableSize, kTableSize));
  for (bool first_hit : {false, true}) {
    SCOPED_TRACE(first_hit ? "first hit" : "one pass");
    LockManagerOptions o = VllExampleOptions();
    o.sca_first_hit = first_hit;
    auto lm = Make("vll_sca", o);
    ASSERT_NE(lm, nullptr);
    LockTestDriver d(lm.get(), {{1, {}, {kA}},         // T1 W{a}, running
                                {2, {}, {kA, kB}},     // T2 W{a} W{b}, blocked
                                {3, {}, {kB}}});       // T3 W{b}, blocked
    // Threshold 2 reached, no completion yet: SCA runs and unblocks nothing.
    EXPECT_EQ(d.AdmitAll(), (Ids{1}));
    EXPECT_FALSE(lm->CanAdmit());
    EXPECT_EQ(lm->stats().sca_runs, 1u);
    EXPECT_EQ(lm->stats().sca_grants, 0u);
    EXPECT_EQ(lm->stats().blocked, 2u);
    EXPECT_EQ(d.Poll(), (Ids{}));
    EXPECT_EQ(lm->stats().blocked, 2u);
    // Then both run in order, through the head rule.
    EXPECT_EQ(d.Done(1), (Ids{2}));
    EXPECT_EQ(d.Done(2), (Ids{3}));
    EXPECT_EQ(d.Done(3), (Ids{}));
    EXPECT_EQ(lm->stats().sca_grants, 0u);
    ExpectCleanEnd(d, *lm);
  }
}

// S2: exact counters (slot(b) != slot(c)) but bit(b) == bit(c). With
// check-then-mark, SCA dispatches T2 = R{b} W{c} after `done T1`, while the
// head T0 still runs; marking as it goes would fail T2 on its own c bit.
TEST(Example63VllSca, S2CheckFirstThenMark) {
  constexpr uint32_t kBits = 64;
  const Key b = MakeKey(1, 100);
  Key c = MakeKey(1, 101);
  while (SlotOf(c, kTableSize) == SlotOf(b, kTableSize) ||
         BitOf(c, kTableSize, kBits) != BitOf(b, kTableSize, kBits))
    ++c;
  Key z = c + 1;
  while (BitOf(z, kTableSize, kBits) == BitOf(b, kTableSize, kBits)) ++z;
  ASSERT_NE(SlotOf(b, kTableSize), SlotOf(c, kTableSize));
  ASSERT_EQ(BitOf(b, kTableSize, kBits), BitOf(c, kTableSize, kBits));
  ASSERT_TRUE(DistinctBits({z, b}, kTableSize, kBits));
  for (bool first_hit : {false, true}) {
    SCOPED_TRACE(first_hit ? "first hit" : "one pass");
    LockManagerOptions o = ExampleOptions();
    o.sca_bits = kBits;
    o.vll_blocked_threshold = 1;
    o.sca_first_hit = first_hit;
    auto lm = Make("vll_sca", o);
    ASSERT_NE(lm, nullptr);
    LockTestDriver d(lm.get(), {{0, {}, {z}},       // T0 W{z}, long-running head
                                {1, {}, {b}},       // T1 W{b}
                                {2, {b}, {c}}});    // T2 R{b} W{c}, blocked on b
    EXPECT_EQ(d.AdmitAll(), (Ids{0, 1}));
    EXPECT_EQ(lm->stats().blocked, 1u);
    // done T1: head T0 is free; SCA checks T2's bits before marking them.
    EXPECT_EQ(d.Done(1), (Ids{2}));
    EXPECT_EQ(lm->stats().sca_grants, 1u);
    EXPECT_EQ(lm->stats().head_rule_grants, 0u);
    EXPECT_EQ(d.Done(2), (Ids{}));
    EXPECT_EQ(d.Done(0), (Ids{}));
    ExpectCleanEnd(d, *lm);
  }
}

// ---------------------------------------------------------------------------
// 6.4 DCLP: A..F = ids 1..6; x and y on different hash locks; completion
// script A, C, B, D, E, F; then G = R{x} and H = W{x} after F released.
// dclp_frag (variant F) gives the same ready sequence.

std::vector<TestTxn> Example64() {
  return {{1, {}, {kX}},       // A W{x}
          {2, {kX}, {}},       // B R{x}
          {3, {kX}, {kY}},     // C R{x} W{y}
          {4, {}, {kX}},       // D W{x}
          {5, {kX}, {}},       // E R{x}
          {6, {kY}, {kX}},     // F R{y} W{x}
          {7, {kX}, {}},       // G R{x}
          {8, {}, {kX}}};      // H W{x}
}

class Example64Dclp : public ::testing::TestWithParam<std::string> {};

TEST_P(Example64Dclp, DispatchSetsPerStep) {
  ASSERT_TRUE(DistinctBits({kX, kY}, kTableSize, kTableSize));
  auto lm = Make(GetParam(), ExampleOptions());
  ASSERT_NE(lm, nullptr);
  LockTestDriver d(lm.get(), Example64());
  EXPECT_EQ(d.AdmitOne(), (Ids{1}));  // admit A: x (A, -, 0)
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit B: x (A, [], 1)
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit C: x (A, VT, 2), y (C, -, 0)
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit D: waits for the read run {B, C}
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit E: waits for D
  EXPECT_EQ(d.AdmitOne(), (Ids{}));   // admit F: waits for E (x) and C (y)
  EXPECT_EQ(lm->stats().blocked, 5u);
  EXPECT_EQ(lm->stats().blocked_at_admission, 5u);
  // done A: B and C (A.succ = [B, C]); D waits on the reads, not on A.
  EXPECT_EQ(Sorted(d.Done(1)), (Ids{2, 3}));
  EXPECT_EQ(lm->stats().blocked, 3u);
  // done C (before B, C10): D has one read outstanding; F loses its y unit.
  EXPECT_EQ(d.Done(3), (Ids{}));
  EXPECT_EQ(lm->stats().blocked, 3u);
  // done B: the last read of the run; D ready.
  EXPECT_EQ(d.Done(2), (Ids{4}));
  // done D: E (via D.succ).
  EXPECT_EQ(d.Done(4), (Ids{5}));
  // done E: the VT scan prunes the finished D, then F reaches 0.
  const uint64_t scans = lm->stats().vt_scan_steps;
  EXPECT_EQ(d.Done(5), (Ids{6}));
  if (GetParam() == "dclp") {
    EXPECT_EQ(lm->stats().vt_scan_steps - scans, 2u);  // looked at D (pruned), then F
  }
  // done F: both locks idle.
  EXPECT_EQ(d.Done(6), (Ids{}));
  EXPECT_TRUE(lm->IsQuiescent());
  // admit G = R{x} after the last writer released: granted at once.
  EXPECT_EQ(d.AdmitOne(), (Ids{7}));
  // admit H = W{x}: waits for G's read.
  EXPECT_EQ(d.AdmitOne(), (Ids{}));
  EXPECT_EQ(d.Done(7), (Ids{8}));
  EXPECT_EQ(d.Done(8), (Ids{}));
  EXPECT_EQ(d.dispatch_order(), (Ids{1, 2, 3, 4, 5, 6, 7, 8}));
  ExpectCleanEnd(d, *lm);
}

INSTANTIATE_TEST_SUITE_P(Dclp, Example64Dclp, ::testing::Values("dclp", "dclp_frag"),
                         [](const auto& info) { return info.param; });

// ---------------------------------------------------------------------------
// 6.6 Multi-partition (WAITING), the lock-manager side. P1 holds a, P2 holds
// c. T1 reads c (P2) and writes a (P1): active at P1, passive at P2. T2 W{a}
// at P1 only; T3 W{c} at P2 only. Threshold 1, so that at P1 VLL+SCA runs
// SCA over the WAITING head T1 and must fail T2 on a.

class Example66MultiPartition : public ::testing::TestWithParam<std::string> {
 protected:
  static LockManagerOptions Options() {
    LockManagerOptions o = ExampleOptions();
    o.vll_blocked_threshold = 1;
    return o;
  }
  static std::vector<TestTxn> AtP1() { return {{1, {}, {kA}}, {2, {}, {kA}}}; }
  static std::vector<TestTxn> AtP2() { return {{1, {kC}, {}}, {3, {}, {kC}}}; }
};

TEST_P(Example66MultiPartition, PassiveParticipantReleasesEarly) {
  auto p1 = Make(GetParam(), Options());
  auto p2 = Make(GetParam(), Options());
  ASSERT_NE(p1, nullptr);
  ASSERT_NE(p2, nullptr);
  LockTestDriver d1(p1.get(), AtP1());
  LockTestDriver d2(p2.get(), AtP2());
  // Admission at both partitions. P1: T1 FREE, goes WAITING for c; T2
  // blocked on a. P2: T1 holds S(c); T3 blocked on c.
  EXPECT_EQ(d1.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d2.AdmitAll(), (Ids{1}));
  // P2: T1 sends c and, not a writer there, is done: T3 dispatched.
  EXPECT_EQ(d2.Done(1), (Ids{3}));
  // T3 finishes at P2 while T1 still waits at P1.
  EXPECT_EQ(d2.Done(3), (Ids{}));
  ExpectCleanEnd(d2, *p2);
  // P1: T2 is not dispatched before T1's remote read arrives, however often
  // the lock thread polls (VLL: the head T1 is not BLOCKED; SCA fails T2).
  EXPECT_EQ(d1.Poll(), (Ids{}));
  EXPECT_EQ(d1.Poll(), (Ids{}));
  EXPECT_EQ(p1->stats().blocked, 1u);
  if (GetParam() == "vll_sca") {
    EXPECT_GE(p1->stats().sca_runs, 1u);
    EXPECT_EQ(p1->stats().sca_grants, 0u);
  }
  // c arrives at P1: T1 executes, is done; T2 dispatched.
  EXPECT_EQ(d1.Done(1), (Ids{2}));
  EXPECT_EQ(d1.Done(2), (Ids{}));
  ExpectCleanEnd(d1, *p1);
}

// P2 finishes its part of T1 before P1 has even admitted T1 (P1's lock
// thread is delayed); the lock managers are independent, so P1's trace is
// unchanged.
TEST_P(Example66MultiPartition, PassiveParticipantDoneBeforeActiveAdmits) {
  auto p1 = Make(GetParam(), Options());
  auto p2 = Make(GetParam(), Options());
  ASSERT_NE(p1, nullptr);
  ASSERT_NE(p2, nullptr);
  LockTestDriver d1(p1.get(), AtP1());
  LockTestDriver d2(p2.get(), AtP2());
  EXPECT_EQ(d2.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d2.Done(1), (Ids{3}));
  EXPECT_EQ(d1.AdmitAll(), (Ids{1}));
  EXPECT_EQ(d1.Poll(), (Ids{}));
  EXPECT_EQ(d1.Done(1), (Ids{2}));
  EXPECT_EQ(d2.Done(3), (Ids{}));
  EXPECT_EQ(d1.Done(2), (Ids{}));
  ExpectCleanEnd(d1, *p1);
  ExpectCleanEnd(d2, *p2);
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, Example66MultiPartition,
                         ::testing::ValuesIn(LockManagerNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace detdb
