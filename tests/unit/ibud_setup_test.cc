// Setting up the ibud transport over the fake verbs: port choice and its
// errors, the MTU, groups, MGIDs and Q_Keys, queue depths, probe_ib and
// describe_ib_devices, and the release of every verbs resource on success
// and after a failure at any step.
#include <gtest/gtest.h>

#include "ibud_test_util.h"

namespace mccl::transport::ibud::test {
namespace {

TEST(IbudSetup, NoDeviceIsUnavailableWithTheReason) {
  FakeFabric f;
  FakeHost h;
  h.no_kernel_support = true;
  auto st = make_error(f, config(), h);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(st.message(), "no InfiniBand device: ibv_get_device_list: ENOSYS"))
      << st.message();
  h = FakeHost{};
  h.devices.clear();
  st = make_error(f, config(), h);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(st.message(), "no InfiniBand device")) << st.message();
}

TEST(IbudSetup, PicksTheFirstActiveInfinibandPort) {
  FakeFabric f;
  FakeHost h;
  FakePort down{IBV_PORT_DOWN, 4096, true}, roce{IBV_PORT_ACTIVE, 4096, false};
  FakePort ib{IBV_PORT_ACTIVE, 2048, true};
  h.devices = {FakeDevice{"mlx5_0", {down}}, FakeDevice{"mlx5_1", {roce, ib}}};
  h.ipoib_device = "mlx5_1";
  h.ipoib_port = 2;
  auto t = make(f, config(), h);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(as_ib(t.get())->info().device, "mlx5_1");
  EXPECT_EQ(as_ib(t.get())->info().port, 2);
  EXPECT_EQ(t->caps().mtu, 2048u);

  IbConfig c = config();
  c.device = "mlx5_0";
  auto st = make_error(f, c, h);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(st.message(), "mlx5_0:1 is DOWN")) << st.message();
  c.device = "mlx5_1:1";
  st = make_error(f, c, h);
  EXPECT_TRUE(contains(st.message(), "Ethernet")) << st.message();
  c.device = "mlx5_7";
  st = make_error(f, c, h);
  EXPECT_TRUE(contains(st.message(), "devices: mlx5_0, mlx5_1")) << st.message();
  c.device = "mlx5_1:x";
  EXPECT_EQ(make_error(f, c, h).code(), ErrorCode::kInvalidArgument);
  c.device = "mlx5_1:3";
  EXPECT_EQ(make_error(f, c, h).code(), ErrorCode::kInvalidArgument);
}

TEST(IbudSetup, MtuIsThePortsCappedByTheIpoibGroup) {
  FakeFabric f;
  auto t = make(f);
  EXPECT_EQ(t->caps().mtu, 4096u);
  EXPECT_EQ(t->caps().name, "ibud");
  EXPECT_FALSE(t->caps().loopback);
  FakeHost h;
  h.ipoib_mtu = 2044;  // a 2048-byte broadcast group
  EXPECT_EQ(make(f, config(), h)->caps().mtu, 2048u);
  IbConfig c = config();
  c.max_mtu = 1024;
  EXPECT_EQ(make(f, c)->caps().mtu, 1024u);
}

TEST(IbudSetup, GivenMgidIsSharedAndQkeysKeepCommunicatorsApart) {
  FakeFabric f;
  IbConfig c1 = config(1), c2 = config(2);
  c1.mgid = c2.mgid = "ff12:401b:ffff::1234";
  auto a1 = make(f, c1), b1 = make(f, c1), b2 = make(f, c2);
  EXPECT_EQ(as_ib(a1.get())->info().mgid, "ff12:401b:ffff::1234");
  EXPECT_EQ(as_ib(b2.get())->info().mgid, "ff12:401b:ffff::1234");
  EXPECT_NE(as_ib(a1.get())->info().qkey, as_ib(b2.get())->info().qkey);
  ASSERT_TRUE(send_one(*a1, Bytes(40), Bytes(10)).is_ok());
  EXPECT_EQ(drain(*b1).size(), 1u);
  EXPECT_TRUE(drain(*b2).empty());
  EXPECT_EQ(f.counters().qkey_dropped, 1u);

  c1.mgid = "fe80::1";
  EXPECT_EQ(make_error(f, c1).code(), ErrorCode::kInvalidArgument);
}

TEST(IbudSetup, DerivedGroupsDifferPerTag) {
  FakeFabric f;
  auto a = make(f, config(1)), b = make(f, config(2));
  EXPECT_NE(as_ib(a.get())->info().mgid, as_ib(b.get())->info().mgid);
  EXPECT_TRUE(as_ib(a.get())->info().mgid.starts_with("ff12:4001:ffff::"));
  ASSERT_TRUE(send_one(*a, Bytes(40), Bytes(10)).is_ok());
  EXPECT_TRUE(drain(*b).empty());
}

