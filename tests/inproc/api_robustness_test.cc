// Programmer errors and extreme arguments at the public API: sizes the wire
// cannot carry, displacements that overflow, timeouts that mean "forever",
// moved-from communicators, out-of-range fabric options, a rank whose
// arguments are invalid while its peers' are fine, and many communicators
// created and destroyed in a row. Each ends in a clear mccl::Error, or in
// success; none crashes, hangs or reports something unrelated. Those that
// involve an engine run under every one (EngineTest).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();

using ArgumentBounds = EngineTest;
using Deadlines = EngineTest;
using ProgrammerErrors = EngineTest;
using RefusedCall = EngineTest;
using Abort = EngineTest;
using OffloadRefusedCall = EngineTest;  // the offload engine only

bool says(const std::string& msg, const std::string& what) {
  return msg.find(what) != std::string::npos;
}

TEST_P(ArgumentBounds, AllgathervDisplacementThatOverflowsIsRefused) {
  // displs[1] + counts[1] wraps: the block would land before the buffer.
  InProcessWorld world(2);
  auto comms = create_communicators(world, options());
  std::vector<std::byte> send(16), recv(64);
  std::vector<std::size_t> counts{16, 16}, displs{0, kMax - 7};
  std::string msg;
  EXPECT_EQ(code_of([&] { comms[0].allgatherv(send.data(), recv.data(), counts, displs); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(says(msg, "rank 0") && says(msg, "displs[1]") && says(msg, "counts[1]")) << msg;
}

TEST_P(ArgumentBounds, SizesPastWhatTheWireCarriesAreRefused) {
  InProcessWorld world(2);
  auto comms = create_communicators(world, options());
  std::vector<std::byte> buf(64);
  std::string msg;
  // Near SIZE_MAX the chunk count used to wrap to 0 and the call "succeed".
  for (std::size_t bytes : {kMax, kMax - 9000, std::size_t{1} << 50}) {
    EXPECT_EQ(code_of([&] { comms[0].broadcast(buf.data(), bytes, 0); }, &msg),
              ErrorCode::kInvalidArgument)
        << bytes;
    EXPECT_TRUE(says(msg, "rank 0") && says(msg, "bytes is " + std::to_string(bytes))) << msg;
  }
  // Was "buffers overlap" (the displacements r * bytes wrapped).
  EXPECT_EQ(
      code_of([&] { comms[1].allgather(buf.data(), buf.data() + 8, std::size_t{1} << 62); }, &msg),
      ErrorCode::kInvalidArgument);
  EXPECT_TRUE(says(msg, "rank 1") && says(msg, "bytes_per_rank")) << msg;
  EXPECT_FALSE(says(msg, "overlap")) << msg;
  std::vector<std::size_t> counts{8, kMax - 100}, displs{0, 8};
  EXPECT_EQ(code_of([&] { comms[0].allgatherv(buf.data(), buf.data(), counts, displs); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(says(msg, "rank 0") && says(msg, "counts[1]")) << msg;
}

TEST_P(Deadlines, HugeTimeoutsMeanNoDeadline) {
  // INT64_MAX ms overflowed the deadline arithmetic: an immediate false
  // kTimeout, and creation failing with the world left unusable.
  const auto forever = std::chrono::milliseconds::max();
  {
    InProcessWorld world(3);
    auto comms = create_communicators(world, options({.timeout = forever}));
    run_on_threads(comms, [&](Communicator& c) {
      std::vector<std::byte> buf(5000);
      c.broadcast(buf.data(), buf.size(), 1);
      c.ibarrier().wait(forever);
      c.ibarrier().wait(std::chrono::milliseconds(9'300'000'000'000));
    });
  }
  ScopedEnv env;
  env.set("MCCL_COLL_TIMEOUT_MS", std::to_string(std::numeric_limits<std::int64_t>::max()));
  InProcessWorld world(2);
  auto comms = create_communicators(world, options());
  run_on_threads(comms, [](Communicator& c) { c.barrier(); });
}

TEST_P(Deadlines, HugeTimeoutOverUdpAndTcp) {
  // The TCP mesh reported "not complete after 0 ms" with such a timeout.
  InProcessWorld world(2);
  auto comms = create_communicators(world, options({.transport = TransportKind::kUdp,
                                                    .timeout = std::chrono::milliseconds::max()}));
  run_on_threads(comms, [](Communicator& c) {
    std::vector<std::byte> buf(3000);
    c.broadcast(buf.data(), buf.size(), 0);
  });
}

TEST_P(ProgrammerErrors, MovedFromCommunicatorThrows) {
  InProcessWorld world(1);
  auto comms = create_communicators(world, options());
  Communicator kept = std::move(comms[0]);
  Communicator& gone = comms[0];
  std::string msg;
  EXPECT_EQ(code_of([&] { (void)gone.rank(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(says(msg, "moved-from")) << msg;
  EXPECT_EQ(code_of([&] { (void)gone.size(); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { gone.barrier(); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { (void)gone.stats(); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(kept.rank(), 0);
  kept.barrier();
}

TEST(ProgrammerErrors, OutOfRangeFabricOptionsAreNamed) {
  struct Case {
    SimFabricOptions options;
    const char* name;
  };
  const double nan = std::nan("");
  const Case cases[] = {{{.loss = 2.0}, "loss"},
                        {{.loss = nan}, "loss"},
                        {{.duplicate = -0.1}, "duplicate"},
                        {{.reorder = nan}, "reorder"},
                        {{.corrupt = 1.5}, "corrupt"},
                        {{.link_gbit_per_s = -1.0}, "link_gbit_per_s"},
                        {{.link_gbit_per_s = INFINITY}, "link_gbit_per_s"},
                        {{.latency = -1ns}, "latency"}};
  for (const Case& c : cases) {
    std::string msg;
    EXPECT_EQ(code_of([&] { InProcessWorld w(2, c.options); }, &msg), ErrorCode::kInvalidArgument)
        << c.name;
    EXPECT_TRUE(says(msg, c.name)) << msg;
  }
}

TEST_P(RefusedCall, EveryRankLearnsTheFaultyRanksReason) {
  // Rank 1 passes a root out of range; ranks 0 and 2 call the broadcast
  // correctly. Rank 1 refuses first; the others then fail with its reason
  // (a rank that already holds everything may also succeed), never with a
  // timeout or an unrelated mismatch, and the communicator stays in step.
  // Under offload the refusal stays on its rank (communicator.h): the
  // daemon never hears of the call (OffloadRefusedCall.ErrorStaysOnItsRank).
  if (offload()) GTEST_SKIP() << "under offload a refused call stays on its rank";
  const int n = 3;
  InProcessWorld world(n);
  auto comms = create_communicators(world, options({.timeout = 20s}));
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  std::atomic<bool> refused{false};
  run_on_threads(comms, [&](Communicator& c) {
    const int r = c.rank();
    std::vector<std::byte> buf(3000);
    if (r == 1) {
      codes[r] = code_of([&] { c.broadcast(buf.data(), buf.size(), 7); }, &msgs[r]);
      refused = true;
    } else {
      while (!refused) std::this_thread::sleep_for(1ms);
      codes[r] = code_of([&] { c.broadcast(buf.data(), buf.size(), 0); }, &msgs[r]);
    }
    c.barrier();  // the next collective works on every rank
  });
  EXPECT_EQ(codes[1], ErrorCode::kInvalidArgument) << msgs[1];
  for (int r : {0, 2}) {
    if (codes[r] == ErrorCode::kOk) continue;
    EXPECT_EQ(codes[r], ErrorCode::kInvalidArgument) << "rank " << r << ": " << msgs[r];
    EXPECT_TRUE(says(msgs[r], "rank 1 refused") && says(msgs[r], "root 7")) << msgs[r];
  }
  // Under the inline engine the root needs rank 1's release: it cannot finish. The
  // thread engine may complete the root eagerly (keeping a copy for rank 1) before
  // rank 1's refusal reaches it, so there success is correct too (seen once in 40
  // runs on 2 busy cores).
  if (GetParam() == ProgressKind::kInline) {
    EXPECT_NE(codes[0], ErrorCode::kOk) << "the root needs rank 1's release: it cannot finish";
  }
}

TEST_P(OffloadRefusedCall, ErrorStaysOnItsRank) {
  // What communicator.h promises for the offload engine: the refused call
  // is not a collective at all, so the ranks stay in step without it.
  const int n = 3;
  InProcessWorld world(n);
  auto comms = create_communicators(world, options({.timeout = 20s}));
  std::string msg;
  std::vector<std::byte> bad(3000);
  EXPECT_EQ(code_of([&] { comms[1].broadcast(bad.data(), bad.size(), 7); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(says(msg, "rank 1") && says(msg, "root 7")) << msg;
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<std::byte> buf(3000);
    if (c.rank() == 0) fill(buf.data(), buf.size(), 0, 5);
    c.broadcast(buf.data(), buf.size(), 0);
    EXPECT_EQ(first_mismatch(buf.data(), buf.size(), 0, 5), buf.size()) << "rank " << c.rank();
    c.barrier();
  });
}

TEST_P(Abort, ARankBackFromAwayHearsWhatEndedTheCollective) {
  // Rank 1 is away (stopped) while rank 0's broadcast times out; rank 0
  // floods the timeout and exits. Rank 1's next call fails sending to the
  // dead rank 0, but must report the timeout already waiting in its inbox,
  // not the broken connection it is a consequence of ("Broken pipe").
  // (Under offload kill_rank() does not reach the daemon, so rank 0 is
  // only away there too; the timeout must reach rank 1 all the same.)
  InProcessWorld world(2);
  // Multicast, whatever the table says (the offload daemon's ranks share a
  // host, where 100 kB goes point to point: a send completes at once), and
  // past MCCL_PROTO_EAGER_BYTES: an eager root (thread, offload) would
  // complete without rank 1's release.
  auto comms = create_communicators(
      world, options({.timeout = 300ms, .broadcast_algorithm = BroadcastAlgorithm::kMulticast}));
  std::vector<std::byte> buf(100000);
  std::string msg;
  EXPECT_EQ(code_of([&] { comms[0].broadcast(buf.data(), buf.size(), 0); }, &msg),
            ErrorCode::kTimeout)
      << msg;
  world.kill_rank(0);
  EXPECT_EQ(code_of([&] { comms[1].barrier(); }, &msg), ErrorCode::kTimeout) << msg;
  EXPECT_TRUE(says(msg, "rank 0") && says(msg, "timed out")) << msg;
}

// The thread engine's placement only (the others load no topology).
TEST(Topology, ThreadEngineCommunicatorsComeAndGoQuickly) {
  // hwloc was reloaded for every communicator (~250 ms and a leak each):
  // 2,000 cycles did not finish in 280 s (here 1,000 took 100 s). Loaded
  // once, these take seconds (24 s under ASan, so fewer there: 500 with
  // the defect would still take over 120 s).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr int kCycles = 500;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  constexpr int kCycles = 500;
#else
  constexpr int kCycles = 2000;
#endif
#else
  constexpr int kCycles = 2000;
#endif
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCycles; ++i) {
    InProcessWorld world(2);
    auto comms = create_communicators(world, {.progress = ProgressKind::kThread});
    run_on_threads(comms, [](Communicator& c) { c.barrier(); });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
}

MCCL_TEST_EVERY_ENGINE(ArgumentBounds);
MCCL_TEST_EVERY_ENGINE(Deadlines);
MCCL_TEST_EVERY_ENGINE(ProgrammerErrors);
MCCL_TEST_EVERY_ENGINE(RefusedCall);
MCCL_TEST_EVERY_ENGINE(Abort);
INSTANTIATE_TEST_SUITE_P(Engines, OffloadRefusedCall, ::testing::Values(ProgressKind::kOffload),
                         engine_name);

}  // namespace
}  // namespace mccl::testing
