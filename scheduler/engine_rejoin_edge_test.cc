// Rejoins at the edges (review findings 7 and 8), engines joined by an
// InProcessPeerHub as in engine_rejoin_test.cc (scheduler/rejoin_test_world.h):
//
// - The peers hold more of the restarted node's batches than one message of
//   the link may carry: their STATE answers come in pages, and the rejoin
//   equals the serial replay.
// - The refusals: a peer asked for its batches from below the durable
//   epoch the node reported; a peer lacking a batch of the node from
//   before its checkpoint (a stand-in node answers so).
// - A node killed again during its own rejoin, in its catch-up: its second
//   rejoin equals the serial replay.
// - A cluster clock behind the node's own log is refused (review 2
//   finding 2 c).
// - Reads refused over the held-reads budget after a peer answered `done`
//   are asked for again (review 2 finding 1).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"
#include "scheduler/peer_link.h"
#include "scheduler/rejoin_test_world.h"

namespace detdb {
namespace {
using namespace rejoin_testing;  // NOLINT

// A txn of node n's client touching every partition, with `args` bytes of
// arguments (the rmw procedure ignores them).
pb::Txn WideTxn(uint32_t n, uint64_t seq, size_t args) {
  pb::Txn t;
  t.set_type(kRmwTxnType);
  t.set_client_id(100 + n);  // the Feeder's client
  t.set_client_seq(seq);
  t.set_args(std::string(args, static_cast<char>('a' + seq % 26)));
  for (PartitionId p = 0; p < kNodes; ++p) {
    const Key k = MakeKey(kCounterTable, kNodes * (seq % kRecordsPerPartition) + p);
    t.add_read_set(k);
    t.add_write_set(k);
  }
  return t;
}

// Waits until every peer of `dead` keeps at least `bytes` of batches.
void WaitRetained(World* w, uint32_t dead, uint64_t bytes) {
  for (uint32_t n = 0; n < kNodes; ++n) {
    if (n == dead) continue;
    for (int i = 0; i < 60000 && w->engines[n]->stats().retained_batch_bytes < bytes; ++i)
      std::this_thread::sleep_for(milliseconds(1));
    ASSERT_GE(w->engines[n]->stats().retained_batch_bytes, bytes) << "node " << n;
  }
}

// Node `dead` dies (its disk loses what it did not sync, the hub drops
// everything to and from it) and a new engine for it is made, recovered and
// attached (Rejoin is the caller's).
void KillAndRemake(World* w, uint32_t dead) {
  w->fs[dead]->SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
  w->hub.Detach(dead);
  w->frozen = -1;
  (void)w->engines[dead]->Stop(milliseconds(0));
  w->engines[dead].reset();
  w->fs[dead]->Restart();
  w->engines[dead] = w->Make(dead);
  ASSERT_TRUE(w->engines[dead]->RecoverLog().ok());
  w->hub.Attach(dead);
}

// Every node's digests at a boundary ahead, every engine stopped, and the
// check against the serial replay (every txn answered).
void ExpectAllEqualTheSerialReplay(World* w) {
  uint64_t boundary = 0;
  for (auto& e : w->engines) boundary = std::max(boundary, e->open_epoch());
  boundary += 100;
  const std::map<PartitionId, uint64_t> digests = SnapshotAll(w, boundary);
  ASSERT_EQ(digests.size(), kNodes);
  for (auto& e : w->engines) ASSERT_TRUE(e->Stop(seconds(30)).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectTheSerialReplay(w, boundary, digests, [](const pb::Txn&) { return false; }));
}

// Review finding 7: the peers keep the dead node's batches of 160 txns of
// 4 KiB (one or a few per epoch) beyond its durable epoch, 640 KiB in all,
// and the link carries messages of at most 128 KiB (as ZeroMQ's
// max_frame_bytes, 256 MiB, against bulk loads of up to 64 MiB a batch).
// Before, each peer answered STATE in one message, which the link dropped:
// the node asked again every 5 s and failed at its progress deadline. Now
// the answers come in pages of about rejoin_reply_bytes, nothing is
// dropped, the node sequences the 160 txns again, and everything equals the
// serial replay.
TEST(EngineRejoin, AStateAnswerLargerThanAMessageComesInPages) {
  World w(false);
  w.hub.set_max_message_bytes(128 << 10);
  w.reply_bytes = 48 << 10;
  w.rejoin_timeout = seconds(10);
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  const uint32_t dead = 0;
  constexpr int kTxns = 160;
  constexpr size_t kArgs = 4 << 10;
  w.frozen = static_cast<int>(dead);  // its log syncs nothing more
  // One at a time, each once the peers hold the last (one or two per
  // epoch, never the 32 that would fill a message, however slow a thread).
  for (int i = 0; i < kTxns; ++i) {
    std::vector<pb::Txn> one{WideTxn(dead, i, kArgs)};
    ASSERT_TRUE(w.engines[dead]->SubmitMany(&one).ok());
    ASSERT_NO_FATAL_FAILURE(WaitRetained(&w, dead, (i + 1) * kArgs));
  }
  // The last txn is in the open epoch or the next: both sent (the
  // sequencer hands an epoch to the peers before it opens the next).
  const uint64_t last = w.engines[dead]->open_epoch();
  for (int i = 0; i < 60000 && w.engines[dead]->open_epoch() <= last + 1; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_GT(w.engines[dead]->open_epoch(), last + 1);
  EXPECT_EQ(w.hub.oversized(), 0u);
  ASSERT_NO_FATAL_FAILURE(KillAndRemake(&w, dead));
  {
    absl::Status s = w.engines[dead]->Rejoin(w.engines[1]->clock());
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(w.hub.oversized(), 0u) << "no message exceeded the limit";
  EXPECT_EQ(Answered(w.answers[dead].get()), kTxns) << "the txns sequenced again are answered";
  ASSERT_NO_FATAL_FAILURE(ExpectAllEqualTheSerialReplay(&w));
}

// Stands in for a node's engine on the hub (review finding 8): takes what
// reaches it, keeps the batches and rejoin replies, and answers a STATE
// request as a peer that received none of the requester's batches (next
// expected: epoch 1); other requests it never answers.
class FakeNode final : public PeerHandler, public RemoteReadsReceiver {
 public:
  // Takes node n's place on hub (ReplaceWithFake); detaches it when gone.
  FakeNode(InProcessPeerHub* hub, uint32_t n) : hub_(hub), n_(n), link_(hub->link(n)) {}
  ~FakeNode() override { hub_->Detach(n_); }
  void OnPeerBatch(std::shared_ptr<pb::Batch> batch) override {
    std::lock_guard<std::mutex> l(mu_);
    batches_.emplace_back(std::this_thread::get_id(), std::move(batch));
  }
  void OnPeerResult(uint32_t, const pb::TxnResult&) override {}
  void OnPeerDurable(uint32_t, uint64_t) override {}
  void OnPeerCheckpoint(uint32_t, uint64_t) override {}
  void OnRejoinRequest(uint32_t node, const pb::RejoinRequest& request) override {
    if (request.kind() != pb::RejoinRequest::STATE) return;
    pb::RejoinReply reply;
    reply.set_id(request.id());
    reply.set_kind(request.kind());
    reply.set_next_expected(1);
    link_->SendRejoinReply(node, reply);
  }
  void OnRejoinReply(uint32_t, const pb::RejoinReply& reply) override {
    std::lock_guard<std::mutex> l(mu_);
    replies_.push_back(reply);
  }
  void OnRemoteReads(pb::RemoteReads) override {}

  // The batches that reached it (sent on thread `on`, if given: the hub
  // delivers on the sender's thread) since the last call.
  std::vector<std::shared_ptr<pb::Batch>> TakeBatches(std::optional<std::thread::id> on = std::nullopt) {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::shared_ptr<pb::Batch>> out;
    for (auto& [thread, b] : batches_)
      if (!on.has_value() || thread == *on) out.push_back(std::move(b));
    batches_.clear();
    return out;
  }
  std::vector<pb::RejoinReply> TakeReplies() {
    std::lock_guard<std::mutex> l(mu_);
    return std::exchange(replies_, {});
  }

 private:
  InProcessPeerHub* const hub_;
  const uint32_t n_;
  PeerLink* const link_;
  std::mutex mu_;
  std::vector<std::pair<std::thread::id, std::shared_ptr<pb::Batch>>> batches_;  // guarded by mu_
  std::vector<pb::RejoinReply> replies_;                                         // guarded by mu_
};

// Node n's engine dies (nothing lost from its disk; a stalled disk
// resumes, unheard, so that it can stop) and `fake` takes its place on the
// hub, its partitions' remote reads too.
void ReplaceWithFake(World* w, uint32_t n, FakeNode* fake) {
  w->hub.Detach(n);
  w->frozen = -1;
  (void)w->engines[n]->Stop(milliseconds(0));
  w->engines[n].reset();
  w->hub.link(n)->SetHandler(fake);
  w->hub.link(n)->RegisterReceiver(n, fake);  // ModPartitioner: node n serves partition n
  w->hub.Attach(n);
}

// Every node's client (one Feeder each, its seqs going on across calls),
// fed until each node answered `more` txns more.
using Feeders = std::vector<std::unique_ptr<Feeder>>;
Feeders MakeFeeders(World* w, uint64_t seed) {
  Feeders out;
  for (uint32_t n = 0; n < kNodes; ++n) out.push_back(std::make_unique<Feeder>(w, n, seed + n));
  return out;
}
void Feed(World* w, Feeders* feeders, int more) {
  std::vector<int> target(kNodes);
  for (uint32_t n = 0; n < kNodes; ++n) target[n] = Answered(w->answers[n].get()) + more;
  for (auto& f : *feeders) f->Start();
  for (uint32_t n = 0; n < kNodes; ++n)
    for (int i = 0; i < 60000 && Answered(w->answers[n].get()) < target[n]; ++i)
      std::this_thread::sleep_for(milliseconds(1));
  for (auto& f : *feeders) f->Stop();
  for (uint32_t n = 0; n < kNodes; ++n) ASSERT_GE(Answered(w->answers[n].get()), target[n]) << "node " << n;
}

// Review finding 8 (b): a peer resends its batches for a restarted node
// only after the durable epoch that node reported (it let go of the
// earlier ones: that node's log holds them); asked from before it, it
// refuses, naming both epochs; from it, it resends every batch after it.
TEST(EngineRejoin, BatchesAreRefusedBelowTheDurableEpochTheNodeReported) {
  World w(false);
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  Feeders feeders = MakeFeeders(&w, 31);
  ASSERT_NO_FATAL_FAILURE(Feed(&w, &feeders, 100));
  // Node 0's log stalls: its durable epoch, as the peers heard it, stays.
  const uint32_t dead = 0, peer = 1;
  w.frozen = static_cast<int>(dead);
  std::this_thread::sleep_for(milliseconds(100));
  const uint64_t durable = w.engines[dead]->stats().durable_epoch;
  ASSERT_GT(durable, 1u);
  FakeNode fake(&w.hub, dead);
  ASSERT_NO_FATAL_FAILURE(ReplaceWithFake(&w, dead, &fake));
  const std::thread::id here = std::this_thread::get_id();  // resent batches come on it
  auto ask = [&](uint64_t after) {
    pb::RejoinRequest r;
    r.set_id(after + 1);
    r.set_kind(pb::RejoinRequest::BATCHES);
    r.set_after_epoch(after);
    w.hub.link(dead)->SendRejoinRequest(peer, r);  // answered on this thread
    std::vector<pb::RejoinReply> replies = fake.TakeReplies();
    EXPECT_EQ(replies.size(), 1u);
    return replies.empty() ? pb::RejoinReply() : replies.front();
  };
  const pb::RejoinReply refused = ask(durable - 1);
  EXPECT_NE(refused.error().find(absl::StrCat("node 1 keeps its batches for node 0 after epoch ", durable, " only")),
            std::string::npos)
      << refused.error();
  EXPECT_NE(refused.error().find(absl::StrCat("asks from epoch ", durable)), std::string::npos) << refused.error();
  EXPECT_TRUE(fake.TakeBatches(here).empty()) << "nothing resent";
  const pb::RejoinReply served = ask(durable);
  EXPECT_TRUE(served.error().empty()) << served.error();
  std::vector<std::shared_ptr<pb::Batch>> resent = fake.TakeBatches(here);
  ASSERT_FALSE(resent.empty());
  for (size_t i = 0; i < resent.size(); ++i) {
    EXPECT_EQ(resent[i]->sequencer_id(), peer);
    EXPECT_EQ(resent[i]->epoch(), durable + 1 + i) << "every batch after the durable epoch, in order";
  }
}

// Review finding 8 (c): a peer lacks a batch of the restarted node from
// before the checkpoint the node restores (here a stand-in answering that
// it received none: no honest peer does, a checkpoint is published only
// once its epoch is durable everywhere). The node cannot rebuild that
// batch (it replays only after its checkpoint): refused, naming the peer
// and the epoch, rather than sending a peer an epoch of another history.
TEST(EngineRejoin, APeerLackingABatchFromBeforeTheCheckpointIsRefused) {
  World w(true);
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  Feeders feeders = MakeFeeders(&w, 41);
  ASSERT_NO_FATAL_FAILURE(Feed(&w, &feeders, 100));
  const uint64_t checkpoint = CheckpointAll(&w);
  ASSERT_GT(checkpoint, 0u);
  ASSERT_NO_FATAL_FAILURE(Feed(&w, &feeders, 50));
  const uint32_t dead = 0, lacking = 2;
  w.hub.Detach(dead);
  (void)w.engines[dead]->Stop(milliseconds(0));
  w.engines[dead].reset();
  FakeNode fake(&w.hub, lacking);
  ASSERT_NO_FATAL_FAILURE(ReplaceWithFake(&w, lacking, &fake));
  w.engines[dead] = w.Make(dead);
  ASSERT_TRUE(w.engines[dead]->RecoverLog().ok());
  w.hub.Attach(dead);
  const absl::Status s = w.engines[dead]->Rejoin(w.engines[1]->clock());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("node 2 lacks our batch of epoch 1, which is before the checkpoint we restarted from"),
            std::string::npos)
      << s;
  EXPECT_EQ(w.engines[dead]->stats().restored_checkpoint, checkpoint);
  for (const auto& b : fake.TakeBatches())
    EXPECT_NE(b->sequencer_id(), dead) << "no batch of node 0 was sent to it (epoch " << b->epoch() << ")";
}

// Review finding 8 (d): the restarted node dies again in the middle of its
// rejoin, while it pumps the reads and results its replay needs (a peer's
// disk stalls, so that peer answers only up to its durable epoch and the
// rejoin cannot finish), after it sequenced epochs again and resumed its
// sequencer. Its second rejoin rebuilds the same batches from what its
// peers received (the union only grows), and everything equals the serial
// replay.
TEST(EngineRejoin, ANodeKilledDuringItsRejoinRejoinsAgain) {
  World w(false);
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  const uint32_t dead = 0, stalled = 1, other = 2;
  std::vector<std::unique_ptr<Feeder>> feeders;
  for (uint32_t n = 0; n < kNodes; ++n) {
    feeders.push_back(std::make_unique<Feeder>(&w, n, 900 + n));
    feeders.back()->Start();
  }
  for (int i = 0; i < 60000 && Answered(w.answers[dead].get()) < 100; ++i) std::this_thread::sleep_for(milliseconds(1));
  // Node 1's disk stalls: the reads it sends node 0 from now on wait for
  // its fsync, and node 0 logs epochs whose txns need them.
  w.frozen = static_cast<int>(stalled);
  const uint64_t stalled_at = w.engines[stalled]->stats().durable_epoch;
  for (int i = 0; i < 60000 && w.engines[dead]->stats().durable_epoch < stalled_at + 30; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_GE(w.engines[dead]->stats().durable_epoch, stalled_at + 30);

  // Node 0 dies, and rejoins while node 1's disk still stalls.
  w.hub.Detach(dead);
  w.fs[dead]->SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
  feeders[dead]->Stop();
  (void)w.engines[dead]->Stop(milliseconds(0));
  w.engines[dead].reset();
  w.fs[dead]->Restart();
  w.engines[dead] = w.Make(dead);
  ASSERT_TRUE(w.engines[dead]->RecoverLog().ok());
  w.hub.Attach(dead);
  const uint64_t asked_before = w.engines[other]->stats().rejoin_requests;
  absl::Status first;
  std::thread rejoin([&] { first = w.engines[dead]->Rejoin(w.engines[other]->clock()); });
  // STATE, BATCHES, then MESSAGES: the pump runs.
  for (int i = 0; i < 60000 && w.engines[other]->stats().rejoin_requests < asked_before + 3; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_GE(w.engines[other]->stats().rejoin_requests, asked_before + 3);
  std::this_thread::sleep_for(milliseconds(50));
  // It dies in the middle: nothing reaches it or comes from it, its process
  // ends (the rejoin returns at once), and its unsynced log tail is lost.
  // The disk crashes after the rejoin returned: crashed first, a log write
  // of the rejoin in between would fail it with that error, not Cancelled.
  w.hub.Detach(dead);
  w.engines[dead]->CancelStart();
  rejoin.join();
  w.fs[dead]->SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
  EXPECT_EQ(first.code(), absl::StatusCode::kCancelled) << "killed during the rejoin, not after: " << first;
  EXPECT_GT(w.engines[dead]->stats().rejoined_at, 0u) << "it had resumed its sequencer";
  (void)w.engines[dead]->Stop(milliseconds(0));
  w.engines[dead].reset();

  // Node 1's disk recovers; node 0 rejoins again.
  w.frozen = -1;
  w.fs[dead]->Restart();
  w.engines[dead] = w.Make(dead);
  ASSERT_TRUE(w.engines[dead]->RecoverLog().ok());
  w.hub.Attach(dead);
  {
    absl::Status s = w.engines[dead]->Rejoin(w.engines[other]->clock());
    ASSERT_TRUE(s.ok()) << s;
  }
  feeders[dead]->Start();
  std::this_thread::sleep_for(milliseconds(300));
  for (auto& f : feeders) f->Stop();
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  for (uint32_t n = 0; n < kNodes; ++n) {
    if (n == dead) continue;
    while (Answered(w.answers[n].get()) < static_cast<int>(feeders[n]->accepted()) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(2));
    ASSERT_EQ(Answered(w.answers[n].get()), static_cast<int>(feeders[n]->accepted())) << "node " << n;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectAllEqualTheSerialReplay(&w));
}

// Review 2 finding 2 (c): the cluster clock a rejoin is given (from a
// peer's Hello) is behind the node's own log by more than the peer window:
// not the cluster's clock (a bug, a forgery, or a clock stepped back). The
// rejoin is refused, naming both epochs, before anything is asked of the
// peers; the true clock then rejoins.
TEST(EngineRejoin, AClockBehindTheNodesOwnLogIsRefused) {
  World w(false);
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  const uint32_t dead = 0;
  for (int i = 0; i < 60000 && w.engines[dead]->stats().durable_epoch < 100; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_GE(w.engines[dead]->stats().durable_epoch, 100u);
  w.hub.Detach(dead);
  (void)w.engines[dead]->Stop(milliseconds(0));
  w.engines[dead].reset();
  w.peer_window_us = 1;  // 16 epochs
  w.engines[dead] = w.Make(dead);
  auto log_epoch = w.engines[dead]->RecoverLog();
  ASSERT_TRUE(log_epoch.ok()) << log_epoch.status();
  ASSERT_GE(*log_epoch, 100u);
  w.hub.Attach(dead);
  std::vector<uint64_t> asked(kNodes);
  for (uint32_t n = 1; n < kNodes; ++n) asked[n] = w.engines[n]->stats().rejoin_requests;
  const absl::Status s = w.engines[dead]->Rejoin(ClusterClock{NowMicros(), 0});  // at epoch 0
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find(absl::StrCat("is at epoch 0, but our input log holds epoch ", *log_epoch,
                                          ", more than the 16-epoch peer window ahead")),
            std::string::npos)
      << s;
  for (uint32_t n = 1; n < kNodes; ++n)
    EXPECT_EQ(w.engines[n]->stats().rejoin_requests, asked[n]) << "node " << n << " was asked nothing";

  w.hub.Detach(dead);
  w.engines[dead].reset();
  w.peer_window_us = 10'000'000;
  w.engines[dead] = w.Make(dead);
  ASSERT_TRUE(w.engines[dead]->RecoverLog().ok());
  w.hub.Attach(dead);
  {
    absl::Status ok = w.engines[dead]->Rejoin(w.engines[1]->clock());
    ASSERT_TRUE(ok.ok()) << ok;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectAllEqualTheSerialReplay(&w));
}

// ---- Review 2 finding 1: a stall after a peer answered `done`.

std::atomic<bool> g_slow{false};
constexpr uint32_t kSlowTxnType = 7;

// The rmw procedure, 3 ms slower while g_slow is set (the same result).
absl::Status SlowProcedure(TxnContext* ctx, std::string* result) {
  if (g_slow.load()) std::this_thread::sleep_for(milliseconds(3));
  return RmwProcedure(ctx, result);
}

// The peers keep no reads or results for node 0 (its txns touched only its
// own partition), so each answers its first MESSAGES request `done`. Then
// node 1's client sends 20 txns on every partition: the peers execute them
// at once and send node 0 their reads, live, while node 0 still replays
// its log (slow txns); node 0 holds some (a 4 KiB budget) and refuses the
// rest as over budget. Once it takes those txns they wait for reads only
// the peers' retention holds, while its merge runs on through empty
// epochs. Before, the catch-up saw progress in the merge and never asked
// again; and when it did (a merge that stood still), it skipped a `done`
// cursor whose epoch lay at or below the waiting txn's: the rejoin never
// ended, or failed DeadlineExceeded. Now a txn waiting all along is a
// stall, every idle cursor is asked again, the rejoin succeeds and
// everything equals the serial replay.
TEST(EngineRejoin, ReadsRefusedOverBudgetAfterAPeerAnsweredDoneAreAskedForAgain) {
  World w(false);
  ASSERT_TRUE(w.procs.Register(kSlowTxnType, "slow", &SlowProcedure).ok());
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  const uint32_t dead = 0, client = 1;
  constexpr int kLocal = 400, kWide = 20;
  std::vector<pb::Txn> local;
  for (int i = 0; i < kLocal; ++i) {
    pb::Txn t;
    t.set_type(kSlowTxnType);
    t.set_client_id(100 + dead);
    t.set_client_seq(i);
    const Key k = MakeKey(kCounterTable, kNodes * (i % kRecordsPerPartition) + dead);  // node 0's partition
    t.add_read_set(k);
    t.add_write_set(k);
    local.push_back(std::move(t));
  }
  ASSERT_TRUE(w.engines[dead]->SubmitMany(&local).ok());
  for (int i = 0; i < 60000 && Answered(w.answers[dead].get()) < kLocal; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_EQ(Answered(w.answers[dead].get()), kLocal);

  // Node 0 dies (its log holds every answered txn) and comes back with a
  // small held-reads budget.
  w.hub.Detach(dead);
  (void)w.engines[dead]->Stop(milliseconds(0));
  w.engines[dead].reset();
  w.held_reads_bytes = 4 << 10;
  w.max_keys_per_txn = 8;  // a wide txn has 6
  w.rejoin_timeout = seconds(kSanitized ? 40 : 15);
  w.engines[dead] = w.Make(dead);
  ASSERT_TRUE(w.engines[dead]->RecoverLog().ok());
  w.hub.Attach(dead);
  std::vector<uint64_t> asked_before(kNodes);
  for (uint32_t n = 1; n < kNodes; ++n) asked_before[n] = w.engines[n]->stats().rejoin_requests;
  g_slow = true;  // node 0's replay of its 400 txns takes 0.6 s
  absl::Status rejoined;
  std::thread rejoin([&] { rejoined = w.engines[dead]->Rejoin(w.engines[1]->clock()); });
  // STATE, BATCHES, then MESSAGES, answered `done` at once (in one process,
  // on the asking thread).
  for (uint32_t n = 1; n < kNodes; ++n)
    for (int i = 0; i < 60000 && w.engines[n]->stats().rejoin_requests < asked_before[n] + 3; ++i)
      std::this_thread::sleep_for(milliseconds(1));
  std::vector<pb::Txn> wide;
  for (int i = 0; i < kWide; ++i) wide.push_back(WideTxn(client, i, 0));
  EXPECT_TRUE(w.engines[client]->SubmitMany(&wide).ok());  // (the rejoin thread is joined first)
  rejoin.join();
  g_slow = false;
  ASSERT_TRUE(rejoined.ok()) << rejoined;
  uint64_t over_budget = 0;
  for (const SchedulerStats& p : w.engines[dead]->stats().partitions) over_budget += p.remote_reads.over_budget;
  EXPECT_GT(over_budget, 0u) << "the test's premise: live reads were refused over budget";
  for (int i = 0; i < 60000 && Answered(w.answers[client].get()) < kWide; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(Answered(w.answers[client].get()), kWide);
  ASSERT_NO_FATAL_FAILURE(ExpectAllEqualTheSerialReplay(&w));
}

}  // namespace
}  // namespace detdb
