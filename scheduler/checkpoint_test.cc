// The checkpoint file: a forked capture round-trips the stores (digest
// equal, inserted and erased rows included); every truncation and every
// sampled bit flip is refused with the file named; pruning keeps the newest
// two and removes leftover temp files; names parse; the client state
// section round-trips, a damaged length is refused (bounded before it is
// copied), a version 1 file (no section) is still read, and the provider's
// error fails the capture.
#include "scheduler/checkpoint.h"

#include <cstring>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "io/crc32c.h"
#include "io/fault_injecting_file_system.h"
#include "scheduler/test_workload.h"

namespace detdb {
namespace {
using namespace testing_util;  // NOLINT

const char kDir[] = "/ckpt";

CheckpointOptions Options(FileSystem* fs) {
  CheckpointOptions o;
  o.dir = kDir;
  o.fs = fs;
  return o;
}

struct Stores {
  ModPartitioner parts{2};
  std::vector<std::unique_ptr<PartitionStore>> owned;
  std::vector<PartitionStore*> raw;
  explicit Stores(uint64_t rows) {
    for (PartitionId p = 0; p < 2; ++p) {
      owned.push_back(std::make_unique<PartitionStore>());
      CHECK(LoadCounterTable(owned.back().get(), parts, p, rows).ok());
      CHECK(owned.back()->CreateTable({.id = 7, .name = "wide", .value_size = 100}).ok());
      CHECK(owned.back()->CreateTable({.id = 8, .name = "tree", .value_size = 16, .ordered = true}).ok());
      raw.push_back(owned.back().get());
    }
  }
  std::vector<uint64_t> Digests() const {
    std::vector<uint64_t> d;
    for (auto* s : raw) d.push_back(s->Digest());
    return d;
  }
};

absl::StatusOr<CheckpointStats> Take(const CheckpointOptions& o, const Stores& s, uint64_t epoch,
                                     uint32_t log_crc = 0) {
  CheckpointMeta meta{epoch, 42, 1000 + epoch, {0, 1}, log_crc};
  std::vector<const PartitionStore*> stores(s.raw.begin(), s.raw.end());
  auto cap = ForkCapture(meta, stores);
  if (!cap.ok()) return cap.status();
  CheckpointStats stats;
  auto tmp = ReceiveCapture(*cap, o, epoch, &stats);
  if (!tmp.ok()) return tmp.status();
  if (absl::Status p = PublishCheckpoint(o, *tmp, epoch); !p.ok()) return p;
  return stats;
}

TEST(Checkpoint, NamesParse) {
  EXPECT_EQ(CheckpointName(12), "ckpt-00000000000000000012.ckpt");
  EXPECT_EQ(ParseCheckpointName(CheckpointName(12)), 12u);
  EXPECT_FALSE(ParseCheckpointName("ckpt-00000000000000000012.ckpt.tmp"));
  EXPECT_FALSE(ParseCheckpointName("log-00000000000000000012.seg"));
}

TEST(Checkpoint, AForkedCaptureRoundTripsTheStores) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  Stores a(500);
  // Rows written, inserted (wide table) and erased.
  for (uint64_t r = 0; r < 1000; r += 3) {
    Record* rec = a.raw[a.parts.PartitionOf(MakeKey(kCounterTable, r))]->Get(MakeKey(kCounterTable, r));
    ASSERT_NE(rec, nullptr);
    std::memcpy(rec->value(), &r, 8);
  }
  for (uint64_t r = 0; r < 50; ++r) a.raw[r % 2]->Insert(MakeKey(7, r))->value()[99] = static_cast<char>(r);
  ASSERT_TRUE(a.raw[0]->Erase(MakeKey(kCounterTable, 0)));
  // An ordered table larger than every hash table: the capture sizes its
  // sort scratch by the hash tables only (an ordered one is visited in key
  // order as it stands), so the tree must not need it. Inserted out of key
  // order, with erases.
  for (uint64_t r = 0; r < 3000; ++r) {
    const uint64_t k = (r * 7919) % 3000;
    std::memcpy(a.raw[k % 2]->Insert(MakeKey(8, k))->value(), &r, 8);
  }
  for (uint64_t k = 0; k < 3000; k += 5) ASSERT_TRUE(a.raw[k % 2]->Erase(MakeKey(8, k)));
  auto stats = Take(o, a, 9, 0xC0FFEE);
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto loaded = ReadCheckpoint(o, 9);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->meta.epoch, 9u);
  EXPECT_EQ(loaded->meta.log_crc, 0xC0FFEEu);
  EXPECT_EQ(loaded->meta.config_hash, 42u);
  EXPECT_EQ(loaded->meta.last_txn_id, 1009u);
  EXPECT_EQ(loaded->bytes.size(), stats->bytes);
  Stores b(500);  // the loaded state, before restore: differs
  ASSERT_NE(b.Digests(), a.Digests());
  ASSERT_TRUE(RestoreCheckpoint(*loaded, b.raw).ok());
  EXPECT_EQ(b.Digests(), a.Digests());
  // A store of another shape is refused.
  Stores c(500);
  std::vector<PartitionStore*> only_one{c.raw[0], nullptr};
  EXPECT_TRUE(absl::IsFailedPrecondition(RestoreCheckpoint(*loaded, only_one)));
}

