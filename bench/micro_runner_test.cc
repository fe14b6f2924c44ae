// The in-process closed-loop driver of the microbenchmark and its latency
// histogram.
#include "bench/micro_runner.h"

#include <string>

#include <gtest/gtest.h>

#include "bench/histogram.h"
#include "lockmgr/lock_manager.h"

namespace detdb {
namespace {

TEST(LatencyHistogram, PercentilesWithinBucketError) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v * 10);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_NEAR(static_cast<double>(h.Percentile(0.5)), 500000, 500000 * 0.07);
  EXPECT_NEAR(static_cast<double>(h.Percentile(0.99)), 990000, 990000 * 0.07);
  EXPECT_GE(h.Percentile(1.0), 1000000u);
}

// A short run of 3,000 txns on 2 partitions, 20% of them multi-partition.
MicroRunOptions SmallRun() {
  MicroRunOptions o;
  o.workload.partitions = 2;
  o.workload.records_per_partition = 2000;
  o.workload.contention = 0.05;
  o.workload.multipartition = 0.2;
  o.epoch_us = 300;
  o.txns = 3000;
  o.outstanding = 300;
  o.lock.table_size = 1 << 12;
  // Without the per-operation invariant check of debug builds (the engine's
  // and lockmgr's tests run it): under TSan it made this test take 45 s.
  o.lock.check_invariants = false;
  return o;
}

// Every lock manager commits the same txns and reaches the same state.
TEST(RunMicro, EveryLockManagerReachesTheSameDigest) {
  MicroRunOptions o = SmallRun();
  o.workload.write_fraction = 0.7;
  o.workers = 2;
  uint64_t digest = 0;
  for (const std::string& name : LockManagerNames()) {
    o.lock_manager = name;
    auto r = RunMicro(o);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_EQ(r->committed, 3000u) << name;
    EXPECT_GT(r->txns_per_sec, 0) << name;
    EXPECT_GT(r->p99_us, 0u) << name;
    // The threads' CPU split: both sides did work, and no more than the
    // whole process used.
    EXPECT_GT(r->lock_us_per_txn, 0) << name;
    EXPECT_GT(r->worker_us_per_txn, 0) << name;
    EXPECT_LE(r->lock_us_per_txn + r->worker_us_per_txn, r->cpu_us_per_txn * 1.05) << name;
    if (digest == 0) digest = r->digest;
    EXPECT_EQ(r->digest, digest) << name;
  }
}

// A run's admission trace (--admission_trace) holds every partition's
// rounds, and fresh controllers fed them choose the recorded windows.
TEST(RunMicro, AnAdmissionTraceReplaysExactly) {
  const std::string path = ::testing::TempDir() + "/run_micro.admission_trace";
  MicroRunOptions o = SmallRun();
  const AdmissionOptions ao = EngineAdmissionOptions(o.workers, o.lock.max_active, /*adaptive=*/true);
  auto trace = AdmissionTrace::Create(path, ao);
  ASSERT_TRUE(trace.ok()) << trace.status();
  o.admission_trace = trace->get();
  auto r = RunMicro(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE((*trace)->Close().ok());
  auto file = ReadAdmissionTrace(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->options.workers, ao.workers);
  EXPECT_EQ(file->options.max_active, ao.max_active);
  EXPECT_EQ(file->options.warmup_us, kAdmissionWarmupUs);
  uint64_t admitted[2] = {0, 0};
  for (const AdmissionTraceRecord& rec : file->records) {
    ASSERT_LT(rec.partition, 2u);
    admitted[rec.partition] += rec.signals.admitted;
  }
  // Each partition admitted every txn that touches it: at least its share.
  EXPECT_GT(admitted[0], 1000u);
  EXPECT_GT(admitted[1], 1000u);
  for (uint32_t p = 0; p < 2; ++p) {
    auto changes = ReplayAdmission(file->options, file->records, p);
    EXPECT_TRUE(changes.ok()) << changes.status();
  }
}

}  // namespace
}  // namespace detdb
