// The UCX reliable transport when things go wrong (a destroyed peer is the
// conformance suite's): peers that vanish or fall silent, bad
// configurations and out-of-band failures. Ranks are threads of one process
// (see ucx_test_support.h); every wait has a deadline and a watchdog aborts
// a test that hangs inside UCX.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "ucx_test_support.h"

namespace mccl::transport::ucx {
namespace {

using namespace test;

// ---- peer failure ----------------------------------------------------------

TEST_F(UcxTest, PeerThatVanishesWithoutClosingIsReported) {
  // Rank 1 is destroyed with a zero close budget: its endpoints are
  // force-closed at once, as a crash would leave them.
  auto ts = make_mesh(2, [](UcxReliableConfig& c) { c.close_timeout = 0ms; });
  ts[1].reset();
  std::vector<Recorder> rec(2);
  drive(
      ts, rec, [&] { return rec[0].failures(1) == 1; }, 20s);
  EXPECT_EQ(ts[0]->send(1, pattern(0, 1, 0, 5)).code(), ErrorCode::kPeerFailure);
}

// ---- setup errors -------------------------------------------------------------

TEST_F(UcxTest, BadConfigIsRejected) {
  std::unique_ptr<ReliableTransport> t;
  auto oob = [](std::span<const std::byte> m, Bytes& all) {
    all.assign(m.begin(), m.end());
    return common::Status::ok();
  };
  EXPECT_EQ(create_ucx_reliable({.rank = 0, .size = 0}, oob, t).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(create_ucx_reliable({.rank = 2, .size = 2}, oob, t).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(create_ucx_reliable({.rank = 0, .size = 2, .connect_timeout = 0ms}, oob, t).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(create_ucx_reliable({.rank = 0, .size = 2, .max_outstanding_bytes = 0}, oob, t).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(t, nullptr);
}

// The out-of-band failures every reliable transport reports are the
// conformance suite's; this one is UCX's own.
TEST_F(UcxTest, RanksThatDisagreeAboutFailureDetectionAreAMismatch) {
  ThreadAllgather oob(2);
  common::Status s1;
  std::unique_ptr<ReliableTransport> t1;
  std::thread other([&] {
    UcxReliableConfig c = config(1, 2);
    c.detect_peer_failures = false;
    s1 = create_ucx_reliable(c, oob.of(1), t1);
  });
  std::unique_ptr<ReliableTransport> t;
  common::Status st = create_ucx_reliable(config(0, 2), oob.of(0), t);
  other.join();
  EXPECT_EQ(st.code(), ErrorCode::kMismatch);
  EXPECT_EQ(s1.code(), ErrorCode::kMismatch);
  EXPECT_THAT(st.message(), HasSubstr("detect_peer_failures"));
}

TEST_F(UcxTest, SilentPeerTimesOutNamingIt) {
  // "Rank 1" publishes rank 0's own worker address: every hello rank 0
  // sends comes back to itself, is recognised as not from rank 1, and is
  // dropped, so rank 1 never answers.
  std::unique_ptr<ReliableTransport> t;
  UcxReliableConfig c = config(0, 2);
  c.connect_timeout = 300ms;
  common::Status st = create_ucx_reliable(
      c,
      [&](std::span<const std::byte> mine, Bytes& all) {
        all.assign(mine.begin(), mine.end());
        Bytes other(mine.begin(), mine.end());
        if (mine.size() == wire::kAddressHeaderBytes) {
          wire::AddressHeader h;
          std::string why;
          EXPECT_TRUE(wire::decode(mine.first<wire::kAddressHeaderBytes>(), h, why)) << why;
          h.rank = 1;
          h.nonce ^= 1;
          wire::encode(h,
                       std::span<std::byte, wire::kAddressHeaderBytes>(other.data(), other.size()));
        }
        all.insert(all.end(), other.begin(), other.end());
        return common::Status::ok();
      },
      t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout) << st.message();
  EXPECT_THAT(st.message(), AllOf(HasSubstr("rank 0"), HasSubstr("ranks 1")));
}

}  // namespace
}  // namespace mccl::transport::ucx
