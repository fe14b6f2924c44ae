// TimeseriesWriter: detdb-bench's --timeseries=FILE.csv, one row per
// progress sample (about once a second) per run, with the throughput and
// latency of the interval since the run's previous sample, for plots of a
// run over time (bench/plot_timeseries.py renders them to PNG).
//
// Columns: run (the lock manager, or "cluster"), round, t_s (seconds since
// the run started), committed (total), txns_per_s, p50_us, p99_us (of the
// replies that arrived in the interval; empty when none did),
// new_orders_per_min (TPC-C; empty otherwise).
//
// Thread-safety: not thread-safe; progress callbacks of one run come from
// one thread at a time.
#ifndef DETDB_BENCH_TIMESERIES_H_
#define DETDB_BENCH_TIMESERIES_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/histogram.h"

namespace detdb {

class TimeseriesWriter {
 public:
  // Creates (truncates) path and writes the header row.
  static absl::StatusOr<std::unique_ptr<TimeseriesWriter>> Open(const std::string& path);
  ~TimeseriesWriter();

  // Starts a new run: the next sample's interval starts at 0.
  void StartRun(const std::string& run, uint32_t round);
  // One row for the interval since the previous sample of this run.
  void Add(const ProgressSample& sample);
  // Flushes and closes; an error if any write failed.
  absl::Status Close();

 private:
  explicit TimeseriesWriter(FILE* f) : f_(f) {}
  FILE* f_;
  std::string run_;
  uint32_t round_ = 0;
  ProgressSample prev_;
  bool tpcc_ = false;
};

}  // namespace detdb

#endif  // DETDB_BENCH_TIMESERIES_H_
