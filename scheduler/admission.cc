#include "scheduler/admission.h"

#include <algorithm>
#include <limits>

namespace detdb {
namespace {
// Runnable txns a worker takes from the ready queue at once (see
// Scheduler::WorkerThread); the smallest window gives every worker two such
// batches.
constexpr uint64_t kBatchPerWorker = 4;
// A growth is kept only if this many consecutive periods are each 5% faster
// (see Probe).
constexpr uint32_t kGrowChecks = 2;
}  // namespace

AdmissionController::AdmissionController(const AdmissionOptions& o)
    : adaptive_(o.adaptive),
      warmup_us_(o.warmup_us),
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
  shrink_wanted_ = false;
}

void AdmissionController::ResetProbe(uint64_t now_us) {
  ProbeState& p = probe_;
  p.started = true;
  p.trial = false;
  p.start_us = now_us;
  p.released = p.admitted = 0;
  p.best = p.top = RateAt{};
  p.pre_grow_best = p.pre_grow_top = RateAt{};
  p.grow_trial = false;
  p.recheck_window = 0;
  p.bound = false;
  p.input_ran_out = false;
}

void AdmissionController::Probe(const AdmissionSignals& s) {
  ProbeState& p = probe_;
  // Releases reported by the round that starts the first period happened
  // before it (in the warm-up, say): not counted in it.
  const bool starting = !p.started;
  if (starting) ResetProbe(s.now_us);
  p.released += starting ? 0 : s.released;
  p.admitted += s.admitted;
  p.bound |= s.window_bound;
  p.input_ran_out |= s.input_ran_out;
  const uint64_t elapsed = s.now_us > p.start_us ? s.now_us - p.start_us : 0;
  // A period, as when climbing: long enough to average out wake-ups and
  // time slices, and a whole generation.
  if (elapsed < kClimbPeriodUs || p.admitted < window_) return;
  const double rate = static_cast<double>(p.released) / static_cast<double>(elapsed);
  // A period in which the input ran out also counts the time the lock
  // thread waited for it, and one with no release measures nothing: neither
  // says how fast this window is. Discarded; a pending check waits for the
  // next period. So no rate compared below is 0.
  const bool usable = !p.input_ran_out && p.released > 0;
  p.start_us = s.now_us;
  p.released = p.admitted = 0;
  p.grew = false;
  const bool bound = p.bound;
  p.bound = false;
  p.input_ran_out = false;
  if (p.grow_hold > 0) --p.grow_hold;
  if (!usable) return;
  p.measured = true;
  if (p.grow_trial) {
    // Every growth, on starvation or a probe up, must be 5% faster, as a
    // climb's step up: more lock state for nothing otherwise, and steps up
    // by half kept on noise ratchet the window up (a descheduled lock
    // thread starves the workers now and then on a loaded host). A shrink
    // is judged against the best rate of its descent, and a 1/16 step kept
    // by luck costs little; a growth by half is judged against the best
    // rate known where it grew from (pre_grow_rate), in each of two
    // periods, and then re-checked, so that one lucky period on a noisy
    // host does not keep it (docs/ENGINE.md).
    if (rate < 1.05 * p.pre_grow_rate) {  // back
      p.grow_trial = false;
      ++grows_undone_;
      p.grow_hold = p.grow_backoff;
      p.grow_backoff = std::min(2 * p.grow_backoff, kMaxHoldPeriods);
      p.up = false;  // the larger window was just measured: no probe up now
      const RateAt best = p.pre_grow_best, top = p.pre_grow_top;
      SetWindow(p.pre_grow_window);
      ResetProbe(s.now_us);
      // The window it returns to was measured: the next growth is checked
      // against that rate, and the descent it grew from goes on with its
      // best and top, rather than from a fresh noisy measurement
      // (docs/ENGINE.md, "The descent keeps its reference").
      p.last_window = window_;
      p.last_rate = p.pre_grow_rate;
      if (top.window != 0) {
        p.best = best;
        p.top = top;
      }
      return;
    }
    if (--p.grow_checks > 0) return;  // the next period must be faster too
    p.grow_trial = false;
    p.grow_backoff = 1;
    // Kept. The check periods were chosen for being fast: they set no
    // reference for a shrink. The next period measures this window afresh,
    // and then a trial back to where it grew from is judged as any shrink.
    p.last_window = window_;
    p.last_rate = rate;
    p.recheck_window = p.pre_grow_window;
    p.best = RateAt{};
    // The descent it grew from had a top above it: still the reference of
    // the whole descent (a growth from low in a descent, kept on two lucky
    // periods, would otherwise make the grown window the top, and the
    // descent would go on from there).
    p.top = p.pre_grow_top.window >= window_ ? p.pre_grow_top : RateAt{};
    return;
  }
  p.last_window = window_;
  p.last_rate = rate;
  if (p.trial) {
    p.trial = false;
    if (rate < 0.97 * p.best.rate || rate < 0.97 * p.top.rate) {  // the smaller window is slower: back
      ++shrinks_undone_;
      const uint64_t back = p.best.window;
      // Its rate is the reference of a growth from there (none unchecked).
      p.last_window = back;
      p.last_rate = p.best.rate;
      p.hold = p.backoff;
      p.backoff = std::min(2 * p.backoff, kMaxHoldPeriods);
      p.up = true;  // the next trial: one step up (the descent may have gone too far)
      SetWindow(back);
      return;
    }
    p.backoff = 1;
  }
  // The best: the highest rate, and of equal ones the smaller window. Its
  // rate is the mean of the periods measured there in this descent, so that
  // neither one lucky period (which no trial could then match) nor one
  // unlucky one (which would let a slower trial pass) sets the reference.
  if (p.best.window == window_) {
    p.best.Add(rate);
  } else if (p.best.window == 0 || rate >= p.best.rate) {
    p.best.Set(window_, rate);
  }
  if (p.top.window == 0) {
    p.top = p.best;
  } else if (p.top.window == window_) {
    p.top.Add(rate);
  } else if (p.best.window == window_ && p.best.periods >= kTopPeriods && p.best.rate > 1.03 * p.top.rate) {
    // Measured as often as the top must be and clearly faster than it (the
    // descent began too high, as after the unchecked growths of a start):
    // the new top. Not on any higher mean: the top would then follow the
    // noise down.
    p.top = p.best;
  }
  if (p.best.window == window_ && window_ < p.top.window && p.best.periods >= kTopPeriods &&
      p.best.rate < 0.97 * p.top.rate) {
    // The best became so by lucky periods: measured again, the descent
    // has lost more than 3% against its top (under noise, steps that each
    // cost too little to be seen would otherwise walk the window down a
    // gentle slope). One step back up towards the top (not all the way: a
    // long descent on a flat rate is not undone by one lucky period at its
    // top), measured afresh, and held as after an undone trial.
    ++steps_back_up_;
    const uint64_t up = std::min(p.top.window, Larger());
    p.best = RateAt{};
    // A growth from there is checked against the top's rate (the best
    // known above it).
    p.last_window = up;
    p.last_rate = p.top.rate;
    p.hold = p.backoff;
    p.backoff = std::min(2 * p.backoff, kMaxHoldPeriods);
    SetWindow(up);
    return;
  }
  if (p.recheck_window != 0) {
    // A growth kept, this window now measured afresh: try the window it grew
    // from again (if the window still binds; otherwise it costs nothing).
    const uint64_t back = p.recheck_window;
    p.recheck_window = 0;
    if (bound && back < window_) {
      ++shrinks_;
      SetWindow(back);
      p.trial = true;
      return;
    }
  }
  if (p.hold > 0) {
    --p.hold;
    return;
  }
  if (p.up) {
    // Noise can keep a trial that was in fact slower, and nothing else
    // would bring the window back up: probe one step up, checked and held
    // as a growth (each undone shrink would otherwise be another chance
    // for a growth kept by luck); then descend again.
    p.up = false;
    const uint64_t next = Larger();
    if (bound && next != window_ && p.grow_hold == 0) {
      ++grows_;
      const uint64_t from = window_;
      const double from_rate = p.best.rate;  // the descent's best (mean) rate
      GrowTo(next, s.now_us);
      p.grow_trial = p.grow_probe = true;
      p.grow_checks = kGrowChecks;
      p.pre_grow_window = from;
      p.pre_grow_rate = from_rate;
      return;
    }
  }
  if (!shrink_wanted_) return;
  const uint64_t next = std::max(min_, window_ > shrink_step_ ? window_ - shrink_step_ : 0);
  if (next == window_) return;
  ++shrinks_;
  SetWindow(next);
  p.trial = true;
}

