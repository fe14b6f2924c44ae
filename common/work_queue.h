// WorkQueue<T>: an unbounded multi-producer, multi-consumer FIFO that hands
// items over in batches (one lock acquisition per batch, not per item) and
// lets idle consumers sleep (see Notifier). Used between a partition's lock
// thread and its workers.
//
// Thread-safety: thread-safe.
#ifndef DETDB_COMMON_WORK_QUEUE_H_
#define DETDB_COMMON_WORK_QUEUE_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <vector>

#include "common/notifier.h"

namespace detdb {

template <typename T>
class WorkQueue {
 public:
  void Push(T item) {
    {
      std::lock_guard<std::mutex> l(mu_);
      items_.push_back(std::move(item));
      size_.store(items_.size(), std::memory_order_release);
    }
    notifier_.Notify();
  }

  // Appends every item of *batch (in order) and clears it.
  void PushBatch(std::vector<T>* batch) {
    if (batch->empty()) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (T& item : *batch) items_.push_back(std::move(item));
      size_.store(items_.size(), std::memory_order_release);
    }
    batch->clear();
    notifier_.Notify();
  }

  // Moves up to `max` items into *out. Returns how many (0: none waiting).
  size_t TryPopBatch(size_t max, std::vector<T>* out) {
    if (size_.load(std::memory_order_acquire) == 0) return 0;
    std::lock_guard<std::mutex> l(mu_);
    size_t n = 0;
    while (n < max && !items_.empty()) {
      out->push_back(std::move(items_.front()));
      items_.pop_front();
      ++n;
    }
    size_.store(items_.size(), std::memory_order_release);
    if (!items_.empty()) notifier_.Notify();  // leave a wake-up for the next consumer
    return n;
  }

  // Like TryPopBatch, but waits (spinning briefly, then sleeping) up to
  // `timeout` for an item.
  size_t PopBatch(size_t max, std::vector<T>* out,
                  std::chrono::microseconds timeout = std::chrono::milliseconds(10)) {
    size_t n = TryPopBatch(max, out);
    if (n != 0) return n;
    notifier_.Wait(timeout);
    return TryPopBatch(max, out);
  }

  // Wakes every consumer blocked in PopBatch (e.g. to let them see a stop flag).
  void WakeAll() { notifier_.Notify(); }

  size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  std::mutex mu_;
  std::deque<T> items_;
  std::atomic<size_t> size_{0};
  Notifier notifier_;
};

}  // namespace detdb

#endif  // DETDB_COMMON_WORK_QUEUE_H_
