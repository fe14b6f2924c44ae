// DCLP: dependence-cognizant locking (seed 002; LOCKING.md section 5).
//
// Full DCLP (name "dclp", section 5.3): a fixed table of hash locks, each a
// tuple (last writer, virtual transaction, read count) packed in 8 bytes;
// per-txn successor lists and predecessor counts; one virtual transaction
// (VT) per hash lock whose successor list holds txn references checked
// against the active-txn map (a table indexed by a per-txn handle).
// A txn is runnable the moment its predecessor count reaches zero: nothing
// is ever scanned to find runnable txns, and no blocked threshold holds back
// conflict-free txns.
//
// Deviation from the paper's reconstruction (harmless, documented in
// docs/LOCKMGR.md): the VT of a hash lock is created only when a writer
// follows a read run (the only time its successor list is used), and is
// returned to a pool when the lock goes idle, so memory tracks active locks.
//
// Thread-safety: not thread-safe; one lock thread owns it (see LockManager).
#ifndef DETDB_LOCKMGR_DCLP_H_
#define DETDB_LOCKMGR_DCLP_H_

#include <memory>

#include "lockmgr/lock_manager.h"

namespace detdb {

std::unique_ptr<LockManager> NewDclpLockManager(const LockManagerOptions& options);

// Variant F of LOCKING.md 5.2 ("dclp_frag"): fragmented storage only, every
// direct-successor edge recorded, no virtual transaction. An ablation that
// shows what the VT buys (writers after long read runs get one edge per read).
std::unique_ptr<LockManager> NewDclpFragLockManager(const LockManagerOptions& options);

}  // namespace detdb

#endif  // DETDB_LOCKMGR_DCLP_H_
