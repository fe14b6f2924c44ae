#include "sequencer/input_log.h"

#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/fault_injecting_file_system.h"

namespace detdb {
namespace {

// The crash tests make the writer log an error hundreds of times: quiet.
const bool kQuietLogs = [] {
  FLAGS_minloglevel = 3;
  return true;
}();

using Mode = FaultInjectingFileSystem::CrashMode;
constexpr uint64_t kConfigHash = 0xC0FFEE;
constexpr uint64_t kBuildId = 42;
const std::string kDir = "/log";

std::string Payload(uint64_t epoch, uint32_t seq, size_t n) {
  std::string s(n, '\0');
  uint64_t x = epoch * 1000003 + seq;
  for (auto& c : s) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(x >> 56);
  }
  return s;
}

InputLogOptions WriterOptions(FileSystem* fs, uint64_t segment_bytes = 1024) {
  InputLogOptions o;
  o.dir = kDir;
  o.fs = fs;
  o.segment_bytes = segment_bytes;
  o.config_hash = kConfigHash;
  o.build_id = kBuildId;
  o.max_payload_bytes = 1 << 16;
  return o;
}

RecoveryOptions Recovery(FileSystem* fs, bool trim = true) {
  RecoveryOptions o;
  o.fs = fs;
  o.config_hash = kConfigHash;
  o.max_payload_bytes = 1 << 16;
  o.trim_torn_tail = trim;
  return o;
}

std::unique_ptr<InputLogWriter> OpenWriter(const InputLogOptions& o, const RecoveryResult& r = {}) {
  auto w = InputLogWriter::Open(o, r);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? std::move(*w) : nullptr;
}

void WriteFile(FileSystem* fs, const std::string& path, std::string_view bytes) {
  ASSERT_TRUE(fs->CreateDir(DirName(path)).ok());
  auto f = fs->NewAppendableFile(path);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append(bytes).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE(fs->SyncDir(DirName(path)).ok());
}

std::string Record(uint64_t epoch, uint32_t seq, std::string_view payload, uint64_t hash = kConfigHash,
                   bool end = true) {
  std::string out;
  EncodeRecord({epoch, seq, hash, kBuildId, end}, payload, &out);
  return out;
}

bool Contains(const absl::Status& s, std::string_view part) {
  return std::string(s.message()).find(part) != std::string::npos;
}

// --- Format -----------------------------------------------------------------

TEST(LogRecordTest, RoundTripAndOutcomes) {
  const std::string payload = Payload(7, 3, 100);
  const std::string rec = Record(7, 3, payload);
  ASSERT_EQ(EncodedRecordSize(100), rec.size());
  DecodeResult r = DecodeRecord(rec, 1000);
  ASSERT_EQ(DecodeOutcome::kOk, r.outcome) << r.error;
  EXPECT_EQ(rec.size(), r.size);
  EXPECT_EQ(7u, r.record.header.epoch);
  EXPECT_EQ(3u, r.record.header.sequencer_id);
  EXPECT_EQ(kConfigHash, r.record.header.config_hash);
  EXPECT_EQ(kBuildId, r.record.header.build_id);
  EXPECT_EQ(payload, r.record.payload);
  // Trailing bytes are not part of the record.
  EXPECT_EQ(DecodeOutcome::kOk, DecodeRecord(rec + "junk", 1000).outcome);
  // Every proper prefix is incomplete; every bit flip is corrupt or, in the
  // length field, incomplete or corrupt, never OK.
  for (size_t n = 0; n < rec.size(); ++n) {
    EXPECT_EQ(DecodeOutcome::kIncomplete, DecodeRecord(std::string_view(rec).substr(0, n), 1000).outcome) << n;
  }
  for (size_t bit = 0; bit < rec.size() * 8; ++bit) {
    std::string bad = rec;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_NE(DecodeOutcome::kOk, DecodeRecord(bad, 1000).outcome) << bit;
  }
  EXPECT_EQ(DecodeOutcome::kCorrupt, DecodeRecord("XLOG", 1000).outcome);
}

TEST(LogRecordTest, PayloadLengthOverTheLimitIsRejectedFromTheHeaderAlone) {
  std::string rec = Record(1, 0, "abc");
  const uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(rec.data() + 20, &huge, 4);  // the length field
  DecodeResult r = DecodeRecord(std::string_view(rec).substr(0, kLogHeaderBytes), 1 << 20);
  EXPECT_EQ(DecodeOutcome::kCorrupt, r.outcome);
  EXPECT_NE(std::string::npos, r.error.find("over the limit")) << r.error;
  // At the limit is fine.
  const std::string at_limit = Record(1, 0, std::string(64, 'x'));
  EXPECT_EQ(DecodeOutcome::kOk, DecodeRecord(at_limit, 64).outcome);
  EXPECT_EQ(DecodeOutcome::kCorrupt, DecodeRecord(at_limit, 63).outcome);
}

TEST(LogRecordTest, SegmentNames) {
  EXPECT_EQ("log-00000000000000000042.seg", SegmentName(42));
  EXPECT_EQ(42u, *ParseSegmentName("log-00000000000000000042.seg"));
  EXPECT_EQ(UINT64_MAX, *ParseSegmentName(SegmentName(UINT64_MAX)));
  EXPECT_FALSE(ParseSegmentName("log-42.seg"));
  EXPECT_FALSE(ParseSegmentName("log-0000000000000000004x.seg"));
  EXPECT_FALSE(ParseSegmentName("log-99999999999999999999.seg"));  // > 2^64
  EXPECT_FALSE(ParseSegmentName("LOCK"));
}

// --- Writer and recovery ------------------------------------------------------

TEST(InputLogTest, RoundTripAcrossSegmentsOnDisk) {
  char tmpl[] = "/tmp/detdb_input_log_test.XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(tmpl));
  const std::string dir = JoinPath(tmpl, "log");
  InputLogOptions o = WriterOptions(PosixFileSystem(), 2000);
  o.dir = dir;
  std::vector<uint64_t> durable_seen;
  o.on_durable = [&](uint64_t e) { durable_seen.push_back(e); };
  std::vector<LogRecord> want;
  {
    auto w = OpenWriter(o);
    for (uint64_t e = 1; e <= 40; ++e) {
      for (uint32_t s = 0; s < 2; ++s) {
        std::string p = Payload(e, s, (e * 37 + s) % 300);
        ASSERT_TRUE(w->Append(e, s, p, /*epoch_end=*/s == 1).ok());
        want.push_back({{e, s, kConfigHash, kBuildId, s == 1}, p});
      }
      if (e % 10 == 0) {
        ASSERT_TRUE(w->Flush().ok());
      }
    }
    ASSERT_TRUE(w->Close().ok());
    EXPECT_EQ(40u, w->durable_epoch());
    EXPECT_FALSE(w->Append(41, 0, "x").ok());  // closed
  }
  ASSERT_FALSE(durable_seen.empty());
  for (size_t i = 1; i < durable_seen.size(); ++i) EXPECT_LT(durable_seen[i - 1], durable_seen[i]);
  EXPECT_EQ(40u, durable_seen.back());

  RecoveryOptions ro = Recovery(PosixFileSystem());
  auto r = RecoverInputLog(dir, ro);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->segments.size(), 3u);
  EXPECT_EQ(80u, r->records);
  EXPECT_TRUE(r->torn_segment.empty());
  for (size_t i = 0; i < r->segments.size(); ++i) {
    const SegmentInfo& s = r->segments[i];
    EXPECT_EQ(s.first_epoch, s.min_epoch);
    EXPECT_EQ(s.file_bytes, s.verified_end);
    if (i > 0) {
      EXPECT_EQ(r->segments[i - 1].max_epoch + 1, s.min_epoch);  // I4: epochs never span segments
    }
  }
  // Reopen and append after the verified end.
  {
    auto w = OpenWriter(o, *r);
    EXPECT_EQ(40u, w->durable_epoch());
    EXPECT_EQ(absl::StatusCode::kInvalidArgument, w->Append(40, 1, "x").code());  // I1
    EXPECT_EQ(absl::StatusCode::kInvalidArgument, w->Append(42, 0, "x").code());  // I2
    ASSERT_TRUE(w->Append(41, 0, "more").ok());
    ASSERT_TRUE(w->Close().ok());
  }
  want.push_back({{41, 0, kConfigHash, kBuildId, true}, "more"});
  auto got = ReadInputLog(dir, ro);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want.size(), got->size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].header.epoch, (*got)[i].header.epoch) << i;
    EXPECT_EQ(want[i].header.sequencer_id, (*got)[i].header.sequencer_id) << i;
    EXPECT_EQ(want[i].header.build_id, (*got)[i].header.build_id) << i;
    EXPECT_EQ(want[i].header.epoch_end, (*got)[i].header.epoch_end) << i;
    EXPECT_EQ(want[i].payload, (*got)[i].payload) << i;
  }
  (void)std::system((std::string("rm -rf ") + tmpl).c_str());
}

