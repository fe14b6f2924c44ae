#include "scheduler/admission.h"

#include <algorithm>
#include <limits>

namespace detdb {
namespace {
// Runnable txns a worker takes from the ready queue at once (see
// Scheduler::WorkerThread); the smallest window gives every worker two such
// batches.
constexpr uint64_t kBatchPerWorker = 4;
}  // namespace

AdmissionController::AdmissionController(const AdmissionOptions& o)
    : adaptive_(o.adaptive),
      workers_(std::max<uint32_t>(1, o.workers)),
      min_(std::min<uint64_t>(o.max_active == 0 ? std::numeric_limits<uint64_t>::max() : o.max_active,
                              2 * kBatchPerWorker * workers_)),
      max_(o.max_active == 0 ? std::numeric_limits<uint64_t>::max() : o.max_active),
      window_(adaptive_ ? std::min(max_, 8 * min_) : max_) {
  SetWindow(window_);
}

void AdmissionController::SetWindow(uint64_t w) {
  window_ = w;
  resume_gap_ = std::max<uint64_t>(1, w / 8);
  gen_admitted_ = gen_blocked_ = 0;
  gen_bound_ = gen_input_ran_out_ = false;
}

void AdmissionController::Adjust(const AdmissionSignals& s) {
  if (!adaptive_) return;
  gen_admitted_ += s.admitted;
  gen_blocked_ += s.blocked;
  if (s.window_bound && s.starved > 0 && !(gen_admitted_ > 0 && gen_blocked_ == gen_admitted_)) {
    const uint64_t step = std::max(workers_, window_ / 2);
    const uint64_t next = window_ > max_ - step ? max_ : window_ + step;
    if (next != window_) ++grows_;
    SetWindow(next);
    return;
  }
  gen_bound_ |= s.window_bound;
  gen_input_ran_out_ |= s.input_ran_out;
  if (gen_admitted_ < window_) return;
  if (gen_bound_ && !gen_input_ran_out_) {
    const bool mostly_blocked = 2 * gen_blocked_ > gen_admitted_;
    const uint64_t step = std::max<uint64_t>(1, mostly_blocked ? window_ / 4 : window_ / 16);
    const uint64_t next = std::max(min_, window_ > step ? window_ - step : 0);
    if (next != window_) ++shrinks_;
    SetWindow(next);
    return;
  }
  gen_admitted_ = gen_blocked_ = 0;
  gen_bound_ = gen_input_ran_out_ = false;
}

}  // namespace detdb
