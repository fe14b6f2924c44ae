#include "scheduler/admission_trace.h"

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace detdb {
namespace {
constexpr char kHeader[] = "# detdb admission trace v1";
}  // namespace

absl::StatusOr<std::unique_ptr<AdmissionTrace>> AdmissionTrace::Create(const std::string& path,
                                                                       const AdmissionOptions& o) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::UnavailableError(absl::StrCat("admission trace ", path, ": ", std::strerror(errno)));
  auto t = std::unique_ptr<AdmissionTrace>(new AdmissionTrace(f));
  if (std::fprintf(f, "%s workers=%" PRIu32 " max_active=%" PRIu32 " adaptive=%d warmup_us=%" PRIu64 "\n", kHeader,
                   o.workers, o.max_active, o.adaptive ? 1 : 0, o.warmup_us) < 0)
    t->failed_ = true;
  return t;
}

AdmissionTrace::~AdmissionTrace() { (void)Close(); }

void AdmissionTrace::Record(uint32_t partition, const AdmissionSignals& s, const AdmissionController& after) {
  std::lock_guard<std::mutex> l(mu_);
  if (f_ == nullptr) return;
  if (std::fprintf(f_, "%" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %d %" PRIu64 " %" PRIu64
                       " %" PRIu64 " %d\n",
                   partition, s.now_us, s.starved, s.admitted, s.blocked, s.window_bound ? 1 : 0,
                   s.input_ran_out ? 1 : 0, s.released, s.parked, after.window(), after.climbing() ? 1 : 0) < 0)
    failed_ = true;
}

absl::Status AdmissionTrace::Close() {
  std::lock_guard<std::mutex> l(mu_);
  if (f_ == nullptr) return absl::OkStatus();
  if (std::ferror(f_) != 0) failed_ = true;
  const bool close_failed = std::fclose(f_) != 0;
  f_ = nullptr;
  if (failed_ || close_failed) return absl::DataLossError("admission trace: a write failed (disk full?)");
  return absl::OkStatus();
}

absl::StatusOr<AdmissionTraceFile> ReadAdmissionTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("admission trace ", path, ": cannot open"));
  AdmissionTraceFile file;
  std::vector<AdmissionTraceRecord>& out = file.records;
  std::string line;
  uint64_t n = 0;
  if (!std::getline(in, line) || line.rfind(kHeader, 0) != 0)
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an admission trace (no \"", kHeader, "\" line)"));
  {
    unsigned workers = 0, max_active = 0;
    unsigned long long warmup_us = 0;  // NOLINT(runtime/int): sscanf's %llu
    int adaptive = -1;
    char tail = 0;
    const char* fields = line.c_str() + sizeof(kHeader) - 1;
    // warmup_us is absent from the traces written before it existed (0).
    const bool ok =
        std::sscanf(fields, " workers=%u max_active=%u adaptive=%d warmup_us=%llu %c", &workers, &max_active,
                    &adaptive, &warmup_us, &tail) == 4 ||
        (warmup_us = 0, std::sscanf(fields, " workers=%u max_active=%u adaptive=%d %c", &workers, &max_active,
                                    &adaptive, &tail) == 3);
    if (line.find('-') != std::string::npos || !ok || workers == 0 || (adaptive != 0 && adaptive != 1))
      return absl::InvalidArgumentError(absl::StrCat(path, ":1: malformed header \"", line, "\""));
    file.options = {.workers = workers, .max_active = max_active, .adaptive = adaptive == 1, .warmup_us = warmup_us};
  }
  ++n;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    // Unsigned fields only: >> would wrap a negative number.
    if (line.find('-') != std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": negative number in \"", line, "\""));
    std::istringstream f(line);
    AdmissionTraceRecord r;
    int bound = 0, ran_out = 0, climbing = 0;
    AdmissionSignals& s = r.signals;
    if (!(f >> r.partition >> s.now_us >> s.starved >> s.admitted >> s.blocked >> bound >> ran_out >> s.released >>
          s.parked >> r.window >> climbing) ||
        (bound != 0 && bound != 1) || (ran_out != 0 && ran_out != 1) || (climbing != 0 && climbing != 1))
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": malformed record \"", line, "\""));
    std::string rest;
    if (f >> rest) return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": extra field \"", rest, "\""));
    s.window_bound = bound == 1;
    s.input_ran_out = ran_out == 1;
    r.climbing = climbing == 1;
    out.push_back(r);
  }
  return file;
}

absl::StatusOr<std::vector<AdmissionChange>> ReplayAdmission(const AdmissionOptions& options,
                                                             const std::vector<AdmissionTraceRecord>& records,
                                                             uint32_t partition) {
  AdmissionController c(options);
  std::vector<AdmissionChange> out;
  uint64_t round = 0;
  for (const AdmissionTraceRecord& r : records) {
    if (r.partition != partition) continue;
    ++round;
    const uint64_t from = c.window();
    const uint64_t grows = c.grows(), shrinks = c.shrinks(), gu = c.grows_undone(), su = c.shrinks_undone(),
                   ck = c.climbs_kept(), cu = c.climbs_undone(), up = c.steps_back_up();
    c.Adjust(r.signals);
    if (c.window() != r.window || c.climbing() != r.climbing)
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", partition, ", round ", round, " (", r.signals.now_us, " us): the replay's window ",
                       c.window(), c.climbing() ? " (climbing)" : "", ", the trace's ", r.window,
                       r.climbing ? " (climbing)" : "",
                       ": other options than the trace's header says, a trace of more than one run, or "
                       "another build of the controller"));
    if (c.window() == from) continue;
    // The counters that moved, the most specific first.
    const char* cause = c.steps_back_up() != up     ? "step back up"
                        : c.shrinks_undone() != su ? "shrink undone"
                        : c.grows_undone() != gu ? "grow undone"
                        : c.climbs_undone() != cu ? "climb undone"
                        : c.climbs_kept() != ck  ? "climb kept, next step"
                        : c.grows() != grows     ? "grow"
                        : c.shrinks() != shrinks ? "shrink"
                                                 : "climb step";
    out.push_back({.at_us = r.signals.now_us, .from = from, .to = c.window(), .cause = cause, .climbing = c.climbing()});
  }
  return out;
}

}  // namespace detdb
