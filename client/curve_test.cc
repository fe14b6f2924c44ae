#include "client/curve.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "client/cluster_config.h"

namespace detdb {
namespace {

class CurveFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/detdb-curve-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  std::string dir_;
};

TEST_F(CurveFiles, KeygenWritesAPairThatReadsBackAndNeverOverwrites) {
  ASSERT_TRUE(CheckCurveAvailable().ok());
  auto kp = WriteCurveKeyPair(dir_ + "/n0");
  ASSERT_TRUE(kp.ok()) << kp.status();
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/n0.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = ReadCurveSecretKeyFile(dir_ + "/n0.key");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->public_key, kp->public_key);  // derived from the secret key
  EXPECT_EQ(back->secret_key, kp->secret_key);
  auto pub = ReadCurvePublicKeyFile(dir_ + "/n0.pub");
  ASSERT_TRUE(pub.ok()) << pub.status();
  EXPECT_EQ(*pub, kp->public_key);
  EXPECT_TRUE(absl::IsAlreadyExists(WriteCurveKeyPair(dir_ + "/n0").status()));
  EXPECT_NE(GenerateCurveKeyPair()->public_key, kp->public_key);
}

TEST_F(CurveFiles, RefusesASecretKeyFileOthersCanRead) {
  auto kp = GenerateCurveKeyPair();
  ASSERT_TRUE(kp.ok());
  const std::string path = Write("open.key", kp->secret_key + "\n", 0644);
  auto r = ReadCurveSecretKeyFile(path);
  ASSERT_TRUE(absl::IsPermissionDenied(r.status())) << r.status();
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status();  // names the file
  EXPECT_NE(r.status().message().find("0644"), std::string::npos) << r.status();
  EXPECT_TRUE(absl::IsNotFound(ReadCurveSecretKeyFile(dir_ + "/missing.key").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ReadCurveSecretKeyFile(Write("bad.key", "not a key\n", 0600)).status()));
}

TEST_F(CurveFiles, AllowlistTakesKeysNamesAndCommentsAndRefusesJunkOrOpenModes) {
  auto a = GenerateCurveKeyPair(), b = GenerateCurveKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string text = "# clients\n\n" + a->public_key + " alice\n  " + b->public_key + "\n#\n";
  auto keys = ReadCurveAllowlist(Write("allow", text, 0600));
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_EQ(keys->count(a->public_key), 1u);
  EXPECT_EQ(keys->count(b->public_key), 1u);
  auto open = ReadCurveAllowlist(Write("allow-open", text, 0640));
  EXPECT_TRUE(absl::IsPermissionDenied(open.status())) << open.status();
  auto junk = ReadCurveAllowlist(Write("allow-junk", a->public_key + "\nshort\n", 0600));
  ASSERT_TRUE(absl::IsInvalidArgument(junk.status())) << junk.status();
  EXPECT_NE(junk.status().message().find("line 2"), std::string::npos) << junk.status();
}

TEST_F(CurveFiles, ConfigNeedsEveryNodesKeyOrNoneAndClientsFindTheirKeyBesideIt) {
  auto k0 = GenerateCurveKeyPair(), k1 = GenerateCurveKeyPair();
  ASSERT_TRUE(k0.ok() && k1.ok());
  const std::string n0 = "nodes { id: 0 host: \"127.0.0.1\" peer_port: 7100 client_port: 7200 partitions: 0 ";
  const std::string n1 = "nodes { id: 1 host: \"127.0.0.1\" peer_port: 7101 client_port: 7201 partitions: 1 ";
  const std::string both = "num_partitions: 2 " + n0 + "curve_public_key: \"" + k0->public_key + "\" } " + n1 +
                           "curve_public_key: \"" + k1->public_key + "\" }";
  auto c = ParseClusterConfig(both);
  ASSERT_TRUE(c.ok()) << c.status();
  auto one = ParseClusterConfig("num_partitions: 2 " + n0 + "curve_public_key: \"" + k0->public_key + "\" } " + n1 +
                                "}");
  EXPECT_TRUE(absl::IsInvalidArgument(one.status())) << one.status();
  auto bad = ParseClusterConfig("num_partitions: 2 " + n0 + "curve_public_key: \"short\" } " + n1 +
                                "curve_public_key: \"" + k1->public_key + "\" }");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  // One key for two nodes: the peer port could not tell them apart.
  auto same = ParseClusterConfig("num_partitions: 2 " + n0 + "curve_public_key: \"" + k0->public_key + "\" } " + n1 +
                                 "curve_public_key: \"" + k0->public_key + "\" }");
  EXPECT_TRUE(absl::IsInvalidArgument(same.status())) << same.status();
  EXPECT_NE(same.status().message().find("nodes 0 and 1 have the same curve_public_key"), std::string::npos)
      << same.status();

  const std::string config_path = Write("cluster.pbtxt", both, 0644);
  auto none = LoadClientKeys("", config_path, *c);  // no keys/ folder
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->secret_key.empty());
  std::filesystem::create_directory(dir_ + "/keys");
  auto client = WriteCurveKeyPair(dir_ + "/keys/client");
  ASSERT_TRUE(client.ok());
  auto found = LoadClientKeys("", config_path, *c);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->public_key, client->public_key);
  auto given = LoadClientKeys(dir_ + "/keys/missing.key", config_path, *c);
  EXPECT_FALSE(given.ok());
}

}  // namespace
}  // namespace detdb
