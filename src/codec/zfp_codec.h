// ZFP fixed-rate compression (Mode::kZfp) through libzfp, float32 and
// float64 as 1-D arrays. Fixed rate makes the size a function of the count
// alone and every 4-value ZFP block decodable on its own. No error bound:
// ZFP's error depends on the data. Without libzfp in the build every call
// reports kUnavailable.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"
#include "mccl/types.h"

namespace mccl::codec {

std::size_t zfp_max_bytes(DataType type, std::size_t count, double rate);

// Writes at most zfp_max_bytes() bytes to `out`; `written` gets the size.
common::Status zfp_encode(DataType type, const std::byte* in, std::size_t count, double rate,
                          std::byte* out, std::size_t& written);

common::Status zfp_decode(DataType type, std::span<const std::byte> in, std::size_t count,
                          double rate, std::byte* out);

}  // namespace mccl::codec
