// TxnContext::Update through both of its implementations that touch a store:
// the engine's (TxnExecutor's ExecContext, which applies an Update of a
// local read through the record the read found) and the SerialExecutor's
// (the oracle). Each case runs the same procedure on both and checks the
// stored rows afterwards. Also ByteArena (a worker's buffer of values, and
// a txn's of remote reads) and where Run puts the values.
#include "scheduler/partition_txn.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/partitioner.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "scheduler/serial_executor.h"
#include "storage/intent_lock.h"

namespace detdb {
namespace {

// Values on the heap arena keep their bytes while more are allocated (across
// blocks, beside values larger than a block, and values of 0 bytes or of a
// whole block), and after Reset the arena hands out its first block again.
TEST(ByteArena, ValuesStayPutAcrossBlocksAndResets) {
  ByteArena arena;
  EXPECT_NE(arena.Allocate(0), nullptr);  // even before any block exists
  arena.Reset();
  char* first = nullptr;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::pair<char*, size_t>> values;
    for (size_t i = 0; i < 2000; ++i) {
      size_t n = 1 + (i * 37) % 700;
      if (i % 97 == 0) n = 40000;     // larger than a block: a block of its own
      if (i % 101 == 0) n = 16 << 10;  // exactly a block
      if (i % 89 == 0) n = 0;
      char* p = arena.Allocate(n);
      ASSERT_NE(p, nullptr);
      if (i == 0) {
        if (round == 0) first = p;
        EXPECT_EQ(p, first) << "Reset reuses the first block";
      }
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 8, 0u);
      std::memset(p, static_cast<int>(i & 0xFF), n);
      values.emplace_back(p, n);
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const auto [p, n] = values[i];
      ASSERT_EQ(std::count(p, p + n, static_cast<char>(i & 0xFF)), static_cast<std::ptrdiff_t>(n)) << i;
    }
    arena.Reset();
  }
}

constexpr uint32_t kTable = 1;
constexpr uint32_t kRowBytes = 40;  // a whole row: 5 counters

Key K(uint64_t row) { return MakeKey(kTable, row); }

uint64_t Counter(const char* row, int i) {
  uint64_t x;
  std::memcpy(&x, row + 8 * i, 8);
  return x;
}
void AddCounter(char* row, int i, uint64_t d) {
  const uint64_t x = Counter(row, i) + d;
  std::memcpy(row + 8 * i, &x, 8);
}

// Txn types; every procedure works on the first key of the write set.
enum : uint32_t {
  kUpdateTwice = 1,       // +1 then +10 to counter 0, through two Updates
  kUpdateThenWrite,       // Update (+1), then Write of a row of 7s
  kDeleteThenUpdate,      // Delete, then Update must say NotFound
  kUpdateThenDelete,      // Update (+1), then Delete
  kUpdateThenAbort,       // Update (+1), then an error
  kUpdateEveryWrite,      // +1 on counter 1 of every key of the write set
  kUpdateOnly,            // Update, returning its status
  kReadThenUpdate,        // Read (the view kept), then Update (+1): the view keeps the stored row
  kUpdateEveryThenAbort,  // +1 on counter 1 of every key of the write set, then an error
  kUpdateAddress,         // Update; the result is the address of its bytes
  kUpdateDeleteAbort,     // Update (+1), Delete, then an error
  kUpdateWriteAbort,      // Update (+1), Write of 7s, then an error
  kUpdateDeleteWriteAbort,  // Update (+1), Delete, Write of 7s, then an error
  kReplicatedThenUpdate,  // ReadReplicated (the view kept), then Update (+1): the view keeps the stored row
};

