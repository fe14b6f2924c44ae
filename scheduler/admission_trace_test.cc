// AdmissionTrace: written, read back and replayed; malformed files and a
// failed write are clear errors.
#include "scheduler/admission_trace.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace {

constexpr uint64_t kPeriod = AdmissionController::kClimbPeriodUs;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// A controller fed a few periods (a shrink trial kept, one undone, a
// starvation's growth), each round recorded as partition 3; returns the
// windows it chose.
std::vector<uint64_t> FeedAndRecord(const AdmissionOptions& o, AdmissionTrace* trace) {
  AdmissionController c(o);
  std::vector<uint64_t> windows;
  uint64_t now = 0;
  auto round = [&](const AdmissionSignals& s) {
    c.Adjust(s);
    trace->Record(3, s, c);
    windows.push_back(c.window());
  };
  const double rates[] = {0.4, 0.4, 0.3, 0.4, 0.4};
  for (double rate : rates) {
    for (uint64_t n = 0; n < c.window(); n += 8) round({.admitted = 8, .blocked = 1, .window_bound = true, .now_us = now});
    now += kPeriod;
    round({.window_bound = true, .released = static_cast<uint64_t>(rate * kPeriod), .now_us = now});
  }
  round({.starved = 1, .window_bound = true, .parked = 100, .now_us = now});
  return windows;
}

