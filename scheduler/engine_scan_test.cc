// Scans of ordered tables (TxnContext::Scan over a B+tree, storage/
// ordered_index.h) while txns run: queues in one ordered table, one key
// range per group, each covered by its group's lock. Txns append to the
// back of a group's range (its last key from a reverse scan), pop from the
// front (a forward scan), and sum a whole range (read lock only); they
// scan after their own writes, so they must see those too. The groups' ranges lie
// side by side, so two workers insert into and unlink nodes of one tree at
// once, and a scan runs while other workers change the tree around its
// range. Every txn's result and the final digests must equal the serial
// executor's on the same global order, under every lock manager.
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "common/hash.h"
#include "scheduler/engine.h"
#include "scheduler/engine_test_util.h"
#include "scheduler/partition_txn.h"
#include "scheduler/serial_executor.h"
#include "storage/intent_lock.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

constexpr uint32_t kQueueTable = 2, kCoverTable = 3;
constexpr uint32_t kAppendType = 10, kPopType = 11, kSumType = 12;
constexpr uint32_t kScanArgType = 13, kDeleteInScanType = 14;
constexpr uint64_t kGroups = 16, kLoadedPerGroup = 200;

Key QueueKey(uint64_t g, uint64_t seq) { return MakeKey(kQueueTable, g << 32 | seq); }
Key CoverKey(uint64_t g) { return MakeKey(kCoverTable, g); }
uint64_t GroupOf(Key k) { return KeyTable(k) == kQueueTable ? KeyRow(k) >> 32 : KeyRow(k); }

// A group's queue rows and its cover row live on partition g % n.
class GroupPartitioner final : public Partitioner {
 public:
  explicit GroupPartitioner(uint32_t n) : n_(n) {}
  uint32_t num_partitions() const override { return n_; }
  PartitionId PartitionOf(Key k) const override { return static_cast<PartitionId>(GroupOf(k) % n_); }

 private:
  const uint32_t n_;
};

Key QueueCover(Key k) { return KeyTable(k) == kQueueTable ? CoverKey(GroupOf(k)) : k; }
bool QueueRangeCover(Key lo, Key hi, Key* cover) {
  if (KeyTable(lo) != kQueueTable || KeyTable(hi) != kQueueTable || GroupOf(lo) != GroupOf(hi)) return false;
  *cover = CoverKey(GroupOf(lo));
  return true;
}

std::string_view Bytes(const uint64_t& v) { return std::string_view(reinterpret_cast<const char*>(&v), 8); }
uint64_t Value(std::string_view v) { return LoadCounter(v); }

// The last key of group g's range (FailedPrecondition on another partition).
absl::StatusOr<std::optional<Key>> Last(TxnContext* ctx, uint64_t g) {
  std::optional<Key> last;
  absl::Status s = ctx->Scan(QueueKey(g, 0), QueueKey(g, 0xFFFFFFFF), /*reverse=*/true, [&](Key k, std::string_view) {
    last = k;
    return false;
  });
  if (!s.ok()) return s;
  return last;
}

// Appends 1-3 rows to the back of every group of the write set.
absl::Status AppendProcedure(TxnContext* ctx, std::string* result) {
  const uint64_t id = ctx->txn().id();
  for (Key cover : ctx->txn().write_set()) {
    const uint64_t g = GroupOf(cover);
    for (uint64_t j = 0; j < 1 + id % 3; ++j) {
      absl::StatusOr<std::optional<Key>> last = Last(ctx, g);
      if (absl::IsFailedPrecondition(last.status())) break;  // another partition's group: not written here
      if (!last.ok()) return last.status();
      const uint64_t seq = last->has_value() ? (KeyRow(**last) & 0xFFFFFFFF) + 1 : 0;
      const uint64_t v = Mix64(id + j);
      if (absl::Status s = ctx->Write(QueueKey(g, seq), Bytes(v)); !s.ok()) return s;
    }
  }
  result->assign("appended");
  return absl::OkStatus();
}

