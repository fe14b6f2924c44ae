#include "storage/table.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {

namespace {

constexpr uint64_t kMinBuckets = 16;

size_t RoundUp8(size_t n) { return (n + 7) & ~size_t{7}; }

const TableOptions& CheckedOptions(const TableOptions& options) {
  const absl::Status s = Table::ValidateOptions(options);
  CHECK(s.ok()) << s;
  return options;
}

// Buckets (before rounding up to a power of two) of a new index for
// `records` records: Table::kBucketsPerExpectedRecord each, at least
// kMinBuckets, at most kMaxBuckets.
uint64_t BucketsFor(uint64_t records) {
  if (records >= Table::kMaxBuckets / Table::kBucketsPerExpectedRecord) return Table::kMaxBuckets;
  return std::max(records * Table::kBucketsPerExpectedRecord, kMinBuckets);
}

// The buckets the hash index is sized for: none beyond the minimum for an
// ordered table, whose records the B+tree indexes.
uint64_t HashSizing(const TableOptions& options) {
  return options.ordered ? kMinBuckets : BucketsFor(options.expected_records);
}

}  // namespace

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

Table::Index::Index(uint64_t n)
    : mask(n - 1),
      // calloc: zero bytes are an empty bucket (null head, empty filter),
      // and large zeroed allocations come from fresh pages the kernel zeroes
      // on first touch, so even a huge array costs no pass at growth time.
      // (std::atomic of pointers and integers is all-zero bits when null/0.)
      buckets(static_cast<Bucket*>(std::calloc(n, sizeof(Bucket)))) {
  if (buckets == nullptr) throw std::bad_alloc();
}

Table::Index::~Index() {
  std::free(buckets);
  std::free(moved);
}

Table::Table(const TableOptions& options)
    : options_(CheckedOptions(options)),
      stripe_mask_(std::min<uint64_t>(std::bit_ceil(HashSizing(options)), kMaxStripes) - 1),
      stripes_(new Stripe[stripe_mask_ + 1]),
      arena_(RoundUp8(sizeof(Record) + options.value_size), options.expected_records) {
  if (options.ordered) tree_ = std::make_unique<OrderedIndex>();
  const uint64_t buckets = std::bit_ceil(HashSizing(options));
  indexes_.push_back(std::make_unique<Index>(buckets));
  current_.store(indexes_.back().get(), std::memory_order_release);
  grow_records_per_stripe_.store(GrowThreshold(buckets), std::memory_order_relaxed);
}

int64_t Table::GrowThreshold(uint64_t buckets) const {
  // A stripe's share of kGrowLoad records per bucket, plus three standard
  // deviations of a binomial share (so noise in one stripe of a table at
  // its expected size does not double the index) and a little slack for
  // tiny tables.
  const double share = static_cast<double>(kGrowLoad * buckets) / (stripe_mask_ + 1);
  return static_cast<int64_t>(share + 3 * std::sqrt(share) + 2);
}

Record* Table::GetAbsent(Key k, uint64_t h) const {
  const Stripe& stripe = StripeOf(h);
  for (;;) {
    // Waits while a migration of this stripe is moving records.
    const uint64_t seq = stripe.seq.ReadBegin();
    if (Record* r = Find(BucketFor(h), k, h)) return r;
    if (stripe.seq.ReadValidate(seq)) return nullptr;
  }
}

