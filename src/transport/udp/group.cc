#include "transport/udp/group.h"

#include "common/hash.h"
#include "common/multicast_group.h"
#include "transport/udp/interface.h"

namespace mccl::transport::udp {
namespace {

std::uint64_t group_hash(std::uint32_t comm_tag, std::uint64_t job_salt) {
  return common::mix64(common::splitmix64(job_salt) ^ (static_cast<std::uint64_t>(comm_tag) + 1));
}

}  // namespace

std::uint32_t derive_group_addr(std::uint32_t comm_tag, std::uint64_t job_salt) {
  return common::scoped_group_ipv4(group_hash(comm_tag, job_salt));
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
