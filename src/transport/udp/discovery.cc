#include "transport/udp/discovery.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/host.h"
#include "transport/udp/socket.h"

namespace mccl::transport::udp {

namespace {

std::string name_of(const IfaceReport::Candidate& c) {
  return std::string(c.name.data(), strnlen(c.name.data(), c.name.size()));
}

int prefix_of(std::uint32_t netmask) { return std::popcount(netmask); }

std::string subnet_text(std::uint32_t addr, std::uint32_t netmask) {
  return ipv4_text(addr & netmask) + "/" + std::to_string(prefix_of(netmask));
}

// The IPv4 address in "host:port", "tcp4://host:port" or a PMIx URI
// ("pmix-server.12;tcp4://10.0.0.1:4567"); 0 when none parses.
std::uint32_t address_in(std::string text) {
  if (auto at = text.find("tcp4://"); at != std::string::npos) text = text.substr(at + 7);
  if (auto colon = text.rfind(':'); colon != std::string::npos) text.resize(colon);
  if (text.empty()) return 0;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(text.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return 0;
  sockaddr_in sa{};
  std::memcpy(&sa, res->ai_addr, sizeof sa);
  ::freeaddrinfo(res);
  return ntohl(sa.sin_addr.s_addr);
}

// The source address the kernel would use towards `to`.
std::uint32_t local_address_towards(std::uint32_t to) {
  Fd fd;
  if (!open_udp_socket(fd)) return 0;
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_addr.s_addr = htonl(to);
  dst.sin_port = htons(9);  // any port: nothing is sent
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&dst), sizeof dst) != 0) return 0;
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return 0;
  return ntohl(local.sin_addr.s_addr);
}