Record* Table::Insert(Key k, OrderedIndex::Hint* hint) {
  DCHECK_EQ(KeyTable(k), id()) << "key of another table";
  if (tree_ != nullptr) return InsertOrdered(k, hint);
  const uint64_t h = Mix64(k);
  // Unvalidated: a miss is re-checked under the latch.
  if (Record* r = Find(BucketFor(h), k, h)) return r;

  // Allocate and fill the record outside the latch; it becomes visible only
  // with the release store that links it.
  Record* fresh = static_cast<Record*>(arena_.Allocate());
  new (fresh) Record{k, nullptr};
  std::memset(fresh->value(), 0, options_.value_size);

  Stripe& stripe = StripeOf(h);
  stripe.latch.Lock();
  // The latch orders this section after every earlier migration of the
  // stripe, so BucketFor is exact here. Every writer of this chain holds
  // the stripe latch: relaxed loads see the chain and the filter as the
  // last writer left them.
  Bucket& bucket = BucketFor(h);
  Record* first = bucket.head.load(std::memory_order_relaxed);
  const uint64_t filter = bucket.filter.load(std::memory_order_relaxed);
  if (filter & FilterBit(h)) {
    for (Record* r = first; r != nullptr; r = r->next.load(std::memory_order_relaxed)) {
      if (r->key == k) {  // inserted by another thread since our Find
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
  MaybeGrow(stripe.records.fetch_add(1, std::memory_order_relaxed) + 1);
  return fresh;
}

bool Table::Erase(Key k) {
  DCHECK_EQ(KeyTable(k), id()) << "key of another table";
  if (tree_ != nullptr) return EraseOrdered(k);
  const uint64_t h = Mix64(k);
  Stripe& stripe = StripeOf(h);
  stripe.latch.Lock();
  Bucket& bucket = BucketFor(h);
  if ((bucket.filter.load(std::memory_order_relaxed) & FilterBit(h)) == 0) {
    stripe.latch.Unlock();
    MigrateSome();
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
    MigrateSome();
    return true;
  }
  stripe.latch.Unlock();
  MigrateSome();
  return false;
}

// ---------------------------------------------------------------- growth

void Table::MaybeGrow(int64_t stripe_records) {
  if (options_.grow_index && stripe_records > grow_records_per_stripe_.load(std::memory_order_relaxed) &&
      !growing_.load(std::memory_order_relaxed) &&
      !growing_.exchange(true, std::memory_order_acq_rel)) {
    StartGrow();
  }
  MigrateSome();
}

void Table::StartGrow() {
  // growing_ (set by this thread) serialises growths: current_ is ours.
  Index* from = current_.load(std::memory_order_acquire);
  const uint64_t buckets = from->mask + 1;
  if (buckets >= kMaxBuckets) return;  // growing_ stays set: no more growth
  auto to = std::make_unique<Index>(2 * buckets);
  auto m = std::make_unique<Migration>();
  m->from = from;
  m->to = to.get();
  m->next.store(~uint64_t{0}, std::memory_order_relaxed);  // closed until published
  Migration* mp = m.get();
  {
    // memory_bytes reads moved; SealRetired must see indexes_, current_ and
    // migration_ agree (else it would take the new index for a retired one).
    std::lock_guard<std::mutex> l(owned_mu_);
    from->moved = static_cast<std::atomic<uint8_t>*>(std::calloc(buckets, 1));
    if (from->moved == nullptr) throw std::bad_alloc();
    indexes_.push_back(std::move(to));
    migrations_.push_back(std::move(m));
    // The migration first, then the index: whoever sees the new index sees
    // the migration that fills it (BucketFor reads them in the other order).
    migration_.store(mp, std::memory_order_release);
    current_.store(mp->to, std::memory_order_release);
  }
  grow_records_per_stripe_.store(GrowThreshold(2 * buckets), std::memory_order_relaxed);
  growths_.fetch_add(1, std::memory_order_relaxed);
  // Open the claims last: a bucket is moved only by a thread that has seen
  // both stores above, so every later holder of its stripe latch sees them.
  mp->next.store(0, std::memory_order_release);
}

void Table::MigrateSome() {
  Migration* m = migration_.load(std::memory_order_acquire);
  if (m == nullptr) [[likely]]
    return;
  const uint64_t last = m->from->mask;
  for (int i = 0; i < kMigratePerWrite; ++i) {
    uint64_t ob = m->next.load(std::memory_order_acquire);
    do {
      if (ob > last) return;  // all claimed (or not yet open)
    } while (!m->next.compare_exchange_weak(ob, ob + 1, std::memory_order_acq_rel,
                                            std::memory_order_acquire));
    MigrateBucket(m, ob);
    if (m->done.fetch_add(1, std::memory_order_acq_rel) == last) {
      // Every bucket moved: the target is the whole index.
      migration_.store(nullptr, std::memory_order_release);
      growing_.store(false, std::memory_order_release);
      return;
    }
  }
}

void Table::MigrateBucket(Migration* m, uint64_t ob) {
  // ob's keys are those of hashes h with h & from->mask == ob, and the
  // stripe mask is <= from->mask: one stripe holds them all.
  Stripe& stripe = stripes_[ob & stripe_mask_];
  const uint64_t split_bit = m->from->mask + 1;
  Bucket& src = m->from->buckets[ob];
  Bucket& lo = m->to->buckets[ob];
  Bucket& hi = m->to->buckets[ob | split_bit];
  // A real latch: the section writes many lines, elision would abort.
  stripe.latch.LockNoElision();
  uint64_t filter_lo = 0, filter_hi = 0;
  for (Record* r = src.head.load(std::memory_order_relaxed); r != nullptr;
       r = r->next.load(std::memory_order_relaxed)) {
    const uint64_t h = Mix64(r->key);
    (h & split_bit ? filter_hi : filter_lo) |= FilterBit(h);
  }
  // Seqlock write side: odd while records move, so a reader that misses a
  // key meanwhile looks again (GetAbsent). The stripe latch excludes other
  // writers.
  stripe.seq.WriteBegin();
  // lo and hi are empty: their keys have lived in src until now.
  lo.filter.store(filter_lo, std::memory_order_release);
  hi.filter.store(filter_hi, std::memory_order_release);
  // Pop every record off src and push it onto lo or hi. A reader standing
  // on a moved record follows it into its new chain: every path stays
  // finite (a record moves once; chains only grow at their heads).
  Record* r = src.head.load(std::memory_order_relaxed);
  while (r != nullptr) {
    Record* next = r->next.load(std::memory_order_relaxed);
    Bucket& dst = (Mix64(r->key) & split_bit) ? hi : lo;
    src.head.store(next, std::memory_order_release);
    r->next.store(dst.head.load(std::memory_order_relaxed), std::memory_order_release);
    dst.head.store(r, std::memory_order_release);
    if (move_hook_) [[unlikely]]
      move_hook_(r->key);
    r = next;
  }
  src.filter.store(0, std::memory_order_release);
  m->from->moved[ob].store(1, std::memory_order_release);
  stripe.seq.WriteEnd();
  stripe.latch.Unlock();
}

bool Table::SealRetired(uint64_t epoch) {
  // Erased records were unlinked before Retire put them on the list, and
  // nothing can link them again: unreachable for a reader that starts now.
  Sealed batch;
  batch.epoch = epoch;
  batch.records = arena_.TakeRetired();
  if (tree_ != nullptr) batch.nodes = tree_->TakeRetired();  // unlinked before they were retired
  std::lock_guard<std::mutex> l(owned_mu_);
  // An index is retired once it is neither current nor the source of the
  // running migration, and a migration once it is not the running one
  // (StartGrow publishes both under owned_mu_; a migration ends by clearing
  // migration_, after which no reader starting now reaches its source).
  const Index* cur = current_.load(std::memory_order_acquire);
  const Migration* m = migration_.load(std::memory_order_acquire);
  for (auto& ix : indexes_)
    if (ix.get() != cur && (m == nullptr || ix.get() != m->from)) batch.indexes.push_back(std::move(ix));
  std::erase(indexes_, nullptr);
  for (auto& x : migrations_)
    if (x.get() != m) batch.migrations.push_back(std::move(x));
  std::erase(migrations_, nullptr);
  if (batch.records.empty() && batch.indexes.empty() && batch.migrations.empty() && batch.nodes.empty())
    return false;
  DCHECK(sealed_.empty() || sealed_.back().epoch <= epoch);
  sealed_.push_back(std::move(batch));
  return true;
}

size_t Table::FreeSealed(uint64_t safe_epoch) {
  std::vector<Sealed> ready;
  {
    std::lock_guard<std::mutex> l(owned_mu_);
    while (!sealed_.empty() && sealed_.front().epoch <= safe_epoch) {
      ready.push_back(std::move(sealed_.front()));
      sealed_.pop_front();
    }
  }
  size_t n = 0;
  for (Sealed& b : ready) {
    arena_.ReleaseMany(b.records);
    OrderedIndex::FreeNodes(b.nodes);
    n += b.records.size();
  }
  reclaimed_records_.fetch_add(n, std::memory_order_relaxed);
  return n;  // the bucket arrays go back to the heap here, with `ready`
}

Table::ReclaimStats Table::reclaim_stats() const {
  ReclaimStats st;
  st.retired_records = arena_.retired_blocks();
  st.free_records = arena_.free_blocks();
  st.reclaimed_records = reclaimed_records_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(owned_mu_);
  const Index* cur = current_.load(std::memory_order_acquire);
  const Migration* m = migration_.load(std::memory_order_acquire);
  auto bytes = [](const Index& ix) { return (ix.mask + 1) * (sizeof(Bucket) + (ix.moved != nullptr ? 1 : 0)); };
  for (const auto& ix : indexes_)
    if (ix.get() != cur && (m == nullptr || ix.get() != m->from)) st.retired_index_bytes += bytes(*ix);
  for (const Sealed& b : sealed_) {
    st.sealed_records += b.records.size();
    for (const auto& ix : b.indexes) st.retired_index_bytes += bytes(*ix);
    st.retired_nodes += b.nodes.size();
  }
  if (tree_ != nullptr) st.retired_nodes += tree_->retired_nodes();
  st.sealed_batches = sealed_.size();
  return st;
}

size_t Table::ReclaimErased() {
  size_t sealed_records = 0;
  {
    std::lock_guard<std::mutex> l(owned_mu_);
    for (Sealed& b : sealed_) {
      arena_.ReleaseMany(b.records);
      OrderedIndex::FreeNodes(b.nodes);
      sealed_records += b.records.size();
    }
    if (tree_ != nullptr) tree_->FreeRetiredNow();
    sealed_.clear();
    const Index* cur = current_.load(std::memory_order_acquire);
    const Migration* m = migration_.load(std::memory_order_acquire);
    std::erase_if(indexes_, [&](const std::unique_ptr<Index>& ix) {
      return ix.get() != cur && (m == nullptr || ix.get() != m->from);
    });
    std::erase_if(migrations_,
                  [&](const std::unique_ptr<Migration>& x) { return x.get() != m; });
  }
  const size_t n = sealed_records + arena_.ReclaimRetired();
  reclaimed_records_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

// ---------------------------------------------------------------- whole table

uint64_t Table::Clear() {
  if (tree_ != nullptr) return ClearOrdered();
  std::vector<void*> records;
  ForEachRecord([&records](const Record* r) { records.push_back(const_cast<Record*>(r)); });
  // Unlinked all at once by replacing the index: nothing can reach them
  // after this (a reader standing on one from before the caller's X lock
  // was granted cannot exist), but reclamation frees them, as it does
  // erased records, only once every participant passed a quiescent point.
  auto fresh = std::make_unique<Index>(std::bit_ceil(HashSizing(options_)));
  Index* ix = fresh.get();
  {
    std::lock_guard<std::mutex> l(owned_mu_);
    indexes_.push_back(std::move(fresh));
    migration_.store(nullptr, std::memory_order_release);
    current_.store(ix, std::memory_order_release);
  }
  growing_.store(false, std::memory_order_release);
  grow_records_per_stripe_.store(GrowThreshold(ix->mask + 1), std::memory_order_relaxed);
  for (size_t s = 0; s <= stripe_mask_; ++s) stripes_[s].records.store(0, std::memory_order_relaxed);
  arena_.RetireMany(records);
  return records.size();
}

void Table::Reserve(uint64_t records) {
  if (tree_ != nullptr) return;  // a tree grows by splits: nothing to size
  // Large enough while online growth would not be due (kGrowLoad per
  // bucket); past that, sized as a new index of `records` records.
  const Index* cur = current_.load(std::memory_order_acquire);
  if (records <= (cur->mask + 1) * kGrowLoad && migration_.load(std::memory_order_acquire) == nullptr) return;
  const uint64_t need = std::bit_ceil(BucketsFor(records));
  auto to = std::make_unique<Index>(std::max<uint64_t>(need, cur->mask + 1));
  Index* ix = to.get();
  std::vector<Record*> all;
  ForEachRecord([&all](const Record* r) { all.push_back(const_cast<Record*>(r)); });
  // Relinked in place into the new array (nobody else is in the table).
  for (Record* r : all) {
    const uint64_t h = Mix64(r->key);
    Bucket& b = ix->buckets[h & ix->mask];
    r->next.store(b.head.load(std::memory_order_relaxed), std::memory_order_relaxed);
    b.head.store(r, std::memory_order_relaxed);
    b.filter.store(b.filter.load(std::memory_order_relaxed) | FilterBit(h), std::memory_order_relaxed);
  }
  {
    std::lock_guard<std::mutex> l(owned_mu_);
    indexes_.push_back(std::move(to));
    migration_.store(nullptr, std::memory_order_release);
    current_.store(ix, std::memory_order_release);
  }
  growing_.store(false, std::memory_order_release);
  grow_records_per_stripe_.store(GrowThreshold(ix->mask + 1), std::memory_order_relaxed);
  growths_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Table::size() const {
  if (tree_ != nullptr) return tree_->size();
  int64_t n = 0;
  for (size_t s = 0; s <= stripe_mask_; ++s)
    n += stripes_[s].records.load(std::memory_order_relaxed);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}

size_t Table::memory_bytes() const {
  size_t index_bytes = 0;
  {
    std::lock_guard<std::mutex> l(owned_mu_);
    for (const auto& ix : indexes_)
      index_bytes += (ix->mask + 1) * (sizeof(Bucket) + (ix->moved != nullptr ? 1 : 0));
    index_bytes += migrations_.size() * sizeof(Migration);
    for (const Sealed& b : sealed_) {
      for (const auto& ix : b.indexes)
        index_bytes += (ix->mask + 1) * (sizeof(Bucket) + (ix->moved != nullptr ? 1 : 0));
      index_bytes += b.migrations.size() * sizeof(Migration) + b.records.capacity() * sizeof(void*) +
                     OrderedIndex::NodeBytes(b.nodes);
    }
    if (tree_ != nullptr) index_bytes += tree_->memory_bytes();
  }
  return sizeof(*this) + options_.name.capacity() + index_bytes +
         (stripe_mask_ + 1) * sizeof(Stripe) + arena_.bytes_reserved();
}

}  // namespace detdb
