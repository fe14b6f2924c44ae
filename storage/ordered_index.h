// OrderedIndex: a B+tree from Key to Record*, for tables whose access is
// ordered by nature (TPC-C's order lines of an order, the oldest new order
// of a district, a district's latest HISTORY row). Concurrent inserts and
// erases by different threads, lock-free lookups and range scans.
//
//   OrderedIndex ix;
//   ix.Insert(k, record);                       // nullptr: inserted
//   Record* r = ix.Find(k);
//   ix.Scan(lo, hi, /*reverse=*/false, [](Key k, Record* r) { ...; return true; });
//   Record* gone = ix.Erase(k);
//
// The index never dereferences a Record*: values are opaque to it.
//
// Structure. Leaves hold up to leaf_capacity sorted (key, value) entries;
// inner nodes up to inner_capacity children and one separator key fewer:
// child i holds the keys in [key[i-1], key[i]). A node that overflows
// splits in two. Where depends on where the new item goes: after the last
// one (ascending inserts: TPC-C's order ids), the node keeps its items and
// the new one starts the next node; in the upper half (a range appended to
// in the middle of a node, the node's later keys belonging to the next
// range), the node ends with the new item and the rest moves right; else in
// half. So ascending inserts, into one range or into many side by side,
// leave full nodes. Splits propagate up; the root splits into a new root. A leaf that an
// erase empties is unlinked from its parent, and so is every ancestor left
// without children (the leaf or inner node nearest the root that keeps a
// child stays); nodes are not merged otherwise (free-at-empty), and the
// tree never gets lower.
//
// Concurrency: optimistic lock coupling on node versions.
//  - Every node has a version (even while stable, odd while a writer is in
//    it) and an ElidedLatch that writers take. A writer latches a node,
//    checks that its version is still the one it read on the way down, makes
//    it odd, changes the node with release stores, and makes it even again
//    (version + 2) before unlatching.
//  - Readers (Find, Scan and the descents of writers) write nothing shared:
//    they read a node's version, then its fields with acquire loads, then
//    the version again; a changed version sends them back to the root.
//    Child pointers are checked against the parent's version after the
//    child's version has been read (lock coupling), so a reader that
//    arrives at a node knows the key range the node had at that moment.
//  - Writers latch only what they change: the leaf for an insert that fits
//    or an erase that leaves the leaf non-empty; for a split, the leaf and
//    every full ancestor up to the first one that is not full (or the
//    root); for an unlink, the path from the first ancestor that keeps a
//    child. Latches are taken top-down along a path whose versions are
//    checked, so every wait is for a current child of a latched node: no
//    deadlock. Node memory comes from the heap outside latched sections.
//  - Nodes unlinked by erases are retired, not freed: a reader may still
//    stand on one. TakeRetired()/FreeNodes() let the owner free them once no
//    reader can (epochs: storage/epoch.h, driven by Table and
//    PartitionStore), or FreeRetiredNow() at a quiescent point.
//  - Slots beyond a node's count hold no child pointer (they are cleared
//    when a node shrinks), so a torn read never reaches a node that was
//    unlinked before the reader started.
//  - Why not storage/version_latch.h: the node version is the same seqlock
//    idea, but a writer here must compare each latched node's version with
//    the one its descent saw before it makes any of them odd (LatchPath), so
//    that a failed attempt leaves no trace; and readers load each field with
//    acquire and recheck, instead of VersionLatch's fences (which
//    ThreadSanitizer does not model). VersionLatch has neither step.
//  - Elision (RTM): LatchPath takes one ElidedLatch per latched node, and
//    with RTM each further one nests in the first's transaction (flattened).
//    The hardware limits nesting (MAX_RTM_NEST_COUNT is 7 on Intel), so a
//    path of more than 7 latched nodes (a split that fills 7 levels of full
//    ancestors; an unlink up 7 levels) aborts each time and takes the real
//    latches: correct, but not elided. Inserts that fit and erases that
//    keep a leaf non-empty latch one node. The injected Speculation seam of
//    the policy tests does not nest, so they cover single-node paths only.
//
// Scans. A scan reads one leaf at a time, with the key range (fences) the
// leaf had when the reader reached it, and continues from the upper fence
// (or, in reverse, below the lower one) with a new descent. So every entry
// of [lo, hi] that is present throughout the scan is visited exactly once,
// in key order; entries inserted or erased meanwhile may or may not be. The
// database makes scans deterministic by locking: a txn scans only a range
// that a lock it holds covers (TxnContext::Scan), so no other txn changes
// the range while it runs; other threads may meanwhile split and unlink
// nodes around it.
//
// Thread-safety: Find, Scan, Insert and Erase may run concurrently from any
// threads (on any keys; an Insert and an Erase of the same key race in the
// caller's sense only: one of them wins). ForEach, size, FreeRetiredNow and
// the destructor REQUIRE that no other thread uses the index.
#ifndef DETDB_STORAGE_ORDERED_INDEX_H_
#define DETDB_STORAGE_ORDERED_INDEX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "common/types.h"
#include "storage/elided_latch.h"

