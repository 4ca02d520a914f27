#include "transport/ibud/group.h"

#include <arpa/inet.h>

#include <cstring>

#include "common/multicast_group.h"

namespace mccl::transport::ibud {
namespace {

// Distinct from the UDP transport's hash, so the two never pick the same
// group for one tag (IPoIB and UDP may share a host).
std::uint64_t ib_hash(std::uint32_t comm_tag, std::uint64_t job_salt) {
  using common::mix64;
  return mix64(mix64(job_salt ^ 0x1B0D1B0D1B0D1B0Dull) +
               (static_cast<std::uint64_t>(comm_tag) << 1) + 1);
}

}  // namespace

std::uint32_t derive_group_ipv4(std::uint32_t comm_tag, std::uint64_t job_salt) {
  // Only the low 28 bits reach the MGID, all of which are drawn from the
  // hash.
  return common::scoped_group_ipv4(ib_hash(comm_tag, job_salt));
}

std::uint32_t derive_qkey(std::uint32_t comm_tag, std::uint64_t job_salt) {
  auto q = static_cast<std::uint32_t>(ib_hash(comm_tag, job_salt) >> 32) & 0x7FFFFFFFu;
  // 0 looks unset in dumps; 0x01234567 is RDMA_UDP_QKEY, used by every
  // other rdma_cm UD application.
  if (q == 0 || q == 0x01234567u) q ^= 0x00010001u;
  return q;
}

common::Status parse_mgid(const std::string& text, Gid& out) {
  in6_addr a{};
  if (::inet_pton(AF_INET6, text.c_str(), &a) != 1) {
    return common::invalid_argument("MGID \"" + text +
                                    "\" is not a GID in IPv6 notation (e.g. ff12:401b:ffff::1)");
  }
  std::memcpy(out.data(), &a, out.size());
  if (out[0] != 0xFF) {
    return common::invalid_argument("MGID \"" + text +
                                    "\" is not a multicast GID: it must start with ff");
  }
  return common::Status::ok();
}

std::string gid_text(const Gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  in6_addr a{};
  std::memcpy(&a, gid.data(), gid.size());
  ::inet_ntop(AF_INET6, &a, buf, sizeof buf);
  return buf;
}

std::size_t mtu_bytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

std::size_t ib_mtu_at_most(std::size_t bytes) {
  std::size_t m = 4096;
  while (m >= 256 && m > bytes) m /= 2;
  return m >= 256 ? m : 0;
}

}  // namespace mccl::transport::ibud