// Pops up to 3 rows off the front of the group of the write set; the
// result lists them.
absl::Status PopProcedure(TxnContext* ctx, std::string* result) {
  const uint64_t g = GroupOf(ctx->txn().write_set(0));
  uint64_t acc = 0;
  for (int j = 0; j < 3; ++j) {
    std::optional<std::pair<Key, uint64_t>> first;
    absl::Status s = ctx->Scan(QueueKey(g, 0), QueueKey(g, 0xFFFFFFFF), /*reverse=*/false,
                               [&](Key k, std::string_view v) {
                                 first.emplace(k, Value(v));
                                 return false;
                               });
    if (!s.ok()) return s;
    if (!first) break;
    acc = Mix64(acc ^ first->first ^ first->second);
    if (s = ctx->Delete(first->first); !s.ok()) return s;
  }
  result->assign(Bytes(acc));
  return absl::OkStatus();
}

// Sums the rows of every group of the read set, forward or (odd txn ids)
// in reverse.
absl::Status SumProcedure(TxnContext* ctx, std::string* result) {
  uint64_t acc = 0, n = 0;
  for (Key cover : ctx->txn().read_set()) {
    const uint64_t g = GroupOf(cover);
    absl::Status s = ctx->Scan(QueueKey(g, 0), QueueKey(g, 0xFFFFFFFF), ctx->txn().id() % 2 == 1,
                               [&](Key k, std::string_view v) {
                                 acc = Mix64(acc + (k ^ Value(v)));
                                 ++n;
                                 return true;
                               });
    if (!s.ok()) return s;
  }
  result->assign(Bytes(acc));
  result->append(Bytes(n));
  return absl::OkStatus();
}

absl::Status Load(PartitionStore* store, const Partitioner& parts, PartitionId p) {
  absl::StatusOr<Table*> q =
      store->CreateTable({.id = kQueueTable, .name = "queue", .value_size = 8, .expected_records = 1000, .ordered = true});
  if (!q.ok()) return q.status();
  absl::StatusOr<Table*> c = store->CreateTable({.id = kCoverTable, .name = "cover", .value_size = 8});
  if (!c.ok()) return c.status();
  for (uint64_t g = 0; g < kGroups; ++g) {
    if (parts.PartitionOf(CoverKey(g)) != p) continue;
    (*c)->Insert(CoverKey(g));
    for (uint64_t s = 0; s < kLoadedPerGroup; ++s) {
      const uint64_t v = Mix64(g * 1000 + s);
      std::memcpy((*q)->Insert(QueueKey(g, s))->value(), &v, 8);
    }
  }
  return absl::OkStatus();
}

