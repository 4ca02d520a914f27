// mccl_mcast_baseline: what the fabric alone costs a multicast broadcast, with
// no MCCL protocol. One sender injects `bytes` per round as datagrams of the
// size MCCL sends (GSO runs of up to 44 segments, as MCCL's UDP transport
// sends them), paced as MCCL paces (link_cost.h: 99% of the link rate, every
// datagram's frame counted) by a token bucket of the same size as MCCL's (2 ms at
// the rate, at least four 64 KB runs); receivers (UDP_GRO, 32 MiB buffer,
// blocking reads: the least CPU a receiver can spend) note when each round's
// first and last datagram arrived. Every time is CLOCK_MONOTONIC, one clock
// for all namespaces of a host, so bench/fabric/baseline.sh can subtract the
// sender's start from each receiver's last arrival.
//
//   mccl_mcast_baseline send --group G --port P --iface IF --bytes S --rate-mbit R
//                            --rounds K [--gap-ms M] [--datagram B]
//       prints "start ROUND NS" when it begins each round, "end ROUND NS" after its last send
//   mccl_mcast_baseline recv --group G --port P --iface IF --rounds K [--timeout-ms T]
//                            [--ready FILE]
//       prints "recv ROUND FIRST_NS LAST_NS DATAGRAMS" per round it saw, after the
//       last round or T ms (default 5000) without any datagram
// Exit: 0 done, 1 error, 2 usage.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "transport/udp/link_cost.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kMagic = 0x4d43424c;  // "MCBL"
constexpr std::size_t kSegmentsPerRun = 44;   // 44 x 1472 B: one 64 KB GSO run
using mccl::transport::udp::kEthernetFrameOverhead;
using mccl::transport::udp::kIpUdpHeader;
using mccl::transport::udp::link_bytes;

struct Header {
  std::uint32_t magic, round, index, count;
};

struct Args {
  std::string mode, group, iface, ready;
  int port = 0, rounds = 10, gap_ms = 20, timeout_ms = 5000;
  std::size_t bytes = 1 << 20, datagram = 1472;
  double rate_mbit = 950;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "mccl_mcast_baseline: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr, "mccl_mcast_baseline: %s (see the comment atop mcast_baseline.cc)\n",
               what.c_str());
  std::exit(2);
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

Args parse(int argc, char** argv) {
  if (argc < 2) usage("send or recv expected");
  Args a;
  a.mode = argv[1];
  if (a.mode != "send" && a.mode != "recv") usage("send or recv expected, not '" + a.mode + "'");
  for (int i = 2; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(k + " needs a value");
    const char* v = argv[i + 1];
    if (k == "--group")
      a.group = v;
    else if (k == "--iface")
      a.iface = v;
    else if (k == "--ready")
      a.ready = v;
    else if (k == "--port")
      a.port = std::atoi(v);
    else if (k == "--rounds")
      a.rounds = std::atoi(v);
    else if (k == "--gap-ms")
      a.gap_ms = std::atoi(v);
    else if (k == "--timeout-ms")
      a.timeout_ms = std::atoi(v);
    else if (k == "--bytes")
      a.bytes = std::strtoull(v, nullptr, 10);
    else if (k == "--datagram")
      a.datagram = std::strtoull(v, nullptr, 10);
    else if (k == "--rate-mbit")
      a.rate_mbit = std::atof(v);
    else
      usage("unknown option " + k);
  }
  if (a.group.empty() || a.iface.empty() || a.port <= 0) usage("--group, --port, --iface needed");
  if (a.rounds < 1 || a.datagram <= sizeof(Header) || a.datagram > 8972 || a.rate_mbit <= 0) {
    usage("bad --rounds, --datagram or --rate-mbit");
  }
  return a;
}

int open_socket(const Args& a) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) fail("socket");
  const int one = 1;
  ip_mreqn mreq{};
  if (::inet_pton(AF_INET, a.group.c_str(), &mreq.imr_multiaddr) != 1) usage("bad --group");
  mreq.imr_ifindex = static_cast<int>(::if_nametoindex(a.iface.c_str()));
  if (mreq.imr_ifindex == 0) fail("interface " + a.iface);
  if (a.mode == "send") {
    const unsigned char ttl = 1, loop = 0;
    ip_mreqn out{};
    out.imr_ifindex = mreq.imr_ifindex;
    if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &out, sizeof out) != 0 ||
        ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0 ||
        ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0) {
      fail("multicast send options");
    }
    const int segment = static_cast<int>(a.datagram);
    if (::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &segment, sizeof segment) != 0) fail("UDP_SEGMENT");
    return fd;
  }
  const int rcvbuf = 32 << 20;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) fail("SO_REUSEADDR");
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  (void)::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(a.port));
  addr.sin_addr = mreq.imr_multiaddr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
  if (::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) fail("join");
  timeval tv{a.timeout_ms / 1000, (a.timeout_ms % 1000) * 1000};
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) fail("SO_RCVTIMEO");
  return fd;
}

