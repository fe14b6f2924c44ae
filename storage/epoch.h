// EpochDomain and EpochParticipant: epoch-based reclamation of the memory
// that a partition's lock-free readers may still stand on (erased records,
// bucket arrays retired by index growth). docs/STORAGE.md, "Reclamation".
//
//   EpochDomain epochs;                       // one per PartitionStore
//   EpochParticipant me(&epochs);             // a worker: online from here
//   ... run a txn (Get/Insert/Erase) ...
//   me.Quiescent();                           // between txns: holds nothing
//   me.Offline(); queue.Wait(); me.Online();  // around a sleep
//
// Scheme (quiescent-state based, with an epoch counter):
//  - Every thread that reads a table while writers may run is a
//    participant: it owns a slot announcing the epoch it last saw at a
//    quiescent point (a point where it holds no pointer into any table), or
//    0 while offline.
//  - The reclaimer takes what writers have unlinked (it is unreachable for
//    anyone who looks from now on), then Advance()s the epoch to L and
//    labels the batch L. The batch may be freed once SafeEpoch() >= L:
//    every online participant has announced L or later, i.e. has passed a
//    quiescent point after the unlinking, so it no longer holds a pointer
//    obtained before it.
//  - Quiescent() is the common path: one acquire load of the epoch (a line
//    that changes once per reclamation) and, only when the epoch moved, a
//    release store to the participant's own cache line. No shared counter
//    is written per txn. Release (announce) / acquire (SafeEpoch) orders
//    everything the participant read before it ahead of the free; the
//    acquire load of the epoch orders the unlinking ahead of everything it
//    reads after.
//  - Online() after being offline must not let the reclaimer miss it while
//    it already reads (a store then loads: Dekker). It announces with a
//    read-modify-write (exchange), and SafeEpoch() reads the slots with
//    read-modify-writes too: whichever comes second in the slot's
//    modification order sees the other (the reclaimer sees the
//    announcement, or the participant reads after the unlinking). This
//    costs one locked instruction per wake-up, and per slot per
//    reclamation; TSan models it exactly (no stand-alone fences).
//
// Thread-safety: EpochDomain is thread-safe. An EpochParticipant belongs to
// the thread that uses it (construct, use and destroy it on that thread).
// REQUIRES: every participant is destroyed before its domain.
#ifndef DETDB_STORAGE_EPOCH_H_
#define DETDB_STORAGE_EPOCH_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace detdb {

class EpochParticipant;

class EpochDomain {
 public:
  EpochDomain() = default;
  ~EpochDomain();
  EpochDomain(const EpochDomain&) = delete;
  EpochDomain& operator=(const EpochDomain&) = delete;

  // The current epoch (>= 1).
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  // Moves to the next epoch and returns it. Call it after taking a batch of
  // unlinked memory; label the batch with the result.
  uint64_t Advance() { return epoch_.fetch_add(1, std::memory_order_acq_rel) + 1; }

  // The least epoch announced by an online participant (epoch() if none):
  // a batch labelled L may be freed once SafeEpoch() >= L.
  uint64_t SafeEpoch() const;

  // Participants registered now (online or not).
  size_t participants() const;

 private:
  friend class EpochParticipant;
  // A participant's announcement: the epoch of its last quiescent point,
  // 0 while offline. One cache line each: only its owner writes it.
  struct alignas(64) Slot {
    std::atomic<uint64_t> announced{0};
    bool in_use = false;  // guarded by mu_
  };
  Slot* Register();
  void Unregister(Slot* slot);

  alignas(64) std::atomic<uint64_t> epoch_{1};
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_;  // guarded by mu_; slots are reused, never freed
};

// One participant of a domain: a worker thread, or a scoped reader (an admin
// query, a capture) that reads tables while writers may run. Online from
// construction until destruction or Offline().
class EpochParticipant {
 public:
  explicit EpochParticipant(EpochDomain* domain);
  ~EpochParticipant();
  EpochParticipant(const EpochParticipant&) = delete;
  EpochParticipant& operator=(const EpochParticipant&) = delete;

  // Declares that this thread holds no pointer into the domain's tables.
  // REQUIRES: online.
  void Quiescent() {
    const uint64_t e = domain_->epoch_.load(std::memory_order_acquire);
    if (e != announced_) {
      slot_->announced.store(e, std::memory_order_release);
      announced_ = e;
    }
  }
  // Stops announcing (e.g. before sleeping): reclamation no longer waits
  // for this thread. REQUIRES: it holds no pointer into the tables.
  void Offline() {
    slot_->announced.store(0, std::memory_order_release);
    announced_ = 0;
  }
  // Announces again; the thread may read the tables after it returns.
  void Online();
  bool online() const { return announced_ != 0; }

 private:
  EpochDomain* const domain_;
  EpochDomain::Slot* const slot_;
  uint64_t announced_ = 0;  // this thread's copy of slot_->announced
};

}  // namespace detdb

#endif  // DETDB_STORAGE_EPOCH_H_
