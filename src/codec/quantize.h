// The error-bounded quantiser (Mode::kBound), block by block.
//
// A block of up to kBlockElems elements is quantised onto a uniform grid
// of step 2*bound (the nearest grid point is at most `bound` away), as
// integer codes relative to the block's smallest, packed at the fewest bits
// that hold the block's range (0 for a constant block). Float rounding of
// the reconstruction can still move a value past the bound, so the encoder
// reconstructs every element exactly as the decoder will and checks it;
// where one fails it retries with a finer grid (step bound, then bound/2),
// and sends the block raw (bit-exact) if that fails too, as it does for
// blocks holding NaN or +-Inf, or values too large for 2^50 steps, or a
// range wider than 31 bits.
//
// Block layout (8-byte aligned): [0] kind (0 quantised, 1 raw), [1] bits,
// [2] grid shift s (step = 2*bound / 2^s), [3,8) zero, [8,16) base code as
// int64; then ceil(n*bits/64) 64-bit words of codes, or the n raw elements
// padded to 8 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/status.h"
#include "mccl/types.h"

namespace mccl::codec {

inline constexpr std::uint32_t kBlockElems = 1024;
inline constexpr std::size_t kBlockHeaderBytes = 16;

// The largest encoding of a block of n elements of `type`.
std::size_t bound_block_max_bytes(DataType type, std::size_t n);

// Encodes the n <= kBlockElems elements at `in` into `out` (room for
// bound_block_max_bytes); returns the bytes written.
std::size_t bound_encode_block(DataType type, const std::byte* in, std::size_t n, double bound,
                               std::byte* out);

// The encoded size of a block of n elements from its 16-byte header, so
// that a decoder can tell whether the whole block has arrived.
// kInvalidArgument for a header no encoder writes.
common::Status bound_block_bytes(DataType type,
                                 std::span<const std::byte, kBlockHeaderBytes> header,
                                 std::size_t n, std::size_t& bytes);

// Decodes one block of n elements from the front of `in` into `out`;
// `used` gets the block's encoded size. kInvalidArgument when the block is
// malformed or truncated.
common::Status bound_decode_block(DataType type, std::span<const std::byte> in, std::size_t n,
                                  double bound, std::byte* out, std::size_t& used);

}  // namespace mccl::codec
