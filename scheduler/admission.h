// AdmissionController: how far ahead of its workers a partition's lock
// thread admits txns (the admission window). Pure logic (no threads, no
// clock): the lock thread feeds it what it saw, with the runner's clock, and
// asks whether one more txn may be admitted.
//
// Every admitted txn that cannot run yet is lock state the lock thread pays
// for without giving the workers anything to do; too small a window starves
// the workers or makes the lock thread sleep and be woken per release. The
// rules (the why, the thresholds' origin and measurements: docs/ENGINE.md,
// "Admission that adapts"):
// - grow (by half, at least by `workers`) when a worker finds no runnable
//   txn while the window stops admission, unless every txn admitted since
//   the last change blocked (a serial chain); until a release rate is
//   measured (after the warm-up) at once, then at most once a period, each
//   growth kept only if each of the next two periods' release rates is 5%
//   above the best
//   rate known where it grew from (its last period's, the descent's
//   best), else undone and held; a growth kept is re-checked: once the
//   next period has measured the grown window afresh, a trial back to the
//   window it grew from, judged as a shrink;
//   once a rate is measured, a starving worker neither undoes a pending
//   trial nor restarts the generation: the rate decides;
// - shrink (by 1/16, by 1/4 when most admissions block) after a whole
//   generation (window() admissions) with the window binding, the lock
//   thread never out of input, no growth and (at the cap) no starving
//   worker: a trial, kept only if the next period's release rate is not 3%
//   below the best of the descent (its best window's rate: the mean of
//   the periods measured there, the last kRateMemory at most) nor 3%
//   below the descent's top (where it started, or a window since measured
//   in kTopPeriods periods and 3% faster), else undone and the next trial
//   held (doubling, up to kMaxHoldPeriods); a best window whose mean over
//   kTopPeriods or more periods falls 3% below the top goes one step (by
//   half, at most to the top) back up towards it, held as after an undone
//   trial (under noise, steps that each cost too little to be seen would
//   otherwise walk the window down a gentle slope); an undone growth puts
//   the descent's best and top back, and a growth kept low in a descent
//   keeps its top;
//   after an undone trial, a probe one step up, checked as a growth and
//   held as one (an undone growth or probe delays the next of either);
// - a period (the unit of every rate) lasts kClimbPeriodUs and a whole
//   generation; one in which the input ran out or nothing was released
//   measures nothing and is discarded;
// - within warmup_us of the first round that admitted a txn (a new
//   engine's first touches of its memory) nothing is measured and nothing
//   changes;
// - when parked txns (waiting for other partitions' reads) explain the
//   starvation, hill-climb on the release rate instead (a step up kept if 5%
//   faster in each of two periods, a step down if not 3% slower) until the
//   parked share falls below a quarter of the window; the step the climb
//   ends on is judged too (a step up half checked goes on to the plain
//   rules as a growth from its base), never kept by default.
// max_active stays the hard cap. Admission order is unchanged (id order),
// so the window changes only timing, never a result (G1 of LOCKING.md).
//
// Thread-safety: not thread-safe; the scheduler calls it under lm_mu_.
#ifndef DETDB_SCHEDULER_ADMISSION_H_
#define DETDB_SCHEDULER_ADMISSION_H_

#include <algorithm>
#include <cstdint>

