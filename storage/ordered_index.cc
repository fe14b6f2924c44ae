// OrderedIndex (ordered_index.h): nodes and their reclamation, descents,
// latching, and the lock-free reads. The write path (inserts, splits,
// erases) is in ordered_index_write.cc.
#include "storage/ordered_index.h"

#include <algorithm>
#include <vector>

#include "glog/logging.h"
#include "storage/ordered_index_internal.h"

namespace detdb {

using ordered_index_internal::CpuRelax;
using ordered_index_internal::Backoff;
using ordered_index_internal::StableVersion;
using ordered_index_internal::Unchanged;
using ordered_index_internal::LowerBound;
using ordered_index_internal::ChildFor;
using ordered_index_internal::Put;
using ordered_index_internal::Get;

// ---------------------------------------------------------------- nodes

OrderedIndex::OrderedIndex(const Options& options)
    : leaf_capacity_(options.leaf_capacity), inner_capacity_(options.inner_capacity) {
  CHECK(leaf_capacity_ >= 2 && leaf_capacity_ <= kMaxLeafCapacity) << "leaf capacity " << leaf_capacity_;
  CHECK(inner_capacity_ >= 3 && inner_capacity_ <= kMaxInnerCapacity) << "inner capacity " << inner_capacity_;
  root_.store(NewLeaf(), std::memory_order_release);
}

OrderedIndex::~OrderedIndex() {
  // Post-order, without recursion limits worth worrying about (height is
  // bounded by kMaxHeight).
  struct Freer {
    static void Free(Node* n) {
      if (!n->leaf) {
        Inner* in = static_cast<Inner*>(n);
        const uint32_t c = in->count.load(std::memory_order_relaxed);
        for (uint32_t i = 0; i <= c; ++i) Free(in->children[i].load(std::memory_order_relaxed));
      }
      FreeNode(n);
    }
  };
  Freer::Free(root_.load(std::memory_order_acquire));
  FreeRetiredNow();
}

std::atomic<int64_t> OrderedIndex::allocated_nodes_{0};

OrderedIndex::Leaf* OrderedIndex::NewLeaf() {
  leaves_.fetch_add(1, std::memory_order_relaxed);
  allocated_nodes_.fetch_add(1, std::memory_order_relaxed);
  return new Leaf();
}

OrderedIndex::Inner* OrderedIndex::NewInner() {
  inners_.fetch_add(1, std::memory_order_relaxed);
  allocated_nodes_.fetch_add(1, std::memory_order_relaxed);
  Inner* in = new Inner();
  for (auto& c : in->children) c.store(nullptr, std::memory_order_relaxed);
  return in;
}

void OrderedIndex::FreeNode(Node* n) {
  allocated_nodes_.fetch_sub(1, std::memory_order_relaxed);
  if (n->leaf) {
    delete static_cast<Leaf*>(n);
  } else {
    delete static_cast<Inner*>(n);
  }
}

void OrderedIndex::Retire(Node* n) {
  (n->leaf ? leaves_ : inners_).fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(retired_mu_);
  retired_.push_back(n);
}

void OrderedIndex::RetireAll() {
  std::vector<Node*> all;
  std::vector<Node*> todo{root_.load(std::memory_order_relaxed)};
  while (!todo.empty()) {
    Node* n = todo.back();
    todo.pop_back();
    all.push_back(n);
    if (n->leaf) continue;
    Inner* in = static_cast<Inner*>(n);
    const uint32_t c = in->count.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i <= c; ++i) todo.push_back(in->children[i].load(std::memory_order_relaxed));
  }
  root_.store(NewLeaf(), std::memory_order_release);
  // A hint taken before the clear must fail (InsertAtHint checks
  // `unlinked` and the version), as for a leaf an erase unlinked.
  uint64_t leaves = 0, inners = 0;
  for (Node* n : all) {
    if (n->leaf) {
      ++leaves;
      static_cast<Leaf*>(n)->unlinked.store(true, std::memory_order_release);
    } else {
      ++inners;
    }
    n->version.fetch_add(2, std::memory_order_release);
  }
  leaves_.fetch_sub(static_cast<int64_t>(leaves), std::memory_order_relaxed);
  inners_.fetch_sub(static_cast<int64_t>(inners), std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(retired_mu_);
  retired_.insert(retired_.end(), all.begin(), all.end());
}

std::vector<void*> OrderedIndex::TakeRetired() {
  std::vector<Node*> taken;
  {
    std::lock_guard<std::mutex> l(retired_mu_);
    taken.swap(retired_);
  }
  return std::vector<void*>(taken.begin(), taken.end());
}

void OrderedIndex::FreeNodes(const std::vector<void*>& nodes) {
  for (void* n : nodes) FreeNode(static_cast<Node*>(n));
}

size_t OrderedIndex::NodeBytes(const std::vector<void*>& nodes) {
  size_t bytes = 0;
  for (void* n : nodes) bytes += static_cast<Node*>(n)->leaf ? sizeof(Leaf) : sizeof(Inner);
  return bytes;
}

size_t OrderedIndex::FreeRetiredNow() {
  const std::vector<void*> nodes = TakeRetired();
  FreeNodes(nodes);
  return nodes.size();
}

size_t OrderedIndex::retired_nodes() const {
  std::lock_guard<std::mutex> l(retired_mu_);
  return retired_.size();
}

size_t OrderedIndex::memory_bytes() const {
  return sizeof(*this) + leaves_.load(std::memory_order_relaxed) * sizeof(Leaf) +
         inners_.load(std::memory_order_relaxed) * sizeof(Inner);
}

uint64_t OrderedIndex::CountIn(const Node* n) {
  const uint32_t c = n->count.load(std::memory_order_acquire);
  if (n->leaf) return c;
  const Inner* in = static_cast<const Inner*>(n);
  uint64_t total = 0;
  for (uint32_t i = 0; i <= c; ++i) total += CountIn(in->children[i].load(std::memory_order_acquire));
  return total;
}

uint64_t OrderedIndex::size() const { return CountIn(root_.load(std::memory_order_acquire)); }

int OrderedIndex::height() const {
  int h = 1;
  for (const Node* n = root_.load(std::memory_order_acquire); !n->leaf;
       n = static_cast<const Inner*>(n)->children[0].load(std::memory_order_acquire))
    ++h;
  return h;
}

// ---------------------------------------------------------------- descent and latching

bool OrderedIndex::Descend(Key k, Path* p) const {
  Node* n = root_.load(std::memory_order_acquire);
  uint64_t v;
  // The root's version, then the root pointer again: a root that split
  // after we loaded the pointer has a new version by now (the split latched
  // it before it published the new root).
  if (!StableVersion(n, &v) || root_.load(std::memory_order_acquire) != n) return false;
  p->has_lower = p->has_upper = false;
  for (int d = 0;; ++d) {
    p->node[d] = n;
    p->version[d] = v;
    if (n->leaf) {
      p->depth = d + 1;
      return true;
    }
    if (d + 1 == kMaxHeight) return false;  // a torn read; the tree is never this high
    const Inner* in = static_cast<const Inner*>(n);
    const uint32_t c = std::min<uint32_t>(in->count.load(std::memory_order_acquire),
                                          static_cast<uint32_t>(inner_capacity_ - 1));
    const uint32_t i = ChildFor(in, c, k);
    Node* child = in->children[i].load(std::memory_order_acquire);
    const Key lower = i > 0 ? in->keys[i - 1].load(std::memory_order_acquire) : 0;
    const Key upper = i < c ? in->keys[i].load(std::memory_order_acquire) : 0;
    uint64_t cv;
    // The child's version before the parent's check: if the child split or
    // was unlinked after we read its pointer, the parent changed too.
    if (child == nullptr || !StableVersion(child, &cv) || !Unchanged(n, v)) return false;
    p->slot[d] = i;
    if (i > 0) {
      p->has_lower = true;
      p->lower = lower;
    }
    if (i < c) {
      p->has_upper = true;
      p->upper = upper;
    }
    n = child;
    v = cv;
  }
}

bool OrderedIndex::LatchPath(Path* p, int from) const {
  // Latch top-down, checking each version: a latched node whose version is
  // the one the descent saw has the children the descent saw, so each next
  // node is a current child of a latched one. Versions turn odd only once
  // all are latched, so a failed attempt leaves no trace.
  for (int d = from; d < p->depth; ++d) {
    Node* n = p->node[d];
    n->latch.Lock();
    if (n->version.load(std::memory_order_relaxed) != p->version[d]) {
      for (int e = d; e >= from; --e) p->node[e]->latch.Unlock();
      return false;
    }
  }
  for (int d = from; d < p->depth; ++d) p->node[d]->version.store(p->version[d] + 1, std::memory_order_relaxed);
  return true;
}

void OrderedIndex::UnlatchPath(Path* p, int from) const {
  for (int d = p->depth - 1; d >= from; --d) {
    p->node[d]->version.store(p->version[d] + 2, std::memory_order_release);
    p->node[d]->latch.Unlock();
  }
}

// ---------------------------------------------------------------- reads

Record* OrderedIndex::Find(Key k) const {
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    Path p;
    if (!Descend(k, &p)) continue;
    const Leaf* leaf = static_cast<const Leaf*>(p.node[p.depth - 1]);
    const uint32_t c =
        std::min<uint32_t>(leaf->count.load(std::memory_order_acquire), static_cast<uint32_t>(leaf_capacity_));
    const uint32_t pos = LowerBound(leaf, c, k);
    Record* r = nullptr;
    if (pos < c && leaf->keys[pos].load(std::memory_order_acquire) == k)
      r = leaf->values[pos].load(std::memory_order_acquire);
    if (Unchanged(leaf, p.version[p.depth - 1])) return r;
  }
}

