// OrderedIndex (ordered_index.h): the write path. Inserts (with and
// without a hint), splits up to a new root, and erases that unlink emptied
// nodes. Nodes, descents, latching and reads are in ordered_index.cc.
#include "storage/ordered_index.h"

#include <algorithm>

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

// ---------------------------------------------------------------- writes

namespace {

// How many of the n items (entries, or children) of a node that overflows
// the left node keeps, the new item being number pos: ascending inserts
// keep the left node full. An item after the last (appending) starts the
// right node alone; one in the upper half ends the left node (a range
// appended to in the middle of the node: the keys after it belong to
// another range, which goes right, and the left node fills up with the
// range's next inserts); otherwise half.
inline uint32_t SplitPoint(uint32_t n, uint32_t pos) {
  if (pos == n - 1) return n - 1;
  if (2 * pos >= n - 1) return pos + 1;
  return n / 2;
}

// Inserts (k, v) at pos into a latched leaf of c < capacity entries.
template <typename L>
void InsertEntry(L* leaf, uint32_t c, uint32_t pos, Key k, Record* v) {
  for (uint32_t i = c; i > pos; --i) {
    Put(leaf->keys[i], Get(leaf->keys[i - 1]));
    Put(leaf->values[i], Get(leaf->values[i - 1]));
  }
  Put(leaf->keys[pos], k);
  Put(leaf->values[pos], v);
  Put(leaf->count, c + 1);
}

// Removes entry pos of a latched leaf of c entries.
template <typename L>
void RemoveEntry(L* leaf, uint32_t c, uint32_t pos) {
  for (uint32_t i = pos; i + 1 < c; ++i) {
    Put(leaf->keys[i], Get(leaf->keys[i + 1]));
    Put(leaf->values[i], Get(leaf->values[i + 1]));
  }
  Put(leaf->count, c - 1);
}

// Inserts child r after child slot of a latched inner node of n keys (n + 1
// < capacity children), with separator s between them.
template <typename I, typename N>
void InsertChild(I* in, uint32_t n, uint32_t slot, Key s, N* r) {
  for (uint32_t i = n; i > slot; --i) Put(in->keys[i], Get(in->keys[i - 1]));
  for (uint32_t i = n + 1; i > slot + 1; --i) Put(in->children[i], Get(in->children[i - 1]));
  Put(in->keys[slot], s);
  Put(in->children[slot + 1], r);
  Put(in->count, n + 1);
}

// Removes child slot of a latched inner node of n >= 1 keys, with one
// separator next to it: the lower one (the left neighbour's range grows
// over the removed child's) or, for child 0, the upper one.
template <typename I>
void RemoveChild(I* in, uint32_t n, uint32_t slot) {
  for (uint32_t i = slot > 0 ? slot - 1 : 0; i + 1 < n; ++i) Put(in->keys[i], Get(in->keys[i + 1]));
  for (uint32_t i = slot; i < n; ++i) Put(in->children[i], Get(in->children[i + 1]));
  Put(in->children[n], nullptr);  // slots past the count hold no pointer
  Put(in->count, n - 1);
}

}  // namespace

bool OrderedIndex::InsertAtHint(Key k, Record** value_slot, Record* (*make)(void*), void* ctx, Leaf* leaf,
                                Record** result) {
  uint64_t v;
  if (!StableVersion(leaf, &v)) return false;
  if (leaf->unlinked.load(std::memory_order_acquire)) return false;
  if (leaf->has_low.load(std::memory_order_acquire) && k < leaf->low.load(std::memory_order_acquire)) return false;
  if (leaf->has_high.load(std::memory_order_acquire) && k >= leaf->high.load(std::memory_order_acquire)) return false;
  const uint32_t c =
      std::min<uint32_t>(leaf->count.load(std::memory_order_acquire), static_cast<uint32_t>(leaf_capacity_));
  const uint32_t pos = LowerBound(leaf, c, k);
  if (pos < c && leaf->keys[pos].load(std::memory_order_acquire) == k) {
    Record* present = leaf->values[pos].load(std::memory_order_acquire);
    if (!Unchanged(leaf, v)) return false;
    *result = present;
    return true;
  }
  if (c == static_cast<uint32_t>(leaf_capacity_) || !Unchanged(leaf, v)) return false;  // a split needs the path
  // Within the leaf's range at version v, which the latch checks: k
  // belongs here whatever happened above the leaf.
  if (*value_slot == nullptr) *value_slot = make(ctx);
  Path p;
  p.depth = 1;
  p.node[0] = leaf;
  p.version[0] = v;
  if (!LatchPath(&p, 0)) return false;
  InsertEntry(leaf, c, pos, k, *value_slot);
  UnlatchPath(&p, 0);
  *result = nullptr;
  return true;
}