void AdmissionController::GrowTo(uint64_t w, uint64_t now_us) {
  const RateAt best = probe_.best, top = probe_.top;
  SetWindow(w);
  ResetProbe(now_us);
  probe_.pre_grow_best = best;
  probe_.pre_grow_top = top;
}

uint64_t AdmissionController::Larger() const {
  const uint64_t step = std::max(workers_, window_ / 2);
  return max_ - window_ <= step ? max_ : window_ + step;  // window_ <= max_ always
}

uint64_t AdmissionController::Smaller() const {
  const uint64_t step = std::max<uint64_t>(1, window_ / 3);
  return std::max(min_, window_ > step ? window_ - step : 0);
}

void AdmissionController::StartClimb(const AdmissionSignals& s) {
  climb_ = ClimbState{};
  climb_.phase = Phase::kBase;
  climb_.start_us = s.now_us;
  ProbeState& p = probe_;
  if (p.grow_trial) {
    // A growth not proven yet (of the plain rules, or a step up an earlier
    // climb handed over): the climb judges it, as its own step up from
    // where it grew, in the periods it still owes; else it would become
    // the climb's base unjudged.
    p.grow_trial = false;
    climb_.phase = Phase::kTrial;
    climb_.up = true;
    climb_.up_checks = p.grow_checks;
    climb_.carried = true;
    climb_.base_window = p.pre_grow_window;
    climb_.base_rate = p.pre_grow_rate;
  }
}