int send_rounds(const Args& a, int fd) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(a.port));
  ::inet_pton(AF_INET, a.group.c_str(), &to.sin_addr);
  const std::size_t count = std::max<std::size_t>(1, (a.bytes + a.datagram - 1) / a.datagram);
  std::vector<char> run(kSegmentsPerRun * a.datagram, '\xa5');
  // The token bucket MCCL's UDP endpoint uses (transport/udp/endpoint.cc,
  // burst_for): 2 ms at the rate, at least four GSO runs; full at the start
  // of every round, as it is after the idle time between two broadcasts.
  const double rate = mccl::transport::udp::paced_bytes_per_s(a.rate_mbit);  // link bytes/s
  const double burst =
      std::max(rate * 2e-3, 4.0 * (65507 + 64 * (kIpUdpHeader + kEthernetFrameOverhead)));
  for (int r = 0; r < a.rounds; ++r) {
    double tokens = burst;
    auto last = Clock::now();
    std::printf("start %d %llu\n", r, static_cast<unsigned long long>(now_ns()));
    for (std::size_t i = 0; i < count;) {
      const std::size_t n = std::min(kSegmentsPerRun, count - i);
      const double wire = static_cast<double>(n * link_bytes(a.datagram, kEthernetFrameOverhead));
      // Sleeps until the bucket holds the run: a sender that spun would
      // take a core from the receivers, which share this machine's cores.
      for (;;) {
        const auto t = Clock::now();
        tokens = std::min(burst, tokens + rate * std::chrono::duration<double>(t - last).count());
        last = t;
        if (tokens >= wire) break;
        std::this_thread::sleep_for(std::chrono::duration<double>((wire - tokens) / rate));
      }
      tokens -= wire;
      for (std::size_t k = 0; k < n; ++k) {
        const Header h{kMagic, static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(i + k),
                       static_cast<std::uint32_t>(count)};
        std::memcpy(run.data() + k * a.datagram, &h, sizeof h);
      }
      const ssize_t sent =
          ::sendto(fd, run.data(), n * a.datagram, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      if (sent < 0) fail("sendto");
      i += n;
    }
    std::printf("end %d %llu\n", r, static_cast<unsigned long long>(now_ns()));
    std::this_thread::sleep_for(std::chrono::milliseconds(a.gap_ms));
  }
  return 0;
}

int receive_rounds(const Args& a, int fd) {
  if (!a.ready.empty()) std::ofstream(a.ready) << "ready\n";
  struct Round {
    std::uint64_t first = 0, last = 0, datagrams = 0;
  };
  std::map<std::uint32_t, Round> rounds;
  std::vector<char> buf(1 << 16);
  std::vector<char> ctl(CMSG_SPACE(sizeof(int)));
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.data();
    m.msg_controllen = ctl.size();
    const ssize_t got = ::recvmsg(fd, &m, 0);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;  // the timeout: done
    if (got < 0) fail("recvmsg");
    const std::uint64_t t = now_ns();
    // A GRO read carries several datagrams of one size (the control message).
    std::size_t segment = static_cast<std::size_t>(got);
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int s = 0;
        std::memcpy(&s, CMSG_DATA(c), sizeof s);
        if (s > 0) segment = static_cast<std::size_t>(s);
      }
    }
    bool last_round_done = false;
    for (std::size_t off = 0; off + sizeof(Header) <= static_cast<std::size_t>(got);
         off += segment) {
      Header h;
      std::memcpy(&h, buf.data() + off, sizeof h);
      if (h.magic != kMagic) continue;
      Round& r = rounds[h.round];
      if (r.first == 0) r.first = t;
      r.last = t;
      ++r.datagrams;
      last_round_done =
          h.round + 1 == static_cast<std::uint32_t>(a.rounds) && h.index + 1 == h.count;
    }
    if (last_round_done) break;
  }
  for (const auto& [round, r] : rounds) {
    std::printf("recv %u %llu %llu %llu\n", round, static_cast<unsigned long long>(r.first),
                static_cast<unsigned long long>(r.last),
                static_cast<unsigned long long>(r.datagrams));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const int fd = open_socket(a);
  const int rc = a.mode == "send" ? send_rounds(a, fd) : receive_rounds(a, fd);
  ::close(fd);
  return rc;
}
