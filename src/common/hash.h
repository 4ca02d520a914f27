// The non-cryptographic hashes MCCL derives and checks identifiers with
// (multicast groups, collective signatures, UCX session tags) and draws its
// reproducible test coins from (the sim fabric's faults, the UDP drop
// hook): splitmix64 and FNV-1a, written once. Nothing here resists an
// adversary; protocol/auth.h is for that.
#pragma once

#include <cstdint>

namespace mccl::common {

// splitmix64's increment: the odd constant nearest 2^64 / golden ratio.
inline constexpr std::uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ull;

// splitmix64's finaliser: every input bit affects every output bit.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// splitmix64 as a hash of one value: the generator's first output from
// state `x`.
constexpr std::uint64_t splitmix64(std::uint64_t x) { return mix64(x + kSplitmixGamma); }

// One step of the splitmix64 generator: advances `state`, returns the next
// value.
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += kSplitmixGamma;
  return mix64(state);
}

// FNV-1a (64-bit) over the little-endian bytes of 64-bit values. Its last
// bytes reach only the low bits: finish with mix64 (or another avalanche)
// where every bit of the result matters.
class Fnv1a64 {
 public:
  constexpr Fnv1a64& add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h_ ^= (v >> (8 * i)) & 0xFF;
      h_ *= 0x100000001B3ull;
    }
    return *this;
  }
  constexpr std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xCBF29CE484222325ull;
};

}  // namespace mccl::common
