// OrderedIndex::CheckStructure: the structural invariants, for tests
// (ordered_index.h).
#include "storage/ordered_index.h"

#include "absl/strings/str_cat.h"

namespace detdb {

struct OrderedIndex::Fences {
  bool has_lower = false, has_upper = false;
  Key lower = 0, upper = 0;
  bool Holds(Key k) const { return (!has_lower || k >= lower) && (!has_upper || k < upper); }
};

absl::Status OrderedIndex::CheckNode(const Node* n, const Fences& f, int depth, int* leaf_depth, uint64_t* leaves,
                                     uint64_t* inners) const {
  const uint32_t c = n->count.load(std::memory_order_acquire);
  if (n->version.load(std::memory_order_acquire) & 1)
    return absl::InternalError(absl::StrCat("node at depth ", depth, " has an odd version"));
  if (n->leaf) {
    ++*leaves;
    if (*leaf_depth < 0) *leaf_depth = depth;
    if (*leaf_depth != depth)
      return absl::InternalError(absl::StrCat("leaves at depths ", *leaf_depth, " and ", depth));
    if (c > static_cast<uint32_t>(leaf_capacity_)) return absl::InternalError(absl::StrCat("leaf of ", c, " entries"));
    const Leaf* l = static_cast<const Leaf*>(n);
    if (l->unlinked.load(std::memory_order_relaxed))
      return absl::InternalError(absl::StrCat("leaf at depth ", depth, " in the tree is marked unlinked"));
    // The range a hint trusts (the stored fences) lies within the true one.
    const bool has_low = l->has_low.load(std::memory_order_relaxed);
    const bool has_high = l->has_high.load(std::memory_order_relaxed);
    const Key low = l->low.load(std::memory_order_relaxed), high = l->high.load(std::memory_order_relaxed);
    if (f.has_lower && (!has_low || low < f.lower))
      return absl::InternalError(absl::StrCat("leaf's stored lower fence ", has_low ? low : 0, " (set: ", has_low,
                                              ") below its true one ", f.lower));
    if (f.has_upper && (!has_high || high > f.upper))
      return absl::InternalError(absl::StrCat("leaf's stored upper fence ", has_high ? high : 0, " (set: ", has_high,
                                              ") above its true one ", f.upper));
    for (uint32_t i = 0; i < c; ++i) {
      const Key k = l->keys[i].load(std::memory_order_relaxed);
      if (!f.Holds(k)) return absl::InternalError(absl::StrCat("leaf key ", k, " outside its fences"));
      if (i > 0 && k <= l->keys[i - 1].load(std::memory_order_relaxed))
        return absl::InternalError(absl::StrCat("leaf keys out of order at ", k));
      if (l->values[i].load(std::memory_order_relaxed) == nullptr)
        return absl::InternalError(absl::StrCat("leaf key ", k, " without a value"));
    }
    return absl::OkStatus();
  }
  ++*inners;
  if (depth + 1 >= kMaxHeight) return absl::InternalError("too deep");
  if (c + 1 > static_cast<uint32_t>(inner_capacity_))
    return absl::InternalError(absl::StrCat("inner node of ", c + 1, " children"));
  const Inner* in = static_cast<const Inner*>(n);
  for (uint32_t i = 0; i < static_cast<uint32_t>(inner_capacity_); ++i) {
    const Node* child = in->children[i].load(std::memory_order_relaxed);
    if ((child != nullptr) != (i <= c))
      return absl::InternalError(absl::StrCat("inner node of ", c + 1, " children has slot ", i,
                                              child == nullptr ? " empty" : " set"));
  }
  for (uint32_t i = 0; i < c; ++i) {
    const Key k = in->keys[i].load(std::memory_order_relaxed);
    if (!f.Holds(k)) return absl::InternalError(absl::StrCat("separator ", k, " outside its fences"));
    if (i > 0 && k <= in->keys[i - 1].load(std::memory_order_relaxed))
      return absl::InternalError(absl::StrCat("separators out of order at ", k));
  }
  for (uint32_t i = 0; i <= c; ++i) {
    Fences cf = f;
    if (i > 0) {
      cf.has_lower = true;
      cf.lower = in->keys[i - 1].load(std::memory_order_relaxed);
    }
    if (i < c) {
      cf.has_upper = true;
      cf.upper = in->keys[i].load(std::memory_order_relaxed);
    }
    absl::Status s = CheckNode(in->children[i].load(std::memory_order_relaxed), cf, depth + 1, leaf_depth, leaves,
                               inners);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status OrderedIndex::CheckStructure() const {
  int leaf_depth = -1;
  uint64_t leaves = 0, inners = 0;
  absl::Status s = CheckNode(root_.load(std::memory_order_acquire), Fences(), 0, &leaf_depth, &leaves, &inners);
  if (!s.ok()) return s;
  if (leaves != this->leaves() || inners != inner_nodes())
    return absl::InternalError(absl::StrCat(leaves, " leaves and ", inners, " inner nodes in the tree, counted ",
                                            this->leaves(), " and ", inner_nodes()));
  return absl::OkStatus();
}

}  // namespace detdb
