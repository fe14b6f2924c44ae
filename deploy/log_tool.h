// What `detdb-log` does (deploy/detdb_log_main.cc), as functions that write
// to a stream, so that tests can check the output without a process.
//
//   VerifyLog: per segment, its records, epoch range, CRC status and any
//              torn tail (bytes after the verified end); then a summary.
//   DumpLog:   one line per record: segment, offset, epoch, sequencer,
//              payload bytes, CRC status.
//
// Both are read-only: they run RecoverInputLog with trim_torn_tail off.
// Return value, the program's exit status: 0 when a node would start on this
// log (a torn tail, which recovery trims, included), 1 when it would refuse
// (corruption, a gap, a config-hash mismatch), 2 when the log cannot be read.
// Thread-safety: no shared state.
#ifndef DETDB_DEPLOY_LOG_TOOL_H_
#define DETDB_DEPLOY_LOG_TOOL_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "io/file_system.h"

namespace detdb {

struct LogToolOptions {
  FileSystem* fs = nullptr;        // PosixFileSystem() if null
  uint64_t config_hash = 0;        // nonzero: records must carry it
  uint32_t max_payload_bytes = 64u << 20;
};

int VerifyLog(const std::string& dir, const LogToolOptions& options, std::ostream& out);
int DumpLog(const std::string& dir, const LogToolOptions& options, std::ostream& out);

}  // namespace detdb

#endif  // DETDB_DEPLOY_LOG_TOOL_H_
