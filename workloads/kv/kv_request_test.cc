// The typed request builders and the reply parser of workloads/kv/kv_request.h.
#include "workloads/kv/kv_request.h"

#include <gtest/gtest.h>

namespace detdb {
namespace {

TEST(KvRequest, BuildersFillTypeArgsAndKeySets) {
  pb::Txn t = *KvGetRequest("alice");
  EXPECT_EQ(t.type(), kKvGet);
  ASSERT_EQ(t.read_set_size(), 1);
  EXPECT_EQ(t.read_set(0), KvKeyOf("alice"));
  EXPECT_EQ(t.write_set_size(), 0);
  t = *KvTransferRequest("alice", "bob", 5);
  EXPECT_EQ(t.type(), kKvTransfer);
  ASSERT_EQ(t.write_set_size(), 2);
  EXPECT_EQ(t.write_set(1), KvKeyOf("bob"));
  pb::KvArgs a;
  ASSERT_TRUE(a.ParseFromString(t.args()));
  EXPECT_EQ(a.amount(), 5);
  for (const auto& made : {KvPutRequest("k", KvInt(1)), KvDeleteRequest("k"), KvAppendRequest("k", "e"),
                           KvCasRequest("k", std::nullopt, KvBytes("v"))}) {
    ASSERT_TRUE(made.ok());
    EXPECT_EQ(made->read_set_size(), 1);
    EXPECT_EQ(made->write_set_size(), 1);
    EXPECT_TRUE(ValidateKvTxn(*made).ok());
  }
}

TEST(KvRequest, KeysSpreadOverPartitionsAndAreStable) {
  EXPECT_EQ(KvKeyOf("alice"), KvKeyOf(std::string("alice")));
  EXPECT_NE(KvKeyOf("alice"), KvKeyOf("alicf"));
  EXPECT_NE(KvKeyOf(std::string("a\0", 2)), KvKeyOf("a"));
  EXPECT_EQ(KeyTable(KvKeyOf("x")), kKvTable);
  int on[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4000; ++i) ++on[KeyRow(KvKeyOf("key" + std::to_string(i))) % 4];
  for (int p = 0; p < 4; ++p) EXPECT_NEAR(on[p], 1000, 150) << "partition " << p;
}

TEST(KvRequest, RepliesParseAndErrorsBecomeStatuses) {
  pb::Txn t = *KvGetRequest("k");
  pb::TxnResult r;
  pb::KvResult kr;
  *kr.mutable_value() = KvList({"a", "b\n"});
  r.set_result(kr.SerializeAsString());
  auto reply = ParseKvReply(t, r);
  ASSERT_TRUE(reply.ok());
  ASSERT_TRUE(reply->value.has_value());
  EXPECT_EQ(KvValueToString(*reply->value), "[\"a\", \"b\\n\"]");
  EXPECT_STREQ(KvValueType(*reply->value), "list");
  r.set_status(pb::STATUS_ABORTED);
  r.set_error("insufficient funds");
  EXPECT_TRUE(absl::IsAborted(ParseKvReply(t, r).status()));
  EXPECT_EQ(ParseKvReply(t, r).status().message(), "get aborted: insufficient funds");
  r.set_status(pb::STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseKvReply(t, r).status()));
  r.set_status(pb::STATUS_UNAVAILABLE);
  EXPECT_TRUE(absl::IsUnavailable(ParseKvReply(t, r).status()));
  r.set_status(pb::STATUS_OK);
  r.set_result("\xff\xff");
  EXPECT_TRUE(absl::IsInternal(ParseKvReply(t, r).status()));
  EXPECT_EQ(KvValueToString(KvInt(-3)), "-3");
  EXPECT_EQ(KvValueToString(KvBytes(std::string("\x01q", 2))), "\"\\x01q\"");
}

}  // namespace
}  // namespace detdb
