// PrefaultHeap: with tcmalloc (the release build links this test with it),
// later allocations reuse the faulted-in pages, also after churn that would
// make tcmalloc give free memory back at its default release rate; without
// it (sanitizer builds), a clear error.
#include "common/prefault.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace detdb {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

long MinorFaults() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Touches one byte per page of [p, p + n); returns the minor faults it took.
long TouchFaults(char* p, size_t n) {
  const long before = MinorFaults();
  for (size_t off = 0; off < n; off += kPage) static_cast<volatile char*>(p)[off] = 1;
  return MinorFaults() - before;
}

class Prefault : public ::testing::Test {
 protected:
  // Transparent huge pages would map 512 pages per fault and hide both the
  // faults this test counts and their absence.
  void SetUp() override { prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }
};

constexpr size_t kBytes = size_t{128} << 20;

TEST_F(Prefault, FreshMemoryFaultsOncePerPage) {
  // The counter the next test relies on: fresh anonymous memory faults.
  char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_GE(TouchFaults(p, kBytes), static_cast<long>(kBytes / kPage * 9 / 10));
  munmap(p, kBytes);
}

TEST_F(Prefault, LaterAllocationsReuseFaultedPages) {
  if (!PrefaultSupported()) {
    auto r = PrefaultHeap(kBytes);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(std::string(r.status().message()).find("tcmalloc"), std::string::npos) << r.status();
    printf("prefault not run: this build's allocator is not tcmalloc (%s)\n", std::string(r.status().message()).c_str());
    return;
  }
  auto r = PrefaultHeap(3 * kBytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, 3 * kBytes);
  // Churn: rounds of small and 1 MiB allocations freed again (at tcmalloc's
  // default release rate this gives free spans back to the kernel).
  for (int round = 0; round < 20; ++round) {
    std::vector<void*> churn;
    for (int i = 0; i < 2000; ++i) churn.push_back(std::malloc(i % 10 == 0 ? (1 << 20) : 100 + i));
    for (void* p : churn) std::free(p);
  }
  EXPECT_EQ(TcmallocProperty("tcmalloc.pageheap_unmapped_bytes").value_or(1), 0u)
      << "tcmalloc gave prefaulted memory back to the kernel";
  // Blocks of several sizes, as tables, index nodes and txn state ask for.
  long faults = 0;
  size_t touched = 0;
  std::vector<void*> held;
  for (size_t size : {size_t{32} << 20, size_t{16} << 20, size_t{1} << 20, size_t{64} << 10}) {
    for (size_t total = 0; total + size <= kBytes / 4; total += size) {
      char* p = static_cast<char*>(std::malloc(size));
      ASSERT_NE(p, nullptr);
      faults += TouchFaults(p, size);
      touched += size;
      held.push_back(p);
    }
  }
  for (void* p : held) std::free(p);
  const long pages = static_cast<long>(touched / kPage);
  printf("prefaulted %lu MiB in %.2f s; after churn, touching %lu MiB of later allocations took %ld minor faults "
         "(%ld pages)\n",
         static_cast<unsigned long>(r->bytes >> 20), r->seconds, static_cast<unsigned long>(touched >> 20), faults,
         pages);
  EXPECT_EQ(touched, kBytes);
  EXPECT_LT(faults, pages / 20) << "later allocations did not reuse the faulted-in pages";
}

TEST_F(Prefault, ZeroBytesDoesNothing) {
  auto r = PrefaultHeap(0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, 0u);
}

