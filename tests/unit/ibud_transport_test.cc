// The ibud transport's data path over the fake verbs: the datagram-transport
// conformance suite (datagram_conformance.h), delivery and the own-datagram
// filter, the MTU limit, inline sends, the staging ring and
// selective signaling, the receive ring and HCA drops, the completion
// channel. (Setup and its errors: ibud_setup_test.cc.)
#include <gtest/gtest.h>
#include <poll.h>

#include "datagram_conformance.h"
#include "ibud_test_util.h"

namespace mccl::transport::ibud::test {
namespace {

// The datagram-transport conformance suite, every member a host of one fake
// fabric.
struct FakeVerbsTraits {
  static std::string skip_reason() { return {}; }
  std::unique_ptr<DatagramTransport> join(std::uint32_t group) {
    return make(fabric, config(group));
  }
  FakeFabric fabric;
};

}  // namespace
}  // namespace mccl::transport::ibud::test

namespace mccl::transport::test {
INSTANTIATE_TYPED_TEST_SUITE_P(FakeVerbs, DatagramConformance, ibud::test::FakeVerbsTraits);
}  // namespace mccl::transport::test

namespace mccl::transport::ibud::test {
namespace {

TEST(IbudTransport, DeliversToOthersAndFiltersItsOwn) {
  FakeFabric f;
  auto a = make(f), b = make(f), c = make(f);
  const Bytes header(40, std::byte{1}), payload(3000, std::byte{2});
  ASSERT_TRUE(send_one(*a, header, payload).is_ok());
  for (auto* t : {b.get(), c.get()}) {
    auto got = drain(*t);
    ASSERT_EQ(got.size(), 1u);
    Bytes want = header;
    want.insert(want.end(), payload.begin(), payload.end());
    EXPECT_EQ(got[0], want);
  }
  EXPECT_TRUE(drain(*a).empty());
  EXPECT_EQ(as_ib(a.get())->counters().own_dropped, 1u);
  EXPECT_EQ(f.counters().self_delivered, 1u);
}

TEST(IbudTransport, TwoTransportsOnOneHostTellEachOtherApart) {
  FakeFabric f;
  IbConfig c = config();
  c.verbs = f.add_host();
  std::unique_ptr<DatagramTransport> a, b;
  ASSERT_TRUE(create_ib_transport(c, a).is_ok());
  ASSERT_TRUE(create_ib_transport(c, b).is_ok());
  EXPECT_EQ(as_ib(a.get())->info().lid, as_ib(b.get())->info().lid);
  ASSERT_TRUE(send_one(*a, Bytes(40), Bytes(10)).is_ok());
  EXPECT_EQ(drain(*b).size(), 1u);
  EXPECT_TRUE(drain(*a).empty());
}

TEST(IbudTransport, OversizeDatagramIsInvalidArgument) {
  FakeFabric f;
  auto a = make(f), b = make(f);
  const Bytes header(40), ok(4096 - 40), big(4096 - 39);
  std::vector<OutDatagram> batch{{header, ok}, {header, big}, {header, ok}};
  std::size_t accepted = 9;
  auto st = a->send(batch, accepted);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.message();
  EXPECT_EQ(accepted, 1u);
  EXPECT_EQ(drain(*b).size(), 1u);
  EXPECT_TRUE(send_one(*a, header, ok).is_ok()) << "the transport still works";
  EXPECT_EQ(f.counters().send_len_errors, 0u);
}

TEST(IbudTransport, SmallDatagramsGoInline) {
  FakeFabric f;
  auto a = make(f), b = make(f);
  EXPECT_GT(as_ib(a.get())->info().max_inline, 0u);
  ASSERT_TRUE(send_one(*a, Bytes(40), Bytes(1)).is_ok());
  ASSERT_TRUE(send_one(*a, Bytes(40), Bytes(1000)).is_ok());
  EXPECT_EQ(as_ib(a.get())->counters().inline_sent, 1u);
  EXPECT_EQ(f.counters().inline_sends, 1u);
  EXPECT_EQ(drain(*b).size(), 2u);
}

TEST(IbudTransport, FullStagingRingIsBusyUntilCompletionsFreeIt) {
  FakeFabric f;
  IbConfig c = config();
  c.sq_depth = 8;
  c.signal_every = 4;
  auto a = make(f, c), b = make(f);
  EXPECT_EQ(a->caps().max_in_flight, 8u);
  std::vector<Bytes> payloads;
  for (int i = 0; i < 20; ++i) payloads.emplace_back(1000, std::byte(i));
  const Bytes header(40);
  std::size_t sent = 0;
  std::vector<Bytes> got;
  for (int round = 0; round < 20 && sent < 20; ++round) {
    std::vector<OutDatagram> batch;
    for (std::size_t i = sent; i < 20; ++i) batch.push_back({header, payloads[i]});
    std::size_t accepted = 0;
    ASSERT_TRUE(a->send(batch, accepted).is_ok());
    EXPECT_LE(accepted, 8u);
    sent += accepted;
    for (auto& d : drain(*b)) got.push_back(std::move(d));
  }
  for (auto& d : drain(*b)) got.push_back(std::move(d));
  ASSERT_EQ(got.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(got[i][40], std::byte(i)) << "staging slot reused early";
  EXPECT_GT(as_ib(a.get())->counters().send_busy, 0u);
  EXPECT_EQ(f.counters().signaled, 5u) << "one completion per 4 sends";
}

TEST(IbudTransport, ReceiveRingIsRefilled) {
  FakeFabric f;
  IbConfig c = config();
  c.rx_depth = 16;
  auto a = make(f), b = make(f, c);
  std::size_t got = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(send_one(*a, Bytes(40), Bytes(100)).is_ok());
    got += drain(*b).size();
  }
  EXPECT_EQ(got, 100u);
  EXPECT_EQ(f.counters().no_recv_dropped, 0u);
}

TEST(IbudTransport, BurstsBeyondTheRingAreDroppedByTheHca) {
  FakeFabric f;
  IbConfig c = config();
  c.rx_depth = 16;
  auto a = make(f), b = make(f, c);
  std::vector<OutDatagram> batch;
  const Bytes header(40), payload(500);
  for (int i = 0; i < 64; ++i) batch.push_back({header, payload});
  std::size_t accepted = 0;
  ASSERT_TRUE(a->send(batch, accepted).is_ok());
  ASSERT_EQ(accepted, 64u);
  EXPECT_EQ(drain(*b).size(), 16u);
  EXPECT_EQ(f.counters().no_recv_dropped, 48u);
}

TEST(IbudTransport, WaitFdTurnsReadableWhenDatagramsWait) {
  FakeFabric f;
  auto a = make(f), b = make(f);
  auto readable = [&] {
    pollfd p{b->wait_fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  };
  ASSERT_GE(b->wait_fd(), 0);
  EXPECT_TRUE(drain(*b).empty());  // finds nothing: arms the receive CQ
  EXPECT_FALSE(readable());
  ASSERT_TRUE(send_one(*a, Bytes(40), Bytes(100)).is_ok());
  (void)drain(*a);  // lets the fake "HCA" run, as hardware would on its own
  EXPECT_TRUE(readable());
  EXPECT_EQ(drain(*b).size(), 1u);
  EXPECT_FALSE(readable());
  EXPECT_GE(as_ib(b.get())->counters().cq_events, 1u);
}

// The real libibverbs on this machine: no HCA is an orderly kUnavailable.
}  // namespace
}  // namespace mccl::transport::ibud::test
