// Heap memory faulted in before a run, kept by the allocator for later use.
//
// A growing in-memory database touches fresh memory all the time (TPC-C
// New-Order + Payment: ~550 bytes of new rows and index per txn, 0.15-0.17
// page faults per txn). Each first touch of a page is a page fault: the
// kernel zeroes the page, and on a VM whose host backs guest memory lazily
// it also waits for the host, ~1.5 us per 4 KiB page when backed and ~12 us
// when not (docs/STORAGE.md, "Memory faulted in ahead"). PrefaultHeap pays
// that once, before the run: it allocates `bytes` in 64 MiB blocks, writes
// one byte per page, frees them, and tells the allocator to keep free
// memory mapped, so later allocations (records, index nodes, txn state)
// reuse pages that are already mapped.
//
// Needs gperftools' tcmalloc, which the programs link by default (CMake
// option DETDB_TCMALLOC): it is found at run time (dlsym), so a build
// without it (or with a sanitizer's allocator) gets FailedPrecondition, not
// a link error, and a machine without the gperftools headers compiles the
// same answer in. The C library's malloc returns large freed blocks to the
// kernel at once, which would undo the work.
//
// Limits: what tcmalloc keeps is free spans of its page heap; an
// allocation larger than the largest free span (a hash index doubling
// past the prefaulted blocks, say) still maps fresh memory. Every page
// lands on the calling thread's NUMA node.
//
// Thread-safety: call once, before other threads allocate.
#ifndef DETDB_COMMON_PREFAULT_H_
#define DETDB_COMMON_PREFAULT_H_

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#if __has_include(<gperftools/malloc_extension.h>)
#include <gperftools/malloc_extension.h>
#define DETDB_PREFAULT_HAS_GPERFTOOLS 1
#else
#define DETDB_PREFAULT_HAS_GPERFTOOLS 0
#endif

namespace detdb {

struct PrefaultReport {
  uint64_t bytes = 0;    // faulted in and kept by the allocator
  double seconds = 0;    // how long it took
};

// n MiB in bytes, saturated at 2^64 - 1 (a flag's value may be anything).
inline uint64_t MiBToBytes(uint64_t n) { return n > (UINT64_MAX >> 20) ? UINT64_MAX : n << 20; }

namespace prefault_internal {

// The memory this process may still take: the least of MemAvailable
// (/proc/meminfo) and the headroom of its cgroup v2 (memory.max minus
// memory.current), or nullopt if neither can be read.
inline std::optional<uint64_t> AvailableBytes() {
  std::optional<uint64_t> best;
  auto take = [&best](uint64_t v) { best = best ? std::min(*best, v) : v; };
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    uint64_t kib = 0;
    if (key == "MemAvailable:" && meminfo >> kib) take(kib << 10);
    meminfo.ignore(1 << 10, '\n');
  }
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::string max;
  uint64_t current = 0;
  if (max_file >> max && max != "max" && current_file >> current) {
    const uint64_t limit = std::strtoull(max.c_str(), nullptr, 10);
    take(limit > current ? limit - current : 0);
  }
  return best;
}

#if DETDB_PREFAULT_HAS_GPERFTOOLS
// tcmalloc's extension object if tcmalloc is this process's allocator (it
// owns a fresh malloc), else nullptr. Looked up at run time; its methods
// are virtual, so calling them needs no link-time dependency, but UBSan's
// vptr check would reference tcmalloc's type info: every function that
// calls one carries no_sanitize("vptr").
__attribute__((no_sanitize("vptr"))) inline MallocExtension* Tcmalloc() {
  using Instance = MallocExtension* (*)();
  auto instance = reinterpret_cast<Instance>(dlsym(RTLD_DEFAULT, "_ZN15MallocExtension8instanceEv"));
  if (instance == nullptr) return nullptr;
  MallocExtension* ext = instance();
  void* probe = std::malloc(64);
  const bool owned = ext != nullptr && ext->GetOwnership(probe) == MallocExtension::kOwned;
  std::free(probe);
  return owned ? ext : nullptr;
}
#endif

}  // namespace prefault_internal