TEST_F(Prefault, RefusesMoreThanTheMachineHas) {
  if (!PrefaultSupported()) GTEST_SKIP() << "allocator is not tcmalloc: the size is not checked";
  for (uint64_t bytes : {uint64_t{1} << 50, MiBToBytes(UINT64_MAX), UINT64_MAX - 1}) {
    auto r = PrefaultHeap(bytes);
    ASSERT_FALSE(r.ok()) << bytes;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  EXPECT_EQ(MiBToBytes(3), uint64_t{3} << 20);
  EXPECT_EQ(MiBToBytes(uint64_t{1} << 50), UINT64_MAX);
}

// AdvisePrefault: when a run is told what to give --prefault_mb, and what.
TEST(PrefaultAdvice, NeedsEnoughFaultsAndALongRunWithoutAPrefault) {
  const uint64_t tables = uint64_t{1000} << 20;  // 1000 MiB: + 25% = 1250 -> 1280
  // 0.15 faults per txn over 1M txns, 20 s, no prefault: suggested.
  PrefaultAdvice a = AdvisePrefault(tables, 150000, 1000000, 20, 0);
  EXPECT_EQ(a.kind, PrefaultAdvice::kSuggest);
  EXPECT_EQ(a.mb, 1280u);
  // 19.9 s: a short run hardly slows.
  EXPECT_EQ(AdvisePrefault(tables, 150000, 1000000, 19.9, 0).kind, PrefaultAdvice::kNone);
  // Under 0.02 faults per txn, or under 4096 faults, or no txns: nothing.
  EXPECT_EQ(AdvisePrefault(tables, 19999, 1000000, 60, 0).kind, PrefaultAdvice::kNone);
  EXPECT_EQ(AdvisePrefault(tables, 4095, 10000, 60, 0).kind, PrefaultAdvice::kNone);
  EXPECT_EQ(AdvisePrefault(tables, 4096, 10000, 60, 0).kind, PrefaultAdvice::kSuggest);
  EXPECT_EQ(AdvisePrefault(tables, 5000, 0, 60, 0).kind, PrefaultAdvice::kNone);
}

TEST(PrefaultAdvice, RoundsUpToTheNext256MiBStep) {
  // + 25% of the tables' MiB, then strictly above, in 256 MiB steps.
  EXPECT_EQ(AdvisePrefault(0, 10000, 100000, 30, 0).mb, 256u);
  EXPECT_EQ(AdvisePrefault(uint64_t{204} << 20, 10000, 100000, 30, 0).mb, 256u);  // 255
  EXPECT_EQ(AdvisePrefault(uint64_t{205} << 20, 10000, 100000, 30, 0).mb, 512u);  // 256
  // Never 0 ("none"), for any table size.
  const PrefaultAdvice huge = AdvisePrefault(UINT64_MAX, 10000, 100000, 30, 0);
  EXPECT_EQ(huge.kind, PrefaultAdvice::kSuggest);
  EXPECT_GT(huge.mb, 0u);
  EXPECT_EQ(huge.mb % 256, 0u);
}

TEST(PrefaultAdvice, WithAPrefaultOnlyASizeAboveIt) {
  const uint64_t tables = uint64_t{1000} << 20;  // asks for 1280 MiB
  // Any length of run: 1 s with 64 MiB faulted in is too small.
  PrefaultAdvice a = AdvisePrefault(tables, 150000, 1000000, 1, uint64_t{64} << 20);
  EXPECT_EQ(a.kind, PrefaultAdvice::kTooSmall);
  EXPECT_EQ(a.mb, 1280u);
  // 1216 MiB (19 blocks) faulted in: 1280 is still above it.
  EXPECT_EQ(AdvisePrefault(tables, 150000, 1000000, 1, uint64_t{1216} << 20).kind, PrefaultAdvice::kTooSmall);
  // 1280 faulted in (what the advice said) and faults anyway: not the
  // tables, so no size (no ever larger sizes for faults the tables do not take).
  a = AdvisePrefault(tables, 150000, 1000000, 1, uint64_t{1280} << 20);
  EXPECT_EQ(a.kind, PrefaultAdvice::kFaultsElsewhere);
  EXPECT_EQ(a.mb, 0u);
  // And nothing at all without enough faults.
  EXPECT_EQ(AdvisePrefault(tables, 100, 1000000, 1, uint64_t{64} << 20).kind, PrefaultAdvice::kNone);
}

}  // namespace
}  // namespace detdb