void OrderedIndex::ReadLeafRange(Key lo, Key hi, Key cursor, bool reverse, Entry* out, int* n, bool* more,
                                 Key* next) const {
  // The window of this step: [lo, cursor] in reverse, [cursor, hi] forward.
  const Key from = reverse ? lo : cursor, to = reverse ? cursor : hi;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    Path p;
    if (!Descend(cursor, &p)) continue;
    const Leaf* leaf = static_cast<const Leaf*>(p.node[p.depth - 1]);
    const int c = static_cast<int>(
        std::min<uint32_t>(leaf->count.load(std::memory_order_acquire), static_cast<uint32_t>(leaf_capacity_)));
    int m = 0;
    for (int j = 0; j < c; ++j) {
      const int i = reverse ? c - 1 - j : j;
      const Key k = leaf->keys[i].load(std::memory_order_acquire);
      if (k < from || k > to) continue;
      out[m++] = Entry{k, leaf->values[i].load(std::memory_order_acquire)};
    }
    if (!Unchanged(leaf, p.version[p.depth - 1])) continue;
    *n = m;
    // The leaf held every key of [lower, upper) when we read it; the scan
    // goes on from the far fence if the range extends past it.
    if (reverse) {
      *more = p.has_lower && p.lower > lo;
      *next = p.lower - 1;
    } else {
      *more = p.has_upper && p.upper <= hi;
      *next = p.upper;
    }
    return;
  }
}

}  // namespace detdb