TEST(Checkpoint, AnotherSchemaIsRefusedWithTheSizesAndTheStoresKept) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  Stores a(100);
  for (uint64_t r = 0; r < 20; ++r) a.raw[r % 2]->Insert(MakeKey(7, r))->value()[0] = static_cast<char>(r);
  ASSERT_TRUE(Take(o, a, 3).ok());
  auto loaded = ReadCheckpoint(o, 3);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // A build whose table 7 has narrower rows (as ORDER_LINE's 56 -> 48).
  ModPartitioner parts{2};
  std::vector<std::unique_ptr<PartitionStore>> owned;
  std::vector<PartitionStore*> raw;
  for (PartitionId p = 0; p < 2; ++p) {
    owned.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(owned.back().get(), parts, p, 100).ok());
    ASSERT_TRUE(owned.back()->CreateTable({.id = 7, .name = "wide", .value_size = 96}).ok());
    ASSERT_TRUE(owned.back()->CreateTable({.id = 8, .name = "tree", .value_size = 16, .ordered = true}).ok());
    raw.push_back(owned.back().get());
  }
  std::vector<uint64_t> before;
  for (auto* s : raw) before.push_back(s->Digest());
  const absl::Status s = RestoreCheckpoint(*loaded, raw);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(std::string(s.message()).find("100-byte rows in the checkpoint and 96-byte rows in this build"),
            std::string::npos)
      << s;
  std::vector<uint64_t> after;
  for (auto* st : raw) after.push_back(st->Digest());
  EXPECT_EQ(after, before) << "a refused restore emptied the stores";
  // A table the build does not have at all.
  std::vector<std::unique_ptr<PartitionStore>> narrow;
  std::vector<PartitionStore*> narrow_raw;
  for (PartitionId p = 0; p < 2; ++p) {
    narrow.push_back(std::make_unique<PartitionStore>());
    ASSERT_TRUE(LoadCounterTable(narrow.back().get(), parts, p, 100).ok());
    narrow_raw.push_back(narrow.back().get());
  }
  const absl::Status missing = RestoreCheckpoint(*loaded, narrow_raw);
  EXPECT_TRUE(absl::IsFailedPrecondition(missing)) << missing;
  EXPECT_NE(std::string(missing.message()).find("is not in this build's schema"), std::string::npos) << missing;
}

