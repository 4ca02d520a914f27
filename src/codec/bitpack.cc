#include "codec/bitpack.h"

#include <algorithm>
#include <cstring>

namespace mccl::codec {

namespace {

std::uint64_t word_at(const std::byte* in, std::size_t w) {
  std::uint64_t v;
  std::memcpy(&v, in + 8 * w, 8);
  return v;
}

}  // namespace

void pack(const std::uint32_t* codes, std::size_t n, unsigned bits, std::byte* out) {
  if (bits == 0) return;
  std::uint64_t acc = 0;
  unsigned fill = 0;
  for (std::size_t i = 0; i < n; ++i) {
    acc |= std::uint64_t{codes[i]} << fill;
    fill += bits;
    if (fill >= 64) {
      std::memcpy(out, &acc, 8);
      out += 8;
      fill -= 64;
      acc = fill == 0 ? 0 : std::uint64_t{codes[i]} >> (bits - fill);
    }
  }
  if (fill > 0) std::memcpy(out, &acc, 8);
}

// Element i sits at bit i*bits; it spills into the next word only when it
// does not fit in this one, so no word past the packed size is read.
void unpack(const std::byte* in, std::size_t n, unsigned bits, std::uint32_t* codes) {
  if (bits == 0) {
    std::fill(codes, codes + n, 0u);
    return;
  }
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t p = i * bits;
    const unsigned off = p % 64;
    std::uint64_t v = word_at(in, p / 64) >> off;
    if (off + bits > 64) v |= word_at(in, p / 64 + 1) << (64 - off);
    codes[i] = static_cast<std::uint32_t>(v & mask);
  }
}

}  // namespace mccl::codec
