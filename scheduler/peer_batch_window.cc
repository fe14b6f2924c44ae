#include "scheduler/peer_batch_window.h"

#include <algorithm>

namespace detdb {

PeerBatchWindow::PeerBatchWindow(uint32_t num_sequencers, uint64_t first_epoch, uint64_t window_epochs)
    : window_(std::max<uint64_t>(1, window_epochs)), seqs_(num_sequencers) {
  for (Seq& s : seqs_) s.next = first_epoch;
}

PeerBatchWindow::Verdict PeerBatchWindow::Classify(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch,
                                                   uint64_t base, uint64_t hash) const {
  const Seq& s = seqs_[sequencer];
  if (epoch < s.next || epoch < merged_epoch || s.above.contains(epoch)) {
    if (!s.recent.empty()) {
      const auto& [e, h] = s.recent[epoch % kRecent];
      if (e == epoch && h != hash) return Verdict::kConflict;
    }
    return Verdict::kDuplicate;
  }
  // No overflow: epochs are below 2^40 (checked by the caller), so is base.
  if (epoch >= std::max(base, merged_epoch) + window_) return Verdict::kTooFarAhead;
  return Verdict::kAccept;
}

PeerBatchWindow::Verdict PeerBatchWindow::Record(uint32_t sequencer, uint64_t epoch, uint64_t merged_epoch,
                                                 uint64_t base, uint64_t hash) {
  Seq& s = seqs_[sequencer];
  if (merged_epoch > s.next) {  // merged (or skipped by a recovery) without passing here: all delivered
    s.next = merged_epoch;
    s.above.erase(s.above.begin(), s.above.lower_bound(s.next));
    while (!s.above.empty() && *s.above.begin() == s.next) {
      s.above.erase(s.above.begin());
      ++s.next;
    }
  }
  const Verdict v = Classify(sequencer, epoch, merged_epoch, base, hash);
  if (v != Verdict::kAccept) return v;
  if (s.recent.empty()) s.recent.assign(kRecent, {0, 0});
  s.recent[epoch % kRecent] = {epoch, hash};
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
    case Verdict::kConflict:
      return "a duplicate with other content (forgery or divergence)";
    case Verdict::kTooFarAhead:
      return "too far ahead of the wall-clock epoch";
  }
  return "?";
}

}  // namespace detdb