// Index into all[r].candidates of rank r's address in net/netmask, or -1.
int member(const IfaceReport& report, std::uint32_t net, std::uint32_t netmask) {
  for (std::uint32_t i = 0; i < report.count; ++i) {
    if ((report.candidates[i].addr & netmask) == net) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

IfaceReport make_report(const std::vector<Interface>& interfaces, std::uint64_t host,
                        std::uint32_t hint) {
  IfaceReport r;
  r.host = host;
  r.hint = hint;
  for (const Interface& i : interfaces) {
    if (!i.up || i.loopback || !i.multicast || i.addr == 0) continue;
    if (r.count == IfaceReport::kMaxCandidates) break;
    auto& c = r.candidates[r.count++];
    c.addr = i.addr;
    c.netmask = i.netmask;
    c.speed_mbit = static_cast<std::uint32_t>(std::max(i.speed_mbit, 0));
    std::strncpy(c.name.data(), i.name.c_str(), c.name.size() - 1);
  }
  return r;
}

std::string describe_candidates(const IfaceReport& report) {
  std::string out;
  for (std::uint32_t i = 0; i < report.count && i < IfaceReport::kMaxCandidates; ++i) {
    const auto& c = report.candidates[i];
    if (!out.empty()) out += ", ";
    out += name_of(c) + " " + ipv4_text(c.addr) + "/" + std::to_string(prefix_of(c.netmask));
  }
  return out.empty() ? "none" : out;
}

common::Status choose_interface(const std::vector<IfaceReport>& all, int rank, IfaceChoice& out) {
  const auto n = all.size();
  const IfaceReport& mine = all.at(static_cast<std::size_t>(rank));
  if (std::all_of(all.begin(), all.end(),
                  [&](const IfaceReport& r) { return r.host == mine.host; })) {
    out.spec = "lo";
    out.reason = n == 1 ? "one rank: loopback" : "every rank on this host: loopback";
    return common::Status::ok();
  }
  // Rank 0's subnets, in its order, that every rank has an address in.
  const IfaceReport& first = all.front();
  int best = -1;
  std::size_t best_hints = 0;
  std::uint32_t best_speed = 0;
  for (std::uint32_t i = 0; i < first.count && i < IfaceReport::kMaxCandidates; ++i) {
    const std::uint32_t mask = first.candidates[i].netmask;
    const std::uint32_t net = first.candidates[i].addr & mask;
    bool shared = true;
    std::size_t hints = 0;
    std::uint32_t speed = UINT32_MAX;
    for (const IfaceReport& r : all) {
      const int at = member(r, net, mask);
      if (at < 0) {
        shared = false;
        break;
      }
      if (r.hint != 0 && (r.hint & mask) == net) ++hints;
      speed = std::min(speed, r.candidates[static_cast<std::size_t>(at)].speed_mbit);
    }
    if (!shared) continue;
    if (best < 0 || hints > best_hints || (hints == best_hints && speed > best_speed)) {
      best = static_cast<int>(i);
      best_hints = hints;
      best_speed = speed;
    }
  }
  if (best < 0) {
    std::string ranks;
    constexpr std::size_t kListed = 16;
    for (std::size_t r = 0; r < n && r < kListed; ++r) {
      ranks += "; rank " + std::to_string(r) + ": " + describe_candidates(all[r]);
    }
    if (n > kListed) ranks += "; ... (" + std::to_string(n - kListed) + " more ranks)";
    return common::unavailable_error(
        "MCCL_UDP_IFACE=auto: no IPv4 subnet is shared by every rank's interfaces that are up, "
        "not loopback and multicast-capable" +
        ranks +
        ". Connect the hosts through one subnet, or name the interface on every rank "
        "(MCCL_UDP_IFACE=NAME or ADDRESS)");
  }
  const auto& chosen = first.candidates[static_cast<std::size_t>(best)];
  const int at = member(mine, chosen.addr & chosen.netmask, chosen.netmask);
  const auto& own = mine.candidates[static_cast<std::size_t>(at)];
  out.spec = ipv4_text(own.addr);
  out.reason = name_of(own) + " " + ipv4_text(own.addr) + ": subnet " +
               subnet_text(chosen.addr, chosen.netmask) + ", shared by every rank";
  if (best_hints > 0) {
    out.reason += ", the launcher's network on " + std::to_string(best_hints) + " of them";
  }
  return common::Status::ok();
}

std::uint32_t launcher_hint(const std::vector<std::string>& launcher_addresses) {
  for (const std::string& text : launcher_addresses) {
    const std::uint32_t to = address_in(text);
    if (to == 0) continue;
    const std::uint32_t local = local_address_towards(to);
    // Loopback says the launcher is on this host: no hint about the network.
    if (local != 0 && (local >> 24) != 127) return local;
  }
  return 0;
}

common::Status discover_interface(const transport::OobAllgather& oob, int rank, std::uint32_t hint,
                                  IfaceChoice& out) {
  std::vector<Interface> interfaces;
  // A rank that cannot list its interfaces proposes none: every rank then
  // reports the same failure, naming it.
  (void)list_interfaces(interfaces);
  const IfaceReport mine = make_report(interfaces, common::network_host_id(), hint);
  std::vector<std::byte> bytes;
  if (common::Status st = oob(std::as_bytes(std::span(&mine, 1)), bytes); !st) return st;
  if (bytes.empty() || bytes.size() % sizeof(IfaceReport) != 0) {
    return common::mismatch_error("MCCL_UDP_IFACE=auto: the interface exchange returned " +
                                  std::to_string(bytes.size()) + " bytes");
  }
  std::vector<IfaceReport> all(bytes.size() / sizeof(IfaceReport));
  std::memcpy(all.data(), bytes.data(), bytes.size());
  for (IfaceReport& r : all)
    r.count = std::min<std::uint32_t>(r.count, IfaceReport::kMaxCandidates);
  if (rank < 0 || static_cast<std::size_t>(rank) >= all.size()) {
    return common::internal_error("MCCL_UDP_IFACE=auto: rank out of range");
  }
  return choose_interface(all, rank, out);
}

}  // namespace mccl::transport::udp
