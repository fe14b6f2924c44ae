#include "bench/timeseries.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace detdb {

absl::StatusOr<std::unique_ptr<TimeseriesWriter>> TimeseriesWriter::Open(const std::string& path) {
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return absl::InvalidArgumentError(absl::StrCat("--timeseries=", path, ": ", strerror(errno)));
  fprintf(f, "run,round,t_s,committed,txns_per_s,p50_us,p99_us,new_orders_per_min\n");
  return std::unique_ptr<TimeseriesWriter>(new TimeseriesWriter(f));
}

TimeseriesWriter::~TimeseriesWriter() { (void)Close(); }

void TimeseriesWriter::StartRun(const std::string& run, uint32_t round) {
  run_ = run;
  round_ = round;
  prev_ = ProgressSample{};
}

void TimeseriesWriter::Add(const ProgressSample& s) {
  if (f_ == nullptr) return;
  const double dt = s.t - prev_.t;
  LatencyHistogram::Counts interval{};
  uint64_t replies = 0;
  for (size_t i = 0; i < interval.size(); ++i) {
    // Snapshots are taken while replies arrive: a bucket never goes down.
    interval[i] = s.latency[i] >= prev_.latency[i] ? s.latency[i] - prev_.latency[i] : 0;
    replies += interval[i];
  }
  const double committed = static_cast<double>(s.committed - std::min(s.committed, prev_.committed));
  fprintf(f_, "%s,%u,%.3f,%lu,", run_.c_str(), round_, s.t, static_cast<unsigned long>(s.committed));
  if (dt > 0) fprintf(f_, "%.0f", committed / dt);
  fprintf(f_, ",");
  if (replies > 0)
    fprintf(f_, "%.1f,%.1f", LatencyHistogram::PercentileOf(interval, 0.5) / 1000.0,
            LatencyHistogram::PercentileOf(interval, 0.99) / 1000.0);
  else
    fprintf(f_, ",");
  fprintf(f_, ",");
  tpcc_ |= s.new_orders != 0;
  if (tpcc_ && dt > 0)
    fprintf(f_, "%.0f", 60.0 * static_cast<double>(s.new_orders - std::min(s.new_orders, prev_.new_orders)) / dt);
  fprintf(f_, "\n");
  fflush(f_);
  prev_ = s;
}

absl::Status TimeseriesWriter::Close() {
  if (f_ == nullptr) return absl::OkStatus();
  const bool bad = ferror(f_) != 0;
  const int rc = fclose(f_);
  f_ = nullptr;
  if (bad || rc != 0) return absl::DataLossError("--timeseries: a write to the file failed");
  return absl::OkStatus();
}

}  // namespace detdb
