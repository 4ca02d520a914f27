// The UDP transport's tests on the loopback interface: where they run
// (udp_test_util.h, LoopbackEnvironment: a private network namespace when
// root), their config, and the helpers the test files share. Without root
// they run in the current namespace, and every test skips, saying why,
// when multicast on lo does not work there.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "transport/udp/udp_transport.h"
#include "udp_test_util.h"

namespace mccl::transport::udp::test {

using Bytes = std::vector<std::byte>;
using transport::test::number_of_datagram;
using transport::test::numbered_datagram;
using transport::test::send_all_datagrams;
using namespace std::chrono_literals;

// ---- where the test runs ------------------------------------------------

inline UdpConfig config(std::uint32_t tag) {
  UdpConfig c;
  c.iface = "lo";
  c.comm_tag = tag;
  c.job_salt = job_salt();
  c.rate_mbit = -1;  // unpaced, whatever the interface's speed
  c.rcvbuf_bytes = 8u << 20;
  c.max_datagram = 8972;
  c.test_drop_permille = 0;
  return c;
}

inline const auto* const g_env =
    ::testing::AddGlobalTestEnvironment(new LoopbackEnvironment(config(0xC0FFEE)));

// ---- helpers -------------------------------------------------------------

// Polls for `period` and returns how many datagrams came.
inline std::size_t quiet_for(DatagramTransport& t, common::Duration period = 50ms) {
  Collector c;
  drain_until(t, c, SIZE_MAX, period);
  return c.got.size();
}

inline void send_bytes(DatagramTransport& t, const std::vector<Bytes>& datagrams) {
  std::vector<OutDatagram> batch;
  for (const Bytes& d : datagrams) batch.push_back(OutDatagram{{}, d});
  send_all_datagrams(t, batch);
}

// A plain UDP socket on lo, as any other program would open one.
inline int plain_lo_socket() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  in_addr lo{htonl(INADDR_LOOPBACK)};
  ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo);  // never the default route
  int ttl = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
  return fd;
}

}  // namespace mccl::transport::udp::test
