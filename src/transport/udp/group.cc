#include "transport/udp/group.h"

#include "transport/udp/interface.h"

namespace mccl::transport::udp {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

std::uint64_t group_hash(std::uint32_t comm_tag, std::uint64_t job_salt) {
  return mix(mix(job_salt + 0x9E3779B97F4A7C15ull) ^ (static_cast<std::uint64_t>(comm_tag) + 1));
}

}  // namespace

std::uint32_t derive_group_addr(std::uint32_t comm_tag, std::uint64_t job_salt) {
  // 239/8 is the administratively scoped block (RFC 2365). The second octet
  // avoids 0 and 128, whose groups share Ethernet MAC addresses with the
  // 224.0.0.x link-local control groups (only 23 address bits reach the
  // MAC) and are flooded by IGMP-snooping switches, and 255, the
  // site-local scope used by SSDP and friends. The last octet avoids 0
  // and 255 only to keep addresses unsurprising in logs.
  std::uint64_t h = group_hash(comm_tag, job_salt) & 0xFFFFFFFFull;
  std::uint32_t o2 = 1 + static_cast<std::uint32_t>(h % 253);  // 1..253
  if (o2 >= 128) ++o2;                                         // 1..127, 129..254
  h /= 253;
  const auto o3 = static_cast<std::uint32_t>(h % 256);
  h /= 256;
  const auto o4 = 1 + static_cast<std::uint32_t>(h % 254);
  return (239u << 24) | (o2 << 16) | (o3 << 8) | o4;
}

std::uint16_t derive_group_port(std::uint32_t comm_tag, std::uint64_t job_salt) {
  const std::uint64_t h = group_hash(comm_tag, job_salt) >> 32;
  return static_cast<std::uint16_t>(kPortMin + h % (kPortMax - kPortMin + 1u));
}

GroupAddress derive_group(std::uint32_t comm_tag, std::uint64_t job_salt) {
  return GroupAddress{ipv4_text(derive_group_addr(comm_tag, job_salt)),
                      derive_group_port(comm_tag, job_salt)};
}

}  // namespace mccl::transport::udp
