// The UCX reliable transport (src/transport/ucx), ranks as threads of one
// process, each with its own UCX context and worker: created on threads
// (setup is collective), then driven from the test's thread. UCX runs over
// TCP on lo (UCX_TLS=tcp, UCX_NET_DEVICES=lo, set before any context is
// made) unless a test says otherwise; one suite repeats the basics over
// shared memory. The reliable-transport conformance suite
// (reliable_conformance.h: ordered delivery of 0..8 MiB, eager and
// rendezvous, multi-part sends, peer failure, poll() and wait_fd()), then
// what is UCX's own: moved rendezvous thresholds, back-pressure, one-sided
// reads, shared memory; setup errors are in ucx_failure_test.cc, the shared
// fixtures in ucx_test_support.h.
//
// UCX can hang where a socket transport would fail: every wait here has a
// deadline, and a watchdog aborts the whole binary (naming the test) if a
// test outlives its budget, e.g. inside a UCX call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "reliable_conformance.h"
#include "ucx_test_support.h"

namespace mccl::transport::ucx {
namespace {

using namespace test;

// ---- the conformance suite (reliable_conformance.h) --------------------------

struct UcxTraits {
  using Guard = Watchdog100s;
  static Mesh make_mesh(int n) { return test::make_mesh(n); }
  static common::Status create(int rank, int size, const OobAllgather& oob,
                               std::unique_ptr<ReliableTransport>& out) {
    return create_ucx_reliable(config(rank, size), oob, out);
  }
  static common::Status create_alone(const OobAllgather& oob,
                                     std::unique_ptr<ReliableTransport>& out) {
    return create_ucx_reliable({.rank = 0, .size = 1}, oob, out);
  }
  // Around UCX's eager/rendezvous switch for TCP and up to 8 MiB, with
  // small ones in between so rendezvous completions overtake nothing.
  static std::vector<std::size_t> sizes() {
    return {0,        1,     2,     3,     100,    1000,   8191,     8192,     8193,
            16384,    65535, 65536, 65537, 262144, 262145, 1u << 20, 4u << 20, (8u << 20) - 1,
            8u << 20, 0,     7};
  }
  static constexpr std::size_t kLarge = 600 * 1024;  // rendezvous
  static constexpr bool kSelfSendWakes = false;
  // Every path of UCX was taken: rendezvous, eager copied, immediate sends.
  static void check_counters(const Mesh& ts, std::size_t per_rank) {
    UcxCounters sum;
    for (const auto& t : ts) {
      auto* u = as_ucx(t.get());
      ASSERT_NE(u, nullptr);
      const UcxCounters c = u->counters();
      EXPECT_EQ(c.messages_sent, per_rank);
      EXPECT_EQ(c.messages_received, per_rank);
      EXPECT_EQ(c.buffered_bytes, 0u);
      EXPECT_EQ(c.dropped_foreign, 0u);
      sum.received_rndv += c.received_rndv;
      sum.received_eager_copied += c.received_eager_copied;
      sum.sends_immediate += c.sends_immediate;
    }
    EXPECT_GT(sum.received_rndv, 0u) << "no message took UCX's rendezvous path";
    EXPECT_GT(sum.received_eager_copied, 0u) << "no message took UCX's eager path";
    EXPECT_GT(sum.sends_immediate, 0u) << "no small message took the immediate path";
  }
};

}  // namespace
}  // namespace mccl::transport::ucx

namespace mccl::transport::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Ucx, ReliableConformance, ucx::UcxTraits);
}  // namespace mccl::transport::test