TEST(InputLogTest, EmptyOrMissingDirectoryIsAnEmptyLog) {
  FaultInjectingFileSystem fs;
  auto r = RecoverInputLog("/nothing", Recovery(&fs));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(0u, r->records);
  EXPECT_FALSE(r->last);
}

// Writes epochs 1..n (sequencer 0) into one segment; returns its bytes and
// the offset of the last record.
std::string OneSegment(int n, size_t* last_offset) {
  std::string seg;
  for (int e = 1; e <= n; ++e) {
    *last_offset = seg.size();
    seg += Record(e, 0, Payload(e, 0, 20 + e));
  }
  return seg;
}

TEST(InputLogTest, TornTailAtEveryByteOfTheLastRecordIsTrimmedExactly) {
  size_t last = 0;
  const std::string seg = OneSegment(5, &last);
  const std::string path = JoinPath(kDir, SegmentName(1));
  for (size_t cut = last; cut < seg.size(); ++cut) {
    for (bool garble : {false, true}) {
      SCOPED_TRACE(testing::Message() << "cut " << cut << (garble ? " garbled" : ""));
      FaultInjectingFileSystem fs;
      std::string bytes = seg.substr(0, cut);
      if (garble) bytes += std::string(1 + cut % 7, '\xA5');  // a torn sector's junk
      WriteFile(&fs, path, bytes);
      auto r = RecoverInputLog(kDir, Recovery(&fs));
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(4u, r->records);
      EXPECT_EQ(4u, r->last->epoch);
      if (bytes.size() > last) {
        EXPECT_EQ(SegmentName(1), r->torn_segment);
        EXPECT_EQ(last, r->torn_offset);
        EXPECT_EQ(bytes.size() - last, r->torn_bytes);
        EXPECT_TRUE(r->torn_trimmed);
      } else {
        EXPECT_TRUE(r->torn_segment.empty());
      }
      EXPECT_EQ(last, *fs.FileSize(path));
      // The next append starts at the verified offset.
      auto w = OpenWriter(WriterOptions(&fs, 1 << 20), *r);
      ASSERT_TRUE(w->Append(5, 0, "again").ok());
      ASSERT_TRUE(w->Append(6, 0, "and more").ok());
      ASSERT_TRUE(w->Close().ok());
      auto got = ReadInputLog(kDir, Recovery(&fs));
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(6u, got->size());
      EXPECT_EQ("again", (*got)[4].payload);
      EXPECT_EQ(Payload(4, 0, 24), (*got)[3].payload);
    }
  }
}

