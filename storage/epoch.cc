#include "storage/epoch.h"

#include <algorithm>

#include "glog/logging.h"

namespace detdb {

EpochDomain::~EpochDomain() {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& s : slots_) CHECK(!s->in_use) << "an EpochParticipant outlives its domain";
}

EpochDomain::Slot* EpochDomain::Register() {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& s : slots_) {
    if (!s->in_use) {
      s->in_use = true;
      return s.get();
    }
  }
  slots_.push_back(std::make_unique<Slot>());
  slots_.back()->in_use = true;
  return slots_.back().get();
}

void EpochDomain::Unregister(Slot* slot) {
  std::lock_guard<std::mutex> l(mu_);
  slot->announced.store(0, std::memory_order_release);
  slot->in_use = false;
}

uint64_t EpochDomain::SafeEpoch() const {
  // Read the epoch first: a participant that comes online after this read
  // announces at least this much.
  uint64_t safe = epoch_.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& s : slots_) {
    // A read-modify-write, not a load: see the file comment (Online).
    const uint64_t a = s->announced.fetch_add(0, std::memory_order_acq_rel);
    if (a != 0) safe = std::min(safe, a);
  }
  return safe;
}

size_t EpochDomain::participants() const {
  std::lock_guard<std::mutex> l(mu_);
  return std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->in_use; });
}

EpochParticipant::EpochParticipant(EpochDomain* domain) : domain_(domain), slot_(domain->Register()) {
  Online();
}

EpochParticipant::~EpochParticipant() {
  Offline();
  domain_->Unregister(slot_);
}

void EpochParticipant::Online() {
  const uint64_t e = domain_->epoch_.load(std::memory_order_acquire);
  slot_->announced.exchange(e, std::memory_order_acq_rel);
  announced_ = e;
}

}  // namespace detdb
