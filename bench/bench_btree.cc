#include "bench/bench_btree.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace detdb {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// Keys of n in [0, count) that are <= key (inner: the child to descend to).
template <typename NodeT>
uint32_t UpperBound(const NodeT* n, uint32_t count, uint64_t key) {
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (n->keys[mid].load(kRelaxed) <= key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Keys of n in [0, count) that are < key (leaf: where key is or goes).
template <typename NodeT>
uint32_t LowerBound(const NodeT* n, uint32_t count, uint64_t key) {
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (n->keys[mid].load(kRelaxed) < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

size_t BenchBTree::NodesFor(uint64_t keys, uint64_t inserts) {
  // A bulk-loaded leaf splits after 10 more keys, a split one after 15.
  const uint64_t leaves = 2 * ((keys + kLoadKeys - 1) / kLoadKeys) + inserts / 15 + 2;
  return static_cast<size_t>(leaves + leaves / 14 + 64);
}

BenchBTree::BenchBTree(size_t max_nodes) : capacity_(max_nodes), pool_(std::make_unique<Node[]>(max_nodes)) {
  CHECK_GT(max_nodes, 0u);
  root_.store(NewNode(true), std::memory_order_release);
}

BenchBTree::Node* BenchBTree::NewNode(bool leaf) {
  CHECK_LT(used_, capacity_) << "BenchBTree: node pool exhausted";
  Node* n = &pool_[used_++];
  n->count.store(0, kRelaxed);
  n->leaf = leaf;
  return n;
}

void BenchBTree::BulkLoad(uint64_t n, const std::function<uint64_t(uint64_t)>& key) {
  CHECK_GT(n, 0u);
  used_ = 0;
  size_ = n;
  // The leaves, kLoadKeys keys each (the last one takes the rest).
  std::vector<Node*> level;
  std::vector<uint64_t> firsts;  // the smallest key under each node of `level`
  for (uint64_t i = 0; i < n;) {
    Node* leaf = NewNode(true);
    const uint64_t take = n - i <= kMaxKeys ? n - i : kLoadKeys;  // the last leaf takes the rest
    firsts.push_back(key(i));
    for (uint64_t j = 0; j < take; ++j, ++i) {
      const uint64_t k = key(i);
      leaf->keys[j].store(k, kRelaxed);
      leaf->slots[j].store(ValueOf(k), kRelaxed);
    }
    leaf->count.store(static_cast<uint32_t>(take), kRelaxed);
    level.push_back(leaf);
  }
  // Inner levels: kLoadKeys + 1 children each, until one node is left.
  while (level.size() > 1) {
    std::vector<Node*> up;
    std::vector<uint64_t> up_firsts;
    for (size_t i = 0; i < level.size();) {
      Node* inner = NewNode(false);
      const size_t left = level.size() - i;
      // The last node takes the rest (at least 11 children: no inner node
      // without keys).
      const size_t take = left <= kMaxKeys + 1 ? left : kLoadKeys + 1;
      up_firsts.push_back(firsts[i]);
      for (size_t j = 0; j < take; ++j, ++i) {
        if (j > 0) inner->keys[j - 1].store(firsts[i], kRelaxed);
        SetChild(inner, static_cast<uint32_t>(j), level[i]);
      }
      inner->count.store(static_cast<uint32_t>(take - 1), kRelaxed);
      up.push_back(inner);
    }
    level.swap(up);
    firsts.swap(up_firsts);
  }
  root_.store(level[0], std::memory_order_release);
}

bool BenchBTree::Lookup(uint64_t key, uint64_t* value) const {
  const Node* n = root_.load(std::memory_order_acquire);
  for (int depth = 0; depth < kMaxDepth && n != nullptr; ++depth) {
    uint32_t count = n->count.load(kRelaxed);
    if (count > kMaxKeys) count = kMaxKeys;  // torn (only under validation)
    if (n->leaf) {
      const uint32_t pos = LowerBound(n, count, key);
      if (pos == count || n->keys[pos].load(kRelaxed) != key) return false;
      *value = n->slots[pos].load(kRelaxed);
      return true;
    }
    n = Child(n, UpperBound(n, count, key));
  }
  return false;  // only a torn descent gets here
}

void BenchBTree::SplitChild(Node* parent, uint32_t i) {
  Node* c = Child(parent, i);
  const uint32_t count = c->count.load(kRelaxed);
  DCHECK_EQ(count, kMaxKeys);
  Node* right = NewNode(c->leaf);
  const uint32_t half = kMaxKeys / 2;  // 15
  uint64_t separator;
  if (c->leaf) {
    // Left keeps 16 keys, right takes 15; the separator is right's first.
    for (uint32_t j = half + 1; j < count; ++j) {
      right->keys[j - half - 1].store(c->keys[j].load(kRelaxed), kRelaxed);
      right->slots[j - half - 1].store(c->slots[j].load(kRelaxed), kRelaxed);
    }
    right->count.store(count - half - 1, kRelaxed);
    c->count.store(half + 1, kRelaxed);
    separator = right->keys[0].load(kRelaxed);
  } else {
    // Left keeps 15 keys (16 children), key 15 moves up, right takes 15.
    for (uint32_t j = half + 1; j < count; ++j) right->keys[j - half - 1].store(c->keys[j].load(kRelaxed), kRelaxed);
    for (uint32_t j = half + 1; j <= count; ++j) SetChild(right, j - half - 1, Child(c, j));
    right->count.store(count - half - 1, kRelaxed);
    separator = c->keys[half].load(kRelaxed);
    c->count.store(half, kRelaxed);
  }
  // Make room in the parent: key i and child i + 1.
  const uint32_t pcount = parent->count.load(kRelaxed);
  for (uint32_t j = pcount; j > i; --j) {
    parent->keys[j].store(parent->keys[j - 1].load(kRelaxed), kRelaxed);
    SetChild(parent, j + 1, Child(parent, j));
  }
  parent->keys[i].store(separator, kRelaxed);
  SetChild(parent, i + 1, right);
  parent->count.store(pcount + 1, kRelaxed);
}

bool BenchBTree::Insert(uint64_t key) {
  Node* n = root_.load(kRelaxed);
  if (n->count.load(kRelaxed) == kMaxKeys) {
    // Split the root on the way down: the tree grows by one level.
    Node* root = NewNode(false);
    SetChild(root, 0, n);
    SplitChild(root, 0);
    root_.store(root, std::memory_order_release);
    n = root;
  }
  // Full nodes on the path are split before the descent enters them, so a
  // split always has room in its parent.
  while (!n->leaf) {
    uint32_t i = UpperBound(n, n->count.load(kRelaxed), key);
    if (Child(n, i)->count.load(kRelaxed) == kMaxKeys) {
      SplitChild(n, i);
      if (key >= n->keys[i].load(kRelaxed)) ++i;
    }
    n = Child(n, i);
  }
  const uint32_t count = n->count.load(kRelaxed);
  const uint32_t pos = LowerBound(n, count, key);
  if (pos < count && n->keys[pos].load(kRelaxed) == key) return false;
  for (uint32_t j = count; j > pos; --j) {
    n->keys[j].store(n->keys[j - 1].load(kRelaxed), kRelaxed);
    n->slots[j].store(n->slots[j - 1].load(kRelaxed), kRelaxed);
  }
  n->keys[pos].store(key, kRelaxed);
  n->slots[pos].store(ValueOf(key), kRelaxed);
  n->count.store(count + 1, kRelaxed);
  ++size_;
  return true;
}

std::string BenchBTree::CheckNode(const Node* n, int depth, int* leaf_depth, uint64_t lo, uint64_t hi, bool has_lo,
                                  bool has_hi, uint64_t* keys) const {
  const uint32_t count = n->count.load(kRelaxed);
  if (count > kMaxKeys) return absl::StrCat("node with ", count, " keys");
  if (depth > kMaxDepth) return "too deep";
  for (uint32_t j = 0; j < count; ++j) {
    const uint64_t k = n->keys[j].load(kRelaxed);
    if (j > 0 && k <= n->keys[j - 1].load(kRelaxed)) return absl::StrCat("unsorted keys at depth ", depth);
    if ((has_lo && k < lo) || (has_hi && k >= hi)) return absl::StrCat("key ", k, " outside its separators");
  }
  if (n->leaf) {
    if (*leaf_depth < 0) *leaf_depth = depth;
    if (*leaf_depth != depth) return "leaves at different depths";
    for (uint32_t j = 0; j < count; ++j) {
      const uint64_t k = n->keys[j].load(kRelaxed);
      if (n->slots[j].load(kRelaxed) != ValueOf(k)) return absl::StrCat("wrong value of key ", k);
    }
    *keys += count;
    return "";
  }
  if (count == 0) return "inner node without keys";
  for (uint32_t j = 0; j <= count; ++j) {
    const Node* c = Child(n, j);
    if (c == nullptr) return "missing child";
    const bool c_has_lo = j > 0 || has_lo, c_has_hi = j < count || has_hi;
    const uint64_t c_lo = j > 0 ? n->keys[j - 1].load(kRelaxed) : lo;
    const uint64_t c_hi = j < count ? n->keys[j].load(kRelaxed) : hi;
    std::string e = CheckNode(c, depth + 1, leaf_depth, c_lo, c_hi, c_has_lo, c_has_hi, keys);
    if (!e.empty()) return e;
  }
  return "";
}

std::string BenchBTree::Check() const {
  int leaf_depth = -1;
  uint64_t keys = 0;
  std::string e = CheckNode(root_.load(std::memory_order_acquire), 0, &leaf_depth, 0, 0, false, false, &keys);
  if (!e.empty()) return e;
  if (keys != size_) return absl::StrCat(keys, " keys in the leaves, ", size_, " inserted");
  return "";
}

}  // namespace detdb
