// What the multicast transports (UDP, InfiniBand UD) share in deriving a
// communicator's group from its tag and the job's salt with no message:
// the hash's mixing step and the mapping of a hash onto the group block.
// Each transport seeds the hash differently, so that the two never pick the
// same group for one tag (IPoIB and UDP may share a host).
#pragma once

#include <cstdint>

#include "common/hash.h"  // mix64, the mixing step

namespace mccl::common {

// A host-byte-order IPv4 group in 239/8, the administratively scoped block
// (RFC 2365), drawn from the low 32 bits of `hash`. The second octet avoids
// 0 and 128, whose groups share Ethernet MAC addresses with the 224.0.0.x
// link-local control groups (only 23 address bits reach the MAC) and are
// flooded by IGMP-snooping switches, and 255, the site-local scope used by
// SSDP and friends. The last octet avoids 0 and 255 only to keep addresses
// unsurprising in logs.
constexpr std::uint32_t scoped_group_ipv4(std::uint64_t hash) {
  std::uint64_t h = hash & 0xFFFFFFFFull;
  std::uint32_t o2 = 1 + static_cast<std::uint32_t>(h % 253);  // 1..253
  if (o2 >= 128) ++o2;                                         // 1..127, 129..254
  h /= 253;
  const auto o3 = static_cast<std::uint32_t>(h % 256);
  h /= 256;
  const auto o4 = 1 + static_cast<std::uint32_t>(h % 254);
  return (239u << 24) | (o2 << 16) | (o3 << 8) | o4;
}

}  // namespace mccl::common
