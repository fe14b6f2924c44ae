// Names the calling thread (shown by top -H, perf, gdb). Linux limits names
// to 15 characters; longer ones are cut.
//
// Thread-safety: affects only the calling thread.
#ifndef DETDB_COMMON_THREAD_NAME_H_
#define DETDB_COMMON_THREAD_NAME_H_

#include <pthread.h>

#include <string>

namespace detdb {

inline void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace detdb

#endif  // DETDB_COMMON_THREAD_NAME_H_
