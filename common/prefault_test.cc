// PrefaultHeap: with tcmalloc (the release build links this test with it),
// later allocations reuse the faulted-in pages; without it (sanitizer
// builds), a clear error.
#include "common/prefault.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"

namespace detdb {
namespace {

long MinorFaults() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Touches one byte per page of [p, p + n); returns the minor faults it took.
long TouchFaults(char* p, size_t n) {
  const long before = MinorFaults();
  for (size_t off = 0; off < n; off += 4096) static_cast<volatile char*>(p)[off] = 1;
  return MinorFaults() - before;
}

constexpr size_t kBytes = size_t{128} << 20;
constexpr long kPages = kBytes / 4096;

TEST(Prefault, FreshMemoryFaultsOncePerPage) {
  // The counter this test relies on: fresh anonymous memory faults.
  char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_GE(TouchFaults(p, kBytes), kPages * 9 / 10);
  munmap(p, kBytes);
}

TEST(Prefault, LaterAllocationsReuseFaultedPages) {
  if (!TcmallocExtension()) {
    auto r = PrefaultHeap(kBytes);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(std::string(r.status().message()).find("tcmalloc"), std::string::npos) << r.status();
    printf("prefault not run: this build's allocator is not tcmalloc (%s)\n", std::string(r.status().message()).c_str());
    return;
  }
  auto r = PrefaultHeap(2 * kBytes);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, 2 * kBytes);
  // Blocks of several sizes, as tables, index nodes and txn state ask for.
  long faults = 0;
  std::vector<void*> held;
  for (size_t size : {size_t{64} << 20, size_t{16} << 20, size_t{1} << 20, size_t{64} << 10}) {
    for (size_t total = 0; total < kBytes / 4; total += size) {
      char* p = static_cast<char*>(std::malloc(size));
      ASSERT_NE(p, nullptr);
      faults += TouchFaults(p, size);
      held.push_back(p);
    }
  }
  for (void* p : held) std::free(p);
  printf("prefaulted %lu MiB in %.2f s; touching %lu MiB of later allocations took %ld minor faults (%ld pages)\n",
         static_cast<unsigned long>(r->bytes >> 20), r->seconds, static_cast<unsigned long>(kBytes >> 20), faults,
         kPages);
  EXPECT_LT(faults, kPages / 20) << "later allocations did not reuse the faulted-in pages";
}

TEST(Prefault, RefusesMoreThanTheMachineHas) {
  if (!TcmallocExtension()) GTEST_SKIP() << "allocator is not tcmalloc: the size is not checked";
  for (uint64_t bytes : {uint64_t{1} << 50, MiBToBytes(UINT64_MAX), UINT64_MAX - 1}) {
    auto r = PrefaultHeap(bytes);
    ASSERT_FALSE(r.ok()) << bytes;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  EXPECT_EQ(MiBToBytes(3), uint64_t{3} << 20);
  EXPECT_EQ(MiBToBytes(uint64_t{1} << 50), UINT64_MAX);
}

}  // namespace
}  // namespace detdb
