#include "workloads/tpcc/generator.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "workloads/tpcc/new_order_lines.h"
#include "workloads/tpcc/procedures.h"
#include "workloads/tpcc/schema.h"
#include "glog/logging.h"
#include "proto/tpcc.pb.h"

namespace detdb {
namespace tpcc {
namespace {

namespace tp = pb::tpcc;

// Sorts and deduplicates *keys, then stores them in *out.
void SetKeys(std::vector<Key>* keys, google::protobuf::RepeatedField<uint64_t>* out) {
  std::sort(keys->begin(), keys->end());
  keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
  out->Clear();
  out->Add(keys->begin(), keys->end());
}

}  // namespace

const char* KindName(TxnKind kind) {
  switch (kind) {
    case TxnKind::kNewOrder:
      return "new_order";
    case TxnKind::kPayment:
      return "payment";
    case TxnKind::kOrderStatus:
      return "order_status";
    case TxnKind::kDelivery:
      return "delivery";
    case TxnKind::kStockLevel:
      return "stock_level";
  }
  return "unknown";
}

absl::StatusOr<Mix> Mix::Parse(const std::string& text) {
  const absl::string_view t = absl::StripAsciiWhitespace(text);
  Mix m;
  if (t == "full") return m;
  if (t == "no+payment") {
    m.percent = {50, 50, 0, 0, 0};
    return m;
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(t, ',');
  if (parts.size() != kNumKinds)
    return absl::InvalidArgumentError(
        absl::StrCat("mix \"", text, "\": want \"full\", \"no+payment\" or five percentages like 45,43,4,4,4"));
  double sum = 0;
  for (int i = 0; i < kNumKinds; ++i) {
    double v = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(parts[i]), &v) || !std::isfinite(v) || v < 0 || v > 100)
      return absl::InvalidArgumentError(absl::StrCat("mix \"", text, "\": bad percentage \"", parts[i], "\""));
    m.percent[i] = v;
    sum += v;
  }
  if (std::fabs(sum - 100) > 1e-6)
    return absl::InvalidArgumentError(absl::StrCat("mix \"", text, "\": percentages sum to ", sum, ", not 100"));
  return m;
}

// ---- LastNameIndex ----

LastNameIndex::LastNameIndex(const Scale& scale, const NURandC& load, uint64_t load_seed)
    : scale_(scale), load_(load), seed_(load_seed) {}

LastNameIndex::District& LastNameIndex::Of(uint32_t w, uint32_t d) {
  auto [it, inserted] = districts_.try_emplace({w, d});
  District& dist = it->second;
  if (inserted) {
    std::map<std::string, std::vector<std::pair<std::string, uint32_t>>> by_last;
    for (uint32_t c = 1; c <= scale_.customers_per_district; ++c) {
      CustomerName n = CustomerNameOf(scale_, load_, seed_, w, d, c);
      by_last[std::move(n.last)].emplace_back(std::move(n.first), c);
    }
    for (auto& [name, customers] : by_last) {
      std::sort(customers.begin(), customers.end());  // by first name, then id
      std::vector<uint32_t>& ids = dist.by_name[name];
      ids.reserve(customers.size());
      for (const auto& e : customers) ids.push_back(e.second);
    }
    dist.by_number.resize(scale_.LastNameRange());
    for (uint32_t num = 0; num < scale_.LastNameRange(); ++num) {
      auto found = dist.by_name.find(LastName(num));
      // Clause 2.5.2.2: the row at position ceil(n / 2) (1-based) of the
      // customers sorted by C_FIRST.
      if (found != dist.by_name.end() && !found->second.empty())
        dist.by_number[num] = found->second[(found->second.size() - 1) / 2];
    }
  }
  return dist;
}

uint32_t LastNameIndex::Lookup(uint32_t w, uint32_t d, const std::string& last) {
  const District& dist = Of(w, d);
  auto found = dist.by_name.find(last);
  if (found == dist.by_name.end() || found->second.empty()) return 0;
  const std::vector<uint32_t>& ids = found->second;
  return ids[(ids.size() - 1) / 2];
}

// ---- Generator ----

Generator::Generator(const GeneratorOptions& options)
    : o_(options),
      load_(LoadConstants(options.load_seed)),
      run_(RunConstants(load_, options.seed)),
      rng_(options.seed),
      names_(options.scale, load_, options.load_seed) {
  CHECK(o_.scale.Validate().ok()) << o_.scale.Validate();
  if (o_.home_warehouses.empty()) {
    for (uint32_t w = 1; w <= o_.scale.warehouses; ++w) o_.home_warehouses.push_back(w);
  }
  for (uint32_t w : o_.home_warehouses) CHECK(w >= 1 && w <= o_.scale.warehouses) << "home warehouse " << w;
}

namespace {

// Uniform in [0, 1).
double Unit(Rng* rng) { return static_cast<double>(rng->Next() >> 11) * 0x1.0p-53; }

// A warehouse of 1..n other than w (uniform). REQUIRES: n >= 2.
uint32_t OtherWarehouse(Rng* rng, uint32_t n, uint32_t w) {
  uint32_t x = static_cast<uint32_t>(rng->Uniform(1, n - 1));
  return x >= w ? x + 1 : x;
}

}  // namespace

Generator::Request Generator::Next() {
  const uint64_t draw = rng_.state();
  Request req = Draw(&rng_);
  req.draw = draw;
  return req;
}

Generator::Request Generator::Redraw(uint64_t draw) {
  Rng rng = Rng::FromState(draw);
  Request req = Draw(&rng);
  req.draw = draw;
  return req;
}

Generator::Request Generator::Draw(Rng* rng) {
  Request req;
  req.recon = false;
  // The kind, from the mix.
  const double u = Unit(rng) * 100;
  double acc = 0;
  int kind = kNumKinds - 1;
  for (int i = 0; i < kNumKinds; ++i) {
    acc += o_.mix.percent[i];
    if (u < acc) {
      kind = i;
      break;
    }
  }
  // A kind of weight 0 is never chosen, even by rounding at the end.
  while (kind > 0 && o_.mix.percent[kind] <= 0) --kind;
  req.kind = static_cast<TxnKind>(kind);

  const Scale& sc = o_.scale;
  const uint32_t w = o_.home_warehouses[rng->Uniform(0, static_cast<int64_t>(o_.home_warehouses.size()) - 1)];
  req.w = w;
  pb::Txn& txn = req.txn;
  std::vector<Key>& reads = reads_;
  std::vector<Key>& writes = writes_;
  reads.clear();
  writes.clear();

  // A customer of (cw, cd): 60% by last name (resolved through the index),
  // else by id. Sets *by_name.
  auto pick_customer = [&](uint32_t cw, uint32_t cd, bool* by_name) -> uint32_t {
    *by_name = Unit(rng) < o_.by_last_name;
    if (*by_name) {
      for (int attempt = 0; attempt < 100; ++attempt) {
        const uint32_t c = names_.LookupNumber(cw, cd, rng->NURand(255, 0, sc.LastNameRange() - 1, run_.c_last));
        if (c != 0) return c;
      }
      *by_name = false;  // no name found (cannot happen with LastNameRange()): fall back to an id
    }
    return rng->NURand(1023, 1, sc.customers_per_district, run_.c_id);
  };

  switch (req.kind) {
    case TxnKind::kNewOrder: {
      tp::NewOrderArgs& a = new_order_;
      a.Clear();  // keeps the arrays' capacity
      const uint32_t d = static_cast<uint32_t>(rng->Uniform(1, kDistrictsPerWarehouse));
      const uint32_t c = rng->NURand(1023, 1, sc.customers_per_district, run_.c_id);
      req.d = d;
      a.set_w_id(w);
      a.set_d_id(d);
      a.set_c_id(c);
      const int n = static_cast<int>(rng->Uniform(5, 15));
      const bool rollback = Unit(rng) < o_.rollback;
      for (int i = 0; i < n; ++i) {
        uint32_t item = rng->NURand(8191, 1, sc.items, run_.ol_i_id);
        if (rollback && i == n - 1) item = sc.items + 1;  // unused (clause 2.4.1.4)
        uint32_t supply = w;
        if (sc.warehouses > 1 && Unit(rng) < o_.remote_line) supply = OtherWarehouse(rng, sc.warehouses, w);
        a.add_line_words(OrderLineWord(OrderLine{item, supply, static_cast<uint32_t>(rng->Uniform(1, 10))}));
        reads.push_back(StockKey(supply, item));
        writes.push_back(StockKey(supply, item));
      }
      reads.push_back(WarehouseKey(w));
      reads.push_back(DistrictKey(w, d));
      reads.push_back(CustomerKey(w, d, c));
      reads.push_back(DistrictNextKey(w, d));
      writes.push_back(DistrictNextKey(w, d));
      txn.set_type(kNewOrderType);
      a.SerializeToString(txn.mutable_args());
      break;
    }
    case TxnKind::kPayment: {
      tp::PaymentArgs a;
      const uint32_t d = static_cast<uint32_t>(rng->Uniform(1, kDistrictsPerWarehouse));
      uint32_t cw = w, cd = d;
      if (sc.warehouses > 1 && Unit(rng) < o_.remote_payment) {
        cw = OtherWarehouse(rng, sc.warehouses, w);
        cd = static_cast<uint32_t>(rng->Uniform(1, kDistrictsPerWarehouse));
      }
      bool by_name = false;
      const uint32_t c = pick_customer(cw, cd, &by_name);
      req.d = d;
      a.set_w_id(w);
      a.set_d_id(d);
      a.set_c_w_id(cw);
      a.set_c_d_id(cd);
      a.set_c_id(c);
      a.set_by_last_name(by_name);
      a.set_amount(rng->Uniform(100, 500000));
      reads.push_back(WarehouseKey(w));
      reads.push_back(DistrictKey(w, d));
      for (Key k : {WarehouseYtdKey(w), DistrictYtdKey(w, d), CustomerKey(cw, cd, c)}) {
        reads.push_back(k);
        writes.push_back(k);
      }
      txn.set_type(kPaymentType);
      txn.set_args(a.SerializeAsString());
      break;
    }
    case TxnKind::kOrderStatus: {
      tp::OrderStatusArgs a;
      const uint32_t d = static_cast<uint32_t>(rng->Uniform(1, kDistrictsPerWarehouse));
      bool by_name = false;
      const uint32_t c = pick_customer(w, d, &by_name);
      req.d = d;
      a.set_w_id(w);
      a.set_d_id(d);
      a.set_c_id(c);
      a.set_by_last_name(by_name);
      reads.push_back(CustomerKey(w, d, c));
      reads.push_back(DistrictNextKey(w, d));
      txn.set_type(kOrderStatusType);
      txn.set_args(a.SerializeAsString());
      break;
    }
    case TxnKind::kDelivery: {
      req.recon = true;
      req.param = static_cast<uint32_t>(rng->Uniform(1, 10));  // O_CARRIER_ID
      tp::ReconDeliveryArgs a;
      a.set_w_id(w);
      for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) reads.push_back(DistrictNextKey(w, d));
      txn.set_type(kReconDeliveryType);
      txn.set_args(a.SerializeAsString());
      break;
    }
    case TxnKind::kStockLevel: {
      req.recon = true;
      req.d = static_cast<uint32_t>(rng->Uniform(1, kDistrictsPerWarehouse));
      req.param = static_cast<uint32_t>(rng->Uniform(10, 20));  // threshold
      tp::ReconStockLevelArgs a;
      a.set_w_id(w);
      a.set_d_id(req.d);
      reads.push_back(DistrictNextKey(w, req.d));
      txn.set_type(kReconStockLevelType);
      txn.set_args(a.SerializeAsString());
      break;
    }
  }
  SetKeys(&reads, txn.mutable_read_set());
  SetKeys(&writes, txn.mutable_write_set());
  return req;
}

