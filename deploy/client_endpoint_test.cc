// ClientEndpoint::DecodeRequest, the first step of every client frame (the
// rest of the endpoint is tested over sockets in cluster_test and
// cluster_exactly_once_test), and SetWorkloadChecks. fuzz/fuzz_client_request.cc
// fuzzes both.
#include "deploy/client_endpoint.h"

#include <string>

#include "deploy/node.h"
#include "gtest/gtest.h"
#include "workloads/kv/kv.h"
#include "workloads/kv/kv_request.h"
#include "workloads/micro/micro.h"
#include "workloads/micro/micro_table.h"

namespace detdb {
namespace {

TEST(DecodeRequestTest, ParsesAValidFrame) {
  pb::ClientRequest in;
  in.set_request_id(9);
  pb::Txn* t = in.add_txns();
  t->set_client_id(3);
  t->set_client_seq(4);
  pb::ClientRequest out;
  ASSERT_TRUE(ClientEndpoint::DecodeRequest(in.SerializeAsString(), 1024, &out).ok());
  EXPECT_EQ(out.request_id(), 9u);
  ASSERT_EQ(out.txns_size(), 1);
  EXPECT_EQ(out.txns(0).client_seq(), 4u);
}

TEST(DecodeRequestTest, RefusesOversizedAndGarbage) {
  pb::ClientRequest out;
  absl::Status big = ClientEndpoint::DecodeRequest(std::string(2000, 'x'), 1000, &out);
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("exceeds the limit of 1000"), std::string::npos) << big;
  // Field 1 as a length-delimited field running past the end.
  absl::Status bad = ClientEndpoint::DecodeRequest(std::string("\x0a\x7f\x01", 3), 1000, &out);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("does not parse"), std::string::npos) << bad;
}

TEST(SetWorkloadChecksTest, EachWorkloadGetsItsOwn) {
  EngineOptions micro, kv, tpcc;
  SetWorkloadChecks("micro", 10, &micro);
  SetWorkloadChecks("kv", 10, &kv);
  SetWorkloadChecks("tpcc", 10, &tpcc);
  ASSERT_TRUE(micro.key_check != nullptr);
  EXPECT_TRUE(micro.key_check(MakeKey(kMicroTable, 9)).ok());
  EXPECT_EQ(micro.key_check(MakeKey(kMicroTable, 10)).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(micro.txn_check != nullptr) << "micro bounds the compute a txn asks for";
  pb::Txn spin;
  spin.add_read_set(MakeKey(kMicroTable, 1));
  const uint64_t too_many = kMaxMicroItersPerRead + 1;
  spin.set_args(std::string(reinterpret_cast<const char*>(&too_many), 8));
  EXPECT_EQ(micro.txn_check(spin).code(), absl::StatusCode::kInvalidArgument);
  spin.clear_args();
  EXPECT_TRUE(micro.txn_check(spin).ok());
  ASSERT_TRUE(kv.txn_check != nullptr);
  auto get = KvGetRequest("k");
  ASSERT_TRUE(get.ok());
  EXPECT_TRUE(kv.txn_check(*get).ok());
  pb::Txn broken = *get;
  broken.set_args("\xff\xff\xff");
  EXPECT_FALSE(kv.txn_check(broken).ok());
  EXPECT_TRUE(tpcc.key_check == nullptr && tpcc.txn_check == nullptr);
}

}  // namespace
}  // namespace detdb
