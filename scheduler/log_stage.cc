#include "scheduler/log_stage.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "io/crc32c.h"
#include "sequencer/epoch_batcher.h"

namespace detdb {

LogStage::LogStage(const LogStageOptions& options, uint32_t num_sequencers, uint32_t self, PeerLink* peers,
                   bool epoch_ids, BatchFn execute, ResultFn deliver, FatalFn fatal)
    : options_(options),
      num_sequencers_(num_sequencers),
      self_(self),
      peers_(peers),
      epoch_ids_(epoch_ids),
      execute_(std::move(execute)),
      deliver_(std::move(deliver)),
      fatal_(std::move(fatal)),
      durable_(num_sequencers, 0) {}

LogStage::~LogStage() { (void)Close(); }

RecoveryOptions LogStage::recovery_options() const {
  RecoveryOptions ro;
  ro.fs = options_.fs;
  ro.config_hash = options_.config_hash;
  ro.build_id = options_.accept_other_build ? 0 : options_.build_id;
  ro.trim_torn_tail = true;
  return ro;
}

absl::StatusOr<uint64_t> LogStage::Recover(const std::vector<uint64_t>& crc_epochs) {
  recovered_crcs_.clear();
  std::map<uint64_t, uint32_t> partial;
  for (uint64_t e : crc_epochs) partial[e] = 0;
  auto r = RecoverInputLog(options_.dir, recovery_options(), [&](const RecordLocation&, const LogRecordView& v) {
    auto it = partial.find(v.header.epoch);
    if (it == partial.end()) return absl::OkStatus();
    it->second = Crc32cExtend(it->second, v.payload.data(), v.payload.size());
    if (v.header.epoch_end) recovered_crcs_[v.header.epoch] = it->second;
    return absl::OkStatus();
  });
  if (!r.ok()) return r.status();
  if (r->last && !r->last_epoch_ended) {
    // The last epoch is incomplete (a peer's batch of it never made it):
    // it was never durable, so never acknowledged; Open drops it.
    LOG(WARNING) << "input log " << options_.dir << ": epoch " << r->last->epoch
                 << " is incomplete; resuming after epoch " << r->last_complete_epoch;
  }
  recovered_epoch_ = r->last_complete_epoch;
  recovered_ = true;
  return recovered_epoch_;
}

absl::StatusOr<RecoveredInput> LogStage::Open(uint64_t resume_epoch, uint64_t first_epoch, TxnId last_id_floor,
                                              bool every_node_holds) {
  if (!recovered_)
    return absl::FailedPreconditionError(absl::StrCat("input log ", options_.dir, ": Open before Recover (it would "
                                                      "truncate a log it has not checked)"));
  if (resume_epoch > recovered_epoch_)
    return absl::FailedPreconditionError(absl::StrCat("input log ", options_.dir, ": resume at epoch ",
                                                      resume_epoch, " but the log ends at ", recovered_epoch_));
  const RecoveryOptions ro = recovery_options();
  // Drop everything after resume_epoch (an incomplete last epoch too).
  auto trimmed = TruncateInputLogAfter(options_.dir, resume_epoch, ro);
  if (!trimmed.ok()) return trimmed.status();
  RecoveredInput in;
  in.epoch = resume_epoch;
  in.last_id = last_id_floor;
  RecoveryOptions read = ro;
  read.trim_torn_tail = false;
  uint64_t seen_first = 0;
  auto r = RecoverInputLog(options_.dir, read, [&](const RecordLocation& at, const LogRecordView& v) {
    if (seen_first == 0) seen_first = v.header.epoch;
    if (v.header.epoch < first_epoch) return absl::OkStatus();  // before the checkpoint
    auto b = std::make_shared<pb::Batch>();
    if (!b->ParseFromArray(v.payload.data(), static_cast<int>(v.payload.size())) ||
        b->epoch() != v.header.epoch || b->sequencer_id() != v.header.sequencer_id)
      return absl::DataLossError(absl::StrCat("input log ", JoinPath(options_.dir, at.segment), " offset ",
                                              at.offset, ": the record's payload is not its batch"));
    for (const pb::Txn& t : b->txns()) in.last_id = std::max<TxnId>(in.last_id, t.id());
    in.batches.push_back(std::move(b));
    return absl::OkStatus();
  });
  if (!r.ok()) return r.status();
  if (seen_first > first_epoch || (seen_first == 0 && first_epoch <= resume_epoch))
    return absl::DataLossError(absl::StrCat("input log ", options_.dir, ": replay must start at epoch ", first_epoch,
                                            " but the log starts at ",
                                            seen_first == 0 ? std::string("nothing (empty)")
                                                            : absl::StrCat("epoch ", seen_first)));
  InputLogOptions wo;
  wo.dir = options_.dir;
  wo.fs = options_.fs;
  wo.segment_bytes = options_.segment_bytes;
  wo.sync_mode = options_.sync_mode;
  wo.config_hash = options_.config_hash;
  wo.build_id = options_.build_id;
  wo.lazy_sync = options_.lazy_sync;
  wo.min_sync_interval = options_.min_sync_interval;
  wo.crash_hook = options_.crash_hook;
  wo.on_durable = [this](uint64_t e) { OnDurable(e); };
  wo.on_failure = [this](const absl::Status& s) { Fail(s); };
  auto w = InputLogWriter::Open(wo, *r);
  if (!w.ok()) return w.status();
  absl::Status drained;
  {
    std::lock_guard<std::mutex> l(mu_);
    writer_ = std::move(*w);
    next_ = {resume_epoch + 1, 0};
    if (every_node_holds) {
      for (uint64_t& d : durable_) d = std::max(d, resume_epoch);  // R = min over the nodes' logs
    } else {
      durable_[self_] = std::max(durable_[self_], resume_epoch);
    }
    last_id_ = in.last_id;
    // Batches that arrived before Open (peers already sequencing): drop
    // those of replayed epochs, append the rest in order.
    pending_.erase(pending_.begin(), pending_.lower_bound(next_));
    drained = DrainLocked();
  }
  if (!drained.ok()) Fail(drained);
  local_durable_.store(resume_epoch, std::memory_order_release);
  if (durable_hook_) durable_hook_(resume_epoch);
  uint64_t watermark;
  {
    std::lock_guard<std::mutex> l(mu_);
    watermark = *std::min_element(durable_.begin(), durable_.end());
  }
  Advance(watermark, in.last_id);
  if (peers_ != nullptr) peers_->SetDurableEpoch(resume_epoch);
  return in;
}

void LogStage::Add(std::shared_ptr<const pb::Batch> batch) {
  Pending p{batch, {}};
  if (!batch->SerializeToString(&p.payload)) {
    Fail(absl::InternalError("input log: a batch does not serialize"));
    return;
  }
  absl::Status drained;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (failed() || closed_) return;  // never executed unlogged
    const std::pair<uint64_t, uint32_t> at{batch->epoch(), batch->sequencer_id()};
    if (writer_ != nullptr && at < next_) return;  // an epoch replayed from the log
    pending_.emplace(at, std::move(p));
    if (writer_ != nullptr) drained = DrainLocked();
  }
  if (!drained.ok()) {
    Fail(drained);  // without mu_: the fatal callback may stop the engine
    return;
  }
  if (!options_.log_then_execute) execute_(std::move(batch));
}