TEST(Checkpoint, EveryTruncationAndBitFlipIsRefusedNamingTheFile) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  Stores a(20);
  ASSERT_TRUE(Take(o, a, 3).ok());
  const std::string path = JoinPath(kDir, CheckpointName(3));
  auto whole = fs.ReadFile(path, 1 << 20);
  ASSERT_TRUE(whole.ok());
  const std::string good = *whole;
  auto rewrite = [&](const std::string& bytes) {
    ASSERT_TRUE(fs.Remove(path).ok());
    auto f = fs.NewAppendableFile(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(bytes).ok());
    ASSERT_TRUE((*f)->Sync().ok());
  };
  for (size_t n = 0; n < good.size(); n += (n < 100 ? 1 : 37)) {
    rewrite(good.substr(0, n));
    auto r = ReadCheckpoint(o, 3);
    ASSERT_TRUE(absl::IsDataLoss(r.status())) << n << ": " << r.status();
    EXPECT_NE(r.status().message().find(path), std::string::npos);
  }
  for (size_t off = 0; off < good.size(); off += 13) {
    std::string bad = good;
    bad[off] ^= 0x10;
    rewrite(bad);
    EXPECT_TRUE(absl::IsDataLoss(ReadCheckpoint(o, 3).status())) << "flip at " << off;
  }
  rewrite(good);
  EXPECT_TRUE(ReadCheckpoint(o, 3).ok());
}

TEST(Checkpoint, PruneKeepsTheNewestAndRemovesTempFiles) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  o.keep = 2;
  Stores a(10);
  for (uint64_t e : {5, 10, 15}) ASSERT_TRUE(Take(o, a, e).ok());
  {
    auto f = fs.NewAppendableFile(JoinPath(kDir, CheckpointName(20) + ".tmp"));
    ASSERT_TRUE(f.ok());
  }
  auto kept = PruneCheckpoints(o);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<uint64_t>{10, 15}));
  auto names = fs.ListDir(kDir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{CheckpointName(10), CheckpointName(15)}));
  auto listed = ListCheckpoints(o);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, (std::vector<uint64_t>{15, 10}));
}

// content + a fresh trailer (length, CRC32C): damage the CRC does not catch.
std::string WithTrailer(std::string content) {
  const uint64_t n = content.size();
  const uint32_t crc = Crc32c(content.data(), content.size());
  content.append(reinterpret_cast<const char*>(&n), 8);
  content.append(reinterpret_cast<const char*>(&crc), 4);
  return content;
}

void Rewrite(FaultInjectingFileSystem* fs, const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(fs->Remove(path).ok());
  auto f = fs->NewAppendableFile(path);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(bytes).ok());
  ASSERT_TRUE((*f)->Sync().ok());
}

TEST(Checkpoint, TheClientStateSectionRoundTripsAndIsBounded) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  o.client_state = [](uint64_t epoch) -> absl::StatusOr<std::string> {
    return absl::StrCat("clients at ", epoch, std::string(1000, 'x'));
  };
  Stores a(30);
  ASSERT_TRUE(Take(o, a, 6).ok());
  auto loaded = ReadCheckpoint(o, 6);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->client_state, absl::StrCat("clients at 6", std::string(1000, 'x')));
  Stores b(30);
  ASSERT_TRUE(RestoreCheckpoint(*loaded, b.raw).ok());
  EXPECT_EQ(b.Digests(), a.Digests());

  // A section length beyond the file, with a valid CRC: refused, naming it.
  const std::string path = JoinPath(kDir, CheckpointName(6));
  const std::string content = loaded->bytes.substr(0, loaded->bytes.size() - kCheckpointTrailerBytes);
  const size_t at = content.size() - loaded->client_state.size() - 8;
  for (uint64_t bad : {uint64_t{1001 + 12}, uint64_t{1} << 62, ~uint64_t{0}}) {
    std::string damaged = content;
    std::memcpy(damaged.data() + at, &bad, 8);
    Rewrite(&fs, path, WithTrailer(damaged));
    auto r = ReadCheckpoint(o, 6);
    ASSERT_TRUE(absl::IsDataLoss(r.status())) << bad << ": " << r.status();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find("client state section"), std::string::npos) << r.status();
  }
  // A shorter length leaves trailing bytes: refused too.
  std::string shorter = content;
  const uint64_t less = 10;
  std::memcpy(shorter.data() + at, &less, 8);
  Rewrite(&fs, path, WithTrailer(shorter));
  EXPECT_TRUE(absl::IsDataLoss(ReadCheckpoint(o, 6).status()));

  // Version 1 (no section): read, with an empty client state.
  std::string v1 = content.substr(0, at);
  const uint16_t one = 1;
  std::memcpy(v1.data() + 4, &one, 2);
  Rewrite(&fs, path, WithTrailer(v1));
  auto old = ReadCheckpoint(o, 6);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->client_state.empty());
  Stores c(30);
  ASSERT_TRUE(RestoreCheckpoint(*old, c.raw).ok());
  EXPECT_EQ(c.Digests(), a.Digests());
  // An unknown version is refused.
  std::string v3 = content;
  const uint16_t three = 3;
  std::memcpy(v3.data() + 4, &three, 2);
  Rewrite(&fs, path, WithTrailer(v3));
  EXPECT_TRUE(absl::IsDataLoss(ReadCheckpoint(o, 6).status()));

  // The provider's error fails the capture and leaves no temp file.
  o.client_state = [](uint64_t) -> absl::StatusOr<std::string> { return absl::DeadlineExceededError("not yet"); };
  auto failed = Take(o, a, 7);
  EXPECT_TRUE(absl::IsDeadlineExceeded(failed.status())) << failed.status();
  EXPECT_NE(failed.status().message().find("not yet"), std::string::npos);
  auto names = fs.ListDir(kDir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{CheckpointName(6)}));
}

