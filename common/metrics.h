// Metrics: a histogram with fixed buckets and a writer of the Prometheus
// text exposition format (version 0.0.4), for a node's /metrics
// (docs/OPERATING.md). Counters and gauges are not kept here: the writer
// reads the counters the engine, the schedulers, the network and the client
// endpoint already keep, at scrape time.
//
// Histogram: Observe() is a few relaxed atomic adds on the histogram's own
// cache lines; use it where a thread does it once per group of work (a
// log fsync, a reply frame), not once per txn on a shared hot path.
//
// Thread-safety: Histogram is thread-safe (a snapshot read while others
// observe may be off by the observations in flight: count and buckets are
// read one by one). MetricsText: one thread.
#ifndef DETDB_COMMON_METRICS_H_
#define DETDB_COMMON_METRICS_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace detdb {

class Histogram {
 public:
  struct Snapshot {
    std::vector<double> bounds;      // upper bounds, ascending (+Inf implicit)
    std::vector<uint64_t> cumulative;  // observations <= bounds[i]
    uint64_t count = 0;
    double sum = 0;
  };

  // REQUIRES: bounds ascending, not empty.
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
    for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
  }
  // Bounds start, start*factor, ... (count of them).
  static std::vector<double> Exponential(double start, double factor, int count) {
    std::vector<double> b;
    for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
    return b;
  }

  void Observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }

  Snapshot snapshot() const {
    Snapshot s;
    s.bounds = bounds_;
    uint64_t run = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      run += buckets_[i].load(std::memory_order_relaxed);
      s.cumulative.push_back(run);
    }
    // The +Inf bucket equals count: both from the same loads.
    s.count = run + buckets_[bounds_.size()].load(std::memory_order_relaxed);
    s.sum = sum_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // the last one: above every bound
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Builds a Prometheus text page. A family is declared once with Family()
// (its # HELP and # TYPE lines), then its samples follow.
class MetricsText {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // type: "counter", "gauge" or "histogram". Counter names end in _total.
  void Family(absl::string_view name, absl::string_view type, absl::string_view help) {
    absl::StrAppend(&out_, "# HELP ", name, " ", EscapeHelp(help), "\n# TYPE ", name, " ", type, "\n");
  }
  void Sample(absl::string_view name, const Labels& labels, double value) {
    absl::StrAppend(&out_, name, FormatLabels(labels), " ", FormatValue(value), "\n");
  }
  // A one-sample family.
  void Counter(absl::string_view name, absl::string_view help, double value) {
    Family(name, "counter", help);
    Sample(name, {}, value);
  }
  void Gauge(absl::string_view name, absl::string_view help, double value) {
    Family(name, "gauge", help);
    Sample(name, {}, value);
  }
  // name_bucket{le=...}, name_sum, name_count of a "histogram" family.
  void HistogramSamples(absl::string_view name, const Labels& labels, const Histogram::Snapshot& h) {
    const std::string bucket = absl::StrCat(name, "_bucket");
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      Labels l = labels;
      l.emplace_back("le", FormatValue(h.bounds[i]));
      Sample(bucket, l, static_cast<double>(h.cumulative[i]));
    }
    Labels inf = labels;
    inf.emplace_back("le", "+Inf");
    Sample(bucket, inf, static_cast<double>(h.count));
    Sample(absl::StrCat(name, "_sum"), labels, h.sum);
    Sample(absl::StrCat(name, "_count"), labels, static_cast<double>(h.count));
  }

  const std::string& text() const { return out_; }

  static std::string FormatValue(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrCat(static_cast<int64_t>(v));
    // The shortest of 15 or 17 digits that reads back as v (0.0002, not
    // 0.00020000000000000001).
    char buf[32];
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (std::strtod(buf, nullptr) != v) snprintf(buf, sizeof(buf), "%.17g", v);
    return buf;
  }

 private:
  static std::string EscapeHelp(absl::string_view s) {
    std::string o;
    for (char c : s) {
      if (c == '\\') o += "\\\\";
      else if (c == '\n') o += "\\n";
      else o += c;
    }
    return o;
  }
  static std::string FormatLabels(const Labels& labels) {
    if (labels.empty()) return "";
    std::string o = "{";
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) o += ",";
      absl::StrAppend(&o, labels[i].first, "=\"");
      for (char c : labels[i].second) {
        if (c == '\\') o += "\\\\";
        else if (c == '"') o += "\\\"";
        else if (c == '\n') o += "\\n";
        else o += c;
      }
      o += "\"";
    }
    return o + "}";
  }

  std::string out_;
};

}  // namespace detdb

#endif  // DETDB_COMMON_METRICS_H_
