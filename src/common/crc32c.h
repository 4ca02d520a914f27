// CRC32C (Castagnoli), the checksum that protects every datagram. Uses the
// SSE4.2 instruction where the CPU has it, a table otherwise; both give the
// same value (RFC 3720 test vectors in the unit tests).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mccl::common {

// Continues a running CRC: start with crc = 0.
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len);

}  // namespace mccl::common