Record* OrderedIndex::InsertCore(Key k, Record** value_slot, Record* (*make)(void*), void* ctx, Hint* hint) {
  DCHECK(*value_slot != nullptr || make != nullptr);
  if (hint != nullptr && hint->leaf != nullptr) {
    Record* at_hint;
    if (InsertAtHint(k, value_slot, make, ctx, hint->leaf, &at_hint)) return at_hint;
  }
  // Spare nodes for splits, allocated outside latched sections (a heap call
  // would abort an elided one) and kept across attempts.
  Leaf* spare_leaf = nullptr;
  Inner* spare_inner[kMaxHeight + 1];
  int spare_inners = 0;
  Record* result = nullptr;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    Path p;
    if (!Descend(k, &p)) continue;
    const int li = p.depth - 1;
    Leaf* leaf = static_cast<Leaf*>(p.node[li]);
    const uint32_t c =
        std::min<uint32_t>(leaf->count.load(std::memory_order_acquire), static_cast<uint32_t>(leaf_capacity_));
    const uint32_t pos = LowerBound(leaf, c, k);
    if (pos < c && leaf->keys[pos].load(std::memory_order_acquire) == k) {
      Record* present = leaf->values[pos].load(std::memory_order_acquire);
      if (!Unchanged(leaf, p.version[li])) continue;
      result = present;
      if (hint != nullptr) hint->leaf = leaf;
      break;
    }
    // k is absent from the leaf at the version read (checked first, so that
    // make runs only on a consistent read: a read torn by a concurrent split
    // or shift of the leaf can miss a present k, and make would run for a
    // key that was there all along). Made outside any latch and kept across
    // attempts; the latching below checks that the leaf did not change
    // meanwhile.
    if (*value_slot == nullptr) {
      if (!Unchanged(leaf, p.version[li])) continue;
      *value_slot = make(ctx);
    }
    Record* const value = *value_slot;
    if (c < static_cast<uint32_t>(leaf_capacity_)) {
      // The common case: room in the leaf. Latched at the version read, so
      // c and pos are exact.
      if (!LatchPath(&p, li)) continue;
      InsertEntry(leaf, c, pos, k, value);
      UnlatchPath(&p, li);
      if (hint != nullptr) hint->leaf = leaf;
      break;
    }
    // The leaf is full: it splits, and so does every full ancestor above it
    // up to `top`; the parent of top (or a new root) takes one more child.
    // The counts read here are checked by LatchPath's version check.
    int top = li;
    while (top > 0 && static_cast<Inner*>(p.node[top - 1])->count.load(std::memory_order_acquire) + 2 >
                          static_cast<uint32_t>(inner_capacity_))
      --top;
    const int from = top == 0 ? 0 : top - 1;
    const int inners_needed = (li - top) + (top == 0 ? 1 : 0);
    if (spare_leaf == nullptr) spare_leaf = NewLeaf();
    while (spare_inners < inners_needed) spare_inner[spare_inners++] = NewInner();
    if (!LatchPath(&p, from)) continue;
    SplitAndInsert(&p, from, k, value, &spare_leaf, spare_inner, &spare_inners);
    UnlatchPath(&p, from);
    if (hint != nullptr) hint->leaf = nullptr;  // the next insert descends to k's new leaf
    break;
  }
  // Unused spares were never published.
  if (spare_leaf != nullptr) {
    leaves_.fetch_sub(1, std::memory_order_relaxed);
    FreeNode(spare_leaf);
  }
  for (int i = 0; i < spare_inners; ++i) {
    inners_.fetch_sub(1, std::memory_order_relaxed);
    FreeNode(spare_inner[i]);
  }
  return result;
}