std::vector<pb::Txn> QueueTxns(uint64_t seed, int n, uint32_t client) {
  std::mt19937_64 rng(seed);
  std::vector<pb::Txn> out;
  for (int i = 0; i < n; ++i) {
    pb::Txn t;
    t.set_client_id(client);
    t.set_client_seq(i);
    const uint64_t g = rng() % kGroups;
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 5) {
      t.set_type(kAppendType);
      t.add_write_set(CoverKey(g));
      if (kind == 0) t.add_write_set(CoverKey((g + 1 + rng() % (kGroups - 1)) % kGroups));  // two groups
    } else if (kind < 7) {
      t.set_type(kPopType);
      t.add_write_set(CoverKey(g));
    } else {
      t.set_type(kSumType);
      t.add_read_set(CoverKey(g));
    }
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status RegisterQueueProcedures(ProcedureRegistry* procs) {
  absl::Status s = procs->Register(kAppendType, "append", &AppendProcedure);
  if (s.ok()) s = procs->Register(kPopType, "pop", &PopProcedure);
  if (s.ok()) s = procs->Register(kSumType, "sum", &SumProcedure);
  procs->SetKeyCover(&QueueCover);
  procs->SetRangeCover(&QueueRangeCover);
  return s;
}

struct Case {
  std::string lock_manager;
  uint32_t partitions;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.lock_manager << ", " << c.partitions << " partitions"; }

class EngineScanTest : public ::testing::TestWithParam<Case> {};

TEST_P(EngineScanTest, ScansWhileOtherWorkersChangeTheTreeEqualTheSerialExecutor) {
  const Case c = GetParam();
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterQueueProcedures(&procs).ok());
  GroupPartitioner parts(c.partitions);
  EngineOptions o;
  o.workers = 2;
  o.lock_manager = c.lock_manager;
  o.lock.max_active = 100;
  o.epoch_us = 200;
  o.record_history = true;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  for (PartitionId p = 0; p < c.partitions; ++p) ASSERT_TRUE(Load((*engine)->store(p), parts, p).ok());
  ResultCollector client;
  const uint64_t client_id = (*engine)->RegisterClient(&client);
  const int n = TxnsPerRun();
  std::vector<pb::Txn> txns = QueueTxns(3 + c.partitions, n, client_id);
  ASSERT_TRUE((*engine)->Start().ok());
  for (size_t i = 0; i < txns.size(); i += 50) {
    std::vector<pb::Txn> group(txns.begin() + i, txns.begin() + std::min(txns.size(), i + 50));
    ASSERT_TRUE((*engine)->SubmitMany(&group).ok());
  }
  ASSERT_TRUE((*engine)->Stop().ok());
  ASSERT_EQ(client.count, n);

  std::vector<std::unique_ptr<PartitionStore>> stores;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < c.partitions; ++p) {
    stores.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(Load(stores.back().get(), parts, p).ok());
    raw.push_back(stores.back().get());
  }
  SerialExecutor serial(&parts, &procs, raw);
  int committed = 0, sums = 0;
  for (const auto& batch : (*engine)->history()) {
    for (const pb::Txn& t : batch->txns()) {
      const pb::TxnResult want = serial.Execute(t);
      const pb::TxnResult& got = client.by_seq.at(t.client_seq());
      ASSERT_EQ(got.status(), want.status()) << "txn " << t.id() << ": " << got.error() << " / " << want.error();
      ASSERT_EQ(got.result(), want.result()) << "txn " << t.id() << " of type " << t.type();
      committed += want.status() == pb::STATUS_OK;
      sums += t.type() == kSumType;
    }
  }
  EXPECT_EQ(committed, n);
  EXPECT_GT(sums, n / 10);
  for (PartitionId p = 0; p < c.partitions; ++p) {
    const Table* t = (*engine)->store(p)->GetTable(kQueueTable);
    EXPECT_GT(t->size(), kLoadedPerGroup * kGroups / c.partitions) << "the queues grew";
    EXPECT_EQ((*engine)->store(p)->Digest(), raw[p]->Digest()) << "partition " << p;
  }
}

// A scan sees the txn's own writes and deletes: three appends in one txn
// take three consecutive ids, three pops take three different rows.
TEST(EngineScan, ScansSeeTheTxnsOwnWrites) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterQueueProcedures(&procs).ok());
  GroupPartitioner parts(1);
  PartitionStore store;
  ASSERT_TRUE(Load(&store, parts, 0).ok());
  SerialExecutor serial(&parts, &procs, {&store});
  pb::Txn append;
  append.set_id(5);  // 1 + 5 % 3 = 3 rows
  append.set_type(kAppendType);
  append.add_write_set(CoverKey(7));
  ASSERT_EQ(serial.Execute(append).status(), pb::STATUS_OK);
  for (uint64_t j = 0; j < 3; ++j) {
    const Record* r = store.Get(QueueKey(7, kLoadedPerGroup + j));
    ASSERT_NE(r, nullptr) << j;
    EXPECT_EQ(LoadCounter(std::string_view(r->value(), 8)), Mix64(5 + j));
  }
  EXPECT_EQ(store.Get(QueueKey(7, kLoadedPerGroup + 3)), nullptr);
  pb::Txn pop;
  pop.set_id(6);
  pop.set_type(kPopType);
  pop.add_write_set(CoverKey(7));
  ASSERT_EQ(serial.Execute(pop).status(), pb::STATUS_OK);
  for (uint64_t s = 0; s < 3; ++s) EXPECT_EQ(store.Get(QueueKey(7, s)), nullptr) << s;
  EXPECT_NE(store.Get(QueueKey(7, 3)), nullptr);
  EXPECT_EQ(store.GetTable(kQueueTable)->size(), kGroups * kLoadedPerGroup);
}

