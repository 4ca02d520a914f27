#include "setup/hello.h"

#include <algorithm>

namespace mccl::setup {

namespace {

void put(std::byte* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint64_t get(const std::byte* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{std::to_integer<std::uint8_t>(p[i])} << (8 * i);
  return v;
}

}  // namespace

void encode_hello(const Hello& h, std::span<std::byte, kHelloBytes> out) {
  std::fill(out.begin(), out.end(), std::byte{0});
  std::byte* p = out.data();
  put(p + 0, h.tag, 4);
  put(p + 4, static_cast<std::uint32_t>(h.transport), 4);
  put(p + 8, h.salt, 8);
  put(p + 16, h.checksum ? 1 : 0, 1);
  put(p + 17, h.ib_usable ? 1 : 0, 1);
  put(p + 18, static_cast<std::uint32_t>(h.auth_mode), 1);
  put(p + 19, h.auth_built ? 1 : 0, 1);
  put(p + 20, h.offloaded ? 1 : 0, 1);
  put(p + 24, h.machine, 8);
  std::copy(h.key.begin(), h.key.end(), p + 32);
}

bool decode_hello(std::span<const std::byte, kHelloBytes> in, Hello& out) {
  const std::byte* p = in.data();
  const auto transport = get(p + 4, 4);
  const auto auth_mode = get(p + 18, 1);
  if (transport > static_cast<std::uint32_t>(TransportKind::kIb)) return false;
  if (auth_mode > static_cast<std::uint32_t>(protocol::AuthMode::kAuto)) return false;
  out.tag = static_cast<std::uint32_t>(get(p + 0, 4));
  out.transport = static_cast<TransportKind>(transport);
  out.salt = get(p + 8, 8);
  out.checksum = get(p + 16, 1) != 0;
  out.ib_usable = get(p + 17, 1) != 0;
  out.auth_mode = static_cast<protocol::AuthMode>(auth_mode);
  out.auth_built = get(p + 19, 1) != 0;
  out.offloaded = get(p + 20, 1) != 0;
  out.machine = get(p + 24, 8);
  std::copy(p + 32, p + 32 + out.key.size(), out.key.begin());
  return true;
}

}  // namespace mccl::setup
