// Mode::kBf16: float32 rounded to bfloat16 (nearest even, NaN kept NaN),
// the cheap 2x baseline every training framework already offers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mccl::codec {

void bf16_encode(const std::byte* in, std::size_t count, std::byte* out);
void bf16_decode(const std::byte* in, std::size_t count, std::byte* out);

}  // namespace mccl::codec
