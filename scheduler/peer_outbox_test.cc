// PeerOutbox: remote reads and results for other nodes are kept for their
// rejoin and, with the input log, leave only once their epoch is durable.
#include "scheduler/peer_outbox.h"

#include <mutex>

#include <gtest/gtest.h>

#include "sequencer/epoch_batcher.h"

namespace detdb {
namespace {

class Recorder : public PeerHandler, public RemoteReadsReceiver {
 public:
  void OnPeerBatch(std::shared_ptr<pb::Batch>) override {}
  void OnPeerResult(uint32_t, const pb::TxnResult& r) override {
    std::lock_guard<std::mutex> l(mu);
    results.push_back(r.txn_id());
  }
  void OnPeerDurable(uint32_t, uint64_t) override {}
  void OnPeerCheckpoint(uint32_t, uint64_t) override {}
  void OnRejoinRequest(uint32_t, const pb::RejoinRequest&) override {}
  void OnRejoinReply(uint32_t, const pb::RejoinReply&) override {}
  void OnRemoteReads(pb::RemoteReads m) override {
    std::lock_guard<std::mutex> l(mu);
    reads.push_back(m.txn_id());
  }
  std::mutex mu;
  std::vector<uint64_t> reads, results;
};

TxnId Id(uint64_t epoch, uint32_t index) { return EpochBatcher::EpochSequencerId(epoch, 1, index); }

pb::RemoteReads Reads(TxnId id, PartitionId from) {
  pb::RemoteReads r;
  r.set_txn_id(id);
  r.set_from_partition(from);
  return r;
}

pb::TxnResult Result(TxnId id) {
  pb::TxnResult r;
  r.set_txn_id(id);
  return r;
}

struct Two {
  InProcessPeerHub hub{{0, 1, 0}};  // partitions 0 and 2 on node 0, 1 on node 1
  Recorder rec[2];
  PeerRetention retention{2, 0, 1 << 20};
  Two() {
    for (uint32_t n = 0; n < 2; ++n) {
      hub.link(n)->SetHandler(&rec[n]);
      hub.link(n)->RegisterReceiver(n, &rec[n]);
    }
    hub.link(0)->RegisterReceiver(2, &rec[0]);
  }
  std::vector<uint64_t> Reads(uint32_t n) {
    std::lock_guard<std::mutex> l(rec[n].mu);
    return rec[n].reads;
  }
  std::vector<uint64_t> Results(uint32_t n) {
    std::lock_guard<std::mutex> l(rec[n].mu);
    return rec[n].results;
  }
};

TEST(PeerOutbox, MessagesForOtherNodesWaitUntilTheirEpochIsDurableHere) {
  Two t;
  PeerOutbox out(t.hub.link(0), &t.retention, /*gated=*/true);
  int hurried = 0;  // the log is told once when messages start to wait
  out.SetHoldHook([&] { ++hurried; });
  out.SetDurable(4);
  out.Send(1, Reads(Id(4, 0), 0));  // durable already: at once
  out.Send(1, Reads(Id(5, 0), 0));
  out.Send(1, Reads(Id(6, 1), 0));
  out.SendResult(1, Result(Id(5, 2)));
  out.Send(2, Reads(Id(9, 0), 0));  // a partition of this node: at once
  EXPECT_EQ(t.Reads(1), (std::vector<uint64_t>{Id(4, 0)}));
  EXPECT_TRUE(t.Results(1).empty());
  EXPECT_EQ(t.Reads(0), (std::vector<uint64_t>{Id(9, 0)}));
  EXPECT_EQ(out.held(), 3u);
  EXPECT_TRUE(out.holding());
  EXPECT_EQ(hurried, 1);
  out.SetDurable(5);
  EXPECT_EQ(t.Reads(1), (std::vector<uint64_t>{Id(4, 0), Id(5, 0)}));
  EXPECT_EQ(t.Results(1), (std::vector<uint64_t>{Id(5, 2)}));
  out.SetDurable(3);  // never back
  out.SetDurable(6);
  EXPECT_EQ(t.Reads(1), (std::vector<uint64_t>{Id(4, 0), Id(5, 0), Id(6, 1)}));
  EXPECT_EQ(out.held(), 0u);
  EXPECT_FALSE(out.holding());
  // Every message for node 1 is kept for its rejoin, the local one is not.
  PeerRetention::Messages kept = t.retention.MessagesFrom(1, 1, 1 << 20);
  EXPECT_EQ(kept.reads.size(), 3u);
  EXPECT_EQ(kept.results.size(), 1u);
  // A resend follows the same rule and is not kept twice.
  out.Resend(1, Reads(Id(8, 0), 0));
  EXPECT_EQ(out.held(), 1u);
  EXPECT_EQ(hurried, 2);
  out.SetDurable(8);
  EXPECT_EQ(t.Reads(1).back(), Id(8, 0));
  EXPECT_EQ(t.retention.MessagesFrom(1, 1, 1 << 20).reads.size(), 3u);
}

TEST(PeerOutbox, WithoutTheLogEverythingLeavesAtOnce) {
  Two t;
  PeerOutbox out(t.hub.link(0), &t.retention, /*gated=*/false);
  out.Send(1, Reads(Id(5, 0), 0));
  out.SendResult(1, Result(Id(7, 0)));
  EXPECT_EQ(t.Reads(1), (std::vector<uint64_t>{Id(5, 0)}));
  EXPECT_EQ(t.Results(1), (std::vector<uint64_t>{Id(7, 0)}));
  EXPECT_EQ(out.held(), 0u);
}

}  // namespace
}  // namespace detdb