namespace detdb {

struct Record;

class OrderedIndex {
  struct Node;
  struct Leaf;
  struct Inner;

 public:
  static constexpr int kMaxLeafCapacity = 32;
  static constexpr int kMaxInnerCapacity = 64;
  // Levels the index may reach (CHECKed): far more than 2^64 keys need.
  static constexpr int kMaxHeight = 24;

  struct Options {
    // Entries per leaf, in [2, kMaxLeafCapacity]; children per inner node,
    // in [3, kMaxInnerCapacity]. Small nodes are for tests (deep trees,
    // many splits and unlinks).
    int leaf_capacity = kMaxLeafCapacity;
    int inner_capacity = kMaxInnerCapacity;
  };

  OrderedIndex() : OrderedIndex(Options()) {}
  // REQUIRES: options within the bounds above (CHECKed).
  explicit OrderedIndex(const Options& options);
  ~OrderedIndex();
  OrderedIndex(const OrderedIndex&) = delete;
  OrderedIndex& operator=(const OrderedIndex&) = delete;

  // The value of k, or nullptr. Lock-free; writes nothing shared.
  Record* Find(Key k) const;

  // Inserts (k, value) if k is absent and returns nullptr; if k is present,
  // changes nothing and returns its value. REQUIRES: value != nullptr.
  Record* Insert(Key k, Record* value) { return InsertCore(k, &value, nullptr, nullptr, nullptr); }

  // Where the last FindOrInsert of a series left off: the leaf it found or
  // inserted its key in. The next FindOrInsert of a key in that leaf's range
  // (New-Order's order lines, one after another) checks the leaf, by its
  // version and stored fences, instead of descending from the root.
  // REQUIRES: a hint is used only while its user holds no quiescent point
  // in between (the leaf may be unlinked meanwhile, never freed).
  class Hint {
   private:
    friend class OrderedIndex;
    Leaf* leaf = nullptr;
  };

  // k's value: the present one, or one that make() returns, inserted. make
  // runs at most once, outside any latch, when k is found absent (one
  // descent for a lookup and an insert). *made: what make() returned, or
  // nullptr if it did not run; if it is not the result (another thread
  // inserted k meanwhile), the caller disposes of it. hint may be null.
  template <typename Make>
  Record* FindOrInsert(Key k, Make&& make, Record** made, Hint* hint = nullptr) {
    Record* v = nullptr;
    Record* present = InsertCore(
        k, &v, [](void* m) -> Record* { return (*static_cast<std::remove_reference_t<Make>*>(m))(); }, &make,
        hint);
    *made = v;
    return present != nullptr ? present : v;
  }

  // Removes k and returns its value; nullptr if absent.
  Record* Erase(Key k);

