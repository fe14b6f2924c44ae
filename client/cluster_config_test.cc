#include "client/cluster_config.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace detdb {
namespace {

constexpr char kThreeNodes[] = R"pb(
  num_partitions: 3
  epoch_us: 5000
  nodes { id: 0 host: "127.0.0.1" peer_port: 7100 client_port: 7200 partitions: 0 }
  nodes { id: 1 host: "127.0.0.1" peer_port: 7101 client_port: 7201 partitions: 1 }
  nodes { id: 2 host: "127.0.0.1" peer_port: 7102 client_port: 7202 partitions: 2 }
)pb";

TEST(ClusterConfig, ParsesAValidConfig) {
  auto c = ParseClusterConfig(kThreeNodes);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nodes_size(), 3);
  EXPECT_EQ(c->epoch_us(), 5000u);
  ASSERT_NE(NodeOfPartition(*c, 2), nullptr);
  EXPECT_EQ(NodeOfPartition(*c, 2)->client_port(), 7202u);
  EXPECT_EQ(NodeOfPartition(*c, 3), nullptr);
}

TEST(ClusterConfig, HttpPortIsOptional) {
  auto c = ParseClusterConfig(
      "num_partitions: 2 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 http_port: 3 partitions: 0 } "
      "nodes { id: 1 host: \"h\" peer_port: 4 client_port: 5 partitions: 1 }");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->nodes(0).http_port(), 3u);
  EXPECT_EQ(c->nodes(1).http_port(), 0u);
}

TEST(ClusterConfig, RejectsWithAClearMessage) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"num_partitions: 1", "no node"},
      {"nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 partitions: 0 }", "num_partitions"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 partitions: 0 } "
       "nodes { id: 0 host: \"h\" peer_port: 3 client_port: 4 partitions: 0 }",
       "duplicate node id"},
      {"num_partitions: 2 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 partitions: 0 }",
       "partition 1 is served by no node"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 partitions: 0 } "
       "nodes { id: 1 host: \"h\" peer_port: 3 client_port: 4 partitions: 0 }",
       "served by nodes 0 and 1"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 70000 client_port: 2 partitions: 0 }",
       "out of range"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 5 client_port: 5 partitions: 0 }", "used twice"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 http_port: 2 partitions: 0 }",
       "used twice"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 http_port: 65536 partitions: 0 }",
       "out of range"},
      {"num_partitions: 1 nodes { id: 0 peer_port: 1 client_port: 2 partitions: 0 }", "no host"},
      {"num_partitions: 1 nodes { id: 0 host: \"\\377\" peer_port: 1 client_port: 2 partitions: 0 }",
       "is not a host name or address"},
      {"num_partitions: 1 nodes { id: 0 host: \"a b\" peer_port: 1 client_port: 2 partitions: 0 }",
       "is not a host name or address"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 http_port: 3 http_host: \"a/b\" "
       "partitions: 0 }",
       "http_host \"a/b\" is not a host name or address"},
      {"num_partitions: 1 nodes { id: 99 host: \"h\" peer_port: 1 client_port: 2 partitions: 0 }", "below 64"},
      {"num_partitions: 1 nodes { id: 0 host: \"h\" peer_port: 1 client_port: 2 partitions: 5 }", "outside"},
      {"num_partitions: 1 nodes { bogus_field: 1 }", "line 1"},
  };
  for (const Case& c : cases) {
    auto r = ParseClusterConfig(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(r.status().message()).find(c.expect), std::string::npos)
        << "message '" << r.status().message() << "' lacks '" << c.expect << "'";
  }
}

TEST(ClusterConfig, HashIgnoresOrderButNotContent) {
  auto a = ParseClusterConfig(kThreeNodes);
  ASSERT_TRUE(a.ok());
  pb::ClusterConfig reordered = *a;
  std::swap(*reordered.mutable_nodes(0), *reordered.mutable_nodes(2));
  EXPECT_EQ(ClusterConfigHash(*a), ClusterConfigHash(reordered));
  pb::ClusterConfig other = *a;
  other.mutable_nodes(1)->set_peer_port(7999);
  EXPECT_NE(ClusterConfigHash(*a), ClusterConfigHash(other));
  other = *a;
  other.set_epoch_us(1000);
  EXPECT_NE(ClusterConfigHash(*a), ClusterConfigHash(other));
}

TEST(ClusterConfig, LoadsFromAFile) {
  const std::string path = ::testing::TempDir() + "/detdb_cluster_test.textproto";
  {
    std::ofstream out(path);
    out << kThreeNodes;
  }
  auto c = LoadClusterConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_partitions(), 3u);
  std::remove(path.c_str());
  EXPECT_EQ(LoadClusterConfig(path).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace detdb
