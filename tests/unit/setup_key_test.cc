// The communicator key is agreed, never sent (protocol/group_key.h): every
// rank ends with the same key, and nothing that crosses the bootstrap
// exchange (what MCCL's TCP store, torch's c10d store or PMIx carry, and
// anyone who reads them sees) contains it. A share altered on its way
// (someone who can write to the store) makes creation fail on every rank
// with kMismatch instead of leaving ranks with different keys.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/auth.h"
#include "protocol/group_key.h"
#include "reliable_test_support.h"
#include "setup/agree.h"
#include "setup/hello.h"

namespace mccl::setup {
namespace {

using Bytes = std::vector<std::byte>;

struct Exchange {
  std::vector<Agreement> agreed;
  std::vector<common::Status> status;
  std::vector<Bytes> seen;  // every contribution and every result, as a store reader sees them
};

// agree_on_hello then agree_on_link (which confirms the key) on a thread
// per rank, authenticating; `tamper` may rewrite what a rank contributes.
Exchange agree(int n, const std::function<void(int rank, int round, Bytes&)>& tamper = {}) {
  transport::test::ThreadAllgather oob(n);
  Exchange run;
  run.agreed.resize(static_cast<std::size_t>(n));
  run.status.assign(static_cast<std::size_t>(n), common::Status::ok());
  std::mutex mu;
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      int round = 0;
      const auto my_oob = [&](std::span<const std::byte> mine, Bytes& all) {
        Bytes sent(mine.begin(), mine.end());
        if (tamper) tamper(r, round, sent);
        ++round;
        const common::Status st = oob(r, sent, all);
        std::lock_guard lock(mu);
        run.seen.push_back(sent);
        run.seen.push_back(all);
        return st;
      };
      Proposal p;
      p.transport = TransportKind::kUdp;
      p.authenticate = true;
      const std::string who = "rank " + std::to_string(r) + ": ";
      auto& a = run.agreed[static_cast<std::size_t>(r)];
      auto& st = run.status[static_cast<std::size_t>(r)];
      std::uint32_t mtu = 0;
      st = agree_on_hello(r, n, p, my_oob, who, a);
      if (st.is_ok()) st = agree_on_link(r, n, {1500, 0}, my_oob, who, a, mtu);
    });
  }
  for (auto& t : ranks) t.join();
  return run;
}

bool contains(const Bytes& hay, std::span<const std::byte> needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}

class SetupKey : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!protocol::auth_available())
      GTEST_SKIP() << "built without authentication: no key to agree on";
    ::unsetenv("MCCL_PROTO_AUTH");
  }
};

// Defect: rank 0's key travelled in its hello, so whoever read the store
// (torch's c10d TCPStore has no authentication at all) could forge
// datagrams. Now no part of the key, not even 8 bytes of it, is in
// anything the exchange carries, for one, two and more ranks.
TEST_F(SetupKey, EveryRankAgreesAndNoReaderOfTheExchangeSeesTheKey) {
  for (int n : {1, 2, 3, 4, 7}) {
    const Exchange run = agree(n);
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(run.status[r].is_ok()) << n << " ranks: " << run.status[r].message();
      ASSERT_TRUE(run.agreed[r].auth);
      EXPECT_EQ(run.agreed[r].key, run.agreed[0].key) << n << " ranks, rank " << r;
    }
    const auto& key = run.agreed[0].key;
    EXPECT_NE(key, protocol::AuthKey{});
    for (std::size_t at = 0; at + 8 <= key.size(); at += 8) {
      for (const Bytes& b : run.seen) {
        EXPECT_FALSE(contains(b, std::span(key).subspan(at, 8)))
            << n << " ranks: key bytes " << at << ".." << at + 8 << " crossed the exchange";
      }
    }
  }
  // Two communicators never share a key.
  EXPECT_NE(agree(3).agreed[0].key, agree(3).agreed[0].key);
}

// A writer of the store who substitutes a rank's share (round 1, in its
// hello) or its round-2 value: every rank fails creation with kMismatch
// naming the key, none hangs and none goes on with a key of its own.
TEST_F(SetupKey, AnAlteredShareFailsCreationOnEveryRank) {
  for (int tampered_round : {0, 1}) {
    const Exchange run = agree(4, [&](int rank, int round, Bytes& sent) {
      if (rank != 2 || round != tampered_round) return;
      // Another valid group element in place of the real one.
      protocol::KeyScalar s;
      protocol::KeyShare other;
      protocol::group_key_begin(s, other);
      const std::size_t at = round == 0 ? 32 : 0;  // the share's offset in the hello (hello.h)
      std::copy(other.begin(), other.end(), sent.begin() + static_cast<std::ptrdiff_t>(at));
    });
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(run.status[r].code(), ErrorCode::kMismatch)
          << "round " << tampered_round << ", rank " << r << ": " << run.status[r].message();
      EXPECT_THAT(run.status[r].message(), ::testing::HasSubstr("communicator keys"));
    }
  }
  // Garbage that is no group element at all.
  const Exchange run = agree(3, [](int rank, int round, Bytes& sent) {
    if (rank == 1 && round == 1) std::fill(sent.begin(), sent.end(), std::byte{0xff});
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(run.status[r].code(), ErrorCode::kMismatch);
}

// The scheme itself, without setup: the same key on every rank of rings
// of several sizes, and malformed shares refused.
TEST_F(SetupKey, GroupKeyIsTheSameOnEveryRank) {
  for (int n : {3, 5, 16}) {
    std::vector<protocol::KeyScalar> r(static_cast<std::size_t>(n));
    std::vector<protocol::KeyShare> z(r.size()), x(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) protocol::group_key_begin(r[i], z[i]);
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(protocol::group_key_round2(r[i], i, z, x[i]));
    }
    protocol::AuthKey first{};
    for (int i = 0; i < n; ++i) {
      protocol::AuthKey k{};
      ASSERT_TRUE(protocol::group_key_finish(r[i], i, z, x, k));
      if (i == 0) first = k;
      EXPECT_EQ(k, first) << n << " ranks, rank " << i;
    }
    auto bad = x;
    bad[1].fill(std::byte{0xff});
    protocol::AuthKey k{};
    EXPECT_FALSE(protocol::group_key_finish(r[0], 0, z, bad, k));
    auto bad_z = z;
    bad_z[1].fill(std::byte{0xff});
    EXPECT_FALSE(protocol::group_key_round2(r[0], 0, bad_z, x[0]));
  }
}

}  // namespace
}  // namespace mccl::setup
