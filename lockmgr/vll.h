// VLL, very lightweight locking ("vll"; LOCKING.md section 3), and VLL with
// Selective Contention Analysis ("vll_sca"; section 4).
//
// Per lock slot two counters, Cx and Cs (hashed, table_size slots); the
// TxnQueue of every admitted, unfinished txn in id order, threaded through
// the txns themselves (O(1) removal); a blocked count that closes admission
// at the threshold. A blocked txn runs when it reaches the head of the
// queue (the head rule, evaluated on every Poll, so a blocked head never
// waits for a completion that will not come), or when SCA finds that no
// earlier unfinished txn conflicts with it. SCA runs only when admission is
// closed, re-runs only after a completion, checks a txn's bits before
// marking them, and marks every scanned txn, failed blocked ones included.
//
// Thread-safety: not thread-safe; one lock thread owns it (see LockManager).
#ifndef DETDB_LOCKMGR_VLL_H_
#define DETDB_LOCKMGR_VLL_H_

#include <memory>

#include "lockmgr/lock_manager.h"

namespace detdb {

// with_sca: false for "vll", true for "vll_sca".
std::unique_ptr<LockManager> NewVllLockManager(const LockManagerOptions& options, bool with_sca);

}  // namespace detdb

#endif  // DETDB_LOCKMGR_VLL_H_