// Appends what is next in merge order. REQUIRES: mu_ held, writer_ set.
absl::Status LogStage::DrainLocked() {
  while (!pending_.empty() && pending_.begin()->first == next_) {
    Pending& p = pending_.begin()->second;
    const bool end = next_.second + 1 == num_sequencers_;
    // An idle epoch's empty batch, no reply waiting: logged lazily.
    const bool lazy = p.batch->txns_size() == 0 && held() == 0 && !(waiting_hook_ && waiting_hook_());
    absl::Status s = writer_->Append(next_.first, next_.second, p.payload, end, lazy);
    if (!s.ok()) return s;  // the writer's own failure is sticky
    if (!epoch_ids_ && p.batch->txns_size() > 0) last_id_ = p.batch->txns().rbegin()->id();
    epoch_crc_ = Crc32cExtend(epoch_crc_, p.payload.data(), p.payload.size());
    if (options_.log_then_execute) to_execute_.push_back(std::move(p.batch));
    pending_.erase(pending_.begin());
    if (end) {
      if (!epoch_ids_) epoch_last_id_.emplace_back(next_.first, last_id_);
      epoch_crcs_.emplace_back(next_.first, epoch_crc_);
      if (epoch_crcs_.size() > 4096) epoch_crcs_.pop_front();
      epoch_crc_ = 0;
      next_ = {next_.first + 1, 0};
    } else {
      ++next_.second;
    }
  }
  return absl::OkStatus();
}

