// RecordArena (storage/table.h): the fixed-size blocks of a table's records,
// carved from slabs, with a free list and a list of retired blocks.
#include <algorithm>
#include <cstring>
#include <new>

#include "glog/logging.h"
#include "storage/table.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace detdb {

namespace {

constexpr size_t kSlabAlign = 64;
// Slab sizes in bytes. The first slab holds the expected records (up to
// kMaxFirstSlabBytes); later ones half of what the arena holds, within
// [kMinSlabBytes, kMaxGrowthSlabBytes], so a growing table allocates
// O(log n) times and leaves at most a third of its slabs unused.
constexpr uint64_t kMinSlabBytes = uint64_t{16} << 10;
constexpr uint64_t kMaxGrowthSlabBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxFirstSlabBytes = uint64_t{1} << 30;

// Under AddressSanitizer a block on the free list is poisoned, so a reader
// that still stood on a record after its memory was made reusable (a bug
// of reclamation) is reported, though the block never returns to the heap.
#if defined(__SANITIZE_ADDRESS__)
void PoisonBlock(void* p, size_t n) { ASAN_POISON_MEMORY_REGION(p, n); }
void UnpoisonBlock(void* p, size_t n) { ASAN_UNPOISON_MEMORY_REGION(p, n); }
#else
void PoisonBlock(void*, size_t) {}
void UnpoisonBlock(void*, size_t) {}
#endif

}  // namespace

RecordArena::RecordArena(size_t block_bytes, uint64_t first_slab_blocks)
    : block_bytes_(block_bytes),
      min_slab_blocks_(std::max<uint64_t>(1, kMinSlabBytes / std::max<size_t>(block_bytes, 1))),
      max_slab_blocks_(
          std::max<uint64_t>(1, kMaxGrowthSlabBytes / std::max<size_t>(block_bytes, 1))),
      first_slab_blocks_(
          std::clamp(first_slab_blocks, min_slab_blocks_,
                     std::max<uint64_t>(min_slab_blocks_,
                                        kMaxFirstSlabBytes / std::max<size_t>(block_bytes, 1)))) {
  CHECK_GT(block_bytes, 0u);
  CHECK_EQ(block_bytes % 8, 0u) << "record blocks must keep 8-byte alignment";
}

RecordArena::~RecordArena() {
  for (auto& [mem, bytes] : slabs_) {
    UnpoisonBlock(mem, bytes);
    ::operator delete(mem, std::align_val_t(kSlabAlign));
  }
}

void RecordArena::Grow() {
  const uint64_t blocks = slabs_.empty()
                              ? first_slab_blocks_
                              : std::clamp(slab_blocks_ / 2, min_slab_blocks_, max_slab_blocks_);
  const size_t bytes = blocks * block_bytes_;
  char* mem = static_cast<char*>(::operator new(bytes, std::align_val_t(kSlabAlign)));
  slabs_.emplace_back(mem, bytes);
  slab_bytes_ += bytes;
  slab_blocks_ += blocks;
  cursor_ = mem;
  slab_end_ = mem + bytes;
}

void* RecordArena::Allocate() {
  latch_.LockNoElision();
  void* block;
  if (free_ != nullptr) {
    block = free_;
    UnpoisonBlock(block, block_bytes_);
    std::memcpy(&free_, block, sizeof(void*));
    --free_count_;
  } else {
    if (cursor_ == slab_end_) Grow();
    block = cursor_;
    cursor_ += block_bytes_;
  }
  latch_.Unlock();
  return block;
}

void RecordArena::Release(void* block) {
  latch_.LockNoElision();
  std::memcpy(block, &free_, sizeof(void*));
  PoisonBlock(block, block_bytes_);
  free_ = block;
  ++free_count_;
  latch_.Unlock();
}

void RecordArena::ReleaseMany(const std::vector<void*>& blocks) {
  if (blocks.empty()) return;
  latch_.LockNoElision();
  for (void* block : blocks) {
    std::memcpy(block, &free_, sizeof(void*));
    PoisonBlock(block, block_bytes_);
    free_ = block;
  }
  free_count_ += blocks.size();
  latch_.Unlock();
}

std::vector<void*> RecordArena::TakeRetired() {
  std::vector<void*> out;
  latch_.LockNoElision();
  out.swap(retired_);
  latch_.Unlock();
  return out;
}

size_t RecordArena::retired_blocks() const {
  latch_.LockNoElision();
  const size_t n = retired_.size();
  latch_.Unlock();
  return n;
}

size_t RecordArena::free_blocks() const {
  latch_.LockNoElision();
  const size_t n = free_count_;
  latch_.Unlock();
  return n;
}

void RecordArena::Retire(void* block) {
  latch_.LockNoElision();
  retired_.push_back(block);
  latch_.Unlock();
}

void RecordArena::RetireMany(const std::vector<void*>& blocks) {
  latch_.LockNoElision();
  retired_.insert(retired_.end(), blocks.begin(), blocks.end());
  latch_.Unlock();
}

size_t RecordArena::ReclaimRetired() {
  latch_.LockNoElision();
  const size_t n = retired_.size();
  for (void* block : retired_) {
    std::memcpy(block, &free_, sizeof(void*));
    PoisonBlock(block, block_bytes_);
    free_ = block;
  }
  free_count_ += n;
  retired_.clear();
  latch_.Unlock();
  return n;
}

size_t RecordArena::bytes_reserved() const {
  latch_.LockNoElision();
  const size_t bytes =
      slab_bytes_ + retired_.capacity() * sizeof(void*) + slabs_.capacity() * sizeof(slabs_[0]);
  latch_.Unlock();
  return bytes;
}

}  // namespace detdb
