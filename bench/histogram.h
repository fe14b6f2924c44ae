// A concurrent log-linear latency histogram: 16 sub-buckets per power of
// two (relative error under 6.25%), recorded with relaxed atomic increments
// from any thread, read once recording has stopped.
//
// Thread-safety: Record() is thread-safe; Percentile()/count() are exact
// only when no Record() runs concurrently.
#ifndef DETDB_BENCH_HISTOGRAM_H_
#define DETDB_BENCH_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace detdb {

class LatencyHistogram {
 public:
  static constexpr size_t kNumBuckets = 64 << 4;
  using Counts = std::array<uint64_t, kNumBuckets>;

  void Record(uint64_t ns) {
    buckets_[Index(ns)].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

  // The value at quantile q in [0, 1] (upper edge of its bucket), in ns.
  uint64_t Percentile(double q) const {
    Counts c{};
    AddTo(&c);
    return PercentileOf(c, q);
  }

  // Adds this histogram's bucket counts to *c (while Record() may run: a
  // snapshot good enough for a once-a-second progress line).
  void AddTo(Counts* c) const {
    for (size_t i = 0; i < kBuckets; ++i) (*c)[i] += buckets_[i].load(std::memory_order_relaxed);
  }
  // The value at quantile q of the values counted in c (0 if none), in ns:
  // the difference of two snapshots gives an interval's percentiles.
  static uint64_t PercentileOf(const Counts& c, double q) {
    uint64_t n = 0;
    for (uint64_t v : c) n += v;
    if (n == 0) return 0;
    const uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(n - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += c[i];
      if (seen >= rank) return UpperEdge(i);
    }
    return UpperEdge(kBuckets - 1);
  }

 private:
  static constexpr int kSubBits = 4;
  static constexpr size_t kBuckets = 64 << kSubBits;
  static_assert(kBuckets == kNumBuckets);

  static size_t Index(uint64_t v) {
    if (v < (1u << kSubBits)) return static_cast<size_t>(v);
    const int msb = 63 - std::countl_zero(v);
    const uint64_t sub = (v >> (msb - kSubBits)) & ((1u << kSubBits) - 1);
    return (static_cast<size_t>(msb - kSubBits + 1) << kSubBits) + sub;
  }
  static uint64_t UpperEdge(size_t i) {
    if (i < (1u << kSubBits)) return i;
    const int msb = static_cast<int>(i >> kSubBits) + kSubBits - 1;
    const uint64_t sub = i & ((1u << kSubBits) - 1);
    return ((uint64_t{1} << kSubBits | sub) + 1) << (msb - kSubBits);
  }

  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0};
};

// What a benchmark runner reports about once a second (progress lines,
// --timeseries): totals since the start; the interval's figures are the
// difference of two samples.
struct ProgressSample {
  double t = 0;                      // seconds since the measured run started
  uint64_t committed = 0;            // txns committed so far
  uint64_t new_orders = 0;           // TPC-C: New-Orders committed so far (0 otherwise)
  LatencyHistogram::Counts latency{};  // submit-to-reply latencies recorded so far (ns buckets)
};

}  // namespace detdb

#endif  // DETDB_BENCH_HISTOGRAM_H_
