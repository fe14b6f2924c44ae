// Rejoins at the edges (review findings 7 and 8), engines joined by an
// InProcessPeerHub as in engine_rejoin_test.cc (scheduler/rejoin_test_world.h):
//
// - The peers hold more of the restarted node's batches than one message of
//   the link may carry: their STATE answers come in pages, and the rejoin
//   equals the serial replay.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
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

// Review finding 7: the peers keep 40 batches of the dead node (8 KiB of
// txn each, one or a few txns per epoch) beyond its durable epoch, 320 KiB
// in all, and the link carries messages of at most 64 KiB (ZeroMQ's
// max_frame_bytes, 256 MiB, against bulk loads of up to 64 MiB per batch).
// Before, each peer answered STATE in one message, which the link dropped:
// the node asked again every 5 s and failed at its progress deadline. Now
// the answers come in pages of about rejoin_reply_bytes, nothing is
// dropped, the node sequences the 40 txns again, and everything equals the
// serial replay.
TEST(EngineRejoin, AStateAnswerLargerThanAMessageComesInPages) {
  World w(false);
  w.hub.set_max_message_bytes(64 << 10);
  w.reply_bytes = 24 << 10;
  w.rejoin_timeout = seconds(10);
  for (uint32_t n = 0; n < kNodes; ++n) w.engines[n] = w.Make(n);
  ASSERT_NO_FATAL_FAILURE(StartAll(&w));
  const uint32_t dead = 0;
  constexpr int kTxns = 40;
  constexpr size_t kArgs = 8 << 10;
  w.frozen = static_cast<int>(dead);  // its log syncs nothing more
  for (int i = 0; i < kTxns; ++i) {
    std::vector<pb::Txn> one{WideTxn(dead, i, kArgs)};
    ASSERT_TRUE(w.engines[dead]->SubmitMany(&one).ok());
    std::this_thread::sleep_for(milliseconds(kSanitized ? 6 : 2));  // about one per epoch
  }
  ASSERT_NO_FATAL_FAILURE(WaitRetained(&w, dead, kTxns * kArgs));
  ASSERT_NO_FATAL_FAILURE(KillAndRemake(&w, dead));
  {
    absl::Status s = w.engines[dead]->Rejoin(w.engines[1]->clock());
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(w.hub.oversized(), 0u) << "no message exceeded the limit";
  EXPECT_EQ(Answered(w.answers[dead].get()), kTxns) << "the txns sequenced again are answered";
  ASSERT_NO_FATAL_FAILURE(ExpectAllEqualTheSerialReplay(&w));
}

}  // namespace
}  // namespace detdb