TEST(InputLogTest, BitFlipInTheLastRecordIsATornTail) {
  size_t last = 0;
  const std::string seg = OneSegment(3, &last);
  for (size_t off = last; off < seg.size(); ++off) {
    FaultInjectingFileSystem fs;
    const std::string path = JoinPath(kDir, SegmentName(1));
    WriteFile(&fs, path, seg);
    ASSERT_TRUE(fs.FlipBit(path, off, static_cast<int>(off % 8)).ok());
    auto r = RecoverInputLog(kDir, Recovery(&fs, /*trim=*/false));
    ASSERT_TRUE(r.ok()) << off << ": " << r.status();
    EXPECT_EQ(2u, r->records);
    EXPECT_EQ(last, r->torn_offset);
    EXPECT_EQ(seg.size(), *fs.FileSize(path));  // read-only: untouched
  }
}

TEST(InputLogTest, BitFlipInAMiddleRecordRefusesToStartNamingFileAndOffset) {
  std::string seg;
  size_t mid_start = 0, mid_end = 0;
  for (int e = 1; e <= 5; ++e) {
    if (e == 3) mid_start = seg.size();
    seg += Record(e, 0, Payload(e, 0, 30));
    if (e == 3) mid_end = seg.size();
  }
  const std::string path = JoinPath(kDir, SegmentName(1));
  for (size_t off = mid_start; off < mid_end; ++off) {
    FaultInjectingFileSystem fs;
    WriteFile(&fs, path, seg);
    ASSERT_TRUE(fs.FlipBit(path, off, 3).ok());
    auto r = RecoverInputLog(kDir, Recovery(&fs));
    ASSERT_FALSE(r.ok()) << "flip at " << off;
    EXPECT_EQ(absl::StatusCode::kDataLoss, r.status().code());
    EXPECT_TRUE(Contains(r.status(), path)) << r.status();
    EXPECT_TRUE(Contains(r.status(), "offset " + std::to_string(mid_start) + ":")) << r.status();
    EXPECT_EQ(seg.size(), *fs.FileSize(path));  // nothing trimmed
  }
}

