// BenchBTree: the index of the seed-001 latch benchmark (bench/latch_bench.h):
// a B+tree of uint64 keys and values with nodes of up to 31 keys (the
// paper's branching factor b = 31), lookups and inserts only, guarded as a
// whole by one latch that the benchmark chooses (the paper's setting: a
// simple tree, one latch, and the question which latch scales).
//
//   BenchBTree t(max_nodes);
//   t.BulkLoad(n, [](uint64_t i) { return 2 * i; });   // keys 0, 2, 4, ...
//   t.Insert(7, v);  uint64_t v2; t.Lookup(7, &v2);
//
// Every field a lookup reads is an atomic (relaxed; child pointers acquire/
// release), so a lookup may run while an insert changes the tree under
// optimistic validation (storage/version_latch.h): it then may see a torn
// state and return a wrong answer, but it stays within valid memory and
// ends (nodes are never freed, the descent is bounded), and the caller
// throws its answer away when validation fails. Nodes come from a pool
// sized at construction (an insert allocates no heap memory, so an elided
// insert does not abort in malloc).
//
// Thread-safety: Insert REQUIRES exclusion from every other Insert and from
// lookups whose answer is used without validation; Lookup may run
// concurrently with other lookups always. BulkLoad and Check REQUIRE no
// concurrent use.
#ifndef DETDB_BENCH_BENCH_BTREE_H_
#define DETDB_BENCH_BENCH_BTREE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace detdb {

class BenchBTree {
 public:
  static constexpr uint32_t kMaxKeys = 31;
  // Keys per node after BulkLoad (about the 69% a tree built by random
  // inserts settles at).
  static constexpr uint32_t kLoadKeys = 21;
  static constexpr int kMaxDepth = 24;

  // Nodes an index of `keys` keys may need after `inserts` more inserts.
  static size_t NodesFor(uint64_t keys, uint64_t inserts);

  explicit BenchBTree(size_t max_nodes);
  BenchBTree(const BenchBTree&) = delete;
  BenchBTree& operator=(const BenchBTree&) = delete;

  // Replaces the contents by keys key(0) < key(1) < ... < key(n-1), each
  // with value ValueOf(key). REQUIRES: n > 0, key increasing.
  void BulkLoad(uint64_t n, const std::function<uint64_t(uint64_t)>& key);

  // The value of `key` if present. Safe beside Insert only under validation.
  bool Lookup(uint64_t key, uint64_t* value) const;
  // Adds key with ValueOf(key); false if it was there (nothing written).
  // CHECK-fails when the node pool is exhausted.
  bool Insert(uint64_t key);

  // The value every key maps to (lookups check it).
  static uint64_t ValueOf(uint64_t key) { return key * 0x9E3779B97F4A7C15ull + 1; }

  uint64_t size() const { return size_; }
  size_t nodes_used() const { return used_; }
  size_t bytes() const { return capacity_ * sizeof(Node); }
  // Empty if the tree is a valid B+tree (sorted, separators bound their
  // subtrees, every leaf at one depth, counts in range, every value right);
  // else the first violation.
  std::string Check() const;

 private:
  // A node is 8 cache lines: a count, 31 keys, 32 slots (leaf: values;
  // inner: children, as integers).
  struct alignas(64) Node {
    std::atomic<uint32_t> count{0};
    bool leaf = true;  // set before the node is published, never changed
    std::atomic<uint64_t> keys[kMaxKeys] = {};
    std::atomic<uint64_t> slots[kMaxKeys + 1] = {};
  };

  static Node* Child(const Node* n, uint32_t i) {
    return reinterpret_cast<Node*>(n->slots[i].load(std::memory_order_acquire));
  }
  static void SetChild(Node* n, uint32_t i, const Node* c) {
    n->slots[i].store(reinterpret_cast<uint64_t>(c), std::memory_order_release);
  }
  Node* NewNode(bool leaf);
  // Splits the full child i of parent (not full) into two.
  void SplitChild(Node* parent, uint32_t i);
  std::string CheckNode(const Node* n, int depth, int* leaf_depth, uint64_t lo, uint64_t hi, bool has_lo,
                        bool has_hi, uint64_t* keys) const;

  const size_t capacity_;
  std::unique_ptr<Node[]> pool_;
  // Every lookup reads root_, every insert writes used_ or size_: they sit
  // on lines of their own, or each insert would abort every elided lookup
  // running beside it (a false conflict; it did, 0.1 aborts per op at 5%
  // inserts with 2 threads).
  alignas(64) size_t used_ = 0;  // writers only
  uint64_t size_ = 0;            // writers only
  alignas(64) std::atomic<Node*> root_{nullptr};
};

}  // namespace detdb

#endif  // DETDB_BENCH_BENCH_BTREE_H_
