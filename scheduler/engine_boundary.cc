// Engine: digests, idleness and waits at epoch boundaries (a hold of every
// local partition at an epoch's end: snapshots, checkpoints, a rejoin's
// end). engine.h documents the class.
#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "scheduler/engine.h"
#include "xxhash.h"

namespace detdb {

uint64_t Engine::Digest() const {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (PartitionId p : local_) {
    const uint64_t d = stores_[p]->Digest();
    XXH3_64bits_update(state, &d, sizeof(d));
  }
  const uint64_t out = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return out;
}

std::vector<std::pair<PartitionId, uint64_t>> Engine::PartitionDigests() const {
  std::vector<std::pair<PartitionId, uint64_t>> out;
  for (PartitionId p : local_) out.emplace_back(p, stores_[p]->Digest());
  return out;
}

uint64_t Engine::merged_epoch() const {
  uint64_t m = UINT64_MAX;
  for (PartitionId p : local_) m = std::min(m, schedulers_[p]->merged_epoch());
  return m;
}

absl::Status Engine::WaitIdle(uint64_t min_epoch, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool idle = merged_epoch() >= min_epoch;
    for (PartitionId p : local_) idle = idle && schedulers_[p]->Idle();
    if (idle) return absl::OkStatus();
    if (std::chrono::steady_clock::now() >= deadline)
      return absl::DeadlineExceededError(absl::StrCat("not idle: merged epoch ", merged_epoch(), ", wanted ",
                                                      min_epoch));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

absl::StatusOr<std::vector<std::pair<PartitionId, uint64_t>>> Engine::SnapshotDigests(
    uint64_t epoch, std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
  std::vector<std::pair<PartitionId, uint64_t>> out;
  if (log_failed()) return absl::UnavailableError("the input log failed: this node answers nothing more");
  absl::Status s = AtEpochBoundary(epoch, timeout, cancel, [&] { out = PartitionDigests(); });
  if (!s.ok()) return s;
  s = WaitDurable(epoch, timeout);  // after the hold: the partitions run on meanwhile
  if (!s.ok()) return s;
  return out;
}

absl::Status Engine::WaitDurable(uint64_t epoch, std::chrono::milliseconds timeout) const {
  if (stage_ == nullptr) return absl::OkStatus();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A failed log answers nothing, even about epochs it made durable before
  // it failed: the node must stop and recover (checked before the
  // watermark, so a caller never turns an OK into a result it cannot give).
  for (;;) {
    if (stage_->failed())
      return absl::UnavailableError("the input log failed: nothing after its last durable epoch is answered");
    if (stage_->watermark() + 1 >= epoch) break;
    if (std::chrono::steady_clock::now() >= deadline)
      return absl::DeadlineExceededError(absl::StrCat("epochs below ", epoch, " not durable on every node yet (watermark ",
                                                      stage_->watermark(), ")"));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return absl::OkStatus();
}

absl::Status Engine::AtEpochBoundary(uint64_t epoch, std::chrono::milliseconds timeout,
                                     const std::atomic<bool>* cancel, const std::function<void()>& fn) {
  return AtEpochBoundaryUntil(
      epoch, std::chrono::steady_clock::now() + timeout, [cancel] { return cancel != nullptr && cancel->load(); },
      fn);
}

absl::Status Engine::AtEpochBoundaryUntil(uint64_t epoch, std::chrono::steady_clock::time_point deadline,
                                          const std::function<bool()>& cancelled, const std::function<void()>& fn) {
  // The holds add up (Scheduler::HoldAt): several callers wait for their
  // boundaries at once, without a lock (findings 9, 13); only fn runs one
  // at a time.
  std::vector<PartitionId> held;
  auto release = [&] {
    for (PartitionId p : held) schedulers_[p]->ReleaseHold(epoch);
  };
  for (PartitionId p : local_) {
    if (!schedulers_[p]->HoldAt(epoch)) {
      const uint64_t at = schedulers_[p]->merged_epoch();
      release();
      return absl::FailedPreconditionError(absl::StrCat("partition ", p, " already merged into epoch ", epoch,
                                                        " (it is at ", at, "); ask for a later epoch"));
    }
    held.push_back(p);
  }
  for (;;) {
    bool there = true;
    for (PartitionId p : local_)
      there = there && schedulers_[p]->merged_epoch() >= epoch && schedulers_[p]->Idle();
    if (there) break;
    if (cancelled()) {
      release();
      return absl::CancelledError(absl::StrCat("cancelled while waiting for the boundary of epoch ", epoch));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      release();
      return absl::DeadlineExceededError(absl::StrCat("epoch ", epoch, " not reached: merged ", merged_epoch()));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  {
    std::lock_guard<std::mutex> one_at_a_time(boundary_mu_);
    fn();
  }
  release();
  return absl::OkStatus();
}

}  // namespace detdb