TEST(InputLogTest, DamageInASegmentThatIsNotTheLastRefuses) {
  FaultInjectingFileSystem fs;
  const std::string first = Record(1, 0, "a") + Record(2, 0, "b");
  WriteFile(&fs, JoinPath(kDir, SegmentName(1)), first.substr(0, first.size() - 1));  // cut
  WriteFile(&fs, JoinPath(kDir, SegmentName(3)), Record(3, 0, "c"));
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), SegmentName(1))) << r.status();
  EXPECT_TRUE(Contains(r.status(), "later segments follow")) << r.status();
}

TEST(InputLogTest, EpochGapRefuses) {
  FaultInjectingFileSystem fs;
  const std::string a = Record(1, 0, "a", kConfigHash, false) + Record(1, 1, "x") +
                        Record(2, 0, "b", kConfigHash, false) + Record(2, 1, "y");
  WriteFile(&fs, JoinPath(kDir, SegmentName(1)), a + Record(4, 0, "d"));
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(absl::StatusCode::kDataLoss, r.status().code());
  EXPECT_TRUE(Contains(r.status(), "epoch gap")) << r.status();
  EXPECT_TRUE(Contains(r.status(), "offset " + std::to_string(a.size()))) << r.status();
}

TEST(InputLogTest, OutOfOrderAndMisnamedSegmentsRefuse) {
  {
    FaultInjectingFileSystem fs;
    WriteFile(&fs, JoinPath(kDir, SegmentName(1)), Record(1, 1, "a") + Record(1, 0, "b"));
    auto r = RecoverInputLog(kDir, Recovery(&fs));
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(r.status(), "out of order")) << r.status();
  }
  {
    FaultInjectingFileSystem fs;
    WriteFile(&fs, JoinPath(kDir, SegmentName(7)), Record(1, 0, "a"));
    auto r = RecoverInputLog(kDir, Recovery(&fs));
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(r.status(), "segment name")) << r.status();
  }
}

TEST(InputLogTest, ConfigHashMismatchRefuses) {
  FaultInjectingFileSystem fs;
  const std::string path = JoinPath(kDir, SegmentName(1));
  WriteFile(&fs, path, Record(1, 0, "a") + Record(2, 0, "b", /*hash=*/999));
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(absl::StatusCode::kFailedPrecondition, r.status().code());
  EXPECT_TRUE(Contains(r.status(), path)) << r.status();
  EXPECT_TRUE(Contains(r.status(), "offset " + std::to_string(EncodedRecordSize(1)))) << r.status();
  EXPECT_TRUE(Contains(r.status(), "config hash")) << r.status();
  RecoveryOptions any = Recovery(&fs);
  any.check_config_hash = false;
  EXPECT_TRUE(RecoverInputLog(kDir, any).ok());
}

TEST(InputLogTest, HugeLengthFollowedByValidRecordsRefuses) {
  FaultInjectingFileSystem fs;
  std::string bad = Record(2, 0, "b");
  const uint32_t huge = 0xFFFFFFF0u;
  std::memcpy(bad.data() + 20, &huge, 4);
  const std::string path = JoinPath(kDir, SegmentName(1));
  WriteFile(&fs, path, Record(1, 0, "a") + bad + Record(3, 0, "c"));
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "over the limit")) << r.status();
  EXPECT_TRUE(Contains(r.status(), "a valid record follows")) << r.status();
}

