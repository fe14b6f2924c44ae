#include "scheduler/peer_batch_window.h"

#include <algorithm>

namespace detdb {

PeerBatchWindow::PeerBatchWindow(uint32_t num_sequencers, uint64_t first_epoch, uint64_t window_epochs)
    : window_(std::max<uint64_t>(1, window_epochs)), seqs_(num_sequencers) {
  for (Seq& s : seqs_) s.next = first_epoch;
}

PeerBatchWindow::Verdict PeerBatchWindow::Classify(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch) const {
  const Seq& s = seqs_[sequencer];
  if (epoch < s.next || s.above.contains(epoch)) return Verdict::kDuplicate;
  // No overflow: epochs are below 2^40 (checked by the caller), so is merged_epoch.
  if (epoch >= merged_epoch + window_) return Verdict::kTooFarAhead;
  return Verdict::kAccept;
}

PeerBatchWindow::Verdict PeerBatchWindow::Record(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch) {
  const Verdict v = Classify(sequencer, epoch, merged_epoch);
  if (v != Verdict::kAccept) return v;
  Seq& s = seqs_[sequencer];
  if (epoch != s.next) {
    s.above.insert(epoch);
    return v;
  }
  ++s.next;
  while (!s.above.empty() && *s.above.begin() == s.next) {
    s.above.erase(s.above.begin());
    ++s.next;
  }
  return v;
}

size_t PeerBatchWindow::recorded_above() const {
  size_t n = 0;
  for (const Seq& s : seqs_) n += s.above.size();
  return n;
}

const char* PeerBatchWindow::Name(Verdict v) {
  switch (v) {
    case Verdict::kAccept:
      return "accepted";
    case Verdict::kDuplicate:
      return "duplicate";
    case Verdict::kTooFarAhead:
      return "too far ahead of the merged epoch";
  }
  return "?";
}

}  // namespace detdb