// Whether PrefaultHeap can work here: tcmalloc is this process's allocator.
inline bool PrefaultSupported() {
#if DETDB_PREFAULT_HAS_GPERFTOOLS
  return prefault_internal::Tcmalloc() != nullptr;
#else
  return false;
#endif
}

// A numeric property of tcmalloc ("tcmalloc.pageheap_unmapped_bytes", ...),
// or nullopt without tcmalloc or for an unknown name.
__attribute__((no_sanitize("vptr"))) inline std::optional<uint64_t> TcmallocProperty(const char* name) {
#if DETDB_PREFAULT_HAS_GPERFTOOLS
  MallocExtension* ext = prefault_internal::Tcmalloc();
  size_t v = 0;
  if (ext != nullptr && ext->GetNumericProperty(name, &v)) return static_cast<uint64_t>(v);
#else
  (void)name;
#endif
  return std::nullopt;
}

// Faults in `bytes` of heap (rounded up to 64 MiB blocks; a caller
// converting from MiB should saturate, see MiBToBytes) and keeps them in
// the allocator: from now on tcmalloc releases no free memory to the kernel
// (release rate 0, aggressive decommit off). 0 bytes: does nothing.
// Errors: FailedPrecondition without tcmalloc or under a tcmalloc heap
// limit; InvalidArgument above 90% of the memory this process may still
// take (MemAvailable, the cgroup's headroom: the check is per process);
// ResourceExhausted if an allocation fails (nothing is kept).
// REQUIRES: no other thread allocates meanwhile.
__attribute__((no_sanitize("vptr"))) inline absl::StatusOr<PrefaultReport> PrefaultHeap(uint64_t bytes) {
  if (bytes == 0) return PrefaultReport{};
#if !DETDB_PREFAULT_HAS_GPERFTOOLS
  return absl::FailedPreconditionError(
      "prefaulting memory needs tcmalloc, and this build has no gperftools headers (Debian package "
      "libgoogle-perftools-dev)");
#else
  MallocExtension* ext = prefault_internal::Tcmalloc();
  if (ext == nullptr)
    return absl::FailedPreconditionError(
        "prefaulting memory needs tcmalloc as the allocator (the default build links it: CMake option "
        "DETDB_TCMALLOC, Debian package libgoogle-perftools-dev); this program uses another allocator, which gives "
        "freed memory back to the kernel");
  constexpr uint64_t kBlock = uint64_t{64} << 20;
  const uint64_t blocks = bytes / kBlock + (bytes % kBlock != 0);  // no overflow near 2^64
  const std::optional<uint64_t> available = prefault_internal::AvailableBytes();
  if (!available)
    return absl::FailedPreconditionError("prefaulting memory: cannot tell how much memory is available "
                                         "(no /proc/meminfo)");
  if (blocks > *available / 10 * 9 / kBlock)
    return absl::InvalidArgumentError(absl::StrCat("prefaulting ", bytes >> 20, " MiB: more than 90% of the ",
                                                   *available >> 20, " MiB this process may still take"));
  size_t limit_mb = 0;
  if (ext->GetNumericProperty("tcmalloc.heap_limit_mb", &limit_mb) && limit_mb != 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "prefaulting memory: tcmalloc has a heap limit (TCMALLOC_HEAP_LIMIT_MB=", limit_mb,
        "), under which it gives free memory back to the kernel"));
  const long page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  const auto start = std::chrono::steady_clock::now();
  // Free memory stays mapped from now on: no incremental release (the
  // default rate gives it back a little at a time), and no decommit of
  // every free (TCMALLOC_AGGRESSIVE_DECOMMIT).
  size_t unmapped_before = 0, unmapped_after = 0;
  ext->GetNumericProperty("tcmalloc.pageheap_unmapped_bytes", &unmapped_before);
  const double old_rate = ext->GetMemoryReleaseRate();
  ext->SetMemoryReleaseRate(0.0);
  ext->SetNumericProperty("tcmalloc.aggressive_memory_decommit", 0);
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
    // One non-zero write per page maps it (a page that stays all zeroes
    // may be merged back to the zero page); volatile, so not elided.
    for (uint64_t off = 0; off < kBlock; off += static_cast<uint64_t>(page)) static_cast<volatile char*>(p)[off] = 1;
    held.push_back(p);
  }
  for (void* p : held) std::free(p);
  if (!status.ok()) {
    ext->ReleaseFreeMemory();  // keep nothing of a failed attempt
    ext->SetMemoryReleaseRate(old_rate);
    return status;
  }
  if (ext->GetNumericProperty("tcmalloc.pageheap_unmapped_bytes", &unmapped_after) && unmapped_after > unmapped_before)
    return absl::InternalError(absl::StrCat("prefaulting memory: tcmalloc unmapped ",
                                            (unmapped_after - unmapped_before) >> 20,
                                            " MiB of it at once (an allocator setting this code does not know)"));
  PrefaultReport r;
  r.bytes = blocks * kBlock;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
