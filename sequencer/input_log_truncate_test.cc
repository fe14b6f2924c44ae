// TruncateInputLogAfter under crashes: the process dies after each of its
// mutating file-system steps in turn; the log left behind must recover
// without an epoch gap, and running the truncation again must finish it.
#include <memory>
#include <string>
#include <vector>

#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/fault_injecting_file_system.h"
#include "sequencer/input_log.h"

namespace detdb {
namespace {

const bool kQuietLogs = [] {
  FLAGS_minloglevel = 3;
  return true;
}();

constexpr uint64_t kConfigHash = 0xC0FFEE;
const std::string kDir = "/log";

// Delegates to a FaultInjectingFileSystem; after `budget` mutating steps
// (Remove, Truncate, SyncDir, Rename) every further one fails: the process
// died there. A step that fails did nothing.
class DyingFileSystem final : public FileSystem {
 public:
  DyingFileSystem(FaultInjectingFileSystem* base, int budget) : base_(base), budget_(budget) {}
  absl::StatusOr<std::unique_ptr<AppendableFile>> NewAppendableFile(const std::string& p) override {
    return base_->NewAppendableFile(p);
  }
  absl::StatusOr<std::string> ReadFile(const std::string& p, uint64_t m) override { return base_->ReadFile(p, m); }
  absl::StatusOr<uint64_t> FileSize(const std::string& p) override { return base_->FileSize(p); }
  absl::StatusOr<bool> FileExists(const std::string& p) override { return base_->FileExists(p); }
  absl::Status Truncate(const std::string& p, uint64_t n) override {
    if (!Step()) return Dead();
    return base_->Truncate(p, n);
  }
  absl::Status Rename(const std::string& a, const std::string& b) override {
    if (!Step()) return Dead();
    return base_->Rename(a, b);
  }
  absl::Status Remove(const std::string& p) override {
    if (!Step()) return Dead();
    return base_->Remove(p);
  }
  absl::Status CreateDir(const std::string& d) override { return base_->CreateDir(d); }
  absl::Status SyncDir(const std::string& d) override {
    if (!Step()) return Dead();
    return base_->SyncDir(d);
  }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& d) override { return base_->ListDir(d); }
  bool died() const { return died_; }

 private:
  bool Step() {
    if (budget_ <= 0) {
      died_ = true;
      return false;
    }
    --budget_;
    return true;
  }
  static absl::Status Dead() { return absl::AbortedError("process died here"); }
  FaultInjectingFileSystem* base_;
  int budget_;
  bool died_ = false;
};

RecoveryOptions Recovery(FileSystem* fs) {
  RecoveryOptions o;
  o.fs = fs;
  o.config_hash = kConfigHash;
  o.max_payload_bytes = 1 << 16;
  o.trim_torn_tail = true;
  return o;
}

// Epochs 1..12 of two sequencers over several small segments.
void WriteLog(FaultInjectingFileSystem* fs) {
  InputLogOptions o;
  o.dir = kDir;
  o.fs = fs;
  o.segment_bytes = 200;
  o.config_hash = kConfigHash;
  o.build_id = 1;
  o.max_payload_bytes = 1 << 16;
  auto w = InputLogWriter::Open(o, RecoveryResult{});
  ASSERT_TRUE(w.ok()) << w.status();
  for (uint64_t e = 1; e <= 12; ++e) {
    for (uint32_t seq = 0; seq < 2; ++seq)
      ASSERT_TRUE((*w)->Append(e, seq, std::string(40, 'a' + seq), /*epoch_end=*/seq == 1).ok());
  }
  ASSERT_TRUE((*w)->Close().ok());
}

uint64_t LastEpoch(FileSystem* fs) {
  auto records = ReadInputLog(kDir, Recovery(fs));
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok() || records->empty()) return 0;
  return records->back().header.epoch;
}

TEST(InputLogTruncateTest, ACrashAfterEveryStepLeavesAGapFreeLogAndARerunFinishes) {
  for (uint64_t cut : {0ull, 3ull, 5ull, 11ull}) {
    for (int budget = 0; budget < 40; ++budget) {
      SCOPED_TRACE(testing::Message() << "cut after epoch " << cut << ", died after " << budget << " steps");
      FaultInjectingFileSystem base;
      WriteLog(&base);
      ASSERT_GE(base.ListDir(kDir)->size(), 4u);
      DyingFileSystem dying(&base, budget);
      auto r = TruncateInputLogAfter(kDir, cut, Recovery(&dying));
      if (r.ok()) {
        EXPECT_EQ(cut, LastEpoch(&base));
        break;  // budget large enough: nothing left to crash in
      }
      ASSERT_TRUE(dying.died()) << r.status();
      base.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
      base.Restart();  // the node restarts
      // The log left behind recovers (no epoch gap) and ends at or after the cut.
      auto left = RecoverInputLog(kDir, Recovery(&base));
      ASSERT_TRUE(left.ok()) << left.status();
      const uint64_t last = LastEpoch(&base);
      EXPECT_GE(last, cut);
      // The restarted node runs the truncation again and it completes.
      auto again = TruncateInputLogAfter(kDir, cut, Recovery(&base));
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(cut, LastEpoch(&base));
    }
  }
}

// DropInputLogBefore (the cut behind a checkpoint): only segments whose
// records are all at or before the checkpoint go, oldest first; a crash
// after any step leaves a log that recovers and still holds every epoch
// after the checkpoint; a rerun finishes.
TEST(InputLogTruncateTest, DroppingBeforeACheckpointKeepsEveryLaterEpochAfterACrashAtAnyStep) {
  for (uint64_t checkpoint : {0ull, 1ull, 4ull, 7ull, 12ull, 20ull}) {
    for (int budget = 0; budget < 20; ++budget) {
      SCOPED_TRACE(testing::Message() << "checkpoint " << checkpoint << ", died after " << budget << " steps");
      FaultInjectingFileSystem base;
      WriteLog(&base);
      const size_t segments = base.ListDir(kDir)->size();
      DyingFileSystem dying(&base, budget);
      auto dropped = DropInputLogBefore(kDir, checkpoint, &dying);
      if (!dropped.ok()) {
        ASSERT_TRUE(dying.died()) << dropped.status();
        base.SimulateCrash(FaultInjectingFileSystem::CrashMode::kDrop);
        base.Restart();  // the node restarts
      }
      for (int round = 0; round < 2; ++round) {
        auto left = RecoverInputLog(kDir, Recovery(&base));
        ASSERT_TRUE(left.ok()) << left.status();
        EXPECT_EQ(left->last_complete_epoch, 12u);
        auto first = InputLogFirstEpoch(kDir, &base);
        ASSERT_TRUE(first.ok() && first->has_value());
        EXPECT_LE(**first, std::min<uint64_t>(checkpoint + 1, 12)) << "an epoch after the checkpoint was dropped";
        if (round == 0) {
          auto again = DropInputLogBefore(kDir, checkpoint, &base);
          ASSERT_TRUE(again.ok()) << again.status();
        }
      }
      auto first = InputLogFirstEpoch(kDir, &base);
      if (checkpoint >= 4) {
        EXPECT_GT(**first, 1u) << "nothing dropped";
      }
      if (checkpoint == 0) {
        EXPECT_EQ(base.ListDir(kDir)->size(), segments);
      }
      if (dropped.ok()) break;
    }
  }
}

}  // namespace
}  // namespace detdb
