// The microbenchmark's txn generator: hot and cold keys, multi-partition txns,
// the depth workload, option checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "workloads/micro/micro.h"
#include "common/partitioner.h"
#include "workloads/micro/micro_table.h"

namespace detdb {
namespace {

TEST(MicroGenerator, SinglePartitionTxnsHaveOneHotKeyAndDistinctKeys) {
  MicroOptions o;
  o.partitions = 3;
  o.records_per_partition = 1000;
  o.contention = 0.01;  // 100 hot records per partition
  o.write_fraction = 0.5;
  ASSERT_TRUE(MicroGenerator::Validate(o).ok());
  MicroGenerator g(o);
  ModPartitioner parts(3);
  int writes = 0, keys = 0;
  for (int i = 0; i < 500; ++i) {
    pb::Txn t;
    g.Next(&t);
    ASSERT_EQ(t.read_set_size(), 10);
    std::set<Key> distinct(t.read_set().begin(), t.read_set().end());
    EXPECT_EQ(distinct.size(), 10u);
    std::set<uint32_t> partitions;
    int hot = 0;
    for (Key k : t.read_set()) {
      partitions.insert(parts.PartitionOf(k));
      hot += KeyRow(k) / 3 < 100;
    }
    EXPECT_EQ(partitions.size(), 1u);
    EXPECT_EQ(hot, 1);
    for (Key k : t.write_set()) EXPECT_TRUE(distinct.count(k)) << "writes are read-modify-write";
    writes += t.write_set_size();
    keys += 10;
  }
  EXPECT_NEAR(static_cast<double>(writes) / keys, 0.5, 0.05);
}

TEST(MicroGenerator, MultiPartitionTxnsSpanTwoPartitionsWithAHotKeyEach) {
  MicroOptions o;
  o.partitions = 4;
  o.records_per_partition = 1000;
  o.contention = 0.1;
  o.multipartition = 1.0;
  MicroGenerator g(o);
  ModPartitioner parts(4);
  for (int i = 0; i < 200; ++i) {
    pb::Txn t;
    g.Next(&t);
    std::map<uint32_t, int> hot_per_partition;
    std::set<uint32_t> partitions;
    for (Key k : t.read_set()) {
      partitions.insert(parts.PartitionOf(k));
      if (KeyRow(k) / 4 < 10) ++hot_per_partition[parts.PartitionOf(k)];
    }
    EXPECT_EQ(partitions.size(), 2u);
    EXPECT_EQ(hot_per_partition.size(), 2u);
  }
}

TEST(MicroGenerator, DepthWorkloadWritesTheHotRecordEveryDepthPlusOneTxns) {
  MicroOptions o;
  o.records_per_partition = 1000;
  o.depth = 3;
  MicroGenerator g(o);
  for (int i = 0; i < 12; ++i) {
    pb::Txn t;
    g.Next(&t);
    const Key hot = MakeKey(kMicroTable, 0);
    EXPECT_EQ(t.read_set(0), hot);
    const bool writes_hot = std::count(t.write_set().begin(), t.write_set().end(), hot) == 1;
    EXPECT_EQ(writes_hot, i % 4 == 0) << "txn " << i;
  }
}

TEST(MicroGenerator, RejectsBadOptions) {
  MicroOptions o;
  o.multipartition = 0.5;  // one partition
  EXPECT_FALSE(MicroGenerator::Validate(o).ok());
  o = MicroOptions();
  o.contention = 2;
  EXPECT_FALSE(MicroGenerator::Validate(o).ok());
  o = MicroOptions();
  o.records_per_partition = 10;
  EXPECT_FALSE(MicroGenerator::Validate(o).ok());
}

TEST(MicroProcedure, ComputeAskedForIsBounded) {
  pb::Txn txn;
  for (int k = 0; k < 10; ++k) txn.add_read_set(static_cast<Key>(k));
  auto with_iters = [&](uint64_t iters) {
    txn.set_args(std::string(reinterpret_cast<const char*>(&iters), 8));
    return ValidateMicroTxn(txn);
  };
  EXPECT_TRUE(with_iters(0).ok());
  EXPECT_TRUE(with_iters(1000).ok());
  EXPECT_TRUE(with_iters(kMaxMicroItersPerTxn / 10).ok());
  EXPECT_EQ(with_iters(kMaxMicroItersPerTxn / 10 + 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with_iters(UINT64_MAX).code(), absl::StatusCode::kInvalidArgument);
  txn.clear_read_set();
  txn.add_read_set(1);
  EXPECT_TRUE(with_iters(kMaxMicroItersPerRead).ok());
  EXPECT_EQ(with_iters(kMaxMicroItersPerRead + 1).code(), absl::StatusCode::kInvalidArgument);
  txn.set_args("short");
  EXPECT_TRUE(ValidateMicroTxn(txn).ok()) << "fewer than 8 bytes: no compute";
}

}  // namespace
}  // namespace detdb
