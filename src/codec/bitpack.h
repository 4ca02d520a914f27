// Fixed-width bit packing of unsigned codes into 64-bit little-endian
// words: code i at bits [i*bits, (i+1)*bits). Shared by the quantiser and
// the integer codes of the compressed reductions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mccl::codec {

inline std::size_t packed_bytes(std::size_t n, unsigned bits) { return (n * bits + 63) / 64 * 8; }

// bits in [0, 32]; writes packed_bytes(n, bits) bytes.
void pack(const std::uint32_t* codes, std::size_t n, unsigned bits, std::byte* out);
// Reads packed_bytes(n, bits) bytes.
void unpack(const std::byte* in, std::size_t n, unsigned bits, std::uint32_t* codes);

}  // namespace mccl::codec