// Scans group args[0]'s range, whatever the txn declared.
absl::Status ScanArgProcedure(TxnContext* ctx, std::string* result) {
  const uint64_t g = Value(ctx->txn().args());
  return ctx->Scan(QueueKey(g, 0), QueueKey(g, 5), false, [](Key, std::string_view) { return true; });
}

// Deletes each row of group args[0] as the scan visits it (not allowed:
// writes come after the scan).
absl::Status DeleteInScanProcedure(TxnContext* ctx, std::string* result) {
  const uint64_t g = Value(ctx->txn().args());
  absl::Status in_scan;
  absl::Status s = ctx->Scan(QueueKey(g, 0), QueueKey(g, 5), false, [&](Key k, std::string_view) {
    in_scan = ctx->Delete(k);
    return in_scan.ok();
  });
  return s.ok() ? in_scan : s;
}

// A scan needs a covering lock: a declared cover (read or write set), a
// range within one group of an ordered table, a registered range cover.
// And no write while it visits.
TEST(EngineScan, UncoveredScansAreRefused) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterQueueProcedures(&procs).ok());
  ASSERT_TRUE(procs.Register(kScanArgType, "scan_arg", &ScanArgProcedure).ok());
  ASSERT_TRUE(procs.Register(kDeleteInScanType, "delete_in_scan", &DeleteInScanProcedure).ok());
  GroupPartitioner parts(1);
  PartitionStore store;
  ASSERT_TRUE(Load(&store, parts, 0).ok());
  SerialExecutor serial(&parts, &procs, {&store});
  pb::Txn t;
  t.set_id(1);
  t.set_type(kScanArgType);
  const uint64_t three = 3;
  t.set_args(std::string(Bytes(three)));
  t.add_read_set(CoverKey(3));
  EXPECT_EQ(serial.Execute(t).status(), pb::STATUS_OK);
  t.clear_read_set();
  t.add_write_set(CoverKey(3));
  EXPECT_EQ(serial.Execute(t).status(), pb::STATUS_OK);
  t.clear_write_set();
  t.add_read_set(CoverKey(4));
  pb::TxnResult r = serial.Execute(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("not in the txn's read or write set"), std::string::npos) << r.error();
  pb::Txn del = t;
  del.set_type(kDeleteInScanType);
  del.clear_read_set();
  del.add_write_set(CoverKey(3));
  r = serial.Execute(del);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("while a Scan visits"), std::string::npos) << r.error();
  EXPECT_NE(store.Get(QueueKey(3, 0)), nullptr);

  Key cover;
  const Table* queue = store.GetTable(kQueueTable);
  EXPECT_TRUE(CheckScanRange(procs.range_cover(), queue, QueueKey(3, 0), QueueKey(3, 9), &cover).ok());
  EXPECT_EQ(cover, CoverKey(3));
  EXPECT_FALSE(CheckScanRange(procs.range_cover(), queue, QueueKey(3, 0), QueueKey(4, 0), &cover).ok());
  EXPECT_FALSE(CheckScanRange(procs.range_cover(), queue, QueueKey(3, 9), QueueKey(3, 0), &cover).ok());
  EXPECT_FALSE(CheckScanRange(procs.range_cover(), store.GetTable(kCoverTable), CoverKey(1), CoverKey(1), &cover).ok());
  EXPECT_FALSE(CheckScanRange(nullptr, queue, QueueKey(3, 0), QueueKey(3, 9), &cover).ok());

  ProcedureRegistry no_range;
  ASSERT_TRUE(no_range.Register(kScanArgType, "scan_arg", &ScanArgProcedure).ok());
  no_range.SetKeyCover(&QueueCover);
  SerialExecutor without(&parts, &no_range, {&store});
  t.clear_read_set();
  t.add_read_set(CoverKey(3));
  r = without.Execute(t);
  EXPECT_EQ(r.status(), pb::STATUS_ABORTED);
  EXPECT_NE(r.error().find("no key covers"), std::string::npos) << r.error();
}

