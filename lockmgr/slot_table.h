// A fixed-size, zero-initialised array of lock-table entries, backed by
// transparent huge pages where the kernel offers them (madvise). A 1M-slot
// lock table is touched at random on every request; with 4 KiB pages each
// access is also a likely TLB miss (an 8 MiB table spans 2048 pages), with
// 2 MiB pages the whole table needs four TLB entries. Falls back to ordinary
// pages when huge pages are unavailable; the contents are the same.
//
// Thread-safety: none; owned by one lock manager.
#ifndef DETDB_LOCKMGR_SLOT_TABLE_H_
#define DETDB_LOCKMGR_SLOT_TABLE_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "glog/logging.h"

namespace detdb {
namespace lockmgr_internal {

// REQUIRES: T is trivially copyable and all-zero bytes are its initial value.
template <typename T>
class SlotTable {
 public:
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

  explicit SlotTable(size_t n) : n_(n), bytes_(RoundUp(n * sizeof(T))) {
    // A large table starts on a huge-page boundary: map one huge page more
    // and skip to the first boundary.
    const size_t slack = bytes_ >= kHugePage ? kHugePage : 0;
    map_bytes_ = bytes_ + slack;
    map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map_ != MAP_FAILED) << "SlotTable: mmap of " << map_bytes_ << " bytes failed";
    void* p = map_;
    if (slack != 0) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(map_);
      p = reinterpret_cast<void*>((a + kHugePage - 1) / kHugePage * kHugePage);
      madvise(p, bytes_, MADV_HUGEPAGE);  // advisory: ignore failure
    }
    // Touch every page now (mmap memory is already zero), so that the page
    // faults happen here and not on the lock thread's hot path.
    std::memset(p, 0, bytes_);
    data_ = static_cast<T*>(p);
  }
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;
  ~SlotTable() { munmap(map_, map_bytes_); }

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return n_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + n_; }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  // Whole huge pages for large tables (so the last one can be huge too),
  // whole small pages otherwise.
  static size_t RoundUp(size_t bytes) {
    const size_t unit = bytes >= kHugePage ? kHugePage : 4096;
    return (bytes + unit - 1) / unit * unit;
  }

  const size_t n_;
  const size_t bytes_;
  void* map_ = nullptr;  // the whole mapping, slack included
  size_t map_bytes_ = 0;
  T* data_ = nullptr;
};

}  // namespace lockmgr_internal
}  // namespace detdb

#endif  // DETDB_LOCKMGR_SLOT_TABLE_H_
