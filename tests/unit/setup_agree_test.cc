// src/setup/agree: the hello and link agreements among ranks on threads.
// What is checked here is that every rank comes to the same decision from
// what the others said: the chunk size and whether MCCL_PROTO_AUTH=auto
// authenticates at the link rates the ranks reported.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "protocol/auth.h"
#include "reliable_test_support.h"
#include "setup/agree.h"
#include "setup/hello.h"

namespace mccl::setup {
namespace {

struct Outcome {
  Agreement agreed;
  std::uint32_t mtu = 0;
  common::Status status = common::Status::ok();
};

// Rewrites the bytes rank `rank` contributes to its first exchange (the
// hello): stands for a rank built from another release.
using HelloEdit = std::function<void(int rank, std::vector<std::byte>& hello)>;

// Runs agree_on_hello then agree_on_link on one thread per rank, rank r
// bringing links[r] and `authenticate` (unset: MCCL_PROTO_AUTH).
// `propose` fills in what else rank r brings (its machine, its cores).
std::vector<Outcome> agree(const std::vector<LinkFacts>& links,
                           std::optional<bool> authenticate = std::nullopt,
                           const HelloEdit& edit = {},
                           const std::function<void(int, Proposal&)>& propose = {}) {
  const int n = static_cast<int>(links.size());
  transport::test::ThreadAllgather oob(n);
  std::vector<Outcome> out(links.size());
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      bool first = true;
      const auto my_oob = [&, r](std::span<const std::byte> mine, std::vector<std::byte>& all) {
        std::vector<std::byte> bytes(mine.begin(), mine.end());
        if (first && edit) edit(r, bytes);
        first = false;
        return oob(r, bytes, all);
      };
      Proposal p;
      p.transport = TransportKind::kUdp;
      p.authenticate = authenticate;
      if (propose) propose(r, p);
      const std::string who = "rank " + std::to_string(r) + ": ";
      Outcome& o = out[static_cast<std::size_t>(r)];
      o.status = agree_on_hello(r, n, p, my_oob, who, o.agreed);
      if (o.status.is_ok()) o.status = agree_on_link(r, n, links[r], my_oob, who, o.agreed, o.mtu);
    });
  }
  for (auto& t : ranks) t.join();
  return out;
}

class SetupAgree : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("MCCL_PROTO_AUTH");
    ::unsetenv("MCCL_PROTO_AUTH_AUTO_MAX_MBIT");
  }
  void TearDown() override { SetUp(); }
};

TEST_F(SetupAgree, TheSmallestDatagramWins) {
  const auto out = agree({{1500, 0}, {9000, 0}, {1400, 0}});
  for (const auto& o : out) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.mtu, 1400u);
  }
}

TEST_F(SetupAgree, EveryRankKnowsTheSlowestKnownLink) {
  // Unknown rates (0) do not count; every rank agrees on the same.
  for (const auto& o : agree({{1500, 0}, {1500, 10000}, {1500, 1000}, {1500, 0}})) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.agreed.slowest_link_mbit, 1000u);
  }
  for (const auto& o : agree({{1500, 0}, {1500, 0}})) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.agreed.slowest_link_mbit, 0u);
  }
}

TEST_F(SetupAgree, AutoAuthenticatesAtEveryRateByDefault) {
  if (!protocol::auth_available()) GTEST_SKIP() << "built without authentication";
  // Unknown (lo, veth), 1 Gbit/s and 400 Gbit/s.
  const auto out = agree({{1500, 0}, {1500, 1000}, {1500, 400000}});
  for (const auto& o : out) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_TRUE(o.agreed.auth);
  }
}

TEST_F(SetupAgree, AutoIsOffOnEveryRankWhenOneRanksLinkIsAboveTheSetLimit) {
  ::setenv("MCCL_PROTO_AUTH_AUTO_MAX_MBIT", "2500", 1);
  const auto out = agree({{1500, 1000}, {1500, 10000}, {1500, 0}});
  for (const auto& o : out) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_FALSE(o.agreed.auth);
  }
}

TEST_F(SetupAgree, TheLimitIsASetting) {
  if (!protocol::auth_available()) GTEST_SKIP() << "built without authentication";
  ::setenv("MCCL_PROTO_AUTH_AUTO_MAX_MBIT", "25000", 1);
  for (const auto& o : agree({{1500, 10000}, {1500, 10000}})) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_TRUE(o.agreed.auth);
  }
  ::setenv("MCCL_PROTO_AUTH_AUTO_MAX_MBIT", "500", 1);
  for (const auto& o : agree({{1500, 1000}, {1500, 0}})) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_FALSE(o.agreed.auth);
  }
}

TEST_F(SetupAgree, AnExplicitChoiceIsKeptAtAnyRate) {
  if (protocol::auth_available()) {
    for (const auto& o : agree({{1500, 100000}, {1500, 100000}}, true)) {
      ASSERT_TRUE(o.status.is_ok()) << o.status.message();
      EXPECT_TRUE(o.agreed.auth);
    }
  }
  for (const auto& o : agree({{1500, 0}, {1500, 0}}, false)) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_FALSE(o.agreed.auth);
  }
}

