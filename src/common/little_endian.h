// Little-endian integers on the wire, written and read byte by byte: no
// struct is ever copied onto the wire, so neither the host's byte order nor
// its alignment matters. Every wire format of MCCL (protocol datagrams, the
// bootstrap's messages, the TCP and UCX transports' handshakes) uses these.
#pragma once

#include <concepts>
#include <cstddef>

namespace mccl::common {

template <std::unsigned_integral T>
constexpr void put_le(std::byte* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

template <std::unsigned_integral T>
constexpr T get_le(const std::byte* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(std::to_integer<T>(p[i]) << (8 * i));
  return v;
}

}  // namespace mccl::common