void AdmissionController::Climb(const AdmissionSignals& s) {
  ClimbState& c = climb_;
  c.released += s.released;
  c.admitted += s.admitted;
  c.parked_sum += s.parked;
  ++c.samples;
  const uint64_t elapsed = s.now_us > c.start_us ? s.now_us - c.start_us : 0;
  // A period: long enough to average out wake-ups and time slices, and a
  // whole generation, so that a new window's txns are what it measures.
  if (elapsed < kClimbPeriodUs || c.admitted < window_) return;
  const double rate = static_cast<double>(c.released) / static_cast<double>(elapsed);
  const bool still_parked = 4 * c.parked_sum >= window_ * c.samples;
  c.start_us = s.now_us;
  c.released = c.admitted = c.parked_sum = c.samples = 0;
  if (c.phase == Phase::kTrial) {
    // Judged even when this period ends the climb: a step left unjudged
    // would be kept by default (a step up kept so, whenever the parked
    // share dips, ratchets the window up).
    bool kept = c.up ? rate >= 1.05 * c.base_rate : rate >= 0.97 * c.base_rate;
    // A step up, as a growth of the plain rules, must be faster in each of
    // kGrowChecks periods: one lucky period in five is 5% faster on a noisy
    // host, and each step up kept so would stay.
    if (kept && c.up && --c.up_checks > 0) {
      if (still_parked) return;  // the next period must be faster too
      // The climb ends before the step up was proven: the plain rules
      // check it further, as a growth from the base (see Adjust).
      c.phase = Phase::kOff;
      c.handover = true;
      return;
    }
    if (kept) {
      ++climbs_kept_;
      if (!c.carried) ++(c.up ? grows_ : shrinks_);  // a carried growth was counted when it grew
    } else {
      ++(c.carried ? grows_undone_ : climbs_undone_);
      c.up = !c.up;
      c.phase = still_parked ? Phase::kBase : Phase::kOff;  // kBase: measured again before the next trial
      SetWindow(c.base_window);
      return;
    }
  }
  if (!still_parked) {  // the workers no longer wait for remote reads
    c.phase = Phase::kOff;
    return;
  }
  // Measured at the current window (a base, or a trial kept): try a step.
  c.base_window = window_;
  c.base_rate = rate;
  uint64_t next = c.up ? Larger() : Smaller();
  if (next == window_) {  // at a bound: the other way
    c.up = !c.up;
    next = c.up ? Larger() : Smaller();
  }
  c.phase = next == window_ ? Phase::kBase : Phase::kTrial;
  c.up_checks = kGrowChecks;
  c.carried = false;
  SetWindow(next);
}