// Pops off the front of group args[0] (a forward scan, then a Delete):
// with the cover only in the read set, the scan is allowed, the Delete not.
// (kPopType's procedure, on args' group.)
absl::Status PopArgProcedure(TxnContext* ctx, std::string* result) {
  const uint64_t g = Value(ctx->txn().args());
  std::optional<Key> first;
  absl::Status s = ctx->Scan(QueueKey(g, 0), QueueKey(g, 0xFFFFFFFF), false, [&](Key k, std::string_view) {
    first = k;
    return false;
  });
  if (!s.ok() || !first) return s;
  return ctx->Delete(*first);
}

// Scans the (hash-indexed) cover table.
absl::Status ScanHashTableProcedure(TxnContext* ctx, std::string* result) {
  return ctx->Scan(CoverKey(0), CoverKey(kGroups), false, [](Key, std::string_view) { return true; });
}

// Scans group args[0] and, inside each visit, scans it again and then
// tries to delete the visited row. The result is the Delete's status code:
// the inner scan's end must not allow writes in the outer one's visit.
absl::Status NestedScanDeleteProcedure(TxnContext* ctx, std::string* result) {
  const uint64_t g = Value(ctx->txn().args());
  absl::Status in_scan;
  absl::Status s = ctx->Scan(QueueKey(g, 0), QueueKey(g, 5), false, [&](Key k, std::string_view) {
    in_scan = ctx->Scan(QueueKey(g, 0), QueueKey(g, 1), false, [](Key, std::string_view) { return true; });
    if (in_scan.ok()) in_scan = ctx->Delete(k);
    return false;
  });
  if (!s.ok()) return s;
  result->assign(absl::StatusCodeToString(in_scan.code()));
  return absl::OkStatus();
}

constexpr uint32_t kPopArgType = 15, kScanHashType = 16, kNestedScanDeleteType = 17;

absl::Status RegisterMisuseProcedures(ProcedureRegistry* procs) {
  absl::Status s = RegisterQueueProcedures(procs);
  if (s.ok()) s = procs->Register(kScanArgType, "scan_arg", &ScanArgProcedure);
  if (s.ok()) s = procs->Register(kDeleteInScanType, "delete_in_scan", &DeleteInScanProcedure);
  if (s.ok()) s = procs->Register(kPopArgType, "pop_arg", &PopArgProcedure);
  if (s.ok()) s = procs->Register(kScanHashType, "scan_hash", &ScanHashTableProcedure);
  if (s.ok()) s = procs->Register(kNestedScanDeleteType, "nested_scan_delete", &NestedScanDeleteProcedure);
  return s;
}

// A txn of `type` on group args_group, declaring `reads` and `writes`
// (cover keys), and what it must come to.
struct MisuseCase {
  uint32_t type;
  uint64_t args_group;
  std::vector<uint64_t> reads, writes;
  pb::StatusCode status;
  std::string error_has;  // in the error (aborted) or the result (committed)
};

