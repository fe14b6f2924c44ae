// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), the
// checksum of the input log and, later, of checkpoints. Debian 12's abseil
// has no absl::crc32c, so detdb has its own: the SSE4.2 `crc32` instruction
// when the CPU has it (checked once at run time), a slicing-by-8 table
// otherwise. Both give the values of RFC 3720 (iSCSI), appendix B.4.
//
// Crc32c(data, n) is the CRC of n bytes. Crc32cExtend(crc, data, n) continues
// a CRC: Crc32cExtend(Crc32c(a), b) == Crc32c(a followed by b), and
// Crc32c(p, n) == Crc32cExtend(0, p, n).
//
// Thread-safety: pure functions, thread-safe.
#ifndef DETDB_IO_CRC32C_H_
#define DETDB_IO_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace detdb {

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

namespace crc32c_internal {
// The two implementations, for tests and benchmarks. ExtendHardware
// REQUIRES HardwareAvailable().
bool HardwareAvailable();
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
}  // namespace crc32c_internal

}  // namespace detdb

#endif  // DETDB_IO_CRC32C_H_