TEST(InputLogTest, ReadOnlyRecoveryLeavesTheTailAndTheWriterRefusesIt) {
  FaultInjectingFileSystem fs;
  const std::string path = JoinPath(kDir, SegmentName(1));
  const std::string seg = Record(1, 0, "a") + Record(2, 0, "b");
  WriteFile(&fs, path, seg.substr(0, seg.size() - 3));
  auto r = RecoverInputLog(kDir, Recovery(&fs, /*trim=*/false));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->torn_trimmed);
  EXPECT_EQ(seg.size() - 3, *fs.FileSize(path));
  EXPECT_FALSE(InputLogWriter::Open(WriterOptions(&fs), *r).ok());
}

TEST(InputLogTest, AnEpochIsDurableOnceItsEpochEndRecordIs) {
  FaultInjectingFileSystem fs;
  auto w = OpenWriter(WriterOptions(&fs));
  ASSERT_TRUE(w->Append(1, 0, "a", /*epoch_end=*/false).ok());
  ASSERT_TRUE(w->Flush().ok());
  EXPECT_EQ(0u, w->durable_epoch());
  ASSERT_TRUE(w->Append(1, 1, "b", /*epoch_end=*/true).ok());
  ASSERT_TRUE(w->Flush().ok());
  EXPECT_EQ(1u, w->durable_epoch());
  absl::Status closed = w->Append(1, 2, "c");
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, closed.code());
  EXPECT_TRUE(Contains(closed, "closed")) << closed;
  ASSERT_TRUE(w->Append(2, 0, "d", /*epoch_end=*/false).ok());
  ASSERT_TRUE(w->Close().ok());
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(1u, r->last_complete_epoch);
  EXPECT_FALSE(r->last_epoch_ended);
  // A reopened writer reports the last complete epoch durable and lets the
  // open one continue.
  auto w2 = OpenWriter(WriterOptions(&fs), *r);
  EXPECT_EQ(1u, w2->durable_epoch());
  ASSERT_TRUE(w2->Append(2, 1, "e").ok());
  ASSERT_TRUE(w2->Flush().ok());
  EXPECT_EQ(2u, w2->durable_epoch());
}

TEST(InputLogTest, ARecordAfterItsEpochEndRefuses) {
  FaultInjectingFileSystem fs;
  const std::string a = Record(1, 0, "a");
  WriteFile(&fs, JoinPath(kDir, SegmentName(1)), a + Record(1, 1, "b"));
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status(), "offset " + std::to_string(a.size()))) << r.status();
  EXPECT_TRUE(Contains(r.status(), "epoch_end")) << r.status();
}

TEST(InputLogTest, AnEmptyLastSegmentIsRemovedByTheTrim) {
  FaultInjectingFileSystem fs;
  WriteFile(&fs, JoinPath(kDir, SegmentName(1)), Record(1, 0, "a"));
  WriteFile(&fs, JoinPath(kDir, SegmentName(2)), "");  // created, crashed before its first record
  auto ro = RecoverInputLog(kDir, Recovery(&fs, /*trim=*/false));
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_FALSE(InputLogWriter::Open(WriterOptions(&fs), *ro).ok());
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(2u, r->segments.size());
  EXPECT_TRUE(r->segments[1].removed);
  EXPECT_FALSE(*fs.FileExists(JoinPath(kDir, SegmentName(2))));
  auto w = OpenWriter(WriterOptions(&fs, 1), *r);  // every epoch rotates
  ASSERT_TRUE(w->Append(2, 0, "b").ok());
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(2u, ReadInputLog(kDir, Recovery(&fs))->size());
  EXPECT_TRUE(*fs.FileExists(JoinPath(kDir, SegmentName(2))));
}

TEST(InputLogTest, AppendRejectsBadInputBeforeQueueing) {
  FaultInjectingFileSystem fs;
  InputLogOptions o = WriterOptions(&fs);
  o.max_payload_bytes = 100;
  auto w = OpenWriter(o);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, w->Append(1, 0, std::string(101, 'x')).code());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, w->Append(0, 0, "x").code());
  ASSERT_TRUE(w->Append(1, 0, std::string(100, 'x')).ok());
  ASSERT_TRUE(w->Close().ok());
  auto got = ReadInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(1u, got->size());
}

