// The congestion control of the TCP transport's connections
// (src/transport/tcp/congestion.h), ranks as threads on 127.0.0.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "mccl/error.h"
#include "reliable_test_support.h"
#include "tcp_test_support.h"
#include "transport/tcp/tcp_transport.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;
using namespace transport::test;
using test::loopback_config;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The congestion control of each connection (congestion.h): "auto" never
// runs one that paces, whatever the system's default (connections between
// hosts: fabric_congestion, tests/fabric/mccl_fabric_test.sh); a named
// algorithm runs on both ends of every connection; "system" keeps the
// system's; a name the kernel refuses fails creation, naming the setting.
std::string system_congestion() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  f >> name;
  return name;
}

std::vector<std::string> congestion_of_mesh(const std::string& setting, int n) {
  auto ts = make_mesh_with(n, [&](int r, const OobAllgather& oob, auto& out) {
    TcpReliableConfig c = loopback_config(r, n);
    c.congestion = setting;
    return create_tcp_reliable(c, oob, out);
  });
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) {
    auto* tcp = as_tcp(ts[static_cast<std::size_t>(r)].get());
    if (tcp == nullptr) return {};
    for (int peer = 0; peer < n; ++peer) {
      if (peer != r) names.push_back(tcp->congestion_control(peer));
    }
  }
  return names;
}

TEST(TcpReliable, AutoNeverPacesNamedAndSystemAreKept) {
  const std::string system = system_congestion();
  ASSERT_FALSE(system.empty());
  // 3 ranks: each one's two ring neighbours are every other rank.
  for (const std::string& got : congestion_of_mesh("auto", 3)) {
    EXPECT_THAT(got, ::testing::AnyOf("cubic", "reno")) << "system's default: " << system;
  }
  for (const std::string& got : congestion_of_mesh("reno", 3)) EXPECT_EQ(got, "reno");
  for (const std::string& got : congestion_of_mesh("system", 3)) EXPECT_EQ(got, system);
  EXPECT_EQ(congestion_of_mesh("auto", 3).size(), 6u);

  std::unique_ptr<ReliableTransport> t;
  auto oob = [](std::span<const std::byte> m, Bytes& all) {
    all.assign(m.begin(), m.end());
    return common::Status::ok();
  };
  for (int size : {1, 2}) {
    TcpReliableConfig c = loopback_config(0, size);
    c.congestion = "no-such-algorithm";
    common::Status st = create_tcp_reliable(c, oob, t);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << size;
    EXPECT_THAT(st.message(),
                AllOf(HasSubstr("MCCL_TCP_CONGESTION"), HasSubstr("no-such-algorithm")));
  }
}

}  // namespace
}  // namespace mccl::transport::tcp