absl::Status Proc(TxnContext* ctx, std::string* result) {
  const pb::Txn& txn = ctx->txn();
  const Key k = txn.write_set(0);
  if (txn.type() == kUpdateEveryWrite || txn.type() == kUpdateEveryThenAbort) {
    for (Key w : txn.write_set()) {
      absl::StatusOr<absl::Span<char>> v = ctx->Update(w);
      if (!v.ok()) return v.status();
      AddCounter(v->data(), 1, 1);
    }
    return txn.type() == kUpdateEveryWrite ? absl::OkStatus() : absl::AbortedError("rolled back");
  }
  if (txn.type() == kUpdateDeleteAbort || txn.type() == kUpdateWriteAbort || txn.type() == kUpdateDeleteWriteAbort) {
    absl::StatusOr<absl::Span<char>> v = ctx->Update(k);
    if (!v.ok()) return v.status();
    AddCounter(v->data(), 0, 1);
    if (txn.type() != kUpdateWriteAbort) {
      if (absl::Status s = ctx->Delete(k); !s.ok()) return s;
    }
    if (txn.type() != kUpdateDeleteAbort) {
      if (absl::Status s = ctx->Write(k, std::string(kRowBytes, '\7')); !s.ok()) return s;
    }
    return absl::AbortedError("rolled back");
  }
  if (txn.type() == kReadThenUpdate || txn.type() == kReplicatedThenUpdate) {
    absl::StatusOr<std::string_view> r = txn.type() == kReadThenUpdate ? ctx->Read(k) : ctx->ReadReplicated(k);
    if (!r.ok()) return r.status();
    const uint64_t before = Counter(r->data(), 0);
    absl::StatusOr<absl::Span<char>> v = ctx->Update(k);
    if (!v.ok()) return v.status();
    AddCounter(v->data(), 0, 1);
    if (Counter(r->data(), 0) != before) return absl::InternalError("Update changed the bytes of an earlier Read");
    return absl::OkStatus();
  }
  if (txn.type() == kUpdateAddress) {
    absl::StatusOr<absl::Span<char>> v = ctx->Update(k);
    if (!v.ok()) return v.status();
    const uintptr_t a = reinterpret_cast<uintptr_t>(v->data());
    result->assign(reinterpret_cast<const char*>(&a), sizeof(a));
    return absl::OkStatus();
  }
  if (txn.type() == kDeleteThenUpdate) {
    if (absl::Status s = ctx->Delete(k); !s.ok()) return s;
    absl::StatusOr<absl::Span<char>> v = ctx->Update(k);
    if (!absl::IsNotFound(v.status())) return absl::InternalError("Update after Delete found a value");
    return ctx->Write(k, std::string(kRowBytes, '\3'));  // puts it back
  }
  absl::StatusOr<absl::Span<char>> v = ctx->Update(k);
  if (txn.type() == kUpdateOnly || !v.ok()) return v.status();
  if (v->size() != kRowBytes) return absl::InternalError("Update's span is not a whole row");
  const uint64_t before = Counter(v->data(), 0);
  AddCounter(v->data(), 0, 1);
  // A declared read still sees the stored row.
  absl::StatusOr<std::string_view> r = ctx->Read(k);
  if (!r.ok() || Counter(r->data(), 0) != before) return absl::InternalError("Read saw the buffered row");
  switch (txn.type()) {
    case kUpdateTwice: {
      absl::StatusOr<absl::Span<char>> again = ctx->Update(k);
      if (!again.ok()) return again.status();
      if (again->data() != v->data() || Counter(again->data(), 0) != before + 1)
        return absl::InternalError("second Update did not return the first one's row");
      AddCounter(again->data(), 0, 10);
      result->assign(again->data(), again->size());
      return absl::OkStatus();
    }
    case kUpdateThenWrite:
      return ctx->Write(k, std::string(kRowBytes, '\7'));
    case kUpdateThenDelete:
      return ctx->Delete(k);
    case kUpdateThenAbort:
      return absl::AbortedError("rolled back");
  }
  return absl::InvalidArgumentError("unknown type");
}

// One store per partition, a row per key (counter i of row r = 100 r + i),
// and both ways of running a txn.
class UpdateTest : public ::testing::TestWithParam<bool> {
 protected:
  static constexpr uint32_t kPartitions = 2;
  static constexpr uint64_t kRows = 48;  // enough for a txn past kIndexAbove keys