  // Calls visit(Key, Record*) for the entries of [lo, hi] in increasing key
  // order (decreasing if reverse) until it returns false. Lock-free; visit
  // runs outside any latch and may do anything but free the index. See
  // "Scans" above for what it sees of concurrent writes.
  template <typename F>
  void Scan(Key lo, Key hi, bool reverse, F&& visit) const {
    if (lo > hi) return;
    Key cursor = reverse ? hi : lo;
    Entry buf[kMaxLeafCapacity];
    for (;;) {
      int n = 0;
      bool more = false;
      Key next = 0;
      ReadLeafRange(lo, hi, cursor, reverse, buf, &n, &more, &next);
      for (int i = 0; i < n; ++i)
        if (!visit(buf[i].key, buf[i].value)) return;
      if (!more) return;
      cursor = next;
    }
  }

  // Calls f(Key, Record*) for every entry in increasing key order; allocates
  // nothing (a forked checkpoint child may call it).
  // REQUIRES: no concurrent writer.
  template <typename F>
  void ForEach(F&& f) const {
    ForEachIn(root_.load(std::memory_order_acquire), f);
  }

  // Entries. REQUIRES: no concurrent writer.
  uint64_t size() const;

  // Levels (1: the root is a leaf). For tests and statistics.
  int height() const;
  // Live nodes (retired ones not counted).
  uint64_t leaves() const { return static_cast<uint64_t>(leaves_.load(std::memory_order_relaxed)); }
  uint64_t inner_nodes() const { return static_cast<uint64_t>(inners_.load(std::memory_order_relaxed)); }

  // Checks the structure: in every node the keys increase and lie within
  // the node's fences, inner nodes have a child per slot up to their count
  // and none past it, every leaf is at the same depth, no leaf in the tree
  // is marked unlinked, every leaf's stored fences (for hints) lie within
  // its true ones, and the node counts agree. OK, or Internal naming the first problem. For tests.
  // REQUIRES: no concurrent writer.
  absl::Status CheckStructure() const;

  // The nodes unlinked since the last call; the caller frees them with
  // FreeNodes once no reader can stand on them. Thread-safe.
  std::vector<void*> TakeRetired();
  // Frees nodes returned by TakeRetired.
  static void FreeNodes(const std::vector<void*>& nodes);
  // Frees every retired node; returns how many.
  // REQUIRES: no other thread uses the index.
  size_t FreeRetiredNow();
  // Heap bytes of nodes returned by TakeRetired.
  static size_t NodeBytes(const std::vector<void*>& nodes);

  // Empties the index: every node is retired (TakeRetired returns them, to
  // be freed once no reader can stand on one) and a fresh empty root leaf
  // takes their place. A truncate of an ordered table calls it.
  // REQUIRES: no other thread uses the index.
  void RetireAll();

  // Nodes of every OrderedIndex in the process that are allocated and not
  // yet freed: live, retired, or taken by TakeRetired and not yet given to
  // FreeNodes. Thread-safe. For tests (leak checks) and statistics.
  static int64_t allocated_nodes() { return allocated_nodes_.load(std::memory_order_relaxed); }

  // Heap bytes of the live nodes (retired ones not counted).
  size_t memory_bytes() const;
  // Nodes unlinked and not yet taken by TakeRetired.
  size_t retired_nodes() const;

 private:
  struct Path;
  struct Entry {
    Key key;
    Record* value;
  };

  // Insert's body: inserts *value, made by make(ctx) when k is found absent
  // if it is null, and returns nullptr; or returns k's present value.
  // With a hint, tries its leaf first (InsertAtHint) and leaves it at the
  // leaf k is in.
  Record* InsertCore(Key k, Record** value, Record* (*make)(void*), void* ctx, Hint* hint);
  // InsertCore at the hint's leaf without a descent; false if k is not
  // within the leaf's stored fences, the leaf was unlinked, is full or
  // changed meanwhile (the caller descends).
  bool InsertAtHint(Key k, Record** value, Record* (*make)(void*), void* ctx, Leaf* leaf, Record** result);