std::vector<MisuseCase> MisuseCases() {
  return {
      {kScanArgType, 3, {3}, {}, pb::STATUS_OK, ""},                                   // covered by a read
      {kScanArgType, 3, {}, {3}, pb::STATUS_OK, ""},                                   // covered by a write
      {kScanArgType, 3, {4}, {}, pb::STATUS_ABORTED, "not in the txn's read or write set"},  // another cover
      {kScanArgType, 3, {}, {4}, pb::STATUS_ABORTED, "not in the txn's read or write set"},  // (written)
      {kDeleteInScanType, 3, {}, {3}, pb::STATUS_ABORTED, "while a Scan visits"},      // a write in a visit
      {kPopArgType, 5, {5}, {}, pb::STATUS_ABORTED, "not in the txn's write set"},     // cover only read
      {kPopArgType, 5, {}, {5}, pb::STATUS_OK, ""},                                    // cover written: pops
      {kScanHashType, 0, {0}, {}, pb::STATUS_ABORTED, "is not ordered"},               // a hash table
      {kNestedScanDeleteType, 6, {}, {6}, pb::STATUS_OK, "INVALID_ARGUMENT"},          // nested scans
  };
}

// The scan checks of the engine's context (TxnExecutor::ExecContext), not
// only the serial executor's: every misuse is refused by both, with the same
// status and error, and the stores end equal.
TEST(EngineScan, TheEngineRefusesUncoveredScansAndWritesInScansLikeTheSerialExecutor) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterMisuseProcedures(&procs).ok());
  GroupPartitioner parts(1);
  EngineOptions o;
  o.workers = 2;
  o.epoch_us = 200;
  o.record_history = true;
  auto engine = Engine::Create(o, &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE(Load((*engine)->store(0), parts, 0).ok());
  ResultCollector client;
  const uint64_t client_id = (*engine)->RegisterClient(&client);
  const std::vector<MisuseCase> cases = MisuseCases();
  std::vector<pb::Txn> txns;
  for (size_t i = 0; i < cases.size(); ++i) {
    pb::Txn t;
    t.set_client_id(client_id);
    t.set_client_seq(i);
    t.set_type(cases[i].type);
    t.set_args(std::string(Bytes(cases[i].args_group)));
    for (uint64_t g : cases[i].reads) t.add_read_set(CoverKey(g));
    for (uint64_t g : cases[i].writes) t.add_write_set(CoverKey(g));
    txns.push_back(std::move(t));
  }
  ASSERT_TRUE((*engine)->Start().ok());
  ASSERT_TRUE((*engine)->SubmitMany(&txns).ok());
  ASSERT_TRUE((*engine)->Stop().ok());
  ASSERT_EQ(client.count, static_cast<int>(cases.size()));

  PartitionStore store;
  ASSERT_TRUE(Load(&store, parts, 0).ok());
  SerialExecutor serial(&parts, &procs, {&store});
  size_t seen = 0;
  for (const auto& batch : (*engine)->history()) {
    for (const pb::Txn& t : batch->txns()) {
      const MisuseCase& c = cases.at(t.client_seq());
      const pb::TxnResult want = serial.Execute(t);
      const pb::TxnResult& got = client.by_seq.at(t.client_seq());
      EXPECT_EQ(got.status(), c.status) << "case " << t.client_seq() << ": " << got.error();
      EXPECT_EQ(got.status(), want.status()) << "case " << t.client_seq() << ": " << got.error() << " / "
                                             << want.error();
      EXPECT_EQ(got.error(), want.error()) << "case " << t.client_seq();
      EXPECT_EQ(got.result(), want.result()) << "case " << t.client_seq();
      const std::string& text = c.status == pb::STATUS_OK ? got.result() : got.error();
      EXPECT_NE(text.find(c.error_has), std::string::npos) << "case " << t.client_seq() << ": " << text;
      ++seen;
    }
  }
  EXPECT_EQ(seen, cases.size());
  EXPECT_EQ(store.Get(QueueKey(5, 0)), nullptr);  // the one pop that was allowed
  EXPECT_NE(store.Get(QueueKey(6, 0)), nullptr);  // the nested scan's Delete was refused
  EXPECT_EQ((*engine)->store(0)->Digest(), store.Digest());
}

