// TimeseriesWriter: one row per sample with the interval's throughput and
// percentiles (from the difference of two histogram snapshots), runs
// restart the interval, TPC-C's New-Orders per minute, an unwritable path.
#include "bench/timeseries.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string TmpPath(const char* name) { return ::testing::TempDir() + name; }

TEST(Timeseries, RowsHoldTheIntervalsThroughputAndPercentiles) {
  const std::string path = TmpPath("ts.csv");
  auto w = TimeseriesWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  LatencyHistogram h;
  (*w)->StartRun("dclp", 1);
  for (int i = 0; i < 100; ++i) h.Record(10'000);  // 10 us
  ProgressSample s;
  s.t = 1.0;
  s.committed = 100;
  h.AddTo(&s.latency);
  (*w)->Add(s);
  // The second second: 300 replies, all at 1 ms; its percentiles must not
  // see the first second's 10 us.
  for (int i = 0; i < 300; ++i) h.Record(1'000'000);
  ProgressSample s2;
  s2.t = 2.0;
  s2.committed = 400;
  h.AddTo(&s2.latency);
  (*w)->Add(s2);
  // A second run starts its interval afresh.
  (*w)->StartRun("vll", 2);
  LatencyHistogram h2;
  for (int i = 0; i < 50; ++i) h2.Record(100'000);
  ProgressSample s3;
  s3.t = 0.5;
  s3.committed = 50;
  h2.AddTo(&s3.latency);
  (*w)->Add(s3);
  ASSERT_TRUE((*w)->Close().ok());
  const auto lines = Lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "run,round,t_s,committed,txns_per_s,p50_us,p99_us,new_orders_per_min");
  auto fields = [](const std::string& line) {
    std::istringstream row(line);
    std::vector<std::string> f;
    for (std::string x; std::getline(row, x, ',');) f.push_back(x);
    return f;
  };
  // Percentiles are upper bucket edges: at most 6.25% above the value.
  std::vector<std::string> f = fields(lines[1]);
  ASSERT_GE(f.size(), 7u);
  EXPECT_EQ(lines[1].substr(0, 21), "dclp,1,1.000,100,100,");
  EXPECT_GE(std::stod(f[5]), 10.0);
  EXPECT_LE(std::stod(f[5]), 10.7);
  f = fields(lines[2]);
  ASSERT_GE(f.size(), 7u);
  EXPECT_EQ(f[0], "dclp");
  EXPECT_EQ(f[4], "300");
  EXPECT_GE(std::stod(f[5]), 1000.0);
  EXPECT_LE(std::stod(f[5]), 1063.0);
  EXPECT_GE(std::stod(f[6]), 1000.0);
  EXPECT_EQ(lines[3].substr(0, 17), "vll,2,0.500,50,10");
}

TEST(Timeseries, NoRepliesLeaveThePercentilesEmptyAndTpccGetsNewOrders) {
  const std::string path = TmpPath("ts2.csv");
  auto w = TimeseriesWriter::Open(path);
  ASSERT_TRUE(w.ok());
  (*w)->StartRun("dclp", 1);
  ProgressSample s;
  s.t = 1.0;
  s.committed = 0;
  (*w)->Add(s);
  ProgressSample s2;
  s2.t = 2.0;
  s2.committed = 20;
  s2.new_orders = 10;
  (*w)->Add(s2);
  ASSERT_TRUE((*w)->Close().ok());
  const auto lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "dclp,1,1.000,0,0,,,");
  EXPECT_EQ(lines[2].substr(lines[2].rfind(',')), ",600");  // 10 New-Orders in 1 s
}

TEST(Timeseries, AnUnwritablePathIsAClearError) {
  auto w = TimeseriesWriter::Open("/nonexistent-dir/x.csv");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("/nonexistent-dir/x.csv"), std::string::npos);
}

}  // namespace
}  // namespace detdb
