#include "scheduler/staged_states.h"

#include <algorithm>
#include <new>

#include "glog/logging.h"

namespace detdb {

struct StagedStates::Group {
  explicit Group(SlabPool* pool) : mem(pool) {}
  SlabGroup mem;
  uint32_t to_make = 0;  // New calls still to come
  uint32_t made = 0;
  uint32_t live = 0;     // made, not released
  State** slots = nullptr;  // by the order made; nullptr once released (in the group's memory)
  Group* prev = nullptr;
  Group* next = nullptr;
};

// Lives in its group's slab, its arena's first chunk right after it.
struct StagedStates::State {
  State(SlabPool* pool, void* first, size_t first_bytes, Group* g)
      : arena(pool, first, first_bytes), group(g), st(&arena) {
    st.alloc_tag = this;
  }
  TxnArena arena;
  Group* const group;
  uint32_t keys = 0;
  uint32_t type = 0;  // modulo kTypes
  uint32_t slot = 0;  // in group->slots
  PartitionTxn st;
};

namespace {
template <typename T>
void Link(T** head, T* x) {
  x->prev = nullptr;
  x->next = *head;
  if (*head != nullptr) (*head)->prev = x;
  *head = x;
}
template <typename T>
void Unlink(T** head, T* x) {
  if (x->prev != nullptr) x->prev->next = x->next;
  else *head = x->next;
  if (x->next != nullptr) x->next->prev = x->prev;
}
constexpr size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

StagedStates::StagedStates(size_t slab_bytes) : pool_(slab_bytes, kMaxFreeSlabs) {
  CHECK_GE(pool_.large_threshold() / 64 * 64, RoundUp(sizeof(State), 64) + 256) << "slabs too small for a state";
  for (double& b : bytes_per_key_) b = 96;
}

StagedStates::~StagedStates() {
  while (groups_head_ != nullptr) {
    Group* g = groups_head_;
    for (uint32_t i = 0; i < g->made; ++i)
      if (g->slots[i] != nullptr) Destroy(g->slots[i]);  // drops its owner
    FreeGroup(g);
  }
}

void StagedStates::OpenGroup(uint32_t txns) {
  CHECK_GT(txns, 0u);
  CHECK(open_ == nullptr || open_->to_make == 0) << "a group opened before all of the last one was made";
  Group* g = groups_.New(&pool_);
  g->to_make = txns;
  g->slots = static_cast<State**>(g->mem.Allocate(sizeof(State*) * txns, alignof(State*)));
  Link(&groups_head_, g);
  ++groups_open_;
  open_ = g;
}

PartitionTxn* StagedStates::New(uint32_t keys, uint32_t type) {
  Group* g = open_;
  CHECK(g != nullptr && g->to_make > 0) << "StagedStates::New without an open group";
  // The first chunk: what txns used per key so far, with room to spare, on
  // whole cache lines (two workers never write one line), within a slab's
  // share for small blocks.
  const size_t head = RoundUp(sizeof(State), 64);
  const size_t want = RoundUp(static_cast<size_t>(256 + 1.5 * bytes_per_key_[type % kTypes] * keys), 64);
  const size_t first = std::min(want, pool_.large_threshold() / 64 * 64 - head);
  void* mem = g->mem.Allocate(head + first, 64);
  State* s = new (mem) State(&pool_, static_cast<char*>(mem) + head, first, g);
  s->keys = keys;
  s->type = type % kTypes;
  s->slot = g->made;
  g->slots[g->made++] = s;
  // The next state will most likely follow this one's chunk: start loading
  // its lines (fresh memory) while this txn locks.
  const char* next = static_cast<const char*>(mem) + head + first;
  for (size_t off = 0; off < head; off += 64) __builtin_prefetch(next + off, 1);
  --g->to_make;
  ++g->live;
  ++states_live_;
  return &s->st;
}

void StagedStates::Release(PartitionTxn* st) {
  State* s = static_cast<State*>(st->alloc_tag);
  DCHECK(s != nullptr && &s->st == st) << "not a staged state";
  Group* g = s->group;
  if (s->keys > 0) {
    double& b = bytes_per_key_[s->type];
    b += (static_cast<double>(s->arena.used()) / s->keys - b) / 16;
  }
  Destroy(s);
  if (g->live == 0 && g->to_make == 0) FreeGroup(g);
}

void StagedStates::Destroy(State* s) {
  Group* g = s->group;
  s->st.~PartitionTxn();
  SlabChain slabs = s->arena.TakeSlabs();
  for (SlabHeader* h = slabs.head; h != nullptr; h = h->next) ++overflow_slabs_;
  g->mem.Adopt(&slabs);
  g->slots[s->slot] = nullptr;
  s->arena.~TxnArena();
  --states_live_;
  --g->live;
}

void StagedStates::FreeGroup(Group* g) {
  Unlink(&groups_head_, g);
  if (open_ == g) open_ = nullptr;
  g->mem.Release();  // every state of it, in one step
  groups_.Delete(g);
  --groups_open_;
}

StagedStates::Stats StagedStates::stats() const {
  return {.groups_open = groups_open_,
          .states_live = states_live_,
          .overflow_slabs = overflow_slabs_,
          .pool = pool_.stats()};
}

}  // namespace detdb