// A rank of an older release tags datagrams with Poly1305: every datagram
// would fail the others' checks, so creation fails on every rank, naming it.
TEST_F(SetupAgree, RanksThatTagDatagramsDifferentlyFailCreationNamingTheRank) {
  if (!protocol::auth_available()) GTEST_SKIP() << "built without authentication";
  const auto older = [](int rank, std::vector<std::byte>& hello) {
    ASSERT_EQ(hello.size(), kHelloBytes);
    if (rank == 1) hello[19] = static_cast<std::byte>(protocol::MacKind::kPoly1305);
  };
  const auto out = agree({{1500, 0}, {1500, 0}, {1500, 0}}, true, older);
  for (const auto& o : out) {  // rank 1 too reads its (edited) hello from the exchange
    EXPECT_EQ(o.status.code(), ErrorCode::kMismatch) << o.status.message();
    EXPECT_NE(o.status.message().find("rank 1 tags datagrams with Poly1305"), std::string::npos)
        << o.status.message();
  }
  // With authentication off the MAC does not matter.
  for (const auto& o : agree({{1500, 0}, {1500, 0}}, false, older)) {
    EXPECT_TRUE(o.status.is_ok()) << o.status.message();
  }
}

// The fewest cores any rank has to itself, counting the ranks on each
// machine; a rank that does not say (0: an older build) makes it 0.
TEST_F(SetupAgree, CoresPerRankIsTheFewestAnyRankHasToItself) {
  const std::vector<LinkFacts> links(4, LinkFacts{1500, 0});
  auto two_machines = [](int r, Proposal& p) {
    p.machine = r < 3 ? 0xA : 0xB;  // three ranks share 16 cores, one has 4
    p.cores = r < 3 ? 16 : 4;
  };
  for (const auto& o : agree(links, std::nullopt, {}, two_machines)) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.agreed.cores_per_rank, 4);
    EXPECT_DOUBLE_EQ(o.agreed.core_share, 4.0);
  }
  auto crowded = [](int r, Proposal& p) {
    p.machine = r < 3 ? 0xA : 0;  // 0: a machine of its own
    p.cores = r < 3 ? 6 : 64;
  };
  for (const auto& o : agree(links, std::nullopt, {}, crowded)) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.agreed.cores_per_rank, 2);
    EXPECT_DOUBLE_EQ(o.agreed.core_share, 2.0);
  }
  // Fewer cores than ranks: rounded down to 0, the share unrounded (the
  // compressed collectives' rule, coll/compress_choice.h, reads it).
  auto shared = [](int, Proposal& p) {
    p.machine = 0xC;
    p.cores = 2;
  };
  for (const auto& o : agree(links, std::nullopt, {}, shared)) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.agreed.cores_per_rank, 0);
    EXPECT_DOUBLE_EQ(o.agreed.core_share, 0.5);
  }
  auto one_silent = [](int r, Proposal& p) {
    p.machine = static_cast<std::uint64_t>(r + 1);
    p.cores = r == 2 ? 0 : 32;
  };
  for (const auto& o : agree(links, std::nullopt, {}, one_silent)) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_EQ(o.agreed.cores_per_rank, 0);
    EXPECT_DOUBLE_EQ(o.agreed.core_share, 0.0);
  }
}

// One host only where every rank multicasts over loopback: a single rank on
// a real interface makes it several hosts for every rank.
TEST_F(SetupAgree, OneHostOnlyWhereEveryRankIsOnLoopback) {
  for (const auto& o : agree(std::vector<LinkFacts>(3, LinkFacts{1500, 0, true}))) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_TRUE(o.agreed.one_host);
  }
  for (const auto& o : agree({{1500, 0, true}, {1500, 0, false}, {1500, 0, true}})) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_FALSE(o.agreed.one_host);
  }
  // The flag sits beside the key's digest: authenticated, the keys still agree.
  for (const auto& o : agree(std::vector<LinkFacts>(2, LinkFacts{1500, 0, true}), true)) {
    ASSERT_TRUE(o.status.is_ok()) << o.status.message();
    EXPECT_TRUE(o.agreed.one_host);
    EXPECT_TRUE(o.agreed.auth);
  }
}

TEST(Hello, CarriesTheCoresAndTheEpoch) {
  Hello h;
  h.cores = 96;
  h.epoch = 3;
  std::array<std::byte, kHelloBytes> bytes;
  encode_hello(h, bytes);
  Hello back;
  ASSERT_TRUE(decode_hello(bytes, back));
  EXPECT_EQ(back.cores, 96u);
  EXPECT_EQ(back.epoch, 3u);
}

TEST(Hello, CarriesTheMacKindAndRefusesAnUnknownOne) {
  Hello h;
  h.tag = 7;
  h.auth_mac = protocol::MacKind::kAesGmac;
  std::array<std::byte, kHelloBytes> bytes;
  encode_hello(h, bytes);
  Hello back;
  ASSERT_TRUE(decode_hello(bytes, back));
  EXPECT_EQ(back.auth_mac, protocol::MacKind::kAesGmac);
  bytes[19] = std::byte{3};
  EXPECT_FALSE(decode_hello(bytes, back));
}

TEST_F(SetupAgree, DatagramsTooSmallForDataFailEveryRank) {
  // 60 bytes carry a header but no 64 bytes of data, with or without a tag.
  for (const auto& o : agree({{60, 0}, {1500, 0}})) {
    EXPECT_EQ(o.status.code(), ErrorCode::kUnavailable);
    EXPECT_NE(o.status.message().find("too small"), std::string::npos) << o.status.message();
  }
}

TEST(AutoAuthAtRate, UnknownCountsAsSlowAndTheLimitIsInclusive) {
  EXPECT_TRUE(auto_auth_at_rate(400000, 0));
  EXPECT_TRUE(auto_auth_at_rate(0, 2500));
  EXPECT_TRUE(auto_auth_at_rate(2500, 2500));
  EXPECT_FALSE(auto_auth_at_rate(2501, 2500));
}

}  // namespace
}  // namespace mccl::setup
