// create_udp_transport: checks the configuration, finds the interface, and
// sets up the two sockets described in udp_transport.h.
#include "transport/udp/udp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <fstream>

#include "common/log.h"
#include "mccl/error.h"
#include "transport/udp/endpoint.h"
#include "transport/udp/interface.h"
#include "transport/udp/link_cost.h"

namespace mccl::transport::udp {
namespace {

constexpr std::size_t kMaxUdpPayload = 65507;  // 65535 - 20 (IPv4) - 8 (UDP)
constexpr int kSendBufBytes = 4 << 20;         // clamped by net.core.wmem_max; best effort

// How a kernel offload (GSO on send, GRO on receive) is asked for.
enum class OffloadMode { kAuto, kOn, kOff };

// "auto" | "on" | "off" of `setting` (for the message): the settings table
// checks the environment's value, but a config may carry anything.
common::Status parse_offload(const std::string& value, const char* setting, OffloadMode& out) {
  if (value == "auto") return out = OffloadMode::kAuto, common::Status::ok();
  if (value == "on") return out = OffloadMode::kOn, common::Status::ok();
  if (value == "off") return out = OffloadMode::kOff, common::Status::ok();
  return common::invalid_argument(std::string("udp transport: ") + setting +
                                  " must be auto, on or off, not '" + value + "'");
}

struct OffloadModes {
  OffloadMode gso = OffloadMode::kAuto;
  OffloadMode gro = OffloadMode::kAuto;
};

// The config's values that are checked rather than taken as they are.
common::Status check_config(const UdpConfig& c, OffloadModes& modes) {
  if (c.test_drop_permille < 0 || c.test_drop_permille > 1000) {
    return common::invalid_argument("udp transport: test_drop_permille must be in [0, 1000], not " +
                                    std::to_string(c.test_drop_permille));
  }
  if (c.iface.empty() || c.iface == "auto") {
    return common::invalid_argument(
        "udp transport: no interface named (MCCL_UDP_IFACE=auto is resolved by the ranks "
        "together when a communicator is created, discover_interface)");
  }
  if (auto st = parse_offload(c.gso, "gso (MCCL_UDP_GSO)", modes.gso); !st) return st;
  return parse_offload(c.gro, "gro (MCCL_UDP_GRO)", modes.gro);
}

sockaddr_in sockaddr_of(std::uint32_t addr, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr);
  sa.sin_port = htons(port);
  return sa;
}

std::string read_sysctl(const char* path) {
  std::ifstream in(path);
  std::string value;
  if (!(in >> value)) return "unknown";
  return value;
}

// Below MCCL_UDP_RCVBUF, bursts overflow the socket and are repaired
// over the slow path. Said once per process: every communicator hits it.
void warn_small_rcvbuf(int rank, std::size_t asked, std::size_t got) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  common::logf(common::LogLevel::kWarn, rank,
               "udp transport: receive buffer is %zu bytes, not the %zu asked for "
               "(MCCL_UDP_RCVBUF): net.core.rmem_max is %s. Datagrams are lost when it "
               "overflows; run `sysctl -w net.core.rmem_max=%zu` or give the process "
               "CAP_NET_ADMIN",
               got, asked, read_sysctl("/proc/sys/net/core/rmem_max").c_str(), asked);
}

// SO_RCVBUFFORCE when privileged, else SO_RCVBUF (which the kernel
// silently clamps to net.core.rmem_max); then read back what was granted.
common::Status set_rcvbuf(int fd, std::size_t want, int rank, UdpInfo& info) {
  info.rcvbuf_requested = want;
  if (want > 0) {
    const int v = static_cast<int>(std::min<std::size_t>(want, INT_MAX / 2));
    info.rcvbuf_forced = ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) == 0;
    if (!info.rcvbuf_forced) {
      if (auto s = set_int_option(fd, SOL_SOCKET, SO_RCVBUF, v, "SO_RCVBUF"); !s) return s;
    }
  }
  int got = 0;
  if (auto s = get_int_option(fd, SOL_SOCKET, SO_RCVBUF, got, "SO_RCVBUF"); !s) return s;
  info.rcvbuf_effective = static_cast<std::size_t>(got) / 2;  // the kernel doubles it for overhead
  if (info.rcvbuf_effective < want) warn_small_rcvbuf(rank, want, info.rcvbuf_effective);
  return common::Status::ok();
}