void LogStage::OnDurable(uint64_t epoch) {
  local_durable_.store(epoch, std::memory_order_release);
  if (durable_hook_) durable_hook_(epoch);
  if (peers_ != nullptr) peers_->SetDurableEpoch(epoch);
  std::vector<std::shared_ptr<const pb::Batch>> run;
  uint64_t w;
  TxnId dense_bound = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    durable_[self_] = std::max(durable_[self_], epoch);
    while (!to_execute_.empty() && to_execute_.front()->epoch() <= epoch) {
      run.push_back(std::move(to_execute_.front()));
      to_execute_.pop_front();
    }
    w = *std::min_element(durable_.begin(), durable_.end());
    while (!epoch_ids_ && !epoch_last_id_.empty() && epoch_last_id_.front().first <= w) {
      dense_bound = epoch_last_id_.front().second;
      epoch_last_id_.pop_front();
    }
  }
  for (auto& b : run) execute_(std::move(b));
  Advance(w, dense_bound);
}

void LogStage::OnPeerDurable(uint32_t node, uint64_t epoch) {
  if (node >= num_sequencers_ || node == self_) return;
  uint64_t w;
  {
    std::lock_guard<std::mutex> l(mu_);
    durable_[node] = std::max(durable_[node], epoch);
    if (writer_ == nullptr) return;  // not open yet: Open advances
    w = *std::min_element(durable_.begin(), durable_.end());
  }
  Advance(w);
}

void LogStage::Advance(uint64_t w, TxnId dense_bound) {
  std::vector<pb::TxnResult> out;
  {
    std::lock_guard<std::mutex> l(gate_mu_);
    const TxnId before = bound_;
    if (failed()) return;
    if (w > gate_epoch_) {
      gate_epoch_ = w;
      watermark_.store(w, std::memory_order_release);
      if (epoch_ids_) bound_ = EpochBatcher::EpochSequencerId(w + 1, 0, 0) - 1;
    }
    if (!epoch_ids_) bound_ = std::max(bound_, dense_bound);
    if (bound_ == before) return;
    auto keep = std::partition(held_.begin(), held_.end(),
                               [&](const pb::TxnResult& r) { return r.txn_id() > bound_; });
    out.assign(std::make_move_iterator(keep), std::make_move_iterator(held_.end()));
    held_.erase(keep, held_.end());
  }
  if (out.empty()) return;
  if (options_.crash_hook) options_.crash_hook("log_synced");
  for (pb::TxnResult& r : out) deliver_(std::move(r));
}

void LogStage::Hurry() {
  std::lock_guard<std::mutex> l(mu_);
  if (writer_ != nullptr) writer_->Hurry();
}

void LogStage::Hold(pb::TxnResult result) {
  {
    std::lock_guard<std::mutex> l(gate_mu_);
    if (failed()) return;  // never a reply after the log failed
    if (result.txn_id() > bound_) {
      held_.push_back(std::move(result));
      return;
    }
  }
  deliver_(std::move(result));
}

std::optional<uint32_t> LogStage::EpochCrc(uint64_t epoch) const {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = epoch_crcs_.rbegin(); it != epoch_crcs_.rend() && it->first >= epoch; ++it)
    if (it->first == epoch) return it->second;
  return std::nullopt;
}

std::optional<uint32_t> LogStage::RecoveredEpochCrc(uint64_t epoch) const {
  auto it = recovered_crcs_.find(epoch);
  if (it == recovered_crcs_.end()) return std::nullopt;
  return it->second;
}

uint64_t LogStage::held() const {
  std::lock_guard<std::mutex> l(gate_mu_);
  return held_.size();
}

void LogStage::Fail(const absl::Status& s) {
  if (failed_.exchange(true)) return;
  LOG(ERROR) << "input log " << options_.dir << " failed: " << s << ". No reply leaves this node any more; "
             << "it must stop (a failed fsync is never retried) and recover on restart";
  {
    std::lock_guard<std::mutex> l(gate_mu_);
    held_.clear();
  }
  if (fatal_) fatal_(s);
}

absl::Status LogStage::Close() {
  std::unique_ptr<InputLogWriter> w;
  {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    w = std::move(writer_);
  }
  if (w == nullptr) return absl::OkStatus();
  return w->Close();
}

LogStage::WriterStats LogStage::writer_stats() const {
  std::lock_guard<std::mutex> l(mu_);
  WriterStats w;
  if (writer_ == nullptr) return w;
  w.bytes = writer_->bytes_written();
  w.groups = writer_->groups();
  w.sync_seconds = writer_->sync_seconds();
  return w;
}

}  // namespace detdb