// Appends epochs [from, to) for two sequencers, crashing at a random moment;
// returns the durable epoch read just before the crash.
uint64_t AppendAndCrash(FaultInjectingFileSystem* fs, const RecoveryResult& rec, uint64_t from, uint64_t to,
                        std::mt19937_64* rng, Mode mode, uint64_t seed) {
  auto w = OpenWriter(WriterOptions(fs, 700), rec);
  const uint64_t crash_at = from + (*rng)() % (to - from);
  uint64_t durable = 0;
  for (uint64_t e = from; e < to; ++e) {
    for (uint32_t s = 0; s < 2; ++s) EXPECT_TRUE(w->Append(e, s, Payload(e, s, (*rng)() % 200), s == 1).ok());
    if ((*rng)() % 6 == 0) {
      EXPECT_TRUE(w->Flush().ok());
    }
    if ((*rng)() % 10 == 0) std::this_thread::sleep_for(std::chrono::microseconds((*rng)() % 200));
    if (e == crash_at) {
      durable = w->durable_epoch();
      fs->SimulateCrash(mode, seed);
      break;
    }
  }
  (void)w->Close();  // fails: the "process" is gone
  fs->Restart();     // the next one starts
  return durable;
}

void CheckRecovered(FaultInjectingFileSystem* fs, uint64_t durable, RecoveryResult* out) {
  std::vector<LogRecord> got;
  auto r = RecoverInputLog(kDir, Recovery(fs), [&](const RecordLocation&, const LogRecordView& v) {
    got.push_back({v.header, std::string(v.payload)});
    return absl::OkStatus();
  });
  ASSERT_TRUE(r.ok()) << r.status();
  // What survived is a prefix of what was appended, and holds every epoch
  // that was reported durable.
  ASSERT_GE(got.size(), 2 * durable);
  for (size_t i = 0; i < got.size(); ++i) {
    const uint64_t e = i / 2 + 1;
    const uint32_t s = i % 2;
    ASSERT_EQ(e, got[i].header.epoch) << i;
    ASSERT_EQ(s, got[i].header.sequencer_id) << i;
    ASSERT_EQ(Payload(e, s, got[i].payload.size()), got[i].payload) << i;
  }
  *out = *r;
}

TEST(InputLogTest, CrashLosesNothingReportedDurable) {
  for (Mode mode : {Mode::kDrop, Mode::kTear}) {
    for (uint64_t seed = 0; seed < 60; ++seed) {
      SCOPED_TRACE(testing::Message() << (mode == Mode::kDrop ? "drop" : "tear") << " seed " << seed);
      std::mt19937_64 rng(seed);
      FaultInjectingFileSystem fs;
      RecoveryResult rec;
      uint64_t next = 1;
      for (int round = 0; round < 3; ++round) {
        const uint64_t durable = AppendAndCrash(&fs, rec, next, next + 30, &rng, mode, seed * 10 + round);
        ASSERT_GE(durable + 1, next);
        CheckRecovered(&fs, durable, &rec);
        if (HasFatalFailure()) return;
        // Continue after the last complete epoch; a half-logged epoch (one
        // sequencer of two) is continued by the other sequencer.
        next = rec.last ? rec.last->epoch + 1 : 1;
        if (rec.last && rec.last->sequencer_id == 0) {
          auto w = OpenWriter(WriterOptions(&fs, 700), rec);
          ASSERT_TRUE(w->Append(rec.last->epoch, 1, Payload(rec.last->epoch, 1, 5)).ok());
          ASSERT_TRUE(w->Close().ok());
          CheckRecovered(&fs, 0, &rec);
        }
      }
    }
  }
}

