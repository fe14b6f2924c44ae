// Intent locks (storage/intent_lock.h): the mode tables; a randomized
// differential test of LIL, SLI and the lock-queue baseline against a
// model of the policy (the same compatibility outcome for every request);
// what each one does between txns (LIL caches, SLI inherits, the queue
// releases) and how an absolute request gets past it; and a threaded
// stress test (exclusion checked by counters, and by ThreadSanitizer on the
// data each mode lets an agent touch).
//
// DETDB_INTENT_SEQUENCES (default 3000) sets the differential sequences.
#include "storage/intent_lock.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace detdb {
namespace {

using Clock = std::chrono::steady_clock;
constexpr IntentMode kModes[] = {IntentMode::kIS, IntentMode::kIX, IntentMode::kS, IntentMode::kSIX, IntentMode::kX};
constexpr IntentLockKind kKinds[] = {IntentLockKind::kQueue, IntentLockKind::kSli, IntentLockKind::kLil};

TEST(IntentLockModes, MatrixIsSymmetricAndSupremumIsTheLeastCover) {
  for (IntentMode a : kModes) {
    EXPECT_TRUE(Compatible(a, IntentMode::kNone));
    for (IntentMode b : kModes) {
      EXPECT_EQ(Compatible(a, b), Compatible(b, a)) << IntentModeName(a) << " " << IntentModeName(b);
      const IntentMode s = Supremum(a, b);
      EXPECT_EQ(s, Supremum(b, a));
      EXPECT_TRUE(Covers(s, a) && Covers(s, b));
      // Whatever conflicts with a or b conflicts with their supremum.
      for (IntentMode c : kModes) {
        if (!Compatible(a, c) || !Compatible(b, c)) {
          EXPECT_FALSE(Compatible(s, c));
        }
      }
    }
  }
  EXPECT_EQ(Supremum(IntentMode::kIX, IntentMode::kS), IntentMode::kSIX);
  EXPECT_FALSE(Compatible(IntentMode::kIX, IntentMode::kS));
  EXPECT_TRUE(Compatible(IntentMode::kIS, IntentMode::kSIX));
  EXPECT_TRUE(Covers(IntentMode::kIX, IntentMode::kIS));
  EXPECT_FALSE(Covers(IntentMode::kS, IntentMode::kIX));
  for (IntentLockKind k : kKinds) EXPECT_EQ(*ParseIntentLockKind(IntentLockKindName(k)), k);
  EXPECT_FALSE(ParseIntentLockKind("mutex").ok());
}

// ------------------------------------------------------------ differential

// The policy (intent_lock.h) over the modes txns asked for: a request is
// granted iff sup(asked so far, mode) is compatible with every other
// agent's asked-for mode and, if it is an intent mode, with every other
// agent's waiting absolute request.
class Model {
 public:
  Model(int agents, int locks) : asked_(agents, std::vector<IntentMode>(locks)), posted_(agents, {-1, IntentMode::kNone}) {}

  // Returns whether it is granted; if not, it is posted.
  bool Request(int a, int lock, IntentMode mode) {
    const IntentMode want = Supremum(asked_[a][lock], mode);
    if (want == asked_[a][lock]) {  // held for this txn already: no new request
      posted_[a] = {-1, IntentMode::kNone};
      return true;
    }
    bool ok = true;
    for (size_t b = 0; b < asked_.size(); ++b) {
      if (static_cast<int>(b) == a) continue;
      if (!Compatible(want, asked_[b][lock])) ok = false;
      if (!IsAbsolute(want) && posted_[b].first == lock && IsAbsolute(posted_[b].second) &&
          !Compatible(want, posted_[b].second))
        ok = false;
    }
    if (ok) {
      asked_[a][lock] = want;
      posted_[a] = {-1, IntentMode::kNone};
    } else {
      posted_[a] = {lock, want};
    }
    return ok;
  }
  void Cancel(int a) { posted_[a] = {-1, IntentMode::kNone}; }
  void End(int a) { std::fill(asked_[a].begin(), asked_[a].end(), IntentMode::kNone); }
  IntentMode asked(int a, int lock) const { return asked_[a][lock]; }
  bool posted(int a) const { return posted_[a].first >= 0; }
  int posted_lock(int a) const { return posted_[a].first; }

