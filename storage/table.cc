#include "storage/table.h"

#include <bit>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

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
constexpr uint64_t kMinBuckets = 16;
// Average chain length past which Insert logs a warning (once per table).
constexpr uint64_t kOverloadChainLength = 8;

size_t RoundUp8(size_t n) { return (n + 7) & ~size_t{7}; }

const TableOptions& CheckedOptions(const TableOptions& options) {
  const absl::Status s = Table::ValidateOptions(options);
  CHECK(s.ok()) << s;
  return options;
}

}  // namespace

// ---------------------------------------------------------------- RecordArena

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
  for (auto& [mem, bytes] : slabs_) ::operator delete(mem, std::align_val_t(kSlabAlign));
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
    std::memcpy(&free_, block, sizeof(void*));
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
  free_ = block;
  latch_.Unlock();
}

void RecordArena::Retire(void* block) {
  latch_.LockNoElision();
  retired_.push_back(block);
  latch_.Unlock();
}

size_t RecordArena::ReclaimRetired() {
  latch_.LockNoElision();
  const size_t n = retired_.size();
  for (void* block : retired_) {
    std::memcpy(block, &free_, sizeof(void*));
    free_ = block;
  }
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

// ---------------------------------------------------------------- Table

absl::Status Table::ValidateOptions(const TableOptions& options) {
  if (options.id > kMaxTableId)
    return absl::InvalidArgumentError(absl::StrCat("table id must be <= ", kMaxTableId, ", got ",
                                                   options.id, " (table '", options.name, "')"));
  if (options.value_size > kMaxValueSize)
    return absl::InvalidArgumentError(absl::StrCat("value size must be <= ", kMaxValueSize,
                                                   " bytes, got ", options.value_size, " (table ",
                                                   options.id, ")"));
  if (options.expected_records > kMaxExpectedRecords)
    return absl::InvalidArgumentError(
        absl::StrCat("expected records must be <= ", kMaxExpectedRecords, ", got ",
                     options.expected_records, " (table ", options.id, ")"));
  return absl::OkStatus();
}

Table::Table(const TableOptions& options)
    : options_(CheckedOptions(options)),
      bucket_mask_(std::bit_ceil(std::max(options.expected_records, kMinBuckets)) - 1),
      stripe_mask_(std::min<uint64_t>(bucket_mask_ + 1, kMaxStripes) - 1),
      buckets_(new Bucket[bucket_mask_ + 1]),  // empty chains, empty filters
      stripes_(new Stripe[stripe_mask_ + 1]),
      arena_(RoundUp8(sizeof(Record) + options.value_size), options.expected_records),
      overload_records_per_stripe_(kOverloadChainLength * (bucket_mask_ + 1) / (stripe_mask_ + 1)) {
}

Record* Table::Insert(Key k) {
  DCHECK_EQ(KeyTable(k), id()) << "key of another table";
  if (Record* r = Get(k)) return r;

  // Allocate and fill the record outside the latch; it becomes visible only
  // with the release store that links it.
  Record* fresh = static_cast<Record*>(arena_.Allocate());
  new (fresh) Record{k, nullptr};
  std::memset(fresh->value(), 0, options_.value_size);

  const uint64_t h = Mix64(k);
  const size_t b = h & bucket_mask_;
  Bucket& bucket = buckets_[b];
  Stripe& stripe = StripeOf(b);
  stripe.latch.Lock();
  // Every writer of this chain holds the stripe latch: relaxed loads see the
  // chain and the filter as the last writer left them.
  Record* first = bucket.head.load(std::memory_order_relaxed);
  const uint64_t filter = bucket.filter.load(std::memory_order_relaxed);
  if (filter & FilterBit(h)) {
    for (Record* r = first; r != nullptr; r = r->next.load(std::memory_order_relaxed)) {
      if (r->key == k) {  // inserted by another thread since our Get
        stripe.latch.Unlock();
        arena_.Release(fresh);
        return r;
      }
    }
  }
  fresh->next.store(first, std::memory_order_relaxed);
  // The bit before the link: a reader that can reach the record sees it.
  bucket.filter.store(filter | FilterBit(h), std::memory_order_release);
  bucket.head.store(fresh, std::memory_order_release);
  stripe.latch.Unlock();
  const int64_t stripe_records = stripe.records.fetch_add(1, std::memory_order_relaxed) + 1;
  if (stripe_records > overload_records_per_stripe_ &&
      !overload_warned_.load(std::memory_order_relaxed) &&
      !overload_warned_.exchange(true, std::memory_order_relaxed)) {
    LOG(WARNING) << "table " << id() << " ('" << name() << "') has about "
                 << stripe_records * (stripe_mask_ + 1) << " records for " << bucket_count()
                 << " hash buckets; the index does not grow, so lookups slow down: raise "
                 << "TableOptions::expected_records (it was " << options_.expected_records << ")";
  }
  return fresh;
}

bool Table::Erase(Key k) {
  DCHECK_EQ(KeyTable(k), id()) << "key of another table";
  const uint64_t h = Mix64(k);
  const size_t b = h & bucket_mask_;
  Bucket& bucket = buckets_[b];
  Stripe& stripe = StripeOf(b);
  stripe.latch.Lock();
  if ((bucket.filter.load(std::memory_order_relaxed) & FilterBit(h)) == 0) {
    stripe.latch.Unlock();
    return false;
  }
  std::atomic<Record*>* link = &bucket.head;
  for (Record* r = link->load(std::memory_order_relaxed); r != nullptr;
       link = &r->next, r = link->load(std::memory_order_relaxed)) {
    if (r->key != k) continue;
    // Readers standing on r still find r->next intact and reach the rest of
    // the chain; r's memory is only reused after ReclaimErased().
    link->store(r->next.load(std::memory_order_relaxed), std::memory_order_release);
    // Then the filter of the keys left (a reader that saw the old, larger
    // filter just walks the chain).
    uint64_t filter = 0;
    for (Record* x = bucket.head.load(std::memory_order_relaxed); x != nullptr;
         x = x->next.load(std::memory_order_relaxed))
      filter |= FilterBit(Mix64(x->key));
    bucket.filter.store(filter, std::memory_order_release);
    stripe.latch.Unlock();
    stripe.records.fetch_sub(1, std::memory_order_relaxed);
    arena_.Retire(r);
    return true;
  }
  stripe.latch.Unlock();
  return false;
}

size_t Table::ReclaimErased() { return arena_.ReclaimRetired(); }

uint64_t Table::size() const {
  int64_t n = 0;
  for (size_t s = 0; s <= stripe_mask_; ++s)
    n += stripes_[s].records.load(std::memory_order_relaxed);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}

size_t Table::memory_bytes() const {
  return sizeof(*this) + options_.name.capacity() + (bucket_mask_ + 1) * sizeof(buckets_[0]) +
         (stripe_mask_ + 1) * sizeof(Stripe) + arena_.bytes_reserved();
}

}  // namespace detdb
