#include "bootstrap/wire.h"

#include <algorithm>
#include <cstring>

#include "common/little_endian.h"

namespace mccl::bootstrap::wire {

static_assert(kHeaderBytes == 4 + 2 + 2 + 4 + 4 + 8 + 8);

void encode(const Header& h, std::span<std::byte, kHeaderBytes> out) {
  std::byte* p = out.data();
  common::put_le<std::uint32_t>(p + 0, kMagic);
  common::put_le<std::uint16_t>(p + 4, kVersion);
  common::put_le<std::uint16_t>(p + 6, static_cast<std::uint16_t>(h.kind));
  common::put_le<std::uint32_t>(p + 8, h.rank);
  common::put_le<std::uint32_t>(p + 12, h.aux);
  common::put_le<std::uint64_t>(p + 16, h.round);
  common::put_le<std::uint64_t>(p + 24, h.length);
}

bool decode(std::span<const std::byte, kHeaderBytes> in, Header& h, std::string& why) {
  const std::byte* p = in.data();
  if (common::get_le<std::uint32_t>(p) != kMagic) {
    why = "bad magic (not an MCCL bootstrap peer)";
    return false;
  }
  if (auto v = common::get_le<std::uint16_t>(p + 4); v != kVersion) {
    why = "wire version " + std::to_string(v) + ", this build speaks " + std::to_string(kVersion);
    return false;
  }
  auto kind = common::get_le<std::uint16_t>(p + 6);
  if (kind < static_cast<std::uint16_t>(Kind::kHello) ||
      kind > static_cast<std::uint16_t>(Kind::kDetach)) {
    why = "unknown frame kind " + std::to_string(kind);
    return false;
  }
  h.kind = static_cast<Kind>(kind);
  h.rank = common::get_le<std::uint32_t>(p + 8);
  h.aux = common::get_le<std::uint32_t>(p + 12);
  h.round = common::get_le<std::uint64_t>(p + 16);
  h.length = common::get_le<std::uint64_t>(p + 24);
  return true;
}

std::vector<std::byte> encode(const Hello& h) {
  const std::size_t n = std::min(h.secret.size(), kMaxSecretBytes);
  std::vector<std::byte> out(kHelloBytes + n);
  common::put_le<std::uint32_t>(out.data(), h.size);
  common::put_le<std::uint32_t>(out.data() + 4, h.wait_ms);
  std::memcpy(out.data() + kHelloBytes, h.secret.data(), n);
  return out;
}

Hello decode_hello(std::span<const std::byte> in) {
  Hello h{
      common::get_le<std::uint32_t>(in.data()), common::get_le<std::uint32_t>(in.data() + 4), {}};
  h.secret.assign(reinterpret_cast<const char*>(in.data()) + kHelloBytes, in.size() - kHelloBytes);
  return h;
}

bool secrets_equal(std::string_view expected, std::string_view given) {
  // Every byte of `expected` is compared whatever `given` holds; a length
  // difference is folded into the same accumulator.
  unsigned diff = expected.size() == given.size() ? 0U : 1U;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const char g = i < given.size() ? given[i] : '\0';
    diff |= static_cast<unsigned char>(expected[i] ^ g);
  }
  // Keeps the compiler from turning the loop into an early-exit compare.
  volatile unsigned sink = diff;
  return sink == 0;
}

}  // namespace mccl::bootstrap::wire
