#include "transport/udp/interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "transport/udp/socket.h"

namespace mccl::transport::udp {

namespace {

// Owns the getifaddrs list.
struct IfAddrs {
  ifaddrs* head = nullptr;
  ~IfAddrs() {
    if (head != nullptr) ::freeifaddrs(head);
  }
};

common::Status read_mtu(const std::string& name, int& mtu) {
  Fd fd;
  if (auto s = open_udp_socket(fd); !s) return s;
  ifreq req{};
  std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFMTU, &req) != 0) {
    return common::transport_error("udp transport: SIOCGIFMTU on " + name + ": " +
                                   errno_text(errno));
  }
  mtu = req.ifr_mtu;
  return common::Status::ok();
}

// The link speed the driver reports, in Mbit/s; 0 where it reports none
// (loopback, a link that is down: reading fails, or says -1).
int read_speed_mbit(const std::string& name) {
  std::ifstream in("/sys/class/net/" + name + "/speed");
  long long mbit = 0;
  if (!(in >> mbit) || mbit <= 0 || mbit > 100'000'000) return 0;
  return static_cast<int>(mbit);
}

// The fields of `it` (an AF_INET entry) that need no system call.
Interface from_ifaddrs(const ifaddrs& it) {
  Interface out;
  in_addr a{};
  std::memcpy(&a, &reinterpret_cast<const sockaddr_in*>(it.ifa_addr)->sin_addr, sizeof a);
  out.name = it.ifa_name;
  out.addr = ntohl(a.s_addr);
  if (it.ifa_netmask != nullptr) {
    in_addr m{};
    std::memcpy(&m, &reinterpret_cast<const sockaddr_in*>(it.ifa_netmask)->sin_addr, sizeof m);
    out.netmask = ntohl(m.s_addr);
  }
  out.up = (it.ifa_flags & IFF_UP) != 0;
  out.running = (it.ifa_flags & IFF_RUNNING) != 0;
  out.multicast = (it.ifa_flags & IFF_MULTICAST) != 0;
  out.loopback = (it.ifa_flags & IFF_LOOPBACK) != 0;
  return out;
}

bool is_ipv4(const ifaddrs* it) {
  return it->ifa_addr != nullptr && it->ifa_addr->sa_family == AF_INET;
}

}  // namespace

common::Status list_interfaces(std::vector<Interface>& out) {
  out.clear();
  IfAddrs list;
  if (::getifaddrs(&list.head) != 0) {
    return common::transport_error("udp transport: getifaddrs(): " + errno_text(errno));
  }
  for (ifaddrs* it = list.head; it != nullptr; it = it->ifa_next) {
    if (!is_ipv4(it)) continue;
    out.push_back(from_ifaddrs(*it));
    out.back().index = ::if_nametoindex(it->ifa_name);
    out.back().speed_mbit = read_speed_mbit(it->ifa_name);
  }
  return common::Status::ok();
}

common::Status resolve_interface(const std::string& spec, Interface& out) {
  in_addr wanted{};
  const bool by_addr = ::inet_pton(AF_INET, spec.c_str(), &wanted) == 1;
  IfAddrs list;
  if (::getifaddrs(&list.head) != 0) {
    return common::transport_error("udp transport: getifaddrs(): " + errno_text(errno));
  }
  std::string known;
  for (ifaddrs* it = list.head; it != nullptr; it = it->ifa_next) {
    if (!is_ipv4(it)) continue;
    const Interface here = from_ifaddrs(*it);
    if (!known.empty()) known += ", ";
    known += here.name + " (" + ipv4_text(here.addr) + ")";
    const bool match = by_addr ? here.addr == ntohl(wanted.s_addr) : spec == here.name;
    if (!match) continue;
    out = here;
    out.index = ::if_nametoindex(it->ifa_name);
    if (out.index == 0) {
      return common::transport_error("udp transport: if_nametoindex(" + out.name +
                                     "): " + errno_text(errno));
    }
    out.speed_mbit = read_speed_mbit(out.name);
    return read_mtu(out.name, out.mtu);
  }
  // An interface that is down may have no address listed at all: say so.
  if (!by_addr && ::if_nametoindex(spec.c_str()) != 0) {
    return common::unavailable_error("udp transport: interface " + spec +
                                     " has no IPv4 address (is it up? `ip link set " + spec +
                                     " up`, `ip addr add ... dev " + spec + "`)");
  }
  return common::invalid_argument(
      "udp transport: no interface " + std::string(by_addr ? "with address " : "named ") + spec +
      " (MCCL_UDP_IFACE); interfaces with an IPv4 address: " + (known.empty() ? "none" : known));
}

}  // namespace mccl::transport::udp