TEST(AdmissionTrace, WrittenReadAndReplayedExactly) {
  const std::string path = TempPath("written.trace");
  const AdmissionOptions o{.workers = 2, .max_active = 500};
  auto trace = AdmissionTrace::Create(path, o);
  ASSERT_TRUE(trace.ok()) << trace.status();
  const std::vector<uint64_t> windows = FeedAndRecord(o, trace->get());
  ASSERT_TRUE((*trace)->Close().ok());

  auto file = ReadAdmissionTrace(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->options.workers, 2u);
  EXPECT_EQ(file->options.max_active, 500u);
  EXPECT_TRUE(file->options.adaptive);
  ASSERT_EQ(file->records.size(), windows.size());
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(file->records[i].partition, 3u);
    EXPECT_EQ(file->records[i].window, windows[i]) << "round " << i;
  }
  EXPECT_TRUE(file->records.back().climbing) << "the last round started a climb";

  auto changes = ReplayAdmission(file->options, file->records, 3);
  ASSERT_TRUE(changes.ok()) << changes.status();
  // Every change the controller made, in order, with its cause.
  std::vector<uint64_t> seen{windows.front()};
  for (uint64_t w : windows)
    if (w != seen.back()) seen.push_back(w);
  ASSERT_EQ(changes->size() + 1, seen.size());
  std::vector<std::string> causes;
  for (size_t i = 0; i < changes->size(); ++i) {
    EXPECT_EQ((*changes)[i].from, seen[i]);
    EXPECT_EQ((*changes)[i].to, seen[i + 1]);
    causes.push_back((*changes)[i].cause);
  }
  EXPECT_NE(std::find(causes.begin(), causes.end(), "shrink"), causes.end());
  EXPECT_NE(std::find(causes.begin(), causes.end(), "shrink undone"), causes.end());
  // Another partition's rounds: none.
  auto none = ReplayAdmission(file->options, file->records, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(AdmissionTrace, AReplayWithOtherOptionsSaysWhereItDiverged) {
  const std::string path = TempPath("diverged.trace");
  const AdmissionOptions o{.workers = 1, .max_active = 2000};
  auto trace = AdmissionTrace::Create(path, o);
  ASSERT_TRUE(trace.ok());
  FeedAndRecord(o, trace->get());
  ASSERT_TRUE((*trace)->Close().ok());
  auto file = ReadAdmissionTrace(path);
  ASSERT_TRUE(file.ok());
  // Four workers: a minimum and a first window four times as large.
  auto changes = ReplayAdmission({.workers = 4, .max_active = 2000}, file->records, 3);
  ASSERT_FALSE(changes.ok());
  EXPECT_EQ(changes.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(changes.status().message().find("round 1 "), std::string::npos) << changes.status();
}

TEST(AdmissionTrace, TheWarmUpIsInTheHeaderAndOlderTracesReadAsNone) {
  const std::string path = TempPath("warmup.trace");
  const AdmissionOptions o{.workers = 1, .max_active = 2000, .warmup_us = 2 * kPeriod};
  auto trace = AdmissionTrace::Create(path, o);
  ASSERT_TRUE(trace.ok());
  const std::vector<uint64_t> windows = FeedAndRecord(o, trace->get());
  ASSERT_TRUE((*trace)->Close().ok());
  auto file = ReadAdmissionTrace(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->options.warmup_us, 2 * kPeriod);
  auto changes = ReplayAdmission(file->options, file->records, 3);
  EXPECT_TRUE(changes.ok()) << changes.status();
  // Without the warm-up the first two periods would have been measured: a
  // replay with none diverges.
  AdmissionOptions none = file->options;
  none.warmup_us = 0;
  EXPECT_FALSE(ReplayAdmission(none, file->records, 3).ok());

  WriteFile(path, "# detdb admission trace v1 workers=1 max_active=10 adaptive=1\n0 1 0 8 0 1 0 0 0 10 0\n");
  auto old = ReadAdmissionTrace(path);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->options.warmup_us, 0u);
  WriteFile(path, "# detdb admission trace v1 workers=1 max_active=10 adaptive=1 warmup_us=x\n");
  EXPECT_FALSE(ReadAdmissionTrace(path).ok());
}

TEST(AdmissionTrace, MalformedFilesAreClearErrors) {
  const std::string path = TempPath("bad.trace");
  WriteFile(path, "hello\n");
  auto r = ReadAdmissionTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not an admission trace"), std::string::npos) << r.status();

  WriteFile(path, "# detdb admission trace v1 workers=0 max_active=10 adaptive=1\n");
  r = ReadAdmissionTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":1: malformed header"), std::string::npos) << r.status();

  const std::string header = "# detdb admission trace v1 workers=1 max_active=10 adaptive=1\n";
  WriteFile(path, header + "0 1 0 8 0 1 0 0 0 10 0\n0 2 0 8 0 2 0 0 0 10 0\n");
  r = ReadAdmissionTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":3: malformed record"), std::string::npos) << r.status();

  WriteFile(path, header + "0 1 0 8 0 1 0 0 0 10 0 7\n");
  r = ReadAdmissionTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":2: extra field"), std::string::npos) << r.status();

  WriteFile(path, header + "-1 1 0 8 0 1 0 0 0 10 0\n");
  r = ReadAdmissionTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":2: negative number"), std::string::npos) << r.status();

  WriteFile(path, "# detdb admission trace v1 workers=-1 max_active=10 adaptive=1\n");
  r = ReadAdmissionTrace(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":1: malformed header"), std::string::npos) << r.status();

  WriteFile(path, header + "0 1 0 8 0 1 0 0 0 10 0\n\n");
  r = ReadAdmissionTrace(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->records.size(), 1u);

  r = ReadAdmissionTrace(TempPath("no-such.trace"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(AdmissionTrace, AFailedWriteIsReportedAtClose) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  auto trace = AdmissionTrace::Create("/dev/full", {});
  ASSERT_TRUE(trace.ok()) << trace.status();
  AdmissionController c({});
  for (int i = 0; i < 10000; ++i) (*trace)->Record(0, {.admitted = 1, .now_us = static_cast<uint64_t>(i)}, c);
  const absl::Status s = (*trace)->Close();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  (*trace)->Record(0, {}, c);  // after Close: nothing
  EXPECT_TRUE((*trace)->Close().ok()) << "closed once";
}

TEST(AdmissionTrace, CreateInAMissingDirectoryFails) {
  auto trace = AdmissionTrace::Create(TempPath("no/such/dir/x.trace"), {});
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace detdb
