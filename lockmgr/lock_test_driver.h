// LockTestDriver: a simulated partition for tests. It owns a workload of
// txns, admits them in id order through a LockManager, plays the workers
// (the test decides which running txn finishes next), and checks at every
// step the global invariants of LOCKING.md 1.6:
//   G1  a txn is dispatched only when no earlier txn that conflicts with it
//       on a key (not a hash slot) is still unreleased;
//   G4  every txn is dispatched exactly once;
//   G5  after each Poll the oldest unreleased txn is running, and at the end
//       the manager is quiescent;
// plus the manager's own CheckInvariants() after every operation.
//
// Thread-safety: none; single-threaded test helper.
#ifndef DETDB_LOCKMGR_LOCK_TEST_DRIVER_H_
#define DETDB_LOCKMGR_LOCK_TEST_DRIVER_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "lockmgr/lock_manager.h"

namespace detdb {

struct TestTxn {
  TxnId id;
  std::vector<Key> reads;
  std::vector<Key> writes;
};

class LockTestDriver {
 public:
  enum class Order { kRandom, kOldestFirst, kNewestFirst };

  // txns: in increasing id order. check_invariants: call CheckInvariants()
  // after every operation.
  LockTestDriver(LockManager* lm, std::vector<TestTxn> txns, bool check_invariants = true);

  // Admits greedily: polls, then admits the next txn while CanAdmit(), and
  // polls once more. Returns the ids dispatched meanwhile, in order.
  std::vector<TxnId> AdmitAll();
  // Admits exactly one txn (REQUIRES: one is pending and CanAdmit()).
  std::vector<TxnId> AdmitOne();
  // The worker finishes txn `id` (REQUIRES: running): Release, then Poll.
  std::vector<TxnId> Done(TxnId id);
  std::vector<TxnId> Poll();

  // Runs the whole workload: admissions interleaved with completions chosen
  // by `order` (kRandom draws from rng, also to interleave admission).
  absl::Status RunToEnd(Order order, std::mt19937_64* rng);

  bool CanAdmit() const { return next_ < txns_.size() && lm_->CanAdmit(); }
  const std::vector<TxnId>& running() const { return running_; }
  std::vector<TxnId> dispatch_order() const { return dispatched_; }
  // The first violation seen, or OK.
  const absl::Status& status() const { return status_; }

 private:
  struct Slot {
    LockTxn lt;
    bool admitted = false, dispatched = false, released = false;
  };
  std::vector<TxnId> Collect();  // drains ready_ with G1/G4 checks
  void Check(const char* where);
  void Fail(std::string msg);
  size_t IndexOf(TxnId id) const;

  LockManager* lm_;
  std::vector<TestTxn> txns_;
  std::vector<Slot> slots_;
  const bool check_invariants_;
  size_t next_ = 0;     // next txn to admit
  size_t oldest_ = 0;   // lowest index not yet released
  ReadyList ready_;
  std::vector<TxnId> running_;
  std::vector<TxnId> dispatched_;
  absl::Status status_;
};

}  // namespace detdb

#endif  // DETDB_LOCKMGR_LOCK_TEST_DRIVER_H_
