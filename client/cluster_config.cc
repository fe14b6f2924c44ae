#include "client/cluster_config.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "client/curve.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "xxhash.h"

namespace detdb {
namespace {

constexpr uint32_t kMaxNodes = 64;

// A host name or an IPv4/IPv6 address: letters, digits, '.', '-', ':' (and
// '[', ']' around IPv6), at most 253 characters.
bool IsHostLike(const std::string& host) {
  return host.size() <= 253 && std::all_of(host.begin(), host.end(), [](char c) {
           return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
                  c == '[' || c == ']';
         });
}

// Collects parser errors with their line and column.
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (error.empty()) error = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ", message);
  }
  std::string error;
};

}  // namespace

absl::Status ValidateClusterConfig(const pb::ClusterConfig& c) {
  if (c.nodes_size() == 0) return absl::InvalidArgumentError("cluster config names no node");
  if (c.num_partitions() == 0) return absl::InvalidArgumentError("num_partitions must be positive");
  if (c.num_partitions() > 1024) return absl::InvalidArgumentError("at most 1024 partitions");
  std::set<uint32_t> ids;
  std::set<std::pair<std::string, uint32_t>> endpoints;
  std::vector<int> owner(c.num_partitions(), -1);
  for (const pb::NodeConfig& n : c.nodes()) {
    const std::string who = absl::StrCat("node ", n.id());
    if (n.id() >= kMaxNodes) return absl::InvalidArgumentError(absl::StrCat(who, ": node ids must be below ", kMaxNodes));
    if (!ids.insert(n.id()).second) return absl::InvalidArgumentError(absl::StrCat(who, ": duplicate node id"));
    if (n.host().empty()) return absl::InvalidArgumentError(absl::StrCat(who, ": no host"));
    if (!IsHostLike(n.host()))
      return absl::InvalidArgumentError(absl::StrCat(who, ": host \"", absl::CHexEscape(n.host().substr(0, 64)),
                                                     "\" is not a host name or address"));
    if (!IsHostLike(n.http_host()))  // optional (empty: loopback)
      return absl::InvalidArgumentError(absl::StrCat(who, ": http_host \"",
                                                     absl::CHexEscape(n.http_host().substr(0, 64)),
                                                     "\" is not a host name or address"));
    std::vector<uint32_t> ports = {n.peer_port(), n.client_port()};
    if (n.http_port() != 0) ports.push_back(n.http_port());  // optional
    for (uint32_t port : ports) {
      if (port == 0 || port > 65535)
        return absl::InvalidArgumentError(absl::StrCat(who, ": port ", port, " out of range 1..65535"));
      if (!endpoints.emplace(n.host(), port).second)
        return absl::InvalidArgumentError(absl::StrCat(who, ": endpoint ", n.host(), ":", port, " used twice"));
    }
    if (n.partitions_size() == 0) return absl::InvalidArgumentError(absl::StrCat(who, ": serves no partition"));
    for (uint32_t p : n.partitions()) {
      if (p >= c.num_partitions())
        return absl::InvalidArgumentError(
            absl::StrCat(who, ": partition ", p, " outside 0..", c.num_partitions() - 1));
      if (owner[p] != -1)
        return absl::InvalidArgumentError(
            absl::StrCat("partition ", p, " is served by nodes ", owner[p], " and ", n.id()));
      owner[p] = static_cast<int>(n.id());
    }
  }
  for (uint32_t p = 0; p < c.num_partitions(); ++p)
    if (owner[p] == -1) return absl::InvalidArgumentError(absl::StrCat("partition ", p, " is served by no node"));
  int with_key = 0;
  std::map<std::string, uint32_t> key_owner;
  for (const pb::NodeConfig& n : c.nodes()) {
    if (n.curve_public_key().empty()) continue;
    ++with_key;
    if (absl::Status s = ValidateZ85Key(n.curve_public_key()); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("node ", n.id(), ": curve_public_key: ", s.message()));
    // A key names one node: the peer port tells the nodes apart by it.
    if (auto [it, fresh] = key_owner.emplace(n.curve_public_key(), n.id()); !fresh)
      return absl::InvalidArgumentError(absl::StrCat("nodes ", it->second, " and ", n.id(),
                                                     " have the same curve_public_key: give every node its own key "
                                                     "pair (detdb-ctl keygen)"));
  }
  if (with_key != 0 && with_key != c.nodes_size())
    return absl::InvalidArgumentError(
        absl::StrCat(with_key, " of ", c.nodes_size(), " nodes have a curve_public_key: give every node one (CURVE) "
                     "or none (insecure)"));
  return absl::OkStatus();
}

absl::StatusOr<pb::ClusterConfig> ParseClusterConfig(const std::string& text) {
  pb::ClusterConfig c;
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &c))
    return absl::InvalidArgumentError(absl::StrCat("cluster config: ", errors.error));
  absl::Status s = ValidateClusterConfig(c);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("cluster config: ", s.message()));
  return c;
}

absl::StatusOr<pb::ClusterConfig> LoadClusterConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read cluster config ", path));
  std::ostringstream text;
  text << in.rdbuf();
  auto c = ParseClusterConfig(text.str());
  if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", c.status().message()));
  return c;
}

uint64_t ClusterConfigHash(const pb::ClusterConfig& config) {
  pb::ClusterConfig canon = config;  // node order and partition order do not matter
  std::sort(canon.mutable_nodes()->begin(), canon.mutable_nodes()->end(),
            [](const pb::NodeConfig& a, const pb::NodeConfig& b) { return a.id() < b.id(); });
  for (pb::NodeConfig& n : *canon.mutable_nodes())
    std::sort(n.mutable_partitions()->begin(), n.mutable_partitions()->end());
  std::string bytes;
  google::protobuf::io::StringOutputStream out(&bytes);
  google::protobuf::io::CodedOutputStream coded(&out);
  coded.SetSerializationDeterministic(true);
  canon.SerializeToCodedStream(&coded);
  coded.Trim();
  return XXH3_64bits(bytes.data(), bytes.size());
}

const pb::NodeConfig* NodeOfPartition(const pb::ClusterConfig& config, uint32_t partition) {
  for (const pb::NodeConfig& n : config.nodes())
    for (uint32_t p : n.partitions())
      if (p == partition) return &n;
  return nullptr;
}

}  // namespace detdb
