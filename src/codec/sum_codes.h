// Integer codes for compressed reductions (sum): every rank quantises its
// input once onto the same grid, the ring adds the integer codes exactly
// and packs each partial sum it forwards, and the result is dequantised
// once. No re-quantisation along the ring, so the error does not build up
// hop by hop.
//
// The bound (docs/compression.md): with n ranks and bound b the grid step
// is s = 2b/n * (1 - 2^-6). Each input is off by at most s/2 plus the
// float64 rounding of x * (1/s) (at most 2^-8 s for |x/s| < 2^44), the sum
// of codes is exact, and dequantising Q*s in float64 errs by at most
// 2^-9 s; in all at most b(1 - 2^-6)(1 + 2^-7 + 2^-8) < b. Narrowing to the datatype adds half a
// unit in its last place:
//   |result - sum_r x_r| <= b + ulp(result)/2, whatever n is.
// An input that is NaN, +-Inf or beyond kSpan/n steps cannot be coded: it
// becomes a poison code, and the elements it touches come out NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "mccl/types.h"

namespace mccl::codec {

inline constexpr std::int64_t kSumSpan = std::int64_t{1} << 44;
// At least kSumSpan away from any sum of valid codes, and n of them fit an
// int64 for n below 2^17 (sum_supported).
inline constexpr std::int64_t kSumPoison = std::int64_t{1} << 45;

bool sum_supported(int ranks);
double sum_step(double bound, int ranks);

// Codes of `count` elements of a float `type` at `in`.
void quantise_for_sum(DataType type, const std::byte* in, std::size_t count, double step, int ranks,
                      std::int64_t* codes);
// The sum's codes back to `type` (poisoned ones to NaN).
void dequantise_sum(DataType type, const std::int64_t* codes, std::size_t count, double step,
                    std::byte* out);

// Packs int64 codes in blocks of 1024: per block a 16-byte header (kind,
// bits, base) and the offsets from the block's minimum at the fewest bits,
// or the raw int64 values where the range needs more than 32 bits.
void pack_codes(const std::int64_t* codes, std::size_t count, std::vector<std::byte>& out);
// Unpacks exactly `count` codes; kInvalidArgument when `in` is malformed or
// does not hold exactly that many.
common::Status unpack_codes(std::span<const std::byte> in, std::size_t count, std::int64_t* out);

// The ring's hops in one pass each, with the same bytes as the separate
// calls (quantise_for_sum, unpack_codes, the int64 sum, pack_codes) and so
// the same bits in the result:
//   pack_quantised  this rank's codes of `in`, packed into `out`;
//   add_and_pack    the packed partial `packed` plus this rank's codes of
//                   `in`, packed into `out`;
//   add_to_codes    the same sums as int64 codes into `out`.
// `count` elements of `type` at `in`; `packed` must hold exactly `count`
// codes (kInvalidArgument otherwise, and `out` is then undefined).
void pack_quantised(DataType type, const std::byte* in, std::size_t count, double step, int ranks,
                    std::vector<std::byte>& out);
common::Status add_and_pack(std::span<const std::byte> packed, DataType type, const std::byte* in,
                            std::size_t count, double step, int ranks, std::vector<std::byte>& out);
common::Status add_to_codes(std::span<const std::byte> packed, DataType type, const std::byte* in,
                            std::size_t count, double step, int ranks, std::int64_t* out);

}  // namespace mccl::codec
