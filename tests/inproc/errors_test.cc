// What users get wrong and what goes wrong around them: bad arguments,
// ranks that disagree, a rank that dies, a rank that never comes. Every case
// ends in an error on every rank that names the problem; none hangs. Each
// runs under every progress engine (EngineTest).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

using InvalidArgument = EngineTest;
using Mismatch = EngineTest;
using PeerFailure = EngineTest;
using Timeout = EngineTest;
using Bootstrap = EngineTest;
using Corruption = EngineTest;

TEST_P(InvalidArgument, NamesTheArgumentAndTheRank) {
  InProcessWorld world(3);
  auto comms = create_communicators(world, options());
  std::vector<std::byte> buf(100);
  std::string msg;
  EXPECT_EQ(code_of([&] { comms[1].broadcast(buf.data(), 100, 3); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("root 3"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { comms[1].broadcast(buf.data(), 100, -1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { comms[2].broadcast(nullptr, 5, 0); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("buffer is null"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { comms[0].allgather(nullptr, buf.data(), 10); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("send buffer is null"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { comms[0].allgather(buf.data(), nullptr, 10); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("receive buffer is null"), std::string::npos) << msg;
  // Overlap that is not the in-place layout.
  EXPECT_EQ(code_of([&] { comms[0].allgather(buf.data() + 5, buf.data(), 10); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
  std::vector<std::size_t> counts{1, 2}, displs{0, 1};
  EXPECT_EQ(
      code_of([&] { comms[0].allgatherv(buf.data(), buf.data() + 50, counts, displs); }, &msg),
      ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("3 entries"), std::string::npos) << msg;
  std::vector<std::size_t> c3{4, 4, 4}, overlapping{0, 2, 8};
  EXPECT_EQ(
      code_of([&] { comms[0].allgatherv(buf.data() + 50, buf.data(), c3, overlapping); }, &msg),
      ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("blocks overlap"), std::string::npos) << msg;
  // Zero bytes with null buffers is fine (and completes). Fresh
  // communicators: each refused call above counts as its rank's part of a
  // collective the other ranks never called.
  auto fresh = create_communicators(world, options());
  run_on_threads(fresh, [](Communicator& c) {
    c.broadcast(nullptr, 0, 0);
    c.allgather(nullptr, nullptr, 0);
  });
}

TEST_P(InvalidArgument, BadWorldAndOptions) {
  EXPECT_EQ(code_of([] { InProcessWorld w(0); }), ErrorCode::kInvalidArgument);
  InProcessWorld world(2);
  EXPECT_EQ(code_of([&] { world.bootstrap(2); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { create_communicators(world, options({.timeout = 0ms})); }),
            ErrorCode::kInvalidArgument);
  // No InfiniBand here; the offload daemon refuses any transport but UDP.
  EXPECT_EQ(
      code_of([&] { create_communicators(world, options({.transport = TransportKind::kIb})); }),
      offload() ? ErrorCode::kInvalidArgument : ErrorCode::kUnavailable);
}

// Every rank must end with kMismatch, either from the mismatched call itself
// or, if it had already finished it, from its next call: the communicator is
// broken on every rank, and nobody hangs.
void expect_mismatch_everywhere(int n, const CommOptions& options,
                                const std::function<void(Communicator&)>& bad_call) {
  InProcessWorld world(n, {.seed = 31});
  CommOptions o = options;
  o.timeout = 20s;
  auto comms = create_communicators(world, o);
  std::vector<ErrorCode> first(n, ErrorCode::kOk), second(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  run_on_threads(comms, [&](Communicator& c) {
    const int r = c.rank();
    first[r] = code_of([&] { bad_call(c); }, &msgs[r]);
    second[r] = code_of([&] { c.barrier(); }, first[r] == ErrorCode::kOk ? &msgs[r] : nullptr);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(first[r] == ErrorCode::kMismatch || second[r] == ErrorCode::kMismatch)
        << "rank " << r << ": " << to_string(first[r]) << " / " << to_string(second[r]);
    EXPECT_NE(msgs[r].find("rank"), std::string::npos) << msgs[r];
  }
}

// Ranks that resolve MCCL_PROTO_AUTH differently would drop each other's
// datagrams (a MAC-less one fails the flag check, and the other way round):
// creation fails on every rank, naming the rank that differs.
TEST_P(Mismatch, AuthenticationSettingDiffers) {
  if (!MCCL_TEST_HAVE_AUTH) GTEST_SKIP() << "built without authentication: auth cannot be on";
  const int n = 3;
  InProcessWorld world(n);
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto boot = world.bootstrap(r);
      // Rank 2 turns it off, the others on.
      const CommOptions o = options({.timeout = 20s, .authenticate = r != 2});
      codes[r] = code_of([&] { Communicator c(*boot, o); }, &msgs[r]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(codes[r], ErrorCode::kMismatch) << "rank " << r << ": " << msgs[r];
    EXPECT_NE(msgs[r].find("MCCL_PROTO_AUTH"), std::string::npos) << msgs[r];
    const std::string other = r == 2 ? "rank 0" : "rank 2";
    EXPECT_NE(msgs[r].find(other + " authenticates"), std::string::npos) << msgs[r];
  }
}

TEST_P(Mismatch, BroadcastSizesDiffer) {
  expect_mismatch_everywhere(5, options(), [](Communicator& c) {
    std::size_t bytes = c.rank() == 3 ? 5000 : 9000;
    std::vector<std::byte> buf(bytes);
    c.broadcast(buf.data(), bytes, 0);
  });
}

TEST_P(Mismatch, BroadcastRootsDiffer) {
  expect_mismatch_everywhere(4, options(), [](Communicator& c) {
    std::vector<std::byte> buf(3000);
    c.broadcast(buf.data(), buf.size(), c.rank() == 2 ? 1 : 0);
  });
}

TEST_P(Mismatch, AllgatherSizesDiffer) {
  expect_mismatch_everywhere(5, options(), [](Communicator& c) {
    std::size_t m = c.rank() == 1 ? 100 : 2000;
    std::vector<std::byte> send(m), recv(m * 5 + 10000);
    c.allgather(send.data(), recv.data(), m);
  });
}

TEST_P(Mismatch, AllgathervCountsDisagreeButSendersAgree) {
  // Rank 4 believes rank 0 sends 10 bytes; rank 0 sends 1000. Detected, and
  // rank 4's buffer is not overrun.
  expect_mismatch_everywhere(5, options(), [](Communicator& c) {
    std::vector<std::size_t> counts(5, 1000), displs(5);
    if (c.rank() == 4) counts[0] = 10;
    std::size_t off = 0;
    for (int r = 0; r < 5; ++r) {
      displs[r] = off;
      off += counts[r];
    }
    std::vector<std::byte> send(counts[c.rank()]), recv(off);
    c.allgatherv(send.data(), recv.data(), counts, displs);
  });
}

TEST_P(Mismatch, DifferentCollectives) {
  expect_mismatch_everywhere(3, options(), [](Communicator& c) {
    std::vector<std::byte> buf(3000), recv(9000);
    if (c.rank() == 1) {
      c.allgather(buf.data(), recv.data(), 3000);
    } else {
      c.broadcast(buf.data(), buf.size(), 0);
    }
  });
}

TEST_P(PeerFailure, KilledRankFailsEveryOtherRankQuickly) {
  // kill_rank() kills a rank on the in-memory fabric, which the daemon does
  // not use, and a rank of this process cannot die alone; a killed client
  // process is MultiProcessFailure.KilledRankGivesPeerFailureEverywhere/offload.
  if (offload()) GTEST_SKIP() << "kill_rank() does not reach the offload daemon";
  const int n = 6;
  InProcessWorld world(n, {.seed = 41});
  auto comms = create_communicators(world, options({.timeout = 30s}));
  std::atomic<bool> killed{false};
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  std::vector<double> seconds(n, 0);
  run_on_threads(comms, [&](Communicator& c) {
    const int r = c.rank();
    if (r == 4) {
      // Dies mid-collective: it posts its part, then stops.
      std::vector<std::byte> send(50000), recv(50000 * n);
      Request req = c.iallgather(send.data(), recv.data(), 50000);
      world.kill_rank(4);
      killed = true;
      try {
        req.wait(5s);
      } catch (const Error&) {
      }
      return;
    }
    while (!killed) std::this_thread::yield();
    auto t0 = std::chrono::steady_clock::now();
    codes[r] = code_of(
        [&] {
          std::vector<std::byte> send(50000), recv(50000 * n);
          c.allgather(send.data(), recv.data(), 50000);
          c.barrier();
        },
        &msgs[r]);
    seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  for (int r = 0; r < n; ++r) {
    if (r == 4) continue;
    EXPECT_EQ(codes[r], ErrorCode::kPeerFailure) << "rank " << r << ": " << msgs[r];
    EXPECT_NE(msgs[r].find("rank 4"), std::string::npos) << msgs[r];
    EXPECT_LT(seconds[r], 5.0) << "rank " << r << " took the long way (timeout) to fail";
  }
}

TEST_P(Timeout, MissingRankGivesTimeoutNotHang) {
  const int n = 3;
  InProcessWorld world(n);
  // The multicast broadcast's release wait (a small one would go down the
  // binomial tree, where rank 1 owes rank 2 nothing).
  auto comms = create_communicators(world, multicast_only(options({.timeout = 300ms})));
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  run_on_threads(comms, [&](Communicator& c) {
    if (c.rank() == 2) return;  // never calls the collective
    // Past MCCL_PROTO_EAGER_BYTES: an eager rank (thread, offload) would
    // complete without its neighbour's release.
    std::vector<std::byte> buf(100000);
    codes[c.rank()] = code_of([&] { c.broadcast(buf.data(), buf.size(), 0); }, &msgs[c.rank()]);
  });
  // Rank 1 needs rank 2's release and times out saying so. Rank 0, the
  // root, only needs rank 1, which has everything: it may succeed.
  EXPECT_EQ(codes[1], ErrorCode::kTimeout) << msgs[1];
  EXPECT_NE(msgs[1].find("waiting for release from rank 2"), std::string::npos) << msgs[1];
  EXPECT_TRUE(codes[0] == ErrorCode::kOk || codes[0] == ErrorCode::kTimeout) << msgs[0];
}

TEST_P(Timeout, RequestWaitTimesOutButCollectiveGoesOn) {
  InProcessWorld world(2);
  // Multicast, whatever the table says (the offload daemon's ranks share a
  // host, where 100 kB goes point to point), and past
  // MCCL_PROTO_EAGER_BYTES, so that the root waits for the release.
  auto comms =
      create_communicators(world, options({.broadcast_algorithm = BroadcastAlgorithm::kMulticast}));
  const std::size_t bytes = 100000;
  std::vector<std::byte> a(bytes), b(bytes);
  Request r0 = comms[0].ibroadcast(a.data(), bytes, 0);
  // Rank 1 has not started: rank 0 cannot finish yet.
  EXPECT_EQ(code_of([&] { r0.wait(20ms); }), ErrorCode::kTimeout);
  Request r1 = comms[1].ibroadcast(b.data(), bytes, 0);
  std::vector<Request> reqs;
  reqs.push_back(std::move(r0));
  reqs.push_back(std::move(r1));
  drive(reqs, 10s);
}

TEST_P(Bootstrap, RankThatNeverArrivesIsNamed) {
  InProcessWorld world(3);
  std::vector<ErrorCode> codes(2);
  std::vector<std::string> msgs(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto boot = world.bootstrap(r);
      codes[r] = code_of([&] { Communicator c(*boot, options({.timeout = 200ms})); }, &msgs[r]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(codes[r], ErrorCode::kTimeout);
    EXPECT_NE(msgs[r].find("never arrived: 2"), std::string::npos) << msgs[r];
  }
}

TEST_P(Corruption, CorruptDatagramsAreDroppedNeverPlaced) {
  // The fabric corrupts; the daemon's UDP sockets have no such hook (its
  // parsers are fuzzed: tests/fuzz, data_header and the authenticated decode).
  if (offload()) GTEST_SKIP() << "the in-memory fabric's corruption does not reach the daemon";
  const int n = 4;
  SimFabricOptions f{.corrupt = 0.2, .seed = 55};
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, options());
  std::vector<std::vector<std::byte>> bufs(n, std::vector<std::byte>(300000));
  fill(bufs[1].data(), bufs[1].size(), 1, 55);
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) reqs.push_back(comms[r].ibroadcast(bufs[r].data(), 300000, 1));
  drive(reqs, 30s);
  std::uint64_t invalid = 0;
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first_mismatch(bufs[r].data(), 300000, 1, 55), 300000u) << "rank " << r;
    invalid += comms[r].stats().dropped_invalid;
  }
  EXPECT_GT(invalid, 0u);
}

MCCL_TEST_EVERY_ENGINE(InvalidArgument);
MCCL_TEST_EVERY_ENGINE(Mismatch);
MCCL_TEST_EVERY_ENGINE(PeerFailure);
MCCL_TEST_EVERY_ENGINE(Timeout);
MCCL_TEST_EVERY_ENGINE(Bootstrap);
MCCL_TEST_EVERY_ENGINE(Corruption);

}  // namespace
}  // namespace mccl::testing
