#include "transport/tcp/wire.h"

#include "common/little_endian.h"

namespace mccl::transport::tcp::wire {
namespace {

bool check_magic(const std::byte* p, std::uint32_t magic, const char* what, std::string& why) {
  if (common::get_le<std::uint32_t>(p) != magic) {
    why = std::string("not a TCP transport ") + what + " (bad magic)";
    return false;
  }
  if (common::get_le<std::uint16_t>(p + 4) != kVersion) {
    why = std::string("TCP transport ") + what + " of version " +
          std::to_string(common::get_le<std::uint16_t>(p + 4)) + ", this build speaks " +
          std::to_string(kVersion);
    return false;
  }
  return true;
}

}  // namespace

static_assert(kAddressBytes == 4 + 2 + 2 + 4 + 2 + 2 + 8);
static_assert(kHandshakeBytes == 4 + 2 + 2 + 4 + 4 + 4 + 4 + 8 + 8);
static_assert(kMaxMessageBytes < kControlBit, "a message length never sets the control bit");

void encode(const Address& a, std::span<std::byte, kAddressBytes> out) {
  std::byte* p = out.data();
  common::put_le<std::uint32_t>(p, kAddressMagic);
  common::put_le<std::uint16_t>(p + 4, kVersion);
  common::put_le<std::uint16_t>(p + 6, 0);
  common::put_le<std::uint32_t>(p + 8, a.ipv4);
  common::put_le<std::uint16_t>(p + 12, a.port);
  common::put_le<std::uint16_t>(p + 14, 0);
  common::put_le<std::uint64_t>(p + 16, a.nonce);
}

bool decode(std::span<const std::byte, kAddressBytes> in, Address& a, std::string& why) {
  const std::byte* p = in.data();
  if (!check_magic(p, kAddressMagic, "address", why)) return false;
  a.ipv4 = common::get_le<std::uint32_t>(p + 8);
  a.port = common::get_le<std::uint16_t>(p + 12);
  a.nonce = common::get_le<std::uint64_t>(p + 16);
  if (a.port == 0 || a.ipv4 == 0) {
    why = "an address without IP or port";
    return false;
  }
  return true;
}

void encode(const Handshake& h, std::span<std::byte, kHandshakeBytes> out) {
  std::byte* p = out.data();
  common::put_le<std::uint32_t>(p, kHandshakeMagic);
  common::put_le<std::uint16_t>(p + 4, kVersion);
  common::put_le<std::uint16_t>(p + 6, static_cast<std::uint16_t>(h.kind));
  common::put_le<std::uint32_t>(p + 8, h.from);
  common::put_le<std::uint32_t>(p + 12, h.to);
  common::put_le<std::uint32_t>(p + 16, h.size);
  common::put_le<std::uint32_t>(p + 20, 0);
  common::put_le<std::uint64_t>(p + 24, h.to_nonce);
  common::put_le<std::uint64_t>(p + 32, h.from_nonce);
}

bool decode(std::span<const std::byte, kHandshakeBytes> in, Handshake& h, std::string& why) {
  const std::byte* p = in.data();
  if (!check_magic(p, kHandshakeMagic, "handshake", why)) return false;
  auto kind = common::get_le<std::uint16_t>(p + 6);
  if (kind != static_cast<std::uint16_t>(HandshakeKind::kHello) &&
      kind != static_cast<std::uint16_t>(HandshakeKind::kAccept)) {
    why = "unknown handshake kind " + std::to_string(kind);
    return false;
  }
  h.kind = static_cast<HandshakeKind>(kind);
  h.from = common::get_le<std::uint32_t>(p + 8);
  h.to = common::get_le<std::uint32_t>(p + 12);
  h.size = common::get_le<std::uint32_t>(p + 16);
  h.to_nonce = common::get_le<std::uint64_t>(p + 24);
  h.from_nonce = common::get_le<std::uint64_t>(p + 32);
  return true;
}

}  // namespace mccl::transport::tcp::wire
