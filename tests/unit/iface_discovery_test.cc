// MCCL_UDP_IFACE=auto: the choice the ranks agree on (choose_interface),
// from reports made up here, and this host's own report.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/host.h"
#include "transport/udp/discovery.h"

namespace mccl::transport::udp {
namespace {

std::uint32_t ip(int a, int b, int c, int d) {
  return (std::uint32_t(a) << 24) | (std::uint32_t(b) << 16) | (std::uint32_t(c) << 8) |
         std::uint32_t(d);
}
constexpr std::uint32_t k24 = 0xffffff00u;
constexpr std::uint32_t k16 = 0xffff0000u;

Interface iface(const char* name, std::uint32_t addr, std::uint32_t mask, int speed = 0) {
  Interface i;
  i.name = name;
  i.addr = addr;
  i.netmask = mask;
  i.speed_mbit = speed;
  i.up = i.running = i.multicast = true;
  return i;
}

IfaceReport host(std::uint64_t id, std::vector<Interface> ifs, std::uint32_t hint = 0) {
  return make_report(ifs, id, hint);
}

TEST(IfaceDiscoveryTest, ReportKeepsOnlyUpMulticastNonLoopbackIpv4) {
  Interface lo = iface("lo", ip(127, 0, 0, 1), 0xff000000u);
  lo.loopback = true;
  Interface down = iface("eth1", ip(10, 1, 0, 1), k24);
  down.up = false;
  Interface nomc = iface("tun0", ip(10, 2, 0, 1), k24);
  nomc.multicast = false;
  const IfaceReport r = host(7, {lo, down, nomc, iface("eth0", ip(10, 0, 0, 1), k24, 1000)});
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(describe_candidates(r), "eth0 10.0.0.1/24");
  EXPECT_EQ(r.candidates[0].speed_mbit, 1000u);
  EXPECT_EQ(describe_candidates(host(7, {lo})), "none");
}

TEST(IfaceDiscoveryTest, OneHostIsLoopback) {
  const auto a = host(5, {iface("eth0", ip(10, 0, 0, 1), k24)});
  IfaceChoice c;
  ASSERT_TRUE(choose_interface({a, a, a}, 1, c).is_ok());
  EXPECT_EQ(c.spec, "lo");
  EXPECT_NE(c.reason.find("every rank on this host"), std::string::npos) << c.reason;
  // A host without any candidate is fine alone.
  ASSERT_TRUE(choose_interface({host(5, {})}, 0, c).is_ok());
  EXPECT_EQ(c.spec, "lo");
}

TEST(IfaceDiscoveryTest, SharedSubnetGivesEachRankItsOwnAddress) {
  // Host 1 lists a docker bridge first; only 10.201.0.0/24 is shared.
  const auto h0 =
      host(1, {iface("docker0", ip(172, 17, 0, 1), k16), iface("veth0", ip(10, 201, 0, 1), k24)});
  const auto h1 = host(2, {iface("veth0", ip(10, 201, 0, 2), k24)});
  const auto h2 = host(3, {iface("eth9", ip(10, 201, 0, 3), k24)});
  IfaceChoice c;
  ASSERT_TRUE(choose_interface({h0, h1, h2}, 0, c).is_ok());
  EXPECT_EQ(c.spec, "10.201.0.1");
  EXPECT_NE(c.reason.find("10.201.0.0/24"), std::string::npos) << c.reason;
  ASSERT_TRUE(choose_interface({h0, h1, h2}, 2, c).is_ok());
  EXPECT_EQ(c.spec, "10.201.0.3");
  EXPECT_NE(c.reason.find("eth9"), std::string::npos) << c.reason;
}

TEST(IfaceDiscoveryTest, TwoRanksOfOneHostAmongOthersUseTheSharedSubnet) {
  const auto h0 = host(1, {iface("eth0", ip(10, 0, 0, 1), k24)});
  const auto h1 = host(2, {iface("eth0", ip(10, 0, 0, 2), k24)});
  IfaceChoice c;
  ASSERT_TRUE(choose_interface({h0, h0, h1}, 1, c).is_ok());
  EXPECT_EQ(c.spec, "10.0.0.1");
}

TEST(IfaceDiscoveryTest, LauncherHintThenSpeedThenRankZeroOrder) {
  const auto mk = [](std::uint64_t id, int last, std::uint32_t hint, int fast_speed) {
    return host(id,
                {iface("eth0", ip(192, 168, 1, last), k24, 1000),
                 iface("eth1", ip(10, 9, 0, last), k24, fast_speed)},
                hint);
  };
  IfaceChoice c;
  // No hint: the faster shared subnet (the slowest rank's speed counts).
  ASSERT_TRUE(choose_interface({mk(1, 1, 0, 100000), mk(2, 2, 0, 25000)}, 0, c).is_ok());
  EXPECT_EQ(c.spec, "10.9.0.1");
  // The launcher's network wins over speed.
  ASSERT_TRUE(
      choose_interface({mk(1, 1, ip(192, 168, 1, 1), 100000), mk(2, 2, ip(192, 168, 1, 2), 100000)},
                       1, c)
          .is_ok());
  EXPECT_EQ(c.spec, "192.168.1.2");
  EXPECT_NE(c.reason.find("launcher"), std::string::npos) << c.reason;
  // Equal in all: rank 0's order.
  ASSERT_TRUE(choose_interface({mk(1, 1, 0, 1000), mk(2, 2, 0, 1000)}, 1, c).is_ok());
  EXPECT_EQ(c.spec, "192.168.1.2");
}

TEST(IfaceDiscoveryTest, NoSharedSubnetListsEveryRanksCandidates) {
  const auto h0 = host(1, {iface("eth0", ip(10, 0, 0, 1), k24)});
  const auto h1 = host(2, {iface("eth0", ip(10, 0, 1, 1), k24)});
  const auto h2 = host(3, {});
  IfaceChoice c;
  const auto st = choose_interface({h0, h1, h2}, 0, c);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  for (const char* part :
       {"rank 0: eth0 10.0.0.1/24", "rank 1: eth0 10.0.1.1/24", "rank 2: none", "MCCL_UDP_IFACE"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << part << " in " << st.message();
  }
}

TEST(IfaceDiscoveryTest, HostIdSeparatesNetworkNamespacesOnly) {
  // Stable within a process and never 0; a sibling namespace differs,
  // which the fabric tests exercise.
  EXPECT_NE(common::network_host_id(), 0u);
  EXPECT_EQ(common::network_host_id(), common::network_host_id());
}

// The launcher's addresses are the caller's (setup reads them from the
// environment): those that do not parse, and a launcher on this host, give
// no hint about the network.
TEST(IfaceDiscoveryTest, LauncherHintNeedsALauncherElsewhere) {
  EXPECT_EQ(launcher_hint({}), 0u);
  EXPECT_EQ(launcher_hint({"", ":5000", "tcp4://"}), 0u);
  EXPECT_EQ(launcher_hint({"127.0.0.1:5000", "pmix-server.12;tcp4://127.0.0.1:4567"}), 0u);
}

TEST(IfaceDiscoveryTest, ThisHostListsItsLoopback) {
  std::vector<Interface> all;
  ASSERT_TRUE(list_interfaces(all).is_ok());
  bool lo = false;
  for (const Interface& i : all) lo = lo || (i.loopback && i.addr == ip(127, 0, 0, 1));
  EXPECT_TRUE(lo) << "no 127.0.0.1 among " << all.size() << " addresses";
}

}  // namespace
}  // namespace mccl::transport::udp