void AdmissionController::Adjust(const AdmissionSignals& s) {
  if (!adaptive_) return;
  // The warm-up, from the first round that admitted a txn (an engine may
  // idle long before its first): nothing is measured and nothing changes
  // (no growth, no climb, no generation counted); the controller starts
  // after it.
  if (warmup_us_ > 0) {
    if (!first_seen_) {
      if (s.admitted == 0) return;
      first_seen_ = true;
      first_us_ = s.now_us;
    }
    if (s.now_us - first_us_ < warmup_us_) return;
  }
  if (climb_.phase != Phase::kOff) {
    Climb(s);
    if (climb_.phase != Phase::kOff) return;
    // Back to the plain rules: a new descent, with nothing kept from before
    // the climb (no pending probe up, no rate to check a growth against),
    // except a step up the climb had not finished checking: a growth from
    // its base, checked in the periods it still owes.
    ResetProbe(s.now_us);
    probe_.up = false;
    probe_.last_window = 0;
    if (climb_.handover) {
      if (!climb_.carried) ++grows_;  // counted as a growth now, as it may be undone as one
      probe_.grow_trial = true;
      probe_.grow_probe = false;
      probe_.grow_checks = climb_.up_checks;
      probe_.pre_grow_window = climb_.base_window;
      probe_.pre_grow_rate = climb_.base_rate;
    }
    return;  // this round closed the climb's period: the next one starts here
  }
  gen_admitted_ += s.admitted;
  gen_blocked_ += s.blocked;
  if (s.window_bound && s.starved > 0 && !(gen_admitted_ > 0 && gen_blocked_ == gen_admitted_)) {
    if (4 * s.parked >= window_ && s.parked > 0) {
      // Parked txns explain the starvation: climb on the rate instead.
      StartClimb(s);
      return;
    }
    ProbeState& p = probe_;
    if (p.trial || p.grow_hold > 0 || p.grow_trial || p.recheck_window != 0 || (p.measured && p.grew)) {
      // A trial shrink or a growth is being measured or re-checked, a
      // growth was undone lately, or (once a rate was measured) one
      // happened in this period: the rate decides. Starvation neither undoes
      // the trial (a too small window shows as a lower rate) nor restarts
      // the generation.
      Probe(s);
      return;
    }
    const uint64_t next = Larger();
    if (next == window_) {  // at the cap: the round still counts in the period
      SetWindow(next);
      Probe(s);
      return;
    }
    ++grows_;
    // Checked, if a rate was measured here, against the best rate known
    // here (a trial shrink is judged against the best too): this window's
    // last period's, or the best of the descent it stands in.
    const uint64_t from = window_;
    const double from_rate = p.last_window == window_ ? std::max(p.last_rate, p.best.rate) : 0;
    GrowTo(next, s.now_us);
    p.grew = true;
    p.grow_trial = from_rate > 0;
    p.grow_checks = kGrowChecks;
    p.grow_probe = false;
    p.pre_grow_window = from;
    p.pre_grow_rate = from_rate;
    return;
  }
  gen_bound_ |= s.window_bound;
  gen_input_ran_out_ |= s.input_ran_out;
  if (gen_admitted_ >= window_) {
    // A whole generation: it asks for a shrink if the window bound in it
    // and the lock thread never ran out of input; the last one decides.
    shrink_wanted_ = gen_bound_ && !gen_input_ran_out_;
    if (shrink_wanted_) {
      const bool mostly_blocked = 2 * gen_blocked_ > gen_admitted_;
      shrink_step_ = std::max<uint64_t>(1, mostly_blocked ? window_ / 4 : window_ / 16);
    }
    gen_admitted_ = gen_blocked_ = 0;
    gen_bound_ = gen_input_ran_out_ = false;
  }
  Probe(s);
}

}  // namespace detdb