TEST(InputLogTest, FsyncErrorStopsTheWriterForGood) {
  FaultInjectingFileSystem fs;
  InputLogOptions o = WriterOptions(&fs, 1 << 20);
  int failures = 0;
  std::string failure;
  o.on_failure = [&](const absl::Status& s) {
    ++failures;
    failure = s.ToString();
  };
  auto w = OpenWriter(o);
  for (uint64_t e = 1; e <= 5; ++e) ASSERT_TRUE(w->Append(e, 0, Payload(e, 0, 10)).ok());
  ASSERT_TRUE(w->Flush().ok());
  ASSERT_EQ(5u, w->durable_epoch());
  fs.FailNextSync();
  ASSERT_TRUE(w->Append(6, 0, "x").ok());
  absl::Status s = w->Flush();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s, "fdatasync")) << s;
  EXPECT_TRUE(Contains(s, "Input/output error")) << s;
  EXPECT_TRUE(Contains(s, SegmentName(1))) << s;
  EXPECT_EQ(s, w->status());
  EXPECT_EQ(s, w->Append(7, 0, "y"));  // sticky
  EXPECT_EQ(5u, w->durable_epoch());
  EXPECT_EQ(1, fs.failed_syncs());  // never retried
  EXPECT_EQ(1, failures);
  EXPECT_TRUE(Contains(absl::InternalError(failure), "Input/output error"));
  EXPECT_EQ(s, w->Close());
  EXPECT_EQ(1, fs.failed_syncs());
  fs.SimulateCrash(Mode::kDrop);
  fs.Restart();
  auto got = ReadInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(5u, got->size());
}

TEST(InputLogTest, FsyncErrorOnRotationStopsTheWriter) {
  FaultInjectingFileSystem fs;
  auto w = OpenWriter(WriterOptions(&fs, 100));
  fs.FailSyncAfter(3);
  absl::Status s;
  uint64_t e = 1;
  for (; e <= 50 && s.ok(); ++e) {
    s = w->Append(e, 0, Payload(e, 0, 60));
    if (s.ok()) s = w->Flush();
  }
  ASSERT_FALSE(s.ok());
  const uint64_t durable = w->durable_epoch();
  EXPECT_LE(durable, 3u);
  EXPECT_EQ(1, fs.failed_syncs());
  (void)w->Close();
  fs.ClearFaults();
  fs.SimulateCrash(Mode::kDrop);
  fs.Restart();
  auto got = ReadInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GE(got->size(), durable);
}

TEST(InputLogTest, DiskFullStopsTheWriterAndRecoveryTrimsThePartialRecord) {
  FaultInjectingFileSystem fs;
  auto w = OpenWriter(WriterOptions(&fs, 1 << 20));
  for (uint64_t e = 1; e <= 3; ++e) ASSERT_TRUE(w->Append(e, 0, Payload(e, 0, 100)).ok());
  ASSERT_TRUE(w->Flush().ok());
  fs.SetSpaceLimit(*fs.FileSize(JoinPath(kDir, SegmentName(1))) + 50);
  ASSERT_TRUE(w->Append(4, 0, Payload(4, 0, 100)).ok());
  absl::Status s = w->Flush();
  EXPECT_EQ(absl::StatusCode::kResourceExhausted, s.code()) << s;
  EXPECT_TRUE(Contains(s, "No space left")) << s;
  EXPECT_EQ(3u, w->durable_epoch());
  EXPECT_FALSE(w->Append(5, 0, "x").ok());
  (void)w->Close();
  fs.ClearFaults();
  auto r = RecoverInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(3u, r->records);
  EXPECT_EQ(50u, r->torn_bytes);
  auto w2 = OpenWriter(WriterOptions(&fs, 1 << 20), *r);
  ASSERT_TRUE(w2->Append(4, 0, "fits now").ok());
  ASSERT_TRUE(w2->Close().ok());
  EXPECT_EQ(4u, ReadInputLog(kDir, Recovery(&fs))->size());
}

TEST(InputLogTest, SyncModeNoneNeverSyncsButReportsWritten) {
  FaultInjectingFileSystem fs;
  InputLogOptions o = WriterOptions(&fs, 300);
  o.sync_mode = LogSyncMode::kNone;
  auto w = OpenWriter(o);
  for (uint64_t e = 1; e <= 20; ++e) ASSERT_TRUE(w->Append(e, 0, Payload(e, 0, 50)).ok());
  ASSERT_TRUE(w->Flush().ok());
  EXPECT_EQ(20u, w->durable_epoch());
  ASSERT_TRUE(w->Close().ok());
  EXPECT_EQ(0, fs.syncs());
  EXPECT_EQ(20u, ReadInputLog(kDir, Recovery(&fs))->size());
}

