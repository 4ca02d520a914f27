// The multicast group and port of a communicator, derived from its tag and
// the job's salt so that every rank computes the same pair with no message,
// and two jobs (or two communicators of one job) land on different groups.
#pragma once

#include <cstdint>
#include <string>

namespace mccl::transport::udp {

// Ports are drawn from [kPortMin, kPortMax]: above the registered services
// most hosts run and below the usual ephemeral range (net.ipv4.ip_local_port_range).
inline constexpr std::uint16_t kPortMin = 20000;
inline constexpr std::uint16_t kPortMax = 59999;

struct GroupAddress {
  std::string ip;          // dotted quad in 239.0.0.0/8
  std::uint16_t port = 0;  // in [kPortMin, kPortMax]
};

// The multicast group/port a communicator uses, for logs and tests.
GroupAddress derive_group(std::uint32_t comm_tag, std::uint64_t job_salt);

// The same group as a host-byte-order IPv4 address.
std::uint32_t derive_group_addr(std::uint32_t comm_tag, std::uint64_t job_salt);
std::uint16_t derive_group_port(std::uint32_t comm_tag, std::uint64_t job_salt);

}  // namespace mccl::transport::udp