#endif
}

// The exit status of a program whose --prefault_mb failed: 1 when the
// machine could not (out of memory, an allocator that unmapped it), 2 when
// the request itself cannot work here (too large, no tcmalloc, a heap limit).
inline int PrefaultExitCode(const absl::Status& s) {
  return absl::IsResourceExhausted(s) || absl::IsInternal(s) ? 1 : 2;
}

// What to tell a run about --prefault_mb afterwards (the benchmarks' note
// and their JSON field prefault_suggest_mb).
struct PrefaultAdvice {
  enum Kind {
    kNone,             // nothing to say
    kSuggest,          // no prefault, and a long run page-faulted: try `mb`
    kTooSmall,         // a prefault the tables outgrew: `mb` covers them
    kFaultsElsewhere,  // a prefault the tables fit in, and faults anyway
                       // (allocations the kept spans could not serve: Limits)
  };
  Kind kind = kNone;
  uint64_t mb = 0;  // kSuggest, kTooSmall: the size to give; else 0
};

// Advice for a run that ended with tables of `table_bytes`, took `faults`
// page faults over `txns` txns in `seconds`, after PrefaultHeap faulted in
// `prefaulted_bytes` (0: no prefault). Advice needs 0.02 faults per txn or
// more and 4096 faults (16 MiB) or more, and, without a prefault, a run of
// 20 s or more (a shorter one hardly slows). The size is the tables' MiB
// plus 25%, rounded up to the next 256 MiB step; with a
// prefault it is advised only if it exceeds what was faulted in (a run
// whose tables fit is never told a larger size for faults that are not
// the tables').
inline PrefaultAdvice AdvisePrefault(uint64_t table_bytes, uint64_t faults, uint64_t txns, double seconds,
                                     uint64_t prefaulted_bytes) {
  PrefaultAdvice a;
  if (txns == 0 || faults < 4096 || static_cast<double>(faults) < 0.02 * static_cast<double>(txns)) return a;
  if (prefaulted_bytes == 0 && seconds < 20) return a;
  const uint64_t table_mb = table_bytes >> 20;  // at most 2^44: neither step below can overflow
  const uint64_t mb = ((table_mb + table_mb / 4) | 255) + 1;
  if (prefaulted_bytes == 0) {
    a.kind = PrefaultAdvice::kSuggest;
  } else if (mb > (prefaulted_bytes >> 20)) {
    a.kind = PrefaultAdvice::kTooSmall;
  } else {
    a.kind = PrefaultAdvice::kFaultsElsewhere;
    return a;
  }
  a.mb = mb;
  return a;
}

}  // namespace detdb

#endif  // DETDB_COMMON_PREFAULT_H_