  UpdateTest() : partitioner_(kPartitions) {
    for (uint32_t type = kUpdateTwice; type <= kReplicatedThenUpdate; ++type)
      CHECK(registry_.Register(type, "p" + std::to_string(type), &Proc).ok());
    for (uint32_t p = 0; p < kPartitions; ++p) {
      stores_.push_back(std::make_unique<PartitionStore>());
      Table* t = stores_[p]->CreateTable({.id = kTable, .name = "rows", .value_size = kRowBytes, .expected_records = 16}).value();
      for (uint64_t r = 0; r < kRows; ++r) {
        if (partitioner_.PartitionOf(K(r)) != p) continue;
        char* v = t->Insert(K(r))->value();
        for (int i = 0; i < 5; ++i) AddCounter(v, i, 100 * r + i);
      }
    }
  }

  // The txn's status; reads and writes are the same keys unless given.
  pb::StatusCode Exec(uint32_t type, std::vector<Key> writes, std::vector<Key> reads, std::string* result = nullptr) {
    pb::Txn txn;
    txn.set_id(++next_id_);
    txn.set_type(type);
    for (Key k : reads) txn.add_read_set(k);
    for (Key k : writes) txn.add_write_set(k);
    std::vector<PartitionId> readers, writers;
    for (Key k : reads) readers.push_back(partitioner_.PartitionOf(k));
    for (Key k : writes) writers.push_back(partitioner_.PartitionOf(k));
    for (auto* v : {&readers, &writers}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    for (PartitionId p : readers) txn.add_readers(p);
    for (PartitionId p : writers) txn.add_writers(p);
    pb::TxnResult r = GetParam() ? RunEngine(txn) : RunSerial(txn);
    if (result != nullptr) *result = r.result();
    return r.status();
  }
  pb::StatusCode Exec(uint32_t type, std::vector<Key> keys) { return Exec(type, keys, keys); }

  const Record* Get(Key k) const { return stores_[partitioner_.PartitionOf(k)]->Get(k); }
  uint64_t CounterOf(Key k, int i) const { return Counter(Get(k)->value(), i); }

  // Each partition's worker arena (TxnExecutor::Run), reused by every txn
  // of the test as a worker reuses its own.
  std::array<ByteArena, kPartitions> values_;
  // The engine's states of the last txn, kept after its run.
  std::vector<std::unique_ptr<PartitionTxn>> last_sts_;

 private:
  // The worker-side steps of every participant, remote reads handed over
  // by a transport that queues them.
  struct QueueTransport final : Transport {
    void RegisterReceiver(PartitionId, RemoteReadsReceiver*) override {}
    void Send(PartitionId to, pb::RemoteReads msg) override { sent.emplace_back(to, std::move(msg)); }
    std::vector<std::pair<PartitionId, pb::RemoteReads>> sent;
  };
  pb::TxnResult RunEngine(const pb::Txn& txn) {
    QueueTransport transport;
    auto locks = IntentLockTable::Create({});
    std::vector<std::unique_ptr<TxnExecutor>> execs;
    std::vector<std::unique_ptr<PartitionTxn>> sts;
    std::vector<std::unique_ptr<IntentAgent>> agents;
    for (uint32_t p = 0; p < kPartitions; ++p) {
      execs.push_back(std::make_unique<TxnExecutor>(p, stores_[p].get(), &partitioner_, &registry_, &transport, nullptr));
      sts.push_back(std::make_unique<PartitionTxn>());
      agents.push_back(locks->NewAgent());
      execs[p]->Init(sts[p].get(), &txn, nullptr);
      execs[p]->AcquireIntents(sts[p].get(), agents[p].get());
      execs[p]->ReadLocal(sts[p].get());
      if (sts[p]->reader) execs[p]->SendReads(sts[p].get());
    }
    for (auto& [to, msg] : transport.sent) TxnExecutor::AddRemote(sts[to].get(), msg);
    pb::TxnResult result;
    for (uint32_t p = 0; p < kPartitions; ++p) {
      if (sts[p]->executor) {
        CHECK(!sts[p]->MissingRemoteReads());
        pb::TxnResult r;
        execs[p]->Run(sts[p].get(), &r, agents[p].get(), &values_[p]);
        if (sts[p]->coordinator) result = r;
      }
      agents[p]->EndTxn();
    }
    last_sts_ = std::move(sts);
    return result;
  }
  pb::TxnResult RunSerial(const pb::Txn& txn) {
    std::vector<PartitionStore*> stores;
    for (auto& s : stores_) stores.push_back(s.get());
    return SerialExecutor(&partitioner_, &registry_, stores).Execute(txn);
  }

  ModPartitioner partitioner_;
  ProcedureRegistry registry_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;
  uint64_t next_id_ = 0;
};

TEST_P(UpdateTest, SecondUpdateSeesTheFirstAndTheRecordIsUpdatedInPlace) {
  const Record* before = Get(K(2));
  std::string result;
  ASSERT_EQ(Exec(kUpdateTwice, {K(2)}, {K(2)}, &result), pb::STATUS_OK);
  EXPECT_EQ(Get(K(2)), before);  // the same record, written through
  EXPECT_EQ(CounterOf(K(2), 0), 200u + 11);
  for (int i = 1; i < 5; ++i) EXPECT_EQ(CounterOf(K(2), i), 200u + i) << i;  // the rest of the row kept
  ASSERT_EQ(result.size(), kRowBytes);
  EXPECT_EQ(Counter(result.data(), 0), 211u);
  // Twice more: each txn starts from the stored row, not a stale buffer.
  ASSERT_EQ(Exec(kUpdateTwice, {K(2)}), pb::STATUS_OK);
  ASSERT_EQ(Exec(kUpdateTwice, {K(2)}), pb::STATUS_OK);
  EXPECT_EQ(CounterOf(K(2), 0), 200u + 33);
}

TEST_P(UpdateTest, WriteAndDeleteAfterUpdateWin) {
  ASSERT_EQ(Exec(kUpdateThenWrite, {K(4)}), pb::STATUS_OK);
  EXPECT_EQ(std::string(Get(K(4))->value(), kRowBytes), std::string(kRowBytes, '\7'));
  ASSERT_EQ(Exec(kUpdateThenDelete, {K(4)}), pb::STATUS_OK);
  EXPECT_EQ(Get(K(4)), nullptr);
  ASSERT_EQ(Exec(kDeleteThenUpdate, {K(6)}), pb::STATUS_OK);
  ASSERT_NE(Get(K(6)), nullptr);
  EXPECT_EQ(std::string(Get(K(6))->value(), kRowBytes), std::string(kRowBytes, '\3'));
}

TEST_P(UpdateTest, AnAbortedUpdateLeavesTheRow) {
  EXPECT_EQ(Exec(kUpdateThenAbort, {K(2)}), pb::STATUS_ABORTED);
  EXPECT_EQ(CounterOf(K(2), 0), 200u);
}

TEST_P(UpdateTest, AnAbortAfterUpdatesOfSeveralRowsLeavesThemAll) {
  const std::vector<Key> keys = {K(2), K(3), K(4), K(5)};  // both partitions
  EXPECT_EQ(Exec(kUpdateEveryThenAbort, keys), pb::STATUS_ABORTED);
  for (Key k : keys)
    for (int i = 0; i < 5; ++i) EXPECT_EQ(CounterOf(k, i), 100 * KeyRow(k) + i) << k << " " << i;
}

// A txn large enough (38 keys) that its reads and writes are indexed
// (partition_txn.cc, kIndexAbove = 32).
TEST_P(UpdateTest, AnAbortOfAnIndexedTxnLeavesEveryRow) {
  std::vector<Key> keys;
  for (uint64_t r = 2; r < 40; ++r) keys.push_back(K(r));
  EXPECT_EQ(Exec(kUpdateEveryThenAbort, keys), pb::STATUS_ABORTED);
  for (Key k : keys)
    for (int i = 0; i < 5; ++i) EXPECT_EQ(CounterOf(k, i), 100 * KeyRow(k) + i) << k << " " << i;
  ASSERT_EQ(Exec(kUpdateEveryWrite, keys), pb::STATUS_OK);
  for (Key k : keys) EXPECT_EQ(CounterOf(k, 1), 100 * KeyRow(k) + 2) << k;
}

TEST_P(UpdateTest, AnAbortAfterUpdateThenDeleteOrWriteLeavesTheRow) {
  for (uint32_t t : {kUpdateDeleteAbort, kUpdateWriteAbort, kUpdateDeleteWriteAbort}) {
    EXPECT_EQ(Exec(t, {K(2)}), pb::STATUS_ABORTED) << t;
    ASSERT_NE(Get(K(2)), nullptr) << t;
    for (int i = 0; i < 5; ++i) EXPECT_EQ(CounterOf(K(2), i), 200u + i) << t << " " << i;
  }
}

TEST_P(UpdateTest, AReadTakenBeforeAnUpdateKeepsTheStoredRow) {
  ASSERT_EQ(Exec(kReadThenUpdate, {K(4)}), pb::STATUS_OK);
  EXPECT_EQ(CounterOf(K(4), 0), 400u + 1);
  ASSERT_EQ(Exec(kReadThenUpdate, {K(4)}), pb::STATUS_OK);
  EXPECT_EQ(CounterOf(K(4), 0), 400u + 2);
  // Also a view from ReadReplicated (of a key no txn should write, but the
  // engine does not know which tables are replicated).
  ASSERT_EQ(Exec(kReplicatedThenUpdate, {K(4)}), pb::STATUS_OK);
  EXPECT_EQ(CounterOf(K(4), 0), 400u + 3);
}

// The engine changes a local record that the txn declared to read and
// write in place (PartitionTxn::BufferedWrite::in_place); the oracle
// buffers every Update.
TEST_P(UpdateTest, AnUpdateOfADeclaredLocalReadWritesTheRecordItself) {
  std::string result;
  ASSERT_EQ(Exec(kUpdateAddress, {K(2)}, {K(2)}, &result), pb::STATUS_OK);
  ASSERT_EQ(result.size(), sizeof(uintptr_t));
  uintptr_t a;
  std::memcpy(&a, result.data(), sizeof(a));
  if (GetParam()) {
    EXPECT_EQ(a, reinterpret_cast<uintptr_t>(Get(K(2))->value()));
  }
  EXPECT_EQ(CounterOf(K(2), 0), 200u);
}

TEST_P(UpdateTest, RefusesWhatWriteOrReadWouldRefuse) {
  EXPECT_EQ(Exec(kUpdateOnly, {K(2)}, {}), pb::STATUS_ABORTED);  // written, not read
  EXPECT_EQ(Exec(kUpdateOnly, {K(3)}, {K(3)}), pb::STATUS_OK);
  // Absent record (declared, never loaded): NotFound aborts.
  EXPECT_EQ(Exec(kUpdateOnly, {K(kRows + 2)}), pb::STATUS_ABORTED);
  EXPECT_EQ(Get(K(kRows + 2)), nullptr);
}

TEST_P(UpdateTest, MultiPartitionUpdatesApplyOnlyOnTheirOwnPartition) {
  // Rows 2 and 3 live on partitions 0 and 1; each executor updates both
  // (one from its local read, one from the other's read) and applies its own.
  const std::vector<Key> keys = {K(2), K(3), K(5)};
  ASSERT_EQ(Exec(kUpdateEveryWrite, keys), pb::STATUS_OK);
  ASSERT_EQ(Exec(kUpdateEveryWrite, keys), pb::STATUS_OK);
  EXPECT_EQ(CounterOf(K(2), 1), 200u + 1 + 2);
  EXPECT_EQ(CounterOf(K(3), 1), 300u + 1 + 2);
  EXPECT_EQ(CounterOf(K(5), 1), 500u + 1 + 2);
  EXPECT_EQ(CounterOf(K(3), 0), 300u);
}

INSTANTIATE_TEST_SUITE_P(EngineAndSerial, UpdateTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Engine" : "Serial"; });

// The engine only: where Run puts a procedure's bytes.
using WorkerArenaTest = UpdateTest;

// A buffered value and an in-place Update's undo copy live on the worker's
// arena passed to Run, not on the txn's own (which a pooled state last
// touched a window of txns ago); a later txn reuses the arena and every
// applied row stays right.
TEST_P(WorkerArenaTest, BufferedValuesAndUndoCopiesLiveOnTheWorkersArena) {
  const Key k = K(4);
  const ModPartitioner partitioner(kPartitions);
  const PartitionId p = partitioner.PartitionOf(k);
  ASSERT_EQ(Exec(kReadThenUpdate, {k}), pb::STATUS_OK);  // viewed first: buffered
  {
    const PartitionTxn& st = *last_sts_[p];
    ASSERT_EQ(st.writes.size(), 1u);
    EXPECT_FALSE(st.writes[0].in_place());
    EXPECT_TRUE(values_[p].Contains(st.writes[0].value));
    EXPECT_FALSE(st.arena.Contains(st.writes[0].value));
  }
  ASSERT_EQ(Exec(kUpdateOnly, {k}), pb::STATUS_OK);  // in place: the read views the undo copy
  {
    const PartitionTxn& st = *last_sts_[p];
    ASSERT_EQ(st.writes.size(), 1u);
    EXPECT_TRUE(st.writes[0].in_place());
    ASSERT_EQ(st.reads.size(), 1u);
    EXPECT_TRUE(values_[p].Contains(st.reads[0].data));
    EXPECT_FALSE(st.arena.Contains(st.reads[0].data));
  }
  // Run resets the arena: the next txn's first value is where this one's was.
  ASSERT_EQ(Exec(kReadThenUpdate, {k}), pb::STATUS_OK);
  const char* first = last_sts_[p]->writes.at(0).value;
  ASSERT_EQ(Exec(kReadThenUpdate, {k}), pb::STATUS_OK);
  EXPECT_EQ(last_sts_[p]->writes.at(0).value, first);
  // A remote read's bytes stay on the txn's own arena (they arrive before
  // the run, at any worker): k's partition reads k2 from the other one.
  const Key k2 = partitioner.PartitionOf(K(5)) != p ? K(5) : K(6);
  ASSERT_NE(partitioner.PartitionOf(k2), p);
  ASSERT_EQ(Exec(kUpdateOnly, {k}, {k, k2}), pb::STATUS_OK);
  {
    const PartitionTxn& st = *last_sts_[p];
    const PartitionTxn::Value* remote = nullptr;
    for (const PartitionTxn::Value& v : st.reads)
      if (v.key == k2) remote = &v;
    ASSERT_NE(remote, nullptr);
    EXPECT_TRUE(st.arena.Contains(remote->data));
    EXPECT_FALSE(values_[p].Contains(remote->data));
  }
  ASSERT_EQ(Exec(kUpdateThenAbort, {k}), pb::STATUS_ABORTED);  // the undo copy put back
  ASSERT_EQ(Exec(kUpdateTwice, {k}), pb::STATUS_OK);
  EXPECT_EQ(CounterOf(k, 0), 400u + 3 + 11);  // three ReadThenUpdates, UpdateTwice's +11
  EXPECT_EQ(CounterOf(k, 1), 401u);
}

INSTANTIATE_TEST_SUITE_P(Engine, WorkerArenaTest, ::testing::Values(true),
                         [](const ::testing::TestParamInfo<bool>&) { return "Engine"; });

}  // namespace
}  // namespace detdb