TEST(InputLogTest, ConcurrentAppendersGroupCommit) {
  FaultInjectingFileSystem fs;
  auto w = OpenWriter(WriterOptions(&fs, 4096));
  // Four threads take turns by epoch: thread t appends sequencer t's batch
  // of every epoch, in (epoch, sequencer) order enforced by a turn counter.
  std::atomic<uint64_t> turn{0};
  constexpr uint64_t kEpochs = 200;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t e = 1; e <= kEpochs; ++e) {
        const uint64_t mine = (e - 1) * 4 + t;
        while (turn.load(std::memory_order_acquire) != mine) std::this_thread::yield();
        EXPECT_TRUE(w->Append(e, t, Payload(e, t, 16), t == 3).ok());
        turn.store(mine + 1, std::memory_order_release);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(w->Flush().ok());
  EXPECT_EQ(kEpochs, w->durable_epoch());
  EXPECT_LE(w->groups(), kEpochs * 4);
  ASSERT_TRUE(w->Close().ok());
  auto got = ReadInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(kEpochs * 4, got->size());
}

// A group's records reach the file in one write per segment (not one per
// record), and a group that crosses segments splits at the same records as
// before: every record reads back in order.
TEST(InputLogTest, AGroupIsOneWritePerSegment) {
  for (const uint64_t segment_bytes : {uint64_t{1} << 20, uint64_t{400}}) {
    SCOPED_TRACE(segment_bytes);
    FaultInjectingFileSystem fs;
    InputLogOptions o = WriterOptions(&fs, segment_bytes);
    o.lazy_sync = std::chrono::seconds(60);  // lazy records wait for the Flush: one group
    auto w = OpenWriter(o);
    ASSERT_NE(w, nullptr);
    constexpr uint64_t kEpochs = 20;
    for (uint64_t e = 1; e <= kEpochs; ++e) ASSERT_TRUE(w->Append(e, 0, Payload(e, 0, 100), true, /*lazy=*/true).ok());
    const int64_t before = fs.appends();
    ASSERT_TRUE(w->Flush().ok());
    EXPECT_EQ(1u, w->groups());
    auto segments = fs.ListDir(kDir);
    ASSERT_TRUE(segments.ok());
    // One write per segment the group touched (1 with 1 MiB segments; a
    // new segment every few records with 400 bytes).
    EXPECT_EQ(static_cast<int64_t>(segments->size()), fs.appends() - before);
    if (segment_bytes == 400) {
      EXPECT_GT(segments->size(), 1u);
    }
    ASSERT_TRUE(w->Close().ok());
    auto got = ReadInputLog(kDir, Recovery(&fs));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(kEpochs, got->size());
    for (uint64_t e = 1; e <= kEpochs; ++e) {
      EXPECT_EQ(e, (*got)[e - 1].header.epoch);
      EXPECT_EQ(Payload(e, 0, 100), (*got)[e - 1].payload);
    }
  }
}

TEST(InputLogTest, AMinimumSyncIntervalGathersTheRecordsThatArriveMeanwhile) {
  FaultInjectingFileSystem fs;
  InputLogOptions o = WriterOptions(&fs, uint64_t{1} << 20);
  o.min_sync_interval = std::chrono::seconds(10);
  auto w = OpenWriter(o);
  ASSERT_NE(w, nullptr);
  // The first group starts at once (no sync before it).
  ASSERT_TRUE(w->Append(1, 0, Payload(1, 0, 100), true, /*lazy=*/false).ok());
  for (int i = 0; i < 2000 && w->durable_epoch() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(1u, w->durable_epoch());
  ASSERT_EQ(1u, w->groups());
  // The next ones wait for the interval: nothing more is synced meanwhile.
  for (uint64_t e = 2; e <= 20; ++e) ASSERT_TRUE(w->Append(e, 0, Payload(e, 0, 100), true, /*lazy=*/false).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(1u, w->durable_epoch());
  EXPECT_EQ(1u, w->groups());
  // A Flush does not wait for it: one more group holds all 19.
  ASSERT_TRUE(w->Flush().ok());
  EXPECT_EQ(20u, w->durable_epoch());
  EXPECT_EQ(2u, w->groups());
  ASSERT_TRUE(w->Close().ok());
  auto got = ReadInputLog(kDir, Recovery(&fs));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(20u, got->size());
}

}  // namespace
}  // namespace detdb
