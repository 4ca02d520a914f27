// The encoded stream's layout (docs/compression.md has the table). A
// 32-byte header, little-endian:
//   [0,4)   magic "MCZ1"
//   [4]     mode actually used (codec::Mode; kOff: the elements follow raw)
//   [5]     element type (mccl::DataType)
//   [6,8)   zero
//   [8,12)  elements per block (kBound)
//   [12,16) zero
//   [16,24) element count
//   [24,32) the mode's parameter as a float64: bound (kBound), rate (kZfp)
// then the mode's payload. Payload words are in the host's byte order, as
// the uncompressed data of a collective is (MCCL's ranks share one).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/codec.h"

namespace mccl::codec {

static_assert(std::endian::native == std::endian::little,
              "the codec's payload words are little-endian host words");

inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::uint32_t kMagic = 0x315A434Du;  // "MCZ1"

struct StreamHeader {
  Mode mode = Mode::kOff;
  DataType type = DataType::kFloat32;
  std::uint32_t block_elems = 0;
  std::uint64_t count = 0;
  double param = 0.0;
};

void write_header(const StreamHeader& h, std::byte* out);
// Checks magic, zero fields and a known mode and type.
common::Status read_header(std::span<const std::byte> in, StreamHeader& out);

}  // namespace mccl::codec
