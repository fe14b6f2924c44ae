#include "sequencer/sequencer.h"

#include <chrono>

#include "common/thread_name.h"
#include "glog/logging.h"

namespace detdb {

Sequencer::Sequencer(const SequencerOptions& options, const Partitioner* partitioner, BatchSink* sink)
    : options_(options),
      sink_(sink),
      partitioner_(partitioner),
      batcher_(std::make_unique<EpochBatcher>(options.sequencer_id, partitioner, options.first_epoch,
                                              options.first_id, options.id_scheme)),
      epochs_closed_(options.first_epoch - 1) {}

void Sequencer::ResumeAt(uint64_t first_epoch, TxnId first_id) {
  CHECK(!thread_.joinable()) << "ResumeAt after Start";
  CHECK_GE(first_epoch, 1u);
  batcher_ = std::make_unique<EpochBatcher>(options_.sequencer_id, partitioner_, first_epoch, first_id,
                                            options_.id_scheme);
  epochs_closed_.store(first_epoch - 1, std::memory_order_relaxed);
}

Sequencer::~Sequencer() { Stop(); }

void Sequencer::Start(uint64_t start_us) {
  CHECK(!thread_.joinable()) << "sequencer started twice";
  start_us_ = start_us != 0 ? start_us : options_.start_us;
  thread_ = std::thread([this] {
    SetThreadName("detdb-seq-" + std::to_string(options_.sequencer_id));
    Run();
  });
}

void Sequencer::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    accepting_ = false;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::Status Sequencer::Submit(pb::Txn txn) {
  std::lock_guard<std::mutex> l(mu_);
  if (!accepting_) return absl::UnavailableError("sequencer is stopped");
  if (incoming_txns_ >= options_.max_pending) return absl::UnavailableError("sequencer overloaded");
  if (incoming_.empty()) {
    incoming_.emplace_back();
    if (!spares_.empty()) {  // with an earlier group's capacity
      incoming_.back().swap(spares_.back());
      spares_.pop_back();
    }
  }
  incoming_.back().push_back(std::move(txn));
  ++incoming_txns_;
  return absl::OkStatus();
}

absl::Status Sequencer::SubmitMany(std::vector<pb::Txn>* txns) {
  std::lock_guard<std::mutex> l(mu_);
  if (!accepting_) return absl::UnavailableError("sequencer is stopped");
  if (incoming_txns_ + txns->size() > options_.max_pending)
    return absl::UnavailableError("sequencer overloaded");
  if (txns->empty()) return absl::OkStatus();
  incoming_txns_ += txns->size();
  incoming_.emplace_back().swap(*txns);
  if (!spares_.empty()) {  // *txns is empty: take a spare's capacity instead
    txns->swap(spares_.back());
    spares_.pop_back();
  }
  return absl::OkStatus();
}

void Sequencer::CloseEpoch() {
  {
    std::lock_guard<std::mutex> l(mu_);
    taken_.swap(incoming_);
    incoming_txns_ = 0;
  }
  // Txns that did not fit the last epoch go first, keeping arrival order;
  // from the first that does not fit, the rest wait for the next epoch.
  carried_.swap(carry_);
  bool full = false;
  const auto add = [&](pb::Txn* t) {
    if (!full && batcher_->Add(t)) return;
    full = true;
    carry_.push_back(std::move(*t));
  };
  for (pb::Txn& t : carried_) add(&t);
  carried_.clear();
  for (Group& group : taken_)
    for (pb::Txn& t : group) add(&t);
  for (Group& group : taken_) group.clear();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (Group& group : taken_)
      if (spares_.size() < kMaxSpares && group.capacity() <= kMaxSpareCapacity) spares_.push_back(std::move(group));
  }
  taken_.clear();
  sink_->OnBatch(batcher_->Close());
  epochs_closed_.fetch_add(1, std::memory_order_relaxed);
}

void Sequencer::Run() {
  const auto epoch = std::chrono::microseconds(options_.epoch_us);
  if (start_us_ != 0) {
    // Wall-clock aligned: the k-th epoch closes at start_us + k * epoch_us.
    using WallClock = std::chrono::system_clock;
    const WallClock::time_point start{std::chrono::microseconds(start_us_)};
    for (uint64_t e = 1;; ++e) {
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait_until(l, start + e * epoch, [&] { return stopping_; });
        if (stopping_) break;
      }
      CloseEpoch();
    }
    do {
      CloseEpoch();
    } while (!carry_.empty());
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + epoch;
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_until(l, deadline, [&] { return stopping_; });
      if (stopping_) break;
    }
    CloseEpoch();
    deadline += epoch;
    const auto now = std::chrono::steady_clock::now();
    if (deadline < now) deadline = now;  // fell behind: do not burst
  }
  // Flush: everything submitted before Stop() is sequenced.
  do {
    CloseEpoch();
  } while (!carry_.empty());
}

}  // namespace detdb
