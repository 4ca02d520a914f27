// What setup reads of the transports' settings (setup/transport_settings.h):
// each transport's config from the MCCL_UDP_*, MCCL_TCP_* and MCCL_IB_*
// settings, whose defaults are the configs' own, and the launcher's address
// from its environment. The transports then take these as given.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/settings.h"
#include "mccl/error.h"
#include "setup/transport_settings.h"

namespace mccl::setup {
namespace {

constexpr const char* kTransportVariables[] = {"MCCL_UDP_RATE_MBIT",
                                               "MCCL_UDP_FRAME_OVERHEAD",
                                               "MCCL_UDP_RCVBUF",
                                               "MCCL_UDP_MAX_DATAGRAM",
                                               "MCCL_UDP_GSO",
                                               "MCCL_UDP_GRO",
                                               "MCCL_UDP_TEST_DROP_PERMILLE",
                                               "MCCL_TCP_MAX_CONNECTIONS",
                                               "MCCL_IB_DEV",
                                               "MCCL_IB_MGID",
                                               "MCCL_IB_IPOIB_IFACE",
                                               "MCCL_IB_RX_DEPTH",
                                               "MCCL_IB_SIGNAL_EVERY"};

void unset_transport_variables() {
  for (const char* name : kTransportVariables) ::unsetenv(name);
}

// Unset, every setting reads as its default, which is what a config holds
// before anyone fills it: a test that builds a transport directly gets what
// production gets from an empty environment.
TEST(SetupTransportSettings, TheDefaultsAreTheConfigs) {
  unset_transport_variables();
  const transport::udp::UdpConfig udp = udp_config_from_settings(), udp_default;
  EXPECT_EQ(udp.rate_mbit, udp_default.rate_mbit);
  EXPECT_EQ(udp.frame_overhead, udp_default.frame_overhead);
  EXPECT_EQ(udp.rcvbuf_bytes, udp_default.rcvbuf_bytes);
  EXPECT_EQ(udp.max_datagram, udp_default.max_datagram);
  EXPECT_EQ(udp.gso, udp_default.gso);
  EXPECT_EQ(udp.gro, udp_default.gro);
  EXPECT_EQ(udp.test_drop_permille, udp_default.test_drop_permille);
  EXPECT_EQ(tcp_config_from_settings().max_connections,
            transport::tcp::TcpReliableConfig{}.max_connections);
  const transport::ibud::IbConfig ib = ib_config_from_settings(), ib_default;
  EXPECT_EQ(ib.device, ib_default.device);
  EXPECT_EQ(ib.mgid, ib_default.mgid);
  EXPECT_EQ(ib.ipoib_iface, ib_default.ipoib_iface);
  EXPECT_EQ(ib.rx_depth, ib_default.rx_depth);
  EXPECT_EQ(ib.signal_every, ib_default.signal_every);
}

TEST(SetupTransportSettings, TheEnvironmentReachesEachConfig) {
  ::setenv("MCCL_UDP_RATE_MBIT", "-1", 1);
  ::setenv("MCCL_UDP_FRAME_OVERHEAD", "14", 1);
  ::setenv("MCCL_UDP_RCVBUF", "0", 1);
  ::setenv("MCCL_UDP_MAX_DATAGRAM", "1200", 1);
  ::setenv("MCCL_UDP_GSO", "off", 1);
  ::setenv("MCCL_UDP_GRO", "on", 1);
  ::setenv("MCCL_UDP_TEST_DROP_PERMILLE", "50", 1);
  ::setenv("MCCL_TCP_MAX_CONNECTIONS", "5", 1);
  ::setenv("MCCL_IB_DEV", "mlx5_1:1", 1);
  ::setenv("MCCL_IB_MGID", "ff12:401b:ffff::1", 1);
  ::setenv("MCCL_IB_IPOIB_IFACE", "ib7", 1);
  ::setenv("MCCL_IB_RX_DEPTH", "32", 1);
  ::setenv("MCCL_IB_SIGNAL_EVERY", "16", 1);
  const transport::udp::UdpConfig udp = udp_config_from_settings();
  EXPECT_EQ(udp.rate_mbit, -1.0);
  EXPECT_EQ(udp.frame_overhead, 14u);
  EXPECT_EQ(udp.rcvbuf_bytes, 0u);
  EXPECT_EQ(udp.max_datagram, 1200u);
  EXPECT_EQ(udp.gso, "off");
  EXPECT_EQ(udp.gro, "on");
  EXPECT_EQ(udp.test_drop_permille, 50);
  EXPECT_TRUE(udp.iface.empty()) << "the ranks agree on the interface (choose_udp_interface)";
  EXPECT_EQ(tcp_config_from_settings().max_connections, 5);
  const transport::ibud::IbConfig ib = ib_config_from_settings();
  EXPECT_EQ(ib.device, "mlx5_1:1");
  EXPECT_EQ(ib.mgid, "ff12:401b:ffff::1");
  EXPECT_EQ(ib.ipoib_iface, "ib7");
  EXPECT_EQ(ib.rx_depth, 32u);
  EXPECT_EQ(ib.signal_every, 16u);
  unset_transport_variables();
}

// A malformed value is an error where creation begins (check_settings(),
// which the public entry points call); reached anyway, it reads as the
// default.
TEST(SetupTransportSettings, AMalformedValueIsRejectedThenReadAsTheDefault) {
  unset_transport_variables();
  for (const char* name : {"MCCL_UDP_MAX_DATAGRAM", "MCCL_UDP_GSO", "MCCL_IB_RX_DEPTH"}) {
    ::setenv(name, "lots", 1);
    const common::Status st = common::check_settings();
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << name;
    EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
    ::unsetenv(name);
  }
  ::setenv("MCCL_UDP_MAX_DATAGRAM", "big", 1);
  ::setenv("MCCL_UDP_GSO", "maybe", 1);
  ::setenv("MCCL_IB_RX_DEPTH", "lots", 1);
  EXPECT_EQ(udp_config_from_settings().max_datagram, transport::udp::UdpConfig{}.max_datagram);
  EXPECT_EQ(udp_config_from_settings().gso, transport::udp::UdpConfig{}.gso);
  EXPECT_EQ(ib_config_from_settings().rx_depth, transport::ibud::IbConfig{}.rx_depth);
  unset_transport_variables();
}

TEST(SetupTransportSettings, LauncherAddressesMostSpecificFirst) {
  ::setenv("MCCL_BOOTSTRAP_ADDR", "10.1.2.3:5000", 1);
  ::setenv("PMI_PORT", "10.4.5.6:7000", 1);
  const std::vector<std::string> addresses = launcher_addresses_from_env();
  ASSERT_FALSE(addresses.empty());
  EXPECT_EQ(addresses.front(), "10.1.2.3:5000");
  EXPECT_NE(std::find(addresses.begin(), addresses.end(), "10.4.5.6:7000"), addresses.end());
  ::unsetenv("MCCL_BOOTSTRAP_ADDR");
  ::unsetenv("PMI_PORT");
  for (const std::string& a : launcher_addresses_from_env()) {
    EXPECT_NE(a, "10.1.2.3:5000");
    EXPECT_NE(a, "10.4.5.6:7000");
  }
}

}  // namespace
}  // namespace mccl::setup
