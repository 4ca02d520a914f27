#include "setup/hello.h"

#include <algorithm>
#include <cstdint>

#include "common/little_endian.h"

namespace mccl::setup {

using common::get_le;
using common::put_le;

void encode_hello(const Hello& h, std::span<std::byte, kHelloBytes> out) {
  std::fill(out.begin(), out.end(), std::byte{0});
  std::byte* p = out.data();
  put_le<std::uint32_t>(p + 0, h.tag);
  put_le(p + 4, static_cast<std::uint32_t>(h.transport));
  put_le<std::uint64_t>(p + 8, h.salt);
  put_le<std::uint8_t>(p + 16, h.checksum ? 1 : 0);
  put_le<std::uint8_t>(p + 17, h.ib_usable ? 1 : 0);
  put_le(p + 18, static_cast<std::uint8_t>(h.auth_mode));
  put_le(p + 19, static_cast<std::uint8_t>(h.auth_mac));
  put_le<std::uint8_t>(p + 20, h.offloaded ? 1 : 0);
  put_le<std::uint64_t>(p + 24, h.machine);
  std::copy(h.key_share.begin(), h.key_share.end(), p + 32);
  put_le<std::uint32_t>(p + 32 + protocol::kKeyShareBytes, h.epoch);
  put_le<std::uint32_t>(p + 36 + protocol::kKeyShareBytes, h.cores);
}

bool decode_hello(std::span<const std::byte, kHelloBytes> in, Hello& out) {
  const std::byte* p = in.data();
  const auto transport = get_le<std::uint32_t>(p + 4);
  const auto auth_mode = get_le<std::uint8_t>(p + 18);
  const auto auth_mac = get_le<std::uint8_t>(p + 19);
  if (transport > static_cast<std::uint32_t>(TransportKind::kIb)) return false;
  if (auth_mode > static_cast<std::uint32_t>(protocol::AuthMode::kAuto)) return false;
  if (auth_mac > static_cast<std::uint8_t>(protocol::MacKind::kAesGmac)) return false;
  out.tag = get_le<std::uint32_t>(p + 0);
  out.transport = static_cast<TransportKind>(transport);
  out.salt = get_le<std::uint64_t>(p + 8);
  out.checksum = get_le<std::uint8_t>(p + 16) != 0;
  out.ib_usable = get_le<std::uint8_t>(p + 17) != 0;
  out.auth_mode = static_cast<protocol::AuthMode>(auth_mode);
  out.auth_mac = static_cast<protocol::MacKind>(auth_mac);
  out.offloaded = get_le<std::uint8_t>(p + 20) != 0;
  out.machine = get_le<std::uint64_t>(p + 24);
  std::copy(p + 32, p + 32 + out.key_share.size(), out.key_share.begin());
  out.epoch = get_le<std::uint32_t>(p + 32 + protocol::kKeyShareBytes);
  out.cores = get_le<std::uint32_t>(p + 36 + protocol::kKeyShareBytes);
  return true;
}

}  // namespace mccl::setup
