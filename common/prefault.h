// Heap memory faulted in before a run, kept by the allocator for later use.
//
// A growing in-memory database touches fresh memory all the time (TPC-C
// New-Order + Payment: ~550 bytes of new rows and index per txn, 0.17 page
// faults per txn). Each first touch of a page is a page fault: the kernel
// zeroes the page, and on a VM whose host backs guest memory lazily it also
// waits for the host, ~1.5 us per 4 KiB page when backed and ~12 us when
// not (docs/STORAGE.md, "Memory faulted in ahead"). PrefaultHeap pays that
// once, before the run: it allocates `bytes` in large blocks, writes one
// byte per page, frees them, and tells the allocator never to give free
// memory back to the kernel, so later allocations (records, index nodes,
// txn state) reuse pages that are already mapped.
//
// Needs gperftools' tcmalloc, which the programs link by default (CMake
// option DETDB_TCMALLOC): it is found at run time (dlsym), so a build
// without it (or with a sanitizer's allocator) gets FailedPrecondition, not
// a link error. The C library's malloc returns large freed blocks to the
// kernel at once, which would undo the work.
//
// Thread-safety: call once, before the threads that allocate start.
#ifndef DETDB_COMMON_PREFAULT_H_
#define DETDB_COMMON_PREFAULT_H_

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gperftools/malloc_extension.h"

namespace detdb {

struct PrefaultReport {
  uint64_t bytes = 0;    // faulted in and kept by the allocator
  double seconds = 0;    // how long it took
};

// n MiB in bytes, saturated at 2^64 - 1 (a flag's value may be anything).
inline uint64_t MiBToBytes(uint64_t n) { return n > (UINT64_MAX >> 20) ? UINT64_MAX : n << 20; }

// tcmalloc's extension object if tcmalloc is this process's allocator, else
// nullptr. Looked up at run time; its methods are virtual, so calling them
// needs no link-time dependency.
inline MallocExtension* TcmallocExtension() {
  using Instance = MallocExtension* (*)();
  auto instance = reinterpret_cast<Instance>(dlsym(RTLD_DEFAULT, "_ZN15MallocExtension8instanceEv"));
  return instance == nullptr ? nullptr : instance();
}

// Faults in `bytes` of heap (rounded up to 64 MiB blocks; a caller converting
// from MiB should saturate rather than wrap, see MiBToBytes) and keeps them in
// the allocator. Errors: FailedPrecondition without tcmalloc;
// InvalidArgument above 90% of the machine's memory; ResourceExhausted if
// the memory cannot be allocated (nothing is kept).
// (No UBSan vptr check on the calls into tcmalloc's object: its type info
// is in tcmalloc, which sanitizer builds do not link.)
__attribute__((no_sanitize("vptr"))) inline absl::StatusOr<PrefaultReport> PrefaultHeap(uint64_t bytes) {
  MallocExtension* ext = TcmallocExtension();
  if (ext == nullptr)
    return absl::FailedPreconditionError(
        "prefaulting memory needs tcmalloc as the allocator (the default build links it: CMake option "
        "DETDB_TCMALLOC, Debian package libgoogle-perftools-dev); this program uses another allocator, which gives "
        "freed memory back to the kernel");
  constexpr uint64_t kBlock = uint64_t{64} << 20;
  const uint64_t blocks = bytes / kBlock + (bytes % kBlock != 0);  // no overflow near 2^64
  const long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  const long phys_pages = sysconf(_SC_PHYS_PAGES);
  const uint64_t phys_bytes = static_cast<uint64_t>(phys_pages > 0 ? phys_pages : 0) * static_cast<uint64_t>(page);
  if (phys_bytes > 0 && blocks > phys_bytes / 10 * 9 / kBlock)
    return absl::InvalidArgumentError(absl::StrCat("prefaulting ", bytes >> 20, " MiB: more than 90% of this machine's ",
                                                   phys_bytes >> 20, " MiB"));
  const auto start = std::chrono::steady_clock::now();
  // Free memory stays mapped from now on (the default rate gives it back
  // to the kernel a little at a time).
  ext->SetMemoryReleaseRate(0.0);
  std::vector<void*> held;
  held.reserve(blocks);
  absl::Status status;
  for (uint64_t i = 0; i < blocks; ++i) {
    char* p = static_cast<char*>(std::malloc(kBlock));
    if (p == nullptr) {
      status = absl::ResourceExhaustedError(
          absl::StrCat("prefaulting ", bytes >> 20, " MiB: out of memory after ", (i * kBlock) >> 20, " MiB"));
      break;
    }
    // One write per page maps it; volatile so the stores are not elided.
    for (uint64_t off = 0; off < kBlock; off += static_cast<uint64_t>(page)) static_cast<volatile char*>(p)[off] = 0;
    held.push_back(p);
  }
  for (void* p : held) std::free(p);
  if (!status.ok()) {
    ext->ReleaseFreeMemory();  // keep nothing of a failed attempt
    return status;
  }
  PrefaultReport r;
  r.bytes = blocks * kBlock;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace detdb

#endif  // DETDB_COMMON_PREFAULT_H_