namespace detdb {

struct AdmissionOptions {
  uint32_t workers = 1;         // worker threads of the partition (>= 1)
  uint32_t max_active = 2000;   // hard cap on admitted, unreleased txns; 0: none
  bool adaptive = true;         // false: the window is max_active (a fixed window)
  // Release rates measured within this long of the first round are
  // discarded: a new engine's first rounds touch its memory for the first
  // time (measured 10-40% slower in its first 60-80 ms), and a descent
  // would take the rising rate for a smaller window's gain. The scheduler
  // uses kAdmissionWarmupUs; 0: none.
  uint64_t warmup_us = 0;
};

inline constexpr uint64_t kAdmissionWarmupUs = 100000;

// The options a PartitionCore gives its controller; an admission trace of
// its rounds must record these for a replay to choose the same windows.
inline AdmissionOptions EngineAdmissionOptions(uint32_t workers, uint32_t max_active, bool adaptive,
                                               uint64_t warmup_us = kAdmissionWarmupUs) {
  return {.workers = workers, .max_active = max_active, .adaptive = adaptive, .warmup_us = warmup_us};
}

// What the lock thread saw since the previous Adjust().
struct AdmissionSignals {
  uint64_t starved = 0;        // times a worker found no runnable txn while the window was binding
  uint64_t admitted = 0;       // txns admitted
  uint64_t blocked = 0;        // of those, not granted at once
  // The window, not the input or the lock manager's own bound, is what
  // stopped admission this round.
  bool window_bound = false;
  // The lock thread took every txn of its input this round and found no
  // more (it is not the bottleneck).
  bool input_ran_out = false;
  uint64_t released = 0;  // txns released since the previous Adjust()
  uint64_t parked = 0;    // admitted txns now waiting for other partitions' reads
  uint64_t now_us = 0;    // the runner's clock (virtual in the simulation)
};

class AdmissionController {
 public:
  explicit AdmissionController(const AdmissionOptions& options);

  // Whether one more txn may be admitted with `active` admitted, unreleased.
  bool MayAdmit(uint64_t active) const { return active < window_; }
  // Whether admission, stopped by the window, is worth resuming: below the
  // cap the window must have room for a batch (an eighth of it), not just
  // for one txn, so that a sleeping lock thread is woken once per batch
  // rather than per release; at the cap (and with a fixed window), as soon
  // as one txn fits, as with a plain max_active bound.
  bool WorthResuming(uint64_t active) const {
    return window_ >= max_ ? active < window_ : active + resume_gap_ <= window_;
  }

  void Adjust(const AdmissionSignals& s);

  uint64_t window() const { return window_; }
  uint64_t min_window() const { return min_; }
  uint64_t max_window() const { return max_; }
  uint64_t grows() const { return grows_; }
  uint64_t shrinks() const { return shrinks_; }
  // Whether the window hill-climbs on the release rate now (parked txns
  // explain the workers' starvation), and the trials it kept or undid.
  bool climbing() const { return climb_.phase != Phase::kOff; }
  uint64_t climbs_kept() const { return climbs_kept_; }
  uint64_t climbs_undone() const { return climbs_undone_; }
  // Trial shrinks undone (the release rate fell, or a worker starved during
  // the trial; counted in shrinks() too), and whether a trial shrink is being
  // measured now.
  uint64_t shrinks_undone() const { return shrinks_undone_; }
  // Growths undone because the release rate fell (counted in grows() too).
  uint64_t grows_undone() const { return grows_undone_; }
  bool trying_shrink() const { return probe_.trial; }
  // Times a descent's best window, measured again, fell 3% below the
  // descent's top and the window went a step back up (not in grows()).
  uint64_t steps_back_up() const { return steps_back_up_; }

  // A climbing or shrink-trial period lasts at least this long (and one
  // generation).
  static constexpr uint64_t kClimbPeriodUs = 20000;
  // The longest wait, in periods, between shrink trials after undone ones.
  static constexpr uint64_t kMaxHoldPeriods = 32;
  // Periods a window must be measured in to become a descent's top, or to
  // be sent back up towards it (see Probe): the mean of 4 periods of a
  // 20 ms rate measured within ~5% is within ~2.5%.
  static constexpr uint64_t kTopPeriods = 4;

 private:
  enum class Phase { kOff, kBase, kTrial };
  void SetWindow(uint64_t w);
  // Starts climbing from the current window; the next period measures it.
  void StartClimb(const AdmissionSignals& s);
  void Climb(const AdmissionSignals& s);
  // A new descent from the current window: nothing measured yet, the
  // period starts at `now_us`.
  void ResetProbe(uint64_t now_us);
  // A growth (on starvation or a probe up) to `w`: a new descent, the
  // current one's best and top kept to be put back if it is undone.
  void GrowTo(uint64_t w, uint64_t now_us);
  // Counts the round into the current period; at its end measures the rate
  // and starts, keeps or undoes a trial shrink.
  void Probe(const AdmissionSignals& s);
  uint64_t Larger() const;
  uint64_t Smaller() const;

