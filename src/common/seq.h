// Wrap-safe comparison of 32-bit sequence numbers (serial-number arithmetic,
// as RFC 1982): a is "before" b when b - a, taken modulo 2^32, lies in
// (0, 2^31). Valid while live sequence numbers span less than 2^31.
#pragma once

#include <cstdint>

namespace mccl::common {

// b - a read as signed is positive exactly when it lies in (0, 2^31). The
// other spelling, (int32)(a - b) < 0, also holds at distance 2^31, where it
// would make each number "before" the other.
constexpr bool seq_before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(b - a) > 0;
}
constexpr bool seq_after(std::uint32_t a, std::uint32_t b) { return seq_before(b, a); }
// Distance from a forward to b (b - a mod 2^32).
constexpr std::uint32_t seq_distance(std::uint32_t a, std::uint32_t b) { return b - a; }

}  // namespace mccl::common
