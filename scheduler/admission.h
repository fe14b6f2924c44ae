// AdmissionController: how far ahead of its workers a partition's lock
// thread admits txns. Pure logic (no threads, no clock): the lock thread
// feeds it what it saw and asks it whether one more txn may be admitted.
//
// Why: every admitted txn that cannot run yet is lock state the lock thread
// pays for (successor lists, queue entries, cold txn states) without giving
// the workers anything to do. A fixed window too large for the workload (the
// old max_active = 2000) left most admitted txns blocked; one too small
// starves the workers. The controller keeps the window where the workers
// are just fed, for every lock manager, with no constant tuned to one
// workload:
// - it grows (by half, at least by `workers`) as soon as a worker finds no
//   runnable txn while the window is what stops admission, unless every
//   txn admitted since the window last changed blocked: then more window
//   would add only blocked txns (a serial chain: one hot record written by
//   every txn), so it does not grow;
// - it shrinks (a trial, validated by the release rate: below) when a whole
//   generation (as many admissions as the window) passed with the window
//   binding and no worker starving: the active txns
//   beyond what keeps the workers fed are lock state that adds no runnable
//   txn they need. By 1/16 a generation, by 1/4 when most of the
//   generation's admissions blocked (the lock state grew, the runnable set
//   did not). Never in a generation in which the lock thread ran out of
//   input: a lock thread that waits for input has time to spare, so the
//   lock state of a larger window costs the workers nothing, while a
//   smaller one only makes the lock thread sleep and be woken more often
//   (TPC-C's closed loop of 200 txns: the window came down to its minimum
//   and every couple of releases woke the lock thread; ~18% lower).
// The result is the smallest window at which the workers are just fed and
// the release rate is no lower than at a larger one, probed continually
// (slow multiplicative decrease, one step a period, fast increase).
//
// Every shrink is validated by the release rate, as the climb below does:
// "the workers were fed" is seen only when a worker finds the ready queue
// empty with the window full, so it misses the cost of a small window that
// shows elsewhere: the lock thread asleep until a worker frees a slot and
// wakes it, workers waiting for that wake-up (dclp, 1 worker, contention
// 0.1: the window went down to 8 and ran at 277K txns/s on 1.3 busy cores,
// against 416K on 1.9 at a fixed 256). So a shrink the rules above call
// for is a trial: the controller measures the release rate over a period
// (at least kClimbPeriodUs and one generation) at the current window, then
// at the smaller one, and keeps the smaller window only if its rate is not
// 3% below the best rate measured since the descent began (the best, not
// the previous step's: a run of small steps each within 3% could otherwise
// walk the window down any slope). Otherwise it goes back to the window of
// that best rate and waits before the next trial: one period after the
// first undo, doubling with every undo in a row up to kMaxHoldPeriods, so
// that at the knee it spends a small share of its time in trials. The
// trial after an undone shrink is a probe one step up (by half), kept only
// if 5% faster (as a climb's step up): on a loaded host a 20 ms period is
// noisy, and a shrink kept by luck would otherwise never be corrected, so
// the window would ratchet down past the knee. Growth
// on starvation is immediate until a first rate is measured; after that
// it is one step a period, checked the same way when a rate was measured
// at the window it grew from: if the first period after it is 3% slower
// than the last one before, the window goes back and starvation grows it
// again only after a hold (same doubling). A worker starving during a
// trial shrink undoes it. Without these, growth at once and shrinking a
// period at a time ratchet the window up: on a loaded host a descheduled lock thread
// starves the worker now and then, and dclp (1 worker, contention 0.1)
// went to a window of 870 with 99% of its admissions blocked and ran at
// half the rate it has at 16-60.
//
// Starvation explained by parked txns (multi-partition txns waiting for
// other partitions' reads: at least a quarter of the window parked) says
// more about the other partitions and the network than about this window:
// a larger window may feed the workers (a long network delay needs more
// txns in flight) or only add lock state and wake-ups (two partitions of
// one process on two cores: dclp ran 130K txns/s at a window of 16 and 75-
// 95K at 1,000). There the controller hill-climbs on the release rate
// instead of growing on every starvation: it measures the rate at the
// current window over a period (at least kClimbPeriodUs and one
// generation), tries one step larger or smaller for a period, and keeps the
// new window if it was faster (larger: by 5%; smaller: if not 3% slower,
// since a smaller window costs less lock state), else goes back and tries
// the other direction next. It leaves that mode when a period's parked
// share falls below a quarter of the window.
// max_active stays the hard cap. Admission order is unchanged (id order), so
// the window changes only timing, never a result (G1 of LOCKING.md).
//
// Thread-safety: not thread-safe; the scheduler calls it under lm_mu_.
#ifndef DETDB_SCHEDULER_ADMISSION_H_
#define DETDB_SCHEDULER_ADMISSION_H_