absl::StatusOr<pb::Txn> Generator::FromRecon(const Request& request, const std::string& recon_result) {
  if (!request.recon) return absl::InvalidArgumentError("FromRecon of a request that is not a reconnaissance");
  pb::Txn txn;
  std::vector<Key> reads, writes;
  const uint32_t w = request.w;
  switch (request.kind) {
    case TxnKind::kDelivery: {
      tp::ReconDeliveryResult recon;
      if (!recon.ParseFromString(recon_result))
        return absl::InvalidArgumentError("cannot parse the ReconDeliveryResult");
      tp::DeliveryArgs a;
      a.set_w_id(w);
      a.set_carrier_id(request.param);
      for (uint32_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
        reads.push_back(DistrictNextKey(w, d));
        writes.push_back(DistrictNextKey(w, d));
      }
      for (const tp::DeliveryPlan& p : recon.plans()) {
        if (p.d_id() < 1 || p.d_id() > kDistrictsPerWarehouse)
          return absl::InvalidArgumentError(absl::StrCat("recon plan for district ", p.d_id()));
        *a.add_plans() = p;
        if (p.o_id() == 0) continue;
        reads.push_back(CustomerKey(w, p.d_id(), p.c_id()));
        writes.push_back(CustomerKey(w, p.d_id(), p.c_id()));
      }
      txn.set_type(kDeliveryType);
      txn.set_args(a.SerializeAsString());
      break;
    }
    case TxnKind::kStockLevel: {
      tp::ReconStockLevelResult recon;
      if (!recon.ParseFromString(recon_result))
        return absl::InvalidArgumentError("cannot parse the ReconStockLevelResult");
      tp::StockLevelArgs a;
      a.set_w_id(w);
      a.set_d_id(request.d);
      a.set_threshold(request.param);
      a.set_next_o_id(recon.next_o_id());
      reads.push_back(DistrictNextKey(w, request.d));
      for (uint32_t i : recon.i_ids()) reads.push_back(StockKey(w, i));
      txn.set_type(kStockLevelType);
      txn.set_args(a.SerializeAsString());
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("FromRecon of a ", KindName(request.kind), " request"));
  }
  SetKeys(&reads, txn.mutable_read_set());
  SetKeys(&writes, txn.mutable_write_set());
  return txn;
}

}  // namespace tpcc
}  // namespace detdb