namespace mccl::transport::ucx {
namespace {

using namespace test;

// ---- ordered delivery under moved thresholds ---------------------------------

// UCX's switch from eager to rendezvous moved (UCX_RNDV_THRESH): low, so
// that small messages take rendezvous between eager ones and completions
// come back out of order; high, so that large messages go as multi-fragment
// eager, which UCX hands over in a buffer the transport holds until
// delivery instead of copying.
class UcxThresholds : public ::testing::TestWithParam<const char*> {
 protected:
  Watchdog watchdog_{60s};
};

TEST_P(UcxThresholds, DeliverInOrder) {
  ScopedVar thresh("UCX_RNDV_THRESH", GetParam());
  auto ts = make_mesh(2);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 400; ++i) {
    const std::size_t pick[] = {0, 1, 100, 2000, 9000, 40000, 70000, 300000, 900000};
    sizes.push_back(pick[(i * 7 + i / 9) % 9]);
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, static_cast<int>(k), sizes[k])).is_ok());
    ASSERT_TRUE(ts[1]->send(0, pattern(1, 0, static_cast<int>(k), sizes[k])).is_ok());
  }
  std::vector<Recorder> rec(2);
  drive(ts, rec, [&] {
    return rec[0].events.size() == sizes.size() && rec[1].events.size() == sizes.size();
  });
  for (int to = 0; to < 2; ++to) {
    auto got = rec[static_cast<std::size_t>(to)].from(1 - to);
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      ASSERT_EQ(got[k], pattern(1 - to, to, static_cast<int>(k), sizes[k])) << k;
    }
  }
  const UcxCounters c = as_ucx(ts[1].get())->counters();
  std::printf(
      "[ info ] UCX_RNDV_THRESH=%s: rndv %llu, reordered %llu, eager copied %llu, held %llu\n",
      GetParam(), static_cast<unsigned long long>(c.received_rndv),
      static_cast<unsigned long long>(c.completed_out_of_order),
      static_cast<unsigned long long>(c.received_eager_copied),
      static_cast<unsigned long long>(c.received_eager_held));
  EXPECT_EQ(c.buffered_bytes, 0u);
  if (std::string(GetParam()) == "1m") {
    EXPECT_GT(c.received_eager_held, 0u) << "no multi-fragment eager message was held";
  } else {
    EXPECT_GT(c.received_rndv, 100u);
    EXPECT_GT(c.completed_out_of_order, 0u) << "no rendezvous was overtaken: reordering untested";
  }
}

INSTANTIATE_TEST_SUITE_P(Rndv, UcxThresholds, ::testing::Values("1k", "1m"));

// ---- sends ---------------------------------------------------------------

TEST_F(UcxTest, BadPeersAndOversizedMessagesAreRejected) {
  auto ts = make_mesh(2);
  const Bytes m = pattern(0, 1, 0, 10);
  EXPECT_EQ(ts[0]->send(2, m).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ts[0]->send(-1, m).code(), ErrorCode::kInvalidArgument);
  // 1 GiB + 1 in parts that point at the same small buffer: refused before any copy.
  const Bytes chunk(1 << 20);
  std::vector<std::span<const std::byte>> parts(1024, chunk);
  parts.push_back(std::span<const std::byte>(chunk).first(1));
  EXPECT_EQ(ts[0]->send(1, parts).code(), ErrorCode::kInvalidArgument);
}

TEST_F(UcxTest, SendsPastTheOutstandingBoundAreRefusedUntilPolled) {
  constexpr std::size_t kBound = 2u << 20;
  auto ts = make_mesh(2, [](UcxReliableConfig& c) { c.max_outstanding_bytes = kBound; });
  constexpr std::size_t kSize = 512 * 1024;  // rendezvous: owned until the peer fetches it
  std::vector<Bytes> sent;
  common::Status refused;
  const long sleeps_before = voluntary_sleeps();
  for (int k = 0; k < 64; ++k) {
    Bytes m = pattern(0, 1, k, kSize);
    common::Status s = ts[0]->send(1, m);
    if (!s.is_ok()) {
      refused = s;
      break;
    }
    sent.push_back(std::move(m));
  }
  EXPECT_LT(voluntary_sleeps() - sleeps_before, 16) << "send() must not block";
  ASSERT_EQ(refused.code(), ErrorCode::kUnavailable) << refused.message();
  EXPECT_THAT(refused.message(), AllOf(HasSubstr("max_outstanding_bytes"), HasSubstr("retry")));
  auto* u = as_ucx(ts[0].get());
  ASSERT_NE(u, nullptr);
  EXPECT_LE(u->outstanding_bytes(), kBound);
  EXPECT_GE(u->outstanding_bytes() + kSize, kBound) << "refused only at the bound";
  EXPECT_EQ(u->outstanding_bytes(1), u->outstanding_bytes());
  EXPECT_EQ(u->counters().sends_backpressured, 1u);

  std::vector<Recorder> rec(2);
  drive(ts, rec, [&] { return rec[1].events.size() == sent.size(); });
  drive(ts, rec, [&] { return u->outstanding_bytes() == 0; });
  EXPECT_GE(u->counters().peak_outstanding_bytes, kBound - kSize);
  // Room again.
  Bytes last = pattern(0, 1, 99, kSize);
  ASSERT_TRUE(ts[0]->send(1, last).is_ok());
  sent.push_back(last);
  drive(ts, rec, [&] { return rec[1].events.size() == sent.size(); });
  EXPECT_EQ(rec[1].from(0), sent);
}

// ---- poll and wait_fd --------------------------------------------------------