#include <cstdint>

namespace detdb {

struct AdmissionOptions {
  uint32_t workers = 1;         // worker threads of the partition (>= 1)
  uint32_t max_active = 2000;   // hard cap on admitted, unreleased txns; 0: none
  bool adaptive = true;         // false: the window is max_active (a fixed window)
};

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
  // Trial shrinks undone because the release rate fell (counted in shrinks()
  // too), and whether a trial shrink is being measured now.
  uint64_t shrinks_undone() const { return shrinks_undone_; }
  // Growths undone because the release rate fell (counted in grows() too).
  uint64_t grows_undone() const { return grows_undone_; }
  bool trying_shrink() const { return probe_.trial; }

  // A climbing or shrink-trial period lasts at least this long (and one
  // generation).
  static constexpr uint64_t kClimbPeriodUs = 20000;
  // The longest wait, in periods, between shrink trials after undone ones.
  static constexpr uint64_t kMaxHoldPeriods = 32;

 private:
  enum class Phase { kOff, kBase, kTrial };
  void SetWindow(uint64_t w);
  // Starts climbing from the current window; the next period measures it.
  void StartClimb(const AdmissionSignals& s);
  void Climb(const AdmissionSignals& s);
  // A new descent from the current window: nothing measured yet, the
  // period starts at `now_us`.
  void ResetProbe(uint64_t now_us);
  // Counts the round into the current period; at its end measures the rate
  // and starts, keeps or undoes a trial shrink.
  void Probe(const AdmissionSignals& s);
  uint64_t Larger() const;
  uint64_t Smaller() const;

  const bool adaptive_;
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
  struct ProbeState {
    bool started = false;        // start_us is set
    bool trial = false;          // the current period measures a trial shrink
    uint64_t start_us = 0;       // the current period's start
    uint64_t released = 0, admitted = 0;  // in the current period
    uint64_t best_window = 0;    // 0: nothing measured in this descent
    double best_rate = 0;        // the best release rate of the descent (txns per us)
    uint64_t hold = 0;           // periods to wait before the next trial
    uint64_t backoff = 1;        // the hold after the next undo
    // The last whole period's rate and window, kept across ResetProbe.
    uint64_t last_window = 0;
    double last_rate = 0;
    // A growth checked at the next period's end: the window and rate before.
    bool grow_trial = false;
    bool grow_probe = false;     // the growth is a probe up, not a starvation's
    bool up = false;             // the next trial is a probe up (a shrink was undone)
    bool bound = false;          // the window bound in the current period
    bool measured = false;       // a period has ended (a rate is known)
    bool grew = false;           // a growth on starvation in the current period
    uint64_t pre_grow_window = 0;
    double pre_grow_rate = 0;
    uint64_t grow_hold = 0, grow_backoff = 1;  // as hold and backoff, for growth
  } probe_;
  uint64_t shrinks_undone_ = 0, grows_undone_ = 0;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ADMISSION_H_
