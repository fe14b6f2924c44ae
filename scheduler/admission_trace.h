// AdmissionTrace: what each partition's admission controller was fed
// (AdmissionSignals, once per admission round) and the window it chose, one
// line per round, so that a run's window can be replayed exactly and read
// change by change (ReplayAdmission). AdmissionController is pure logic: fed
// the same signals, a fresh controller with the same options chooses the
// same windows, so a replay that diverges from the recorded windows means
// the trace is incomplete or the controller changed since it was taken.
// docs/ENGINE.md, "The admission window traced and replayed".
//
// The file is text: a header line "# detdb admission trace v1 workers=W
// max_active=M adaptive=A warmup_us=U" (the controllers' options; a
// trace without warmup_us, written before it existed, reads as 0), then
// per round:
// partition now_us starved admitted blocked window_bound input_ran_out
// released parked window climbing.
//
// Thread-safety: Record() may be called from any thread (a mutex: every
// partition's lock thread records into the same trace; one partition's
// rounds come from its lock thread alone, under its lm_mu_, so they are in
// the order Adjust saw them). The functions below it are plain functions.
#ifndef DETDB_SCHEDULER_ADMISSION_TRACE_H_
#define DETDB_SCHEDULER_ADMISSION_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scheduler/admission.h"

namespace detdb {

struct AdmissionTraceRecord {
  uint32_t partition = 0;
  AdmissionSignals signals;
  uint64_t window = 0;   // the window after Adjust(signals)
  bool climbing = false; // climbing after it
};

class AdmissionTrace {
 public:
  // Creates (truncates) the file at `path`, for controllers built with
  // `options` (every partition's alike).
  static absl::StatusOr<std::unique_ptr<AdmissionTrace>> Create(const std::string& path,
                                                                const AdmissionOptions& options);
  ~AdmissionTrace();

  AdmissionTrace(const AdmissionTrace&) = delete;
  AdmissionTrace& operator=(const AdmissionTrace&) = delete;

  void Record(uint32_t partition, const AdmissionSignals& s, const AdmissionController& after);
  // Flushes and closes the file; an error of any write since Create is
  // reported here. Record() after Close() does nothing.
  absl::Status Close();

 private:
  explicit AdmissionTrace(std::FILE* f) : f_(f) {}
  std::mutex mu_;
  std::FILE* f_;  // guarded by mu_; null once closed
  bool failed_ = false;
};

struct AdmissionTraceFile {
  AdmissionOptions options;  // the controllers' (from the header)
  std::vector<AdmissionTraceRecord> records;
};

// Reads a trace written by AdmissionTrace. InvalidArgument (naming the line)
// on a malformed one.
absl::StatusOr<AdmissionTraceFile> ReadAdmissionTrace(const std::string& path);

// One change of the window in a replay.
struct AdmissionChange {
  uint64_t at_us = 0;        // the record's clock
  uint64_t from = 0, to = 0;
  // What the controller counted at this round: "grow", "shrink",
  // "grow undone", "shrink undone", "climb undone", "climb kept, next
  // step" or "climb step" (a climb's trial started). Counters can also
  // move without a change (a trial kept where the climb ends, a step handed
  // over to the plain rules), so these need not add up to grows()/shrinks().
  std::string cause;
  bool climbing = false;     // climbing after it
};

// Feeds one partition's records to a fresh AdmissionController built with
// `options` and returns every window change. FailedPrecondition (naming the
// round) if the replayed window differs from the recorded one.
absl::StatusOr<std::vector<AdmissionChange>> ReplayAdmission(const AdmissionOptions& options,
                                                             const std::vector<AdmissionTraceRecord>& records,
                                                             uint32_t partition);

}  // namespace detdb

#endif  // DETDB_SCHEDULER_ADMISSION_TRACE_H_
