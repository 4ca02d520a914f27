#include "transport/tcp/wire.h"

namespace mccl::transport::tcp::wire {
namespace {

void put_u16(std::byte* p, std::uint16_t v) {
  p[0] = static_cast<std::byte>(v);
  p[1] = static_cast<std::byte>(v >> 8);
}
std::uint16_t get_u16(const std::byte* p) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) |
                                    std::to_integer<unsigned>(p[1]) << 8);
}
void put_u64(std::byte* p, std::uint64_t v) {
  put_u32(p, static_cast<std::uint32_t>(v));
  put_u32(p + 4, static_cast<std::uint32_t>(v >> 32));
}
std::uint64_t get_u64(const std::byte* p) {
  return std::uint64_t{get_u32(p)} | std::uint64_t{get_u32(p + 4)} << 32;
}

bool check_magic(const std::byte* p, std::uint32_t magic, const char* what, std::string& why) {
  if (get_u32(p) != magic) {
    why = std::string("not a TCP transport ") + what + " (bad magic)";
    return false;
  }
  if (get_u16(p + 4) != kVersion) {
    why = std::string("TCP transport ") + what + " of version " + std::to_string(get_u16(p + 4)) +
          ", this build speaks " + std::to_string(kVersion);
    return false;
  }
  return true;
}

}  // namespace

static_assert(kAddressBytes == 4 + 2 + 2 + 4 + 2 + 2 + 8);
static_assert(kHandshakeBytes == 4 + 2 + 2 + 4 + 4 + 4 + 4 + 8 + 8);
static_assert(kMaxMessageBytes <= UINT32_MAX, "the length prefix is 32 bits");

void encode(const Address& a, std::span<std::byte, kAddressBytes> out) {
  std::byte* p = out.data();
  put_u32(p, kAddressMagic);
  put_u16(p + 4, kVersion);
  put_u16(p + 6, 0);
  put_u32(p + 8, a.ipv4);
  put_u16(p + 12, a.port);
  put_u16(p + 14, 0);
  put_u64(p + 16, a.nonce);
}

bool decode(std::span<const std::byte, kAddressBytes> in, Address& a, std::string& why) {
  const std::byte* p = in.data();
  if (!check_magic(p, kAddressMagic, "address", why)) return false;
  a.ipv4 = get_u32(p + 8);
  a.port = get_u16(p + 12);
  a.nonce = get_u64(p + 16);
  if (a.port == 0 || a.ipv4 == 0) {
    why = "an address without IP or port";
    return false;
  }
  return true;
}

void encode(const Handshake& h, std::span<std::byte, kHandshakeBytes> out) {
  std::byte* p = out.data();
  put_u32(p, kHandshakeMagic);
  put_u16(p + 4, kVersion);
  put_u16(p + 6, static_cast<std::uint16_t>(h.kind));
  put_u32(p + 8, h.from);
  put_u32(p + 12, h.to);
  put_u32(p + 16, h.size);
  put_u32(p + 20, 0);
  put_u64(p + 24, h.to_nonce);
  put_u64(p + 32, h.from_nonce);
}

bool decode(std::span<const std::byte, kHandshakeBytes> in, Handshake& h, std::string& why) {
  const std::byte* p = in.data();
  if (!check_magic(p, kHandshakeMagic, "handshake", why)) return false;
  auto kind = get_u16(p + 6);
  if (kind != static_cast<std::uint16_t>(HandshakeKind::kHello) &&
      kind != static_cast<std::uint16_t>(HandshakeKind::kAccept)) {
    why = "unknown handshake kind " + std::to_string(kind);
    return false;
  }
  h.kind = static_cast<HandshakeKind>(kind);
  h.from = get_u32(p + 8);
  h.to = get_u32(p + 12);
  h.size = get_u32(p + 16);
  h.to_nonce = get_u64(p + 24);
  h.from_nonce = get_u64(p + 32);
  return true;
}

}  // namespace mccl::transport::tcp::wire
