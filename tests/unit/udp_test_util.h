// Helpers shared by the UDP transport's unit tests: the loopback interface,
// transports, and a receiving side that keeps what it got.
#pragma once

#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "common/clock.h"
#include "datagram_collector.h"
#include "transport/datagram.h"
#include "transport/udp/udp_transport.h"

namespace mccl::transport::udp::test {

// Sets or clears IFF_UP on lo (in the test's own network namespace when
// root); false when the kernel refused.
inline bool set_lo_flags(bool up) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  bool ok = ::ioctl(fd, SIOCGIFFLAGS, &req) == 0;
  if (ok) {
    req.ifr_flags = static_cast<short>(up ? req.ifr_flags | IFF_UP : req.ifr_flags & ~IFF_UP);
    ok = ::ioctl(fd, SIOCSIFFLAGS, &req) == 0;
  }
  ::close(fd);
  return ok;
}

// One salt per test process, so two test binaries running at once never
// share a multicast group.
inline std::uint64_t job_salt() {
  static const std::uint64_t salt = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid());
  }();
  return salt;
}

// A transport for `c`, or null with a test failure saying why.
inline std::unique_ptr<DatagramTransport> make(const UdpConfig& c) {
  std::unique_ptr<DatagramTransport> t;
  common::Status s = create_udp_transport(c, t);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return t;
}

inline UdpCounters counters(const DatagramTransport& t) { return as_udp(&t)->counters(); }

using transport::test::Collector;

// Polls until `want` datagrams arrived or `limit` passed, sleeping on
// wait_fd() between empty polls.
inline void drain_until(DatagramTransport& t, Collector& c, std::size_t want,
                        common::Duration limit = std::chrono::seconds(3)) {
  auto deadline = common::Deadline::after(limit);
  while (c.got.size() < want && !deadline.expired()) {
    std::size_t delivered = 0;
    common::Status s = t.poll(c, 64, delivered);
    ASSERT_TRUE(s.is_ok()) << s.message();
    if (delivered == 0) {
      pollfd p{t.wait_fd(), POLLIN, 0};
      ::poll(&p, 1, 5);
    }
  }
}

}  // namespace mccl::transport::udp::test