  const bool adaptive_;
  const uint64_t warmup_us_;
  bool first_seen_ = false;
  uint64_t first_us_ = 0;       // the first round's clock (once first_seen_)
  const uint64_t workers_;
  const uint64_t min_, max_;
  uint64_t window_;
  uint64_t resume_gap_ = 1;  // max(1, window_ / 8)
  uint64_t grows_ = 0, shrinks_ = 0;
  // The current generation: admissions and blocked ones since the last
  // change, and whether the window was binding in it.
  uint64_t gen_admitted_ = 0, gen_blocked_ = 0;
  bool gen_bound_ = false;
  bool gen_input_ran_out_ = false;
  // Hill-climbing (see the file comment).
  struct ClimbState {
    Phase phase = Phase::kOff;
    bool up = true;             // the direction of the next trial
    uint64_t base_window = 0;   // the window a trial is compared with
    double base_rate = 0;       // its release rate (txns per us)
    uint32_t up_checks = 0;     // periods a step up must still be 5% faster in
    bool carried = false;       // the trial is a plain growth the climb took over (counted in grows_)
    bool handover = false;      // the climb ended on a step up still owing a check
    uint64_t start_us = 0;      // the current period's start
    uint64_t released = 0, admitted = 0;  // in the current period
    uint64_t parked_sum = 0, samples = 0; // parked, summed over its Adjusts
  } climb_;
  uint64_t climbs_kept_ = 0, climbs_undone_ = 0;
  // Validated shrinking (see the file comment). A completed generation asks
  // for a shrink (shrink_wanted_, by shrink_step_); the next period's end
  // tries it.
  bool shrink_wanted_ = false;
  uint64_t shrink_step_ = 1;
  // A window of the descent and its release rate: the mean of the periods
  // measured there (txns per us); window 0: none.
  // The mean is over the last kRateMemory periods at most (a running
  // average that forgets), so that a workload whose speed drifts is judged
  // by its recent rate: an average of every period ever measured would lag
  // a slowing workload and undo every trial shrink.
  static constexpr uint64_t kRateMemory = 32;
  struct RateAt {
    uint64_t window = 0;
    double rate = 0;
    uint64_t periods = 0;  // measured (counting past kRateMemory)
    void Set(uint64_t w, double r) { *this = RateAt{w, r, 1}; }
    void Add(double r) {
      ++periods;
      rate += (r - rate) / static_cast<double>(std::min(periods, kRateMemory));
    }
  };
  struct ProbeState {
    bool started = false;        // start_us is set
    bool trial = false;          // the current period measures a trial shrink
    uint64_t start_us = 0;       // the current period's start
    uint64_t released = 0, admitted = 0;  // in the current period
    // The best window of the descent (the highest rate, none: nothing
    // measured yet), and its top: the window it started from, or a window
    // since measured in kTopPeriods periods and 3% faster. A trial shrink
    // may cost 3% against the best, and the whole descent 3% against its
    // top.
    RateAt best, top;
    uint64_t hold = 0;           // periods to wait before the next trial
    uint64_t backoff = 1;        // the hold after the next undo
    // The last whole period's rate and window, kept across ResetProbe.
    uint64_t last_window = 0;
    double last_rate = 0;
    // A growth checked at the next period's end: the window and rate before.
    bool grow_trial = false;
    bool grow_probe = false;     // the growth is a probe up, not a starvation's
    uint32_t grow_checks = 0;    // periods the growth must still be 5% faster in
    // A growth kept: the window it grew from, tried again (a trial shrink)
    // once the next period has measured the grown window; 0: none.
    uint64_t recheck_window = 0;
    bool up = false;             // the next trial is a probe up (a shrink was undone)
    bool bound = false;          // the window bound in the current period
    bool input_ran_out = false;  // the input ran out in the current period
    bool measured = false;       // a period has ended (a rate is known)
    bool grew = false;           // a growth on starvation in the current period
    uint64_t pre_grow_window = 0;
    double pre_grow_rate = 0;
    RateAt pre_grow_best, pre_grow_top;  // the descent's when it grew: back in force if undone
    uint64_t grow_hold = 0, grow_backoff = 1;  // as hold and backoff, for growth
  } probe_;
  uint64_t shrinks_undone_ = 0, grows_undone_ = 0, steps_back_up_ = 0;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ADMISSION_H_
