// GoogleTest helpers shared by the lock-manager test files.
#ifndef DETDB_LOCKMGR_LOCK_TEST_UTIL_H_
#define DETDB_LOCKMGR_LOCK_TEST_UTIL_H_

#include <memory>
#include <string_view>

#include <gtest/gtest.h>

#include "lockmgr/lock_manager.h"
#include "lockmgr/lock_test_driver.h"

namespace detdb {

// The lock manager `name`, or nullptr after recording a test failure.
inline std::unique_ptr<LockManager> Make(std::string_view name, const LockManagerOptions& o) {
  auto lm = NewLockManager(name, o);
  if (!lm.ok()) {
    ADD_FAILURE() << lm.status();
    return nullptr;
  }
  return std::move(*lm);
}

// G5 at the end: no violation was seen and every structure is empty.
inline void ExpectCleanEnd(const LockTestDriver& d, const LockManager& lm) {
  EXPECT_TRUE(d.status().ok()) << d.status();
  EXPECT_TRUE(lm.IsQuiescent()) << lm.name();
  EXPECT_EQ(lm.stats().active, 0u);
  EXPECT_EQ(lm.stats().blocked, 0u);
}

}  // namespace detdb

#endif  // DETDB_LOCKMGR_LOCK_TEST_UTIL_H_