// A version 1 file (no log CRC: offset 36 reserved, 0; no client state
// section) is still read; a version 1 file with a nonzero reserved field is
// not.
TEST(Checkpoint, VersionOneFilesAreStillRead) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  Stores a(20);
  ASSERT_TRUE(Take(o, a, 4, 77).ok());
  const std::string path = JoinPath(kDir, CheckpointName(4));
  auto whole = fs.ReadFile(path, 1 << 20);
  ASSERT_TRUE(whole.ok());
  auto as_v1 = [&](uint32_t reserved) {
    // Version 2 ends its content with the client state section: here
    // empty, its u64 length 0. Version 1 has none.
    std::string b = whole->substr(0, whole->size() - kCheckpointTrailerBytes - 8);
    const uint16_t v1 = 1;
    std::memcpy(b.data() + 4, &v1, 2);
    std::memcpy(b.data() + 36, &reserved, 4);
    const uint64_t content = b.size();
    const uint32_t crc = Crc32c(b.data(), content);
    b.append(reinterpret_cast<const char*>(&content), 8);
    b.append(reinterpret_cast<const char*>(&crc), 4);
    EXPECT_TRUE(fs.Remove(path).ok());
    auto f = fs.NewAppendableFile(path);
    EXPECT_TRUE(f.ok() && (*f)->Append(b).ok() && (*f)->Sync().ok());
  };
  as_v1(0);
  auto r = ReadCheckpoint(o, 4);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->meta.log_crc, 0u);
  Stores b(20);
  ASSERT_TRUE(RestoreCheckpoint(*r, b.raw).ok());
  EXPECT_EQ(b.Digests(), a.Digests());
  as_v1(77);
  EXPECT_TRUE(absl::IsDataLoss(ReadCheckpoint(o, 4).status()));
}

// Quarantined files (<name>.bad) are never listed, counted or removed; a
// plan's keep list is followed exactly.
TEST(Checkpoint, PruneIgnoresQuarantinedFilesAndFollowsAKeepList) {
  FaultInjectingFileSystem fs;
  CheckpointOptions o = Options(&fs);
  o.keep = 2;
  Stores a(10);
  for (uint64_t e : {5, 10, 15, 20, 25}) ASSERT_TRUE(Take(o, a, e).ok());
  ASSERT_TRUE(QuarantineCheckpoints(o, {20, 25}).ok());
  auto listed = ListCheckpoints(o);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(*listed, (std::vector<uint64_t>{15, 10, 5})) << "the quarantined newest two are not counted";
  auto kept = PruneCheckpoints(o);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<uint64_t>{10, 15}));
  kept = PruneCheckpoints(o, std::vector<uint64_t>{10});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<uint64_t>{10}));
  auto names = fs.ListDir(kDir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{CheckpointName(10), CheckpointName(20) + ".bad",
                                              CheckpointName(25) + ".bad"}));
  // A quarantined file is not read back by its epoch either.
  EXPECT_TRUE(absl::IsNotFound(ReadCheckpoint(o, 25).status())) << ReadCheckpoint(o, 25).status();
}

}  // namespace
}  // namespace detdb