// A txn that declares a covered key itself (not its cover) is refused
// before it is sequenced: its lock on the key would not keep out a scan
// that holds the cover, which would then see its insert or not depending on
// timing (REVIEW.md finding 4).
TEST(EngineScan, DeclaringACoveredKeyInsteadOfItsCoverIsRefused) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterQueueProcedures(&procs).ok());
  GroupPartitioner parts(1);
  auto engine = Engine::Create(EngineOptions(), &parts, &procs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE(Load((*engine)->store(0), parts, 0).ok());
  ResultCollector client;
  pb::Txn t;
  t.set_client_id((*engine)->RegisterClient(&client));
  t.set_type(kAppendType);
  t.add_write_set(CoverKey(3));
  EXPECT_TRUE((*engine)->Check(t).ok()) << (*engine)->Check(t);
  for (bool write : {true, false}) {
    pb::Txn bad = t;
    if (write) {
      bad.add_write_set(QueueKey(3, 999));
    } else {
      bad.add_read_set(QueueKey(4, 0));
    }
    const absl::Status s = (*engine)->Check(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find("declare the cover"), std::string::npos) << s;
  }
}

// Without a key cover, Validate could not keep scanned keys out of the
// declared sets (docs/ENGINE.md, "In-place Update"): such procedures are
// refused when the engine is made.
TEST(EngineScan, ARangeCoverWithoutAKeyCoverIsRefused) {
  ProcedureRegistry procs;
  procs.SetRangeCover(&QueueRangeCover);
  GroupPartitioner parts(1);
  auto engine = Engine::Create(EngineOptions(), &parts, &procs);
  EXPECT_TRUE(absl::IsInvalidArgument(engine.status())) << engine.status();
  EXPECT_NE(engine.status().message().find("no key cover"), std::string::npos) << engine.status();
}

// A scan takes IS on the partition and on the scanned table, as a covered
// read does (the txn's declared keys are of the cover table only).
TEST(EngineScan, AScanTakesIntentLocksOnItsTable) {
  ProcedureRegistry procs;
  ASSERT_TRUE(RegisterQueueProcedures(&procs).ok());
  GroupPartitioner parts(1);
  PartitionStore store;
  ASSERT_TRUE(Load(&store, parts, 0).ok());
  std::unique_ptr<IntentAgent> agent = store.intents().NewAgent();
  TxnExecutor exec(0, &store, &parts, &procs, nullptr, nullptr);
  pb::Txn t;
  t.set_id(1);
  t.set_type(kSumType);
  t.add_read_set(CoverKey(3));
  t.add_readers(0);
  PartitionTxn st;
  exec.Init(&st, &t, nullptr);
  exec.AcquireIntents(&st, agent.get());
  EXPECT_EQ(agent->used(IntentLockTable::TableLock(kQueueTable)), IntentMode::kNone);
  exec.ReadLocal(&st);
  pb::TxnResult reply;
  ASSERT_TRUE(exec.Run(&st, &reply, agent.get()));
  EXPECT_EQ(reply.status(), pb::STATUS_OK) << reply.error();
  EXPECT_EQ(agent->used(IntentLockTable::kPartitionLock), IntentMode::kIS);
  EXPECT_EQ(agent->used(IntentLockTable::TableLock(kQueueTable)), IntentMode::kIS);
  agent->EndTxn();
  agent->ReleaseAll();
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const std::string& lm : LockManagerNames())
    for (uint32_t p : {1u, 2u}) out.push_back({lm, p});
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllLockManagers, EngineScanTest, ::testing::ValuesIn(Cases()), [](const auto& info) {
  return info.param.lock_manager + "_p" + std::to_string(info.param.partitions);
});

}  // namespace
}  // namespace detdb
