#include "codec/bf16.h"

#include <cstring>

#include "common/half.h"

namespace mccl::codec {

namespace {
constexpr std::size_t kTile = 1024;  // staged through the stack: buffers may be unaligned
}

void bf16_encode(const std::byte* in, std::size_t count, std::byte* out) {
  float src[kTile];
  std::uint16_t dst[kTile];
  for (std::size_t at = 0; at < count; at += kTile) {
    const std::size_t n = count - at < kTile ? count - at : kTile;
    std::memcpy(src, in + at * 4, n * 4);
    for (std::size_t i = 0; i < n; ++i) dst[i] = common::bf16_out(src[i]);
    std::memcpy(out + at * 2, dst, n * 2);
  }
}

void bf16_decode(const std::byte* in, std::size_t count, std::byte* out) {
  std::uint16_t src[kTile];
  float dst[kTile];
  for (std::size_t at = 0; at < count; at += kTile) {
    const std::size_t n = count - at < kTile ? count - at : kTile;
    std::memcpy(src, in + at * 2, n * 2);
    for (std::size_t i = 0; i < n; ++i) dst[i] = common::bf16_in(src[i]);
    std::memcpy(out + at * 4, dst, n * 4);
  }
}

}  // namespace mccl::codec