// A large (rendezvous) message wakes a sleeping engine too: wait, poll
// until nothing, wait again (the small-message case is the conformance
// suite's).
TEST_F(UcxTest, WaitFdWakesForARendezvousMessage) {
  auto ts = make_mesh(2);
  Recorder rec;
  std::size_t d = 0;
  ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());  // arms
  ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, 3, 2u << 20)).is_ok());
  const auto until = Clock::now() + 5s;
  while (rec.events.empty() && Clock::now() < until) {
    // Rank 0 must progress for its rendezvous send; it sleeps on its own fd.
    std::size_t d0 = 0;
    Recorder rec0;
    ASSERT_TRUE(ts[0]->poll(rec0, 64, d0).is_ok());
    pollfd both[2] = {{ts[0]->wait_fd(), POLLIN, 0}, {ts[1]->wait_fd(), POLLIN, 0}};
    ASSERT_GE(::poll(both, 2, 5000), 1) << "nobody woke while the rendezvous was pending";
    ASSERT_TRUE(ts[1]->poll(rec, 64, d).is_ok());
  }
  ASSERT_EQ(rec.events.size(), 1u);
  EXPECT_EQ(rec.events[0].data, pattern(0, 1, 3, 2u << 20));
}

// ---- lanes --------------------------------------------------------------------

TEST_F(UcxTest, DescribesTheLanesOfEachPeer) {
  auto ts = make_mesh(2);
  const std::string lanes = as_ucx(ts[0].get())->describe_peer(1);
  std::printf("[ info ] tcp lanes 0->1: %s\n", lanes.c_str());
  EXPECT_THAT(lanes, HasSubstr("tcp"));
  EXPECT_EQ(as_ucx(ts[0].get())->describe_peer(0), "");
  ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, 0, 100)).is_ok());
  std::vector<Recorder> rec(2);
  drive(ts, rec, [&] { return rec[1].events.size() == 1; });
}

// ---- other UCX transports --------------------------------------------------------

// Creates two ranks over UCX_TLS=`tls` (no UCX_NET_DEVICES).
void make_pair_over(const char* tls, bool detect, Mesh& ts, std::vector<common::Status>& st) {
  ScopedUcxEnv env(tls, nullptr);
  ThreadAllgather oob(2);
  ts.clear();
  ts.resize(2);
  st.assign(2, {});
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      UcxReliableConfig c = config(r, 2);
      c.detect_peer_failures = detect;
      st[static_cast<std::size_t>(r)] =
          create_ucx_reliable(c, oob.of(r), ts[static_cast<std::size_t>(r)]);
    });
  }
  for (auto& th : threads) th.join();
}

// With peer-failure detection UCX 1.13 accepts no shared-memory transport
// for active messages ("no peer failure handler"): create fails naming the
// unreachable peer instead of hanging.
TEST_F(UcxTest, SharedMemoryOnlyWithFailureDetectionIsUnreachable) {
  Mesh ts;
  std::vector<common::Status> st;
  make_pair_over("sm,self", true, ts, st);
  if (st[0].is_ok()) GTEST_SKIP() << "this UCX has shared memory with peer-failure support";
  EXPECT_EQ(st[0].code(), ErrorCode::kTransportError) << st[0].message();
  EXPECT_THAT(st[0].message(), AllOf(HasSubstr("rank 1"), HasSubstr("UCX_TLS")));
}

// Shared memory between contexts of one process, what ranks on one host
// use when allowed: needs detect_peer_failures = false. Skips, saying so,
// where UCX finds no such transport.
TEST_F(UcxTest, SharedMemoryDelivers) {
  Mesh ts;
  std::vector<common::Status> st;
  make_pair_over("sm,self", false, ts, st);
  if (st[0].code() == ErrorCode::kUnavailable || st[0].code() == ErrorCode::kTransportError) {
    GTEST_SKIP() << "UCX_TLS=sm,self does not work here: " << st[0].message();
  }
  ASSERT_TRUE(st[0].is_ok()) << st[0].message();
  ASSERT_TRUE(st[1].is_ok()) << st[1].message();
  std::printf("[ info ] sm lanes 0->1: %s\n", as_ucx(ts[0].get())->describe_peer(1).c_str());
  std::vector<std::size_t> sizes = {0, 1, 5000, 70000, 1u << 20, 8u << 20, 3};
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, static_cast<int>(k), sizes[k])).is_ok());
  }
  std::vector<Recorder> rec(2);
  drive(ts, rec, [&] { return rec[1].events.size() == sizes.size(); });
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    EXPECT_EQ(rec[1].events[k].data, pattern(0, 1, static_cast<int>(k), sizes[k])) << k;
  }
  const UcxCounters c = as_ucx(ts[1].get())->counters();
  std::printf("[ info ] sm: rndv %llu, eager copied %llu, eager held %llu\n",
              static_cast<unsigned long long>(c.received_rndv),
              static_cast<unsigned long long>(c.received_eager_copied),
              static_cast<unsigned long long>(c.received_eager_held));
}

}  // namespace
}  // namespace mccl::transport::ucx