 private:
  std::vector<std::vector<IntentMode>> asked_;
  std::vector<std::pair<int, IntentMode>> posted_;
};

int Sequences() {
  const char* v = std::getenv("DETDB_INTENT_SEQUENCES");
  return v != nullptr ? std::atoi(v) : 3000;
}

// One random sequence of requests, txn ends, sleeps and cancels by 2-4
// agents on 1-3 locks, played on the three implementations and the model.
// Every request's outcome is compared after the other agents were given the
// chance to serve revocations (as they do at their next boundary).
void PlaySequence(uint64_t seed, std::string* trace_out, bool* ok) {
  std::mt19937_64 rng(seed);
  const int agents = 2 + static_cast<int>(rng() % 3);
  const int locks = 1 + static_cast<int>(rng() % 3);
  const int steps = 20 + static_cast<int>(rng() % 60);
  std::vector<std::unique_ptr<IntentLockTable>> tables;
  std::vector<std::vector<std::unique_ptr<IntentAgent>>> ag(3);
  for (int k = 0; k < 3; ++k) {
    tables.push_back(IntentLockTable::Create({.kind = kKinds[k], .locks = static_cast<uint32_t>(locks)}));
    for (int a = 0; a < agents; ++a) ag[k].push_back(tables[k]->NewAgent());
  }
  Model model(agents, locks);
  std::vector<IntentMode> posted_mode(agents, IntentMode::kNone);
  std::string trace;
  *ok = true;
  for (int step = 0; step < steps && *ok; ++step) {
    const int a = static_cast<int>(rng() % agents);
    const uint64_t r = rng() % 100;
    if (model.posted(a)) {
      const int lock = model.posted_lock(a);
      if (r < 30) {  // give up
        trace += "cancel(" + std::to_string(a) + ") ";
        model.Cancel(a);
        for (int k = 0; k < 3; ++k) ag[k][a]->Cancel(lock);
        continue;
      }
      trace += "retry(" + std::to_string(a) + ") ";
      const bool want = model.Request(a, lock, posted_mode[a]);
      for (int k = 0; k < 3; ++k) {
        bool got = ag[k][a]->TryAcquire(lock, posted_mode[a]);
        if (!got) {
          for (int b = 0; b < agents; ++b)
            if (b != a) ag[k][b]->ServeRevocations();
          got = ag[k][a]->TryAcquire(lock, posted_mode[a]);
        }
        if (got != want) {
          *trace_out = trace + " <- " + IntentLockKindName(kKinds[k]) + (got ? " granted" : " refused");
          *ok = false;
        }
      }
      continue;
    }
    if (r < 60) {
      const int lock = static_cast<int>(rng() % locks);
      const IntentMode mode = rng() % 3 != 0 ? kModes[rng() % 2] : kModes[2 + rng() % 3];  // intents more often
      trace += "req(" + std::to_string(a) + "," + std::to_string(lock) + "," + IntentModeName(mode) + ") ";
      const bool want = model.Request(a, lock, mode);
      posted_mode[a] = mode;
      for (int k = 0; k < 3; ++k) {
        bool got = ag[k][a]->TryAcquire(lock, mode);
        if (!got) {
          for (int b = 0; b < agents; ++b)
            if (b != a) ag[k][b]->ServeRevocations();
          got = ag[k][a]->TryAcquire(lock, mode);
        }
        if (got != want) {
          *trace_out = trace + " <- " + IntentLockKindName(kKinds[k]) + (got ? " granted" : " refused");
          *ok = false;
        }
        // What the txn asked for is what it holds for it.
        if (got && ag[k][a]->used(lock) != model.asked(a, lock)) {
          *trace_out = trace + " <- " + IntentLockKindName(kKinds[k]) + " uses " +
                       IntentModeName(ag[k][a]->used(lock)) + ", asked " + IntentModeName(model.asked(a, lock));
          *ok = false;
        }
      }
    } else if (r < 90) {
      trace += "end(" + std::to_string(a) + ") ";
      model.End(a);
      for (int k = 0; k < 3; ++k) ag[k][a]->EndTxn();
    } else {
      trace += "sleep(" + std::to_string(a) + ") ";
      model.End(a);
      for (int k = 0; k < 3; ++k) {
        ag[k][a]->EndTxn();
        ag[k][a]->ReleaseAll();
      }
    }
  }
  for (int a = 0; a < agents; ++a) {  // drop posted requests before the agents go
    if (!model.posted(a)) continue;
    for (int k = 0; k < 3; ++k) ag[k][a]->Cancel(model.posted_lock(a));
  }
  if (!*ok) *trace_out = "seed " + std::to_string(seed) + ": " + *trace_out;
}

TEST(IntentLockDifferential, SameOutcomeAsTheModelForEveryRequest) {
  std::mt19937_64 rng(0x11c0ffee);
  const int n = Sequences();
  for (int i = 0; i < n; ++i) {
    std::string trace;
    bool ok = true;
    PlaySequence(rng(), &trace, &ok);
    ASSERT_TRUE(ok) << trace;
  }
}

// ------------------------------------------------------------ between txns

TEST(IntentLockLil, CachedIntentsCostNoSharedWriteAndAreRevokedAtTheBoundary) {
  auto t = IntentLockTable::Create({.kind = IntentLockKind::kLil, .locks = 3});
  auto worker = t->NewAgent();
  auto scanner = t->NewAgent();
  worker->Acquire(0, IntentMode::kIX);
  worker->Acquire(1, IntentMode::kIX);
  worker->EndTxn();
  const uint64_t slow = t->stats().slow_acquires;
  for (int i = 0; i < 100; ++i) {  // the common case: the cache holds what the txn needs
    worker->Acquire(0, IntentMode::kIX);
    worker->Acquire(1, IntentMode::kIS);
    worker->EndTxn();
  }
  EXPECT_EQ(t->stats().slow_acquires, slow);
  EXPECT_EQ(worker->held(1), IntentMode::kIX);  // cached between txns
  // A scan's S on table 1 waits for the cached IX; the worker gives it
  // back at its next boundary, and then waits behind the scan for its IX.
  ASSERT_TRUE(scanner->TryAcquire(0, IntentMode::kIS));
  EXPECT_FALSE(scanner->TryAcquire(1, IntentMode::kS));
  worker->Acquire(1, IntentMode::kIS);  // still cached: this txn keeps it
  worker->EndTxn();                   // the boundary: revoked
  EXPECT_EQ(worker->held(1), IntentMode::kNone);
  EXPECT_EQ(worker->held(0), IntentMode::kIX);  // not asked for
  EXPECT_TRUE(scanner->TryAcquire(1, IntentMode::kS));
  EXPECT_TRUE(worker->TryAcquire(1, IntentMode::kIS));
  EXPECT_FALSE(worker->TryAcquire(1, IntentMode::kIX));
  worker->Cancel(1);
  scanner->EndTxn();
  EXPECT_TRUE(worker->TryAcquire(1, IntentMode::kIX));
  EXPECT_GE(t->stats().revoked, 1u);
}

TEST(IntentLockLil, AnIdleAgentHoldsNothing) {
  auto t = IntentLockTable::Create({.kind = IntentLockKind::kLil, .locks = 2});
  auto worker = t->NewAgent();
  auto loader = t->NewAgent();
  worker->Acquire(0, IntentMode::kIX);
  worker->Acquire(1, IntentMode::kIX);
  worker->EndTxn();
  worker->ReleaseAll();  // before it sleeps
  EXPECT_TRUE(loader->TryAcquire(0, IntentMode::kIX));
  EXPECT_TRUE(loader->TryAcquire(1, IntentMode::kX));
}

TEST(IntentLockSli, InheritedIntentsAreReclaimedAndInvalidatedByAnAbsoluteRequest) {
  auto t = IntentLockTable::Create({.kind = IntentLockKind::kSli, .locks = 2});
  auto worker = t->NewAgent();
  auto loader = t->NewAgent();
  worker->Acquire(1, IntentMode::kIX);
  worker->EndTxn();  // inherited
  for (int i = 0; i < 10; ++i) {
    worker->Acquire(1, IntentMode::kIX);
    worker->EndTxn();
  }
  EXPECT_GE(t->stats().reclaimed, 10u);
  // No revocation needed: the absolute request invalidates the inherited one.
  EXPECT_TRUE(loader->TryAcquire(1, IntentMode::kX));
  EXPECT_EQ(t->stats().invalidated, 1u);
  EXPECT_FALSE(worker->TryAcquire(1, IntentMode::kIX));  // the worker asks again, and waits
  worker->Cancel(1);
  loader->EndTxn();
  EXPECT_TRUE(worker->TryAcquire(1, IntentMode::kIX));
}

TEST(IntentLockQueue, ReleasesEverythingAtTheEndOfATxn) {
  auto t = IntentLockTable::Create({.kind = IntentLockKind::kQueue, .locks = 2});
  auto worker = t->NewAgent();
  auto loader = t->NewAgent();
  worker->Acquire(1, IntentMode::kIX);
  EXPECT_FALSE(loader->TryAcquire(1, IntentMode::kX));
  loader->Cancel(1);
  worker->EndTxn();
  EXPECT_TRUE(loader->TryAcquire(1, IntentMode::kX));
}

TEST(IntentLock, AbsoluteRequestTimesOutAndLeavesNothingBehind) {
  for (IntentLockKind k : kKinds) {
    auto t = IntentLockTable::Create({.kind = k, .locks = 2});
    auto worker = t->NewAgent();
    auto scanner = t->NewAgent();
    auto other = t->NewAgent();
    worker->Acquire(1, IntentMode::kIX);  // in use: the scan cannot revoke it
    const absl::Status s = scanner->AcquireUntil(1, IntentMode::kS, Clock::now() + std::chrono::milliseconds(20));
    EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << IntentLockKindName(k) << " " << s;
    // The timed-out request holds no intent back any more.
    EXPECT_TRUE(other->TryAcquire(1, IntentMode::kIX)) << IntentLockKindName(k);
  }
}

TEST(IntentLock, AWaitingAbsoluteRequestIsGrantedWhenTheHolderEnds) {
  for (IntentLockKind k : kKinds) {
    auto t = IntentLockTable::Create({.kind = k, .locks = 2});
    auto worker = t->NewAgent();
    worker->Acquire(0, IntentMode::kIX);
    worker->Acquire(1, IntentMode::kIX);
    std::atomic<bool> granted{false};
    std::thread loader([&] {
      auto me = t->NewAgent();
      me->Acquire(0, IntentMode::kIX);
      me->Acquire(1, IntentMode::kX);  // waits
      granted.store(true);
      me->EndTxn();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(granted.load()) << IntentLockKindName(k);
    worker->EndTxn();  // LIL: revoked here; SLI: inherited, then invalidated; queue: released
    loader.join();
    EXPECT_TRUE(granted.load());
  }
}

// ------------------------------------------------------------ threads

// What each mode lets an agent touch, as plain memory: a row per agent per
// table (IX writes its own, IS reads its own), S reads every row of the
// table (of every table, on the partition), X writes them. An overlap that
// the locks should have prevented is a data race ThreadSanitizer reports;
// the counters catch it in other builds.
struct Shared {
  static constexpr int kTables = 4;
  static constexpr int kAgents = 4;
  uint64_t rows[1 + kTables][kAgents] = {};
  std::atomic<int> holders[1 + kTables][kIntentModes] = {};
  std::atomic<int> violations{0};

  void Hold(int lock, IntentMode m) {
    holders[lock][static_cast<int>(m)].fetch_add(1);
    for (int j = 1; j < kIntentModes; ++j) {
      const int n = holders[lock][j].load() - (j == static_cast<int>(m) ? 1 : 0);
      if (n > 0 && !Compatible(m, static_cast<IntentMode>(j))) violations.fetch_add(1);
    }
  }
  void Drop(int lock, IntentMode m) { holders[lock][static_cast<int>(m)].fetch_sub(1); }
};

void Touch(Shared* sh, int agent, int lock, IntentMode m, uint64_t* sink) {
  if (lock == 0) return;  // the partition lock guards the tables through their locks
  switch (m) {
    case IntentMode::kIS: *sink += sh->rows[lock][agent]; break;
    case IntentMode::kIX: ++sh->rows[lock][agent]; break;
    case IntentMode::kS:
      for (int a = 0; a < Shared::kAgents; ++a) *sink += sh->rows[lock][a];
      break;
    case IntentMode::kSIX:
    case IntentMode::kX:
      for (int a = 0; a < Shared::kAgents; ++a) ++sh->rows[lock][a];
      break;
    default: break;
  }
}

void StressOne(IntentLockKind kind, int txns) {
  auto t = IntentLockTable::Create({.kind = kind, .locks = 1 + Shared::kTables});
  Shared sh;
  std::atomic<int> timeouts{0};
  std::vector<std::thread> threads;
  for (int a = 0; a < Shared::kAgents; ++a) {
    threads.emplace_back([&, a] {
      std::mt19937_64 rng(77 + a);
      auto me = t->NewAgent();
      uint64_t sink = 0;
      for (int i = 0; i < txns; ++i) {
        // Locks in increasing id, the partition first (intent_lock.h).
        std::vector<std::pair<int, IntentMode>> plan;
        const uint64_t r = rng() % 100;
        if (r < 3) {  // a whole-table operation: S or X on a table
          const int table = 1 + static_cast<int>(rng() % Shared::kTables);
          const bool x = rng() % 2;
          plan = {{0, x ? IntentMode::kIX : IntentMode::kIS}, {table, x ? IntentMode::kX : IntentMode::kS}};
        } else if (r < 4) {  // the partition: S (a capture) or X
          plan = {{0, rng() % 2 ? IntentMode::kS : IntentMode::kX}};
        } else {  // a txn: intents on 1-3 tables
          const bool writes = rng() % 2;
          plan.push_back({0, writes ? IntentMode::kIX : IntentMode::kIS});
          for (int table = 1; table <= Shared::kTables; ++table)
            if (rng() % 2) plan.push_back({table, writes && rng() % 2 ? IntentMode::kIX : IntentMode::kIS});
        }
        std::vector<std::pair<int, IntentMode>> got;
        bool ok = true;
        for (auto [lock, m] : plan) {
          if (IsAbsolute(m)) {
            if (!me->AcquireUntil(lock, m, Clock::now() + std::chrono::seconds(2)).ok()) {
              timeouts.fetch_add(1);
              ok = false;
              break;
            }
          } else {
            me->Acquire(lock, m);
          }
          sh.Hold(lock, m);
          got.push_back({lock, m});
        }
        if (ok)
          for (auto [lock, m] : got) Touch(&sh, a, lock, m, &sink);
        for (auto [lock, m] : got) sh.Drop(lock, m);
        me->EndTxn();
        if (rng() % 50 == 0) me->ReleaseAll();  // the agent sleeps
      }
      me->ReleaseAll();
      if (sink == 42) fprintf(stderr, " ");  // keep the reads
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(sh.violations.load(), 0) << IntentLockKindName(kind);
  // Deadlines are a safety net here, not the rule: every whole-table
  // operation got its lock.
  EXPECT_EQ(timeouts.load(), 0) << IntentLockKindName(kind);
  EXPECT_GT(t->stats().absolute_grants, 0u);
}

TEST(IntentLockThreads, AbsoluteLocksExcludeConflictingIntents) {
  for (IntentLockKind k : kKinds) StressOne(k, 4000);
}

}  // namespace
}  // namespace detdb