// The fix for a route or membership failure on `iface`.
std::string multicast_hint(const Interface& iface) {
  if (iface.loopback) {
    return "bring it up (`ip link set " + iface.name + " up`); if that is not enough, " +
           "`ip link set " + iface.name + " multicast on` and `ip route add 224.0.0.0/4 dev " +
           iface.name + "`";
  }
  return "check `ip link show " + iface.name + "` shows UP and MULTICAST (`ip link set " +
         iface.name + " multicast on`) and that a firewall lets 239.0.0.0/8 through";
}

common::Status open_send_socket(const Interface& iface, std::uint32_t group, std::uint16_t port,
                                const std::string& where, Fd& fd, std::uint16_t& own_port) {
  if (auto s = open_udp_socket(fd); !s) return s;
  ip_mreqn mif{};
  mif.imr_address.s_addr = htonl(iface.addr);
  mif.imr_ifindex = static_cast<int>(iface.index);
  if (::setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof mif) != 0) {
    return common::unavailable_error(where + ": IP_MULTICAST_IF: " + errno_text(errno) + "; " +
                                     multicast_hint(iface));
  }
  if (auto s = set_int_option(fd.get(), IPPROTO_IP, IP_MULTICAST_TTL, 1, "IP_MULTICAST_TTL"); !s) {
    return s;
  }
  if (auto s = set_int_option(fd.get(), IPPROTO_IP, IP_MULTICAST_LOOP, 1, "IP_MULTICAST_LOOP");
      !s) {
    return s;
  }
  // Without IP_RECVERR a datagram the local qdisc drops (a full tbf or
  // pfifo on the egress device) is reported as sent; with it, sendmmsg
  // stops there with ENOBUFS, which send() turns into "busy". The error
  // queue it also enables stays empty: multicast draws no ICMP errors.
  if (auto s = set_int_option(fd.get(), IPPROTO_IP, IP_RECVERR, 1, "IP_RECVERR"); !s) return s;
  (void)set_int_option(fd.get(), SOL_SOCKET, SO_SNDBUF, kSendBufBytes, "SO_SNDBUF");
  // Nothing is ever read from this socket.
  (void)attach_drop_all_filter(fd.get());

  sockaddr_in local = sockaddr_of(iface.addr, 0);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    return common::transport_error(where + ": bind(" + ipv4_text(iface.addr) +
                                   ":0): " + errno_text(errno));
  }
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return common::transport_error(where + ": getsockname: " + errno_text(errno));
  }
  own_port = ntohs(local.sin_port);
  // connect() looks the route up without sending anything: a missing
  // multicast route shows here rather than at the first send. It also
  // saves a route lookup per datagram.
  sockaddr_in dst = sockaddr_of(group, port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&dst), sizeof dst) != 0) {
    return common::unavailable_error(where + ": no multicast route (connect: " + errno_text(errno) +
                                     "); " + multicast_hint(iface));
  }
  return common::Status::ok();
}

// Does this kernel take UDP_SEGMENT on `fd`? Setting the socket option is
// the cheap probe (ENOPROTOOPT before Linux 4.18); it is cleared again
// because a socket-wide segment size would also apply to the single
// datagrams send() passes without a control message. A device that cannot
// checksum-offload refuses only at the first send (EIO): the endpoint
// handles that.
common::Status probe_gso(int fd, OffloadMode mode, std::size_t segment, const std::string& where,
                         int rank, bool& usable) {
  usable = false;
  if (mode == OffloadMode::kOff) return common::Status::ok();
  const int size = static_cast<int>(segment);
  if (::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, sizeof size) == 0) {
    const int none = 0;
    usable = ::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &none, sizeof none) == 0;
    if (usable) return common::Status::ok();
  }
  const int err = errno;
  if (mode == OffloadMode::kOn) {
    return common::unavailable_error(where +
                                     ": MCCL_UDP_GSO=on but the kernel refuses UDP_SEGMENT (" +
                                     errno_text(err) + "); set MCCL_UDP_GSO=auto or off");
  }
  common::logf(common::LogLevel::kInfo, rank,
               "%s: UDP_SEGMENT refused (%s); sending one datagram per packet", where.c_str(),
               errno_text(err).c_str());
  return common::Status::ok();
}

