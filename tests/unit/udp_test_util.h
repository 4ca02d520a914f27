// Helpers shared by the UDP transport's unit tests: the loopback interface,
// transports, and a receiving side that keeps what it got.
#pragma once

#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
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
#include <string>
#include <utility>
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

// Why multicast on lo cannot be tested in this process; empty where it can.
inline std::string& loopback_skip_reason() {
  static std::string why;
  return why;
}
// Whether the process moved into a private network namespace (as root).
inline bool& in_private_netns() {
  static bool moved = false;
  return moved;
}

// The gtest environment of a test binary that multicasts on lo. Run as
// root, it moves the process into a private network namespace (gtest has
// started no thread yet, so the whole process moves) and brings its lo up
// (SIOCSIFFLAGS), so that tests neither see nor disturb other jobs' groups;
// multicast on lo needs nothing more (the transport names the interface
// with IP_MULTICAST_IF). Then it creates a transport for `probe` to see
// that multicast on lo works, and otherwise says why in
// loopback_skip_reason().
class LoopbackEnvironment : public ::testing::Environment {
 public:
  explicit LoopbackEnvironment(UdpConfig probe) : probe_(std::move(probe)) {}
  void SetUp() override {
    if (::geteuid() == 0 && ::unshare(CLONE_NEWNET) == 0) {
      in_private_netns() = set_lo_flags(true);
      if (!in_private_netns()) {
        loopback_skip_reason() = "could not bring lo up in the private network namespace";
        return;
      }
    }
    std::unique_ptr<DatagramTransport> t;
    if (auto s = create_udp_transport(probe_, t); !s) {
      loopback_skip_reason() = std::string("multicast on lo is not usable in ") +
                               (in_private_netns() ? "a private" : "this") +
                               " network namespace (run as root for a private one): " + s.message();
    }
  }

 private:
  UdpConfig probe_;
};

#define SKIP_WITHOUT_MULTICAST()                                     \
  if (!::mccl::transport::udp::test::loopback_skip_reason().empty()) \
  GTEST_SKIP() << ::mccl::transport::udp::test::loopback_skip_reason()

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