  // Reads the entries of cursor's leaf that lie in [lo, hi] on the far side
  // of cursor (>= cursor, or <= cursor in reverse) into out, in scan order,
  // retrying until it has a consistent copy; *more and *next say whether and
  // where the scan continues.
  void ReadLeafRange(Key lo, Key hi, Key cursor, bool reverse, Entry* out, int* n, bool* more, Key* next) const;

  // Optimistic descent to k's leaf: fills path (nodes, versions, child
  // slots, the leaf's fences). False if something changed on the way (the
  // caller starts again).
  bool Descend(Key k, Path* path) const;
  // Latches path nodes [from, depth) top-down, each checked against its
  // recorded version; false (having unlatched them) if one changed.
  bool LatchPath(Path* path, int from) const;
  // Makes the nodes [from, depth) of path stable again and unlatches them,
  // bottom-up.
  void UnlatchPath(Path* path, int from) const;

  // Splits the full leaf/inner nodes of path below `from` while inserting
  // (k, value); path [from, depth) is latched. Uses spare nodes.
  void SplitAndInsert(Path* path, int from, Key k, Record* value, Leaf** spare_leaf, Inner** spare_inner,
                      int* spare_inners);

  Leaf* NewLeaf();
  Inner* NewInner();
  static void FreeNode(Node* n);
  void Retire(Node* n);

  template <typename F>
  static void ForEachIn(const Node* n, F& f);
  static uint64_t CountIn(const Node* n);
  struct Fences;
  absl::Status CheckNode(const Node* n, const Fences& f, int depth, int* leaf_depth, uint64_t* leaves,
                         uint64_t* inners) const;

  const int leaf_capacity_;
  const int inner_capacity_;
  std::atomic<Node*> root_;
  std::atomic<int64_t> leaves_{0}, inners_{0};  // live nodes
  mutable std::mutex retired_mu_;
  std::vector<Node*> retired_;  // guarded by retired_mu_
  static std::atomic<int64_t> allocated_nodes_;  // see allocated_nodes()
};

// ---- Node layout (here so that the Scan and ForEach templates inline) ----

struct OrderedIndex::Node {
  explicit Node(bool is_leaf) : leaf(is_leaf) {}
  // Even while stable; odd while a latched writer changes the node.
  std::atomic<uint64_t> version{0};
  ElidedLatch latch;
  const bool leaf;
  // Leaf: entries; inner node: separator keys (children: count + 1).
  std::atomic<uint32_t> count{0};
};

struct alignas(64) OrderedIndex::Leaf : Node {
  Leaf() : Node(true) {}
  // The leaf's key range as it knows it, for hints: [low, high), a bound
  // absent if its has_ flag is clear. Set when the leaf is made and when it
  // splits; an unlink of a neighbour can widen the true range without
  // telling (the stored one is then narrower: hints only miss more).
  std::atomic<Key> low{0}, high{0};
  std::atomic<bool> has_low{false}, has_high{false};
  std::atomic<bool> unlinked{false};  // set when an erase unlinks it
  std::atomic<Key> keys[kMaxLeafCapacity];
  std::atomic<Record*> values[kMaxLeafCapacity];
};

struct alignas(64) OrderedIndex::Inner : Node {
  Inner() : Node(false) {}
  std::atomic<Key> keys[kMaxInnerCapacity - 1];
  std::atomic<Node*> children[kMaxInnerCapacity];
};

template <typename F>
void OrderedIndex::ForEachIn(const Node* n, F& f) {
  const uint32_t c = n->count.load(std::memory_order_acquire);
  if (n->leaf) {
    const Leaf* l = static_cast<const Leaf*>(n);
    for (uint32_t i = 0; i < c; ++i)
      f(l->keys[i].load(std::memory_order_relaxed), l->values[i].load(std::memory_order_relaxed));
    return;
  }
  const Inner* in = static_cast<const Inner*>(n);
  for (uint32_t i = 0; i <= c; ++i) ForEachIn(in->children[i].load(std::memory_order_acquire), f);
}

}  // namespace detdb

#endif  // DETDB_STORAGE_ORDERED_INDEX_H_
