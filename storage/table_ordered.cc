// Table's paths for ordered tables (TableOptions::ordered: the records are
// indexed by an OrderedIndex instead of the hash index), and the destructor,
// which frees the tree nodes of batches still sealed.
#include <cstring>
#include <new>
#include <vector>

#include "storage/table.h"

namespace detdb {

Table::~Table() {
  // Sealed records live in the arena's slabs and sealed indexes in
  // unique_ptrs; sealed tree nodes are plain heap blocks (still sealed when
  // a participant was online at the last ReclaimSafe, or frees were held).
  for (const Sealed& b : sealed_) OrderedIndex::FreeNodes(b.nodes);
}

Record* Table::InsertOrdered(Key k, OrderedIndex::Hint* hint) {
  // One descent: an update finds its record; a new key gets a record made
  // when the descent finds it absent (outside the tree's latches).
  Record* made;
  Record* r = tree_->FindOrInsert(
      k,
      [&] {
        Record* fresh = static_cast<Record*>(arena_.Allocate());
        new (fresh) Record{k, nullptr};
        std::memset(fresh->value(), 0, options_.value_size);
        return fresh;
      },
      &made, hint);
  if (made != nullptr && made != r) arena_.Release(made);  // inserted by another thread meanwhile
  return r;
}

bool Table::EraseOrdered(Key k) {
  Record* r = tree_->Erase(k);
  if (r == nullptr) return false;
  arena_.Retire(r);  // readers may stand on it, as on an unlinked chain record
  return true;
}

uint64_t Table::ClearOrdered() {
  std::vector<void*> records;
  ForEachRecord([&records](const Record* r) { records.push_back(const_cast<Record*>(r)); });
  // The whole tree is retired with the records and a fresh root leaf takes
  // its place: nothing reaches them after this (no reader stands in the
  // table under the caller's X lock), and reclamation frees both, as it does
  // erased records and unlinked nodes, once every participant passed a
  // quiescent point (SealRetired takes the nodes).
  tree_->RetireAll();
  arena_.RetireMany(records);
  return records.size();
}

}  // namespace detdb
