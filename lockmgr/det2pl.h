// Calvin's deterministic, deadlock-free two-phase locking ("det2pl";
// LOCKING.md section 2): a FIFO request queue per key, granted in arrival
// (= txn id) order; a writer alone at the head, or the run of readers at the
// head, holds the lock. Unlike the Calvin snapshot, blind writes are locked.
//
// Queues are intrusive lists threaded through the txns' request entries, so
// release finds a txn's place in O(1) instead of scanning the queue; each
// queue keeps its writer count so a read acquire is O(1) too.
//
// Thread-safety: not thread-safe; one lock thread owns it (see LockManager).
#ifndef DETDB_LOCKMGR_DET2PL_H_
#define DETDB_LOCKMGR_DET2PL_H_

#include <memory>

#include "lockmgr/lock_manager.h"

namespace detdb {

std::unique_ptr<LockManager> NewDet2plLockManager(const LockManagerOptions& options);

}  // namespace detdb

#endif  // DETDB_LOCKMGR_DET2PL_H_