// The depths are the config's (setup fills them from MCCL_IB_RX_DEPTH and
// MCCL_IB_SIGNAL_EVERY, tested in setup_transport_settings_test).
TEST(IbudSetup, DepthsComeFromTheConfig) {
  FakeFabric f;
  IbConfig c = config();
  c.rx_depth = 32;
  c.signal_every = 16;
  auto t = make(f, c);
  EXPECT_EQ(as_ib(t.get())->info().rx_depth, 32u);
  EXPECT_EQ(as_ib(t.get())->info().signal_every, 16u);
  // A signaled send among any sq_depth consecutive ones, or the ring stalls.
  c.sq_depth = 8;
  c.signal_every = 1000;
  auto capped = make(f, c);
  EXPECT_EQ(as_ib(capped.get())->info().signal_every, 4u);
}

TEST(IbudSetup, NeedsAnIpoibInterface) {
  FakeFabric f;
  FakeHost h;
  h.ipoib_iface = "";
  auto st = make_error(f, config(), h);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(st.message(), "MCCL_IB_IPOIB_IFACE")) << st.message();
  IbConfig c = config();
  c.ipoib_iface = "ib7";
  EXPECT_EQ(make_error(f, c).code(), ErrorCode::kUnavailable);
}

TEST(IbudSetup, EveryResourceIsReleasedOnSuccessAndAfterAnyFailure) {
  for (const char* call :
       {"", "open_device", "alloc_pd", "create_comp_channel", "create_cq", "reg_mr", "create_qp",
        "modify_qp", "find_ipoib", "join_multicast", "attach_mcast", "create_ah", "refused"}) {
    SCOPED_TRACE(call);
    FakeFabricConfig fc;
    fc.fail_call = call;
    fc.join_refused = std::string(call) == "refused";
    FakeFabric f(fc);
    {
      IbConfig c = config();
      c.verbs = f.add_host();
      std::unique_ptr<DatagramTransport> t;
      const auto st = create_ib_transport(c, t);
      EXPECT_EQ(st.is_ok(), *call == '\0') << st.message();
      if (t) {
        EXPECT_GT(f.live_objects(), 0u);
      }
    }
    EXPECT_EQ(f.live_objects(), 0u);
    EXPECT_EQ(f.counters().destroy_errors, 0u);
  }
}

TEST(IbudSetup, ProbeAndDescribe) {
  FakeFabric f;
  FakeHost none;
  none.no_kernel_support = true;
  std::string why;
  EXPECT_EQ(probe_ib(*f.add_host(none), "", why).code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(why, "ENOSYS")) << why;
  EXPECT_TRUE(contains(describe_ib_devices(*f.add_host(none)), "no InfiniBand device (")) << why;

  auto good = f.add_host();
  EXPECT_TRUE(probe_ib(*good, "", why).is_ok()) << why;
  EXPECT_TRUE(contains(why, "mlx5_0:1")) << why;
  // The port asked for (MCCL_IB_DEV, passed by setup), or none.
  EXPECT_TRUE(probe_ib(*good, "mlx5_0:1", why).is_ok()) << why;
  EXPECT_EQ(probe_ib(*good, "mlx5_7", why).code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(why, "no device mlx5_7")) << why;
  const std::string text = describe_ib_devices(*good);
  EXPECT_TRUE(contains(text, "port 1: InfiniBand, ACTIVE")) << text;
  EXPECT_TRUE(contains(text, "IPoIB: ib0")) << text;
  EXPECT_TRUE(contains(text, "multicast join: ok")) << text;
  EXPECT_EQ(f.live_objects(), 0u) << "the test join was left";

  FakeHost down;
  down.devices[0].ports[0].state = IBV_PORT_DOWN;
  EXPECT_FALSE(probe_ib(*f.add_host(down), "", why).is_ok());
  EXPECT_TRUE(contains(why, "DOWN")) << why;
}

TEST(IbudSetup, RealVerbsWithoutHardwareSayWhy) {
  std::string why;
  if (probe_ib("", why).is_ok()) GTEST_SKIP() << "this machine has an HCA: " << why;
  EXPECT_TRUE(contains(why, "no InfiniBand device") || contains(why, "port")) << why;
  std::unique_ptr<DatagramTransport> t;
  auto st = create_ib_transport(config(), t);
  EXPECT_EQ(st.code(), ErrorCode::kUnavailable) << st.message();
  EXPECT_FALSE(describe_ib_devices().empty());
}

}  // namespace
}  // namespace mccl::transport::ibud::test