// Turns UDP_GRO on for the receive socket (Linux 5.0): the kernel then hands
// a run of one sender's equal-size datagrams (a GSO superpacket that was
// never cut, or what the device's GRO coalesced) to one read, with the
// segment size in a control message.
common::Status enable_gro(int fd, OffloadMode mode, const std::string& where, int rank,
                          bool& usable) {
  usable = false;
  if (mode == OffloadMode::kOff) return common::Status::ok();
  const int on = 1;
  usable = ::setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
  if (usable) return common::Status::ok();
  const int err = errno;
  if (mode == OffloadMode::kOn) {
    return common::unavailable_error(where + ": MCCL_UDP_GRO=on but the kernel refuses UDP_GRO (" +
                                     errno_text(err) + "); set MCCL_UDP_GRO=auto or off");
  }
  common::logf(common::LogLevel::kInfo, rank,
               "%s: UDP_GRO refused (%s); reading one datagram per receive slot", where.c_str(),
               errno_text(err).c_str());
  return common::Status::ok();
}

common::Status open_recv_socket(const Interface& iface, std::uint32_t group, std::uint16_t port,
                                std::uint16_t own_port, std::size_t rcvbuf,
                                const std::string& where, int rank, Fd& fd, UdpInfo& info) {
  if (auto s = open_udp_socket(fd); !s) return s;
  if (auto s = set_int_option(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR"); !s) return s;
  if (auto s = set_int_option(fd.get(), SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT"); !s) return s;
  // Only the groups this socket joined, never those joined by others.
  if (auto s = set_int_option(fd.get(), IPPROTO_IP, IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL"); !s) {
    return s;
  }
  if (auto s = set_rcvbuf(fd.get(), rcvbuf, rank, info); !s) return s;
  // Before bind, so not one own datagram slips in; poll() checks again
  // should this kernel refuse classic BPF on sockets.
  info.kernel_self_filter = attach_source_filter(fd.get(), iface.addr, own_port).is_ok();

  sockaddr_in local = sockaddr_of(group, port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0) {
    const int err = errno;
    std::string hint = err == EADDRINUSE
                           ? " (another program holds this port without SO_REUSEADDR; pick "
                             "another job salt)"
                           : "";
    return common::transport_error(where + ": bind: " + errno_text(err) + hint);
  }
  ip_mreqn join{};
  join.imr_multiaddr.s_addr = htonl(group);
  join.imr_address.s_addr = htonl(iface.addr);
  join.imr_ifindex = static_cast<int>(iface.index);
  if (::setsockopt(fd.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join) != 0) {
    return common::unavailable_error(where + ": IP_ADD_MEMBERSHIP: " + errno_text(errno) + "; " +
                                     multicast_hint(iface));
  }
  return common::Status::ok();
}

// What the endpoint will say about its link: the interface, the group,
// the rate the senders pace to and where it came from, the drop hook.
void describe_link(const Interface& iface, const UdpConfig& config, UdpInfo& info) {
  info.iface_name = iface.name;
  info.iface_addr = ipv4_text(iface.addr);
  info.iface_mtu = iface.mtu;
  info.iface_loopback = iface.loopback;
  info.group = derive_group(config.comm_tag, config.job_salt);
  // The link rate the senders pace to: the one given, else the one the
  // interface reports. Where neither says, a real link's rate is estimated
  // by the protocol from loss (link_rate_unknown); loopback has no link to
  // overrun and stays unpaced.
  const double given = config.rate_mbit;
  info.rate_mbit = given > 0 ? given : given < 0 ? 0 : iface.speed_mbit;
  info.rate_unknown = given == 0 && iface.speed_mbit == 0 && !iface.loopback;
  info.rate_reported = given == 0 && iface.speed_mbit > 0;
  info.rate_source = given > 0          ? "MCCL_UDP_RATE_MBIT"
                     : given < 0        ? "unpaced by setting"
                     : iface.speed_mbit ? "interface speed"
                     : info.rate_unknown
                         ? "interface reports no speed: estimated from loss (MCCL_PROTO_RATE_ADAPT)"
                         : "loopback: unpaced";
  info.frame_overhead = config.frame_overhead;
  info.test_drop_permille = config.test_drop_permille;
  // The rank too: the offload daemon holds every rank of its host in one
  // process, and with the process id alone they dropped the same datagrams
  // of their streams, or (one run in 15 of a 4-rank test) none at all.
  info.test_drop_seed = config.test_drop_seed != 0
                            ? config.test_drop_seed
                            : (static_cast<std::uint64_t>(config.comm_tag) << 32) ^
                                  static_cast<std::uint64_t>(::getpid()) ^
                                  (static_cast<std::uint64_t>(config.rank) * 0x9E3779B97F4A7C15u);
}

// The interface can carry the group's datagrams.
common::Status check_interface(const Interface& iface, const std::string& where) {
  if (!iface.up) {
    return common::unavailable_error(where + ": interface " + iface.name +
                                     " is down; `ip link set " + iface.name + " up`");
  }
  if (!iface.loopback && !iface.multicast) {
    return common::unavailable_error(where + ": interface " + iface.name +
                                     " does not do multicast; `ip link set " + iface.name +
                                     " multicast on`");
  }
  if (iface.mtu <= static_cast<int>(kIpUdpHeader)) {
    return common::unavailable_error(where + ": interface MTU " + std::to_string(iface.mtu) +
                                     " leaves no room for a datagram");
  }
  return common::Status::ok();
}

}  // namespace

common::Status create_udp_transport(const UdpConfig& config,
                                    std::unique_ptr<DatagramTransport>& out) {
  OffloadModes modes;
  if (auto st = check_config(config, modes); !st) return st;
  Interface iface;
  if (auto s = resolve_interface(config.iface, iface); !s) return s;

  EndpointSetup setup;
  UdpInfo& info = setup.info;
  describe_link(iface, config, info);
  const std::string where = "udp transport (" + iface.name + ", group " + info.group.ip + ":" +
                            std::to_string(info.group.port) + ")";
  if (auto s = check_interface(iface, where); !s) return s;
  setup.mtu = std::min(
      {static_cast<std::size_t>(iface.mtu - kIpUdpHeader), kMaxUdpPayload, config.max_datagram});

  const std::uint32_t group = derive_group_addr(config.comm_tag, config.job_salt);
  const std::uint16_t port = info.group.port;
  if (auto s = open_send_socket(iface, group, port, where, setup.send_fd, info.send_port); !s) {
    return s;
  }
  if (auto s = open_recv_socket(iface, group, port, info.send_port, config.rcvbuf_bytes, where,
                                config.rank, setup.recv_fd, info);
      !s) {
    return s;
  }
  if (auto s = probe_gso(setup.send_fd.get(), modes.gso, setup.mtu, where, config.rank, info.gso);
      !s) {
    return s;
  }
  setup.gso_required = modes.gso == OffloadMode::kOn;
  if (auto s = enable_gro(setup.recv_fd.get(), modes.gro, where, config.rank, info.gro); !s)
    return s;
  int sndbuf = 0;
  (void)get_int_option(setup.send_fd.get(), SOL_SOCKET, SO_SNDBUF, sndbuf, "SO_SNDBUF");
  // The kernel charges a datagram its size plus roughly 1 KiB of skb.
  setup.max_in_flight =
      std::max<std::size_t>(1, static_cast<std::size_t>(sndbuf) / (setup.mtu + 1024));
  setup.self_addr = iface.addr;
  setup.self_port = info.send_port;
  setup.rank = config.rank;

  common::logf(common::LogLevel::kInfo, config.rank,
               "%s: mtu %zu, rcvbuf %zu%s, link rate %g Mbit/s (%s; paced to %g%% of it, %zu "
               "bytes per frame beyond the IP packet), gso %s, gro %s, sending from port %u",
               where.c_str(), setup.mtu, info.rcvbuf_effective,
               info.rcvbuf_forced ? " (forced)" : "", info.rate_mbit, info.rate_source,
               kPacedShareOfLink * 100, info.frame_overhead, info.gso ? "on" : "off",
               info.gro ? "on" : "off", static_cast<unsigned>(info.send_port));
  if (config.test_drop_permille > 0) {
    // Loud once, so a forgotten MCCL_UDP_TEST_DROP_PERMILLE is noticed; the
    // seed of every endpoint at info level, so a failing run reproduces.
    static std::atomic<bool> warned{false};
    const auto level = warned.exchange(true) ? common::LogLevel::kInfo : common::LogLevel::kWarn;
    common::logf(level, config.rank,
                 "%s: test hook on, dropping %d of 1000 received datagrams (seed %llu)",
                 where.c_str(), config.test_drop_permille,
                 static_cast<unsigned long long>(info.test_drop_seed));
  }
  out = std::make_unique<UdpEndpoint>(std::move(setup));
  return common::Status::ok();
}

}  // namespace mccl::transport::udp