void OrderedIndex::SplitAndInsert(Path* p, int from, Key k, Record* value, Leaf** spare_leaf, Inner** spare_inner,
                                  int* spare_inners) {
  const int li = p->depth - 1;
  Leaf* leaf = static_cast<Leaf*>(p->node[li]);
  const uint32_t c = Get(leaf->count);
  const uint32_t pos = LowerBound(leaf, c, k);
  Leaf* right = *spare_leaf;
  *spare_leaf = nullptr;
  // The c + 1 entries with the new one, split in two: the left leaf keeps m.
  Entry all[kMaxLeafCapacity + 1];
  for (uint32_t i = 0, j = 0; i <= c; ++i)
    all[i] = i == pos ? Entry{k, value} : Entry{Get(leaf->keys[j]), Get(leaf->values[j++])};
  const uint32_t m = SplitPoint(c + 1, pos);
  for (uint32_t i = 0; i < m; ++i) {
    Put(leaf->keys[i], all[i].key);
    Put(leaf->values[i], all[i].value);
  }
  Put(leaf->count, m);
  for (uint32_t i = m; i <= c; ++i) {
    Put(right->keys[i - m], all[i].key);
    Put(right->values[i - m], all[i].value);
  }
  Put(right->count, c + 1 - m);
  Key sep = all[m].key;
  // The leaves' stored ranges (for hints): right takes [sep, leaf's high).
  Put(right->low, sep);
  Put(right->has_low, true);
  Put(right->high, Get(leaf->high));
  Put(right->has_high, Get(leaf->has_high));
  Put(leaf->high, sep);
  Put(leaf->has_high, true);

  // Hand (sep, right) up: into the first ancestor with room, splitting the
  // full ones on the way (all latched).
  Node* new_child = right;
  for (int d = li - 1; d >= from; --d) {
    Inner* in = static_cast<Inner*>(p->node[d]);
    const uint32_t n = Get(in->count);
    const uint32_t slot = p->slot[d];
    if (n + 2 <= static_cast<uint32_t>(inner_capacity_)) {
      InsertChild(in, n, slot, sep, new_child);
      return;
    }
    // Full: the n + 1 children plus the new one, split in two.
    Inner* r = spare_inner[--*spare_inners];
    Key keys[kMaxInnerCapacity];
    Node* children[kMaxInnerCapacity + 1];
    for (uint32_t i = 0, j = 0; i < n; ++i) {
      if (i == slot) keys[j++] = sep;
      keys[j++] = Get(in->keys[i]);
    }
    if (slot == n) keys[n] = sep;
    for (uint32_t i = 0, j = 0; i <= n; ++i) {
      children[j++] = Get(in->children[i]);
      if (i == slot) children[j++] = new_child;
    }
    // n + 1 keys, n + 2 children; the left node keeps m children.
    const uint32_t total_children = n + 2;
    const uint32_t m = SplitPoint(total_children, slot + 1);
    for (uint32_t i = 0; i < m; ++i) Put(in->children[i], children[i]);
    for (uint32_t i = m; i < total_children - 1; ++i) Put(in->children[i], nullptr);
    for (uint32_t i = 0; i + 1 < m; ++i) Put(in->keys[i], keys[i]);
    Put(in->count, m - 1);
    for (uint32_t i = m; i < total_children; ++i) Put(r->children[i - m], children[i]);
    for (uint32_t i = m; i + 1 < total_children; ++i) Put(r->keys[i - m], keys[i]);
    Put(r->count, total_children - m - 1);
    sep = keys[m - 1];
    new_child = r;
  }
  // Every node up to the root split: a new root above the old one, which
  // is latched (a descent that loaded the old root pointer fails its check).
  CHECK_LT(p->depth, kMaxHeight) << "ordered index too high";
  Inner* root = spare_inner[--*spare_inners];
  Put(root->children[0], p->node[0]);
  Put(root->children[1], new_child);
  Put(root->keys[0], sep);
  Put(root->count, 1u);
  root_.store(root, std::memory_order_release);
}

Record* OrderedIndex::Erase(Key k) {
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    Path p;
    if (!Descend(k, &p)) continue;
    const int li = p.depth - 1;
    Leaf* leaf = static_cast<Leaf*>(p.node[li]);
    const uint32_t c =
        std::min<uint32_t>(leaf->count.load(std::memory_order_acquire), static_cast<uint32_t>(leaf_capacity_));
    const uint32_t pos = LowerBound(leaf, c, k);
    if (pos >= c || leaf->keys[pos].load(std::memory_order_acquire) != k) {
      if (Unchanged(leaf, p.version[li])) return nullptr;
      continue;
    }
    // The highest node that changes: the leaf, unless it empties; then the
    // nearest ancestor that keeps a child (its child on the path and every
    // node below are unlinked). If none does, the empty leaf stays.
    int top = li;
    if (c == 1) {
      int a = li - 1;
      while (a >= 0 && static_cast<Inner*>(p.node[a])->count.load(std::memory_order_acquire) == 0) --a;
      if (a >= 0) top = a;
    }
    if (!LatchPath(&p, top)) continue;
    Record* r = Get(leaf->values[pos]);
    RemoveEntry(leaf, c, pos);
    if (top < li) {
      RemoveChild(static_cast<Inner*>(p.node[top]), Get(p.node[top]->count), p.slot[top]);
      Put(leaf->unlinked, true);  // a hint must not insert into it
    }
    UnlatchPath(&p, top);
    for (int d = top + 1; d <= li; ++d) Retire(p.node[d]);
    return r;
  }
}

}  // namespace detdb
