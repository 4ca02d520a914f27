// Finding the network interface a UDP communicator uses: by name ("eth0",
// "lo") or by one of its IPv4 addresses ("10.0.0.2"), or listing those a
// host could use (discovery.h chooses among them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ipv4.h"
#include "common/status.h"

namespace mccl::transport::udp {

struct Interface {
  std::string name;
  std::uint32_t addr = 0;     // IPv4 address, host byte order
  std::uint32_t netmask = 0;  // of that address, host byte order
  unsigned index = 0;         // if_nametoindex
  int mtu = 0;                // SIOCGIFMTU, bytes of IP packet
  int speed_mbit = 0;         // /sys/class/net/NAME/speed; 0 where the device says none (lo)
  bool up = false;
  bool running = false;
  bool multicast = false;  // IFF_MULTICAST
  bool loopback = false;   // IFF_LOOPBACK
};

// Fails with kInvalidArgument naming the interfaces that do exist when
// `spec` matches none with an IPv4 address.
common::Status resolve_interface(const std::string& spec, Interface& out);

// Every IPv4 address of this host's interfaces (one entry per address, in
// getifaddrs order), whatever their flags; `mtu` is not read (0). Fails with kTransportError when
// getifaddrs() does.
common::Status list_interfaces(std::vector<Interface>& out);

using common::ipv4_text;  // "127.0.0.1" from a host-order address

}  // namespace mccl::transport::udp
