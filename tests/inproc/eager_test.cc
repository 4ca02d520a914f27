// Small collectives complete eagerly under the engines that serve on their
// own, and a communicator may be destroyed without a barrier: ranks that
// start at different times run a series of small broadcasts and allgathers
// under loss, check every byte, and let their communicator go at once. Each
// rank that finishes early stays its neighbour's repair source (it lingers,
// progress/linger.h), so nobody fails or hangs. Over the in-memory fabric
// and over UDP loopback multicast with TCP repairs (5% of datagrams dropped
// at the receiver).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <tuple>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kRounds = 40;

using Param = std::tuple<ProgressKind, bool>;  // engine, over UDP + TCP

std::string name(const ::testing::TestParamInfo<Param>& p) {
  const auto [progress, udp] = p.param;
  return std::string(progress == ProgressKind::kInline ? "inline" : "thread") +
         (udp ? "_udp_tcp" : "_sim");
}

class DestroyWithoutBarrier : public ::testing::TestWithParam<Param> {};

// One rank's part: a random head start, the series, then the communicator
// is destroyed by the scope's end.
void run_rank(Communicator comm, std::uint64_t seed, std::atomic<std::uint64_t>& eager) {
  const int n = comm.size(), me = comm.rank();
  std::mt19937_64 rng(seed + static_cast<std::uint64_t>(me));
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 20));
  for (int i = 0; i < kRounds; ++i) {
    const std::size_t size = std::size_t{8} << (i % 10);  // 8 B .. 4 KiB, alike on every rank
    const int root = i % n;
    std::vector<std::byte> buf(size);
    if (me == root) fill(buf.data(), size, root, seed + i);
    comm.broadcast(buf.data(), size, root);
    ASSERT_EQ(first_mismatch(buf.data(), size, root, seed + i), size)
        << "rank " << me << " broadcast " << i;
    std::vector<std::byte> mine(size), all(size * static_cast<std::size_t>(n));
    fill(mine.data(), size, me, seed + 1000 + i);
    comm.allgather(mine.data(), all.data(), size);
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(all.data() + b * size, size, b, seed + 1000 + i), size)
          << "rank " << me << " allgather " << i << " block " << b;
    }
  }
  eager += comm.stats().eager_completions;
  // No barrier: the communicator goes here, while neighbours may still be
  // repairing the last collectives.
}

TEST_P(DestroyWithoutBarrier, NoRankFailsOrHangs) {
  const auto [progress, udp] = GetParam();
  constexpr int kRanks = 5;
  ScopedEnv env;
  SimFabricOptions sim;
  sim.loss = 0.05;
  sim.seed = 77;
  CommOptions options{.progress = progress, .timeout = 20s};
  if (udp) {
    env.set("MCCL_UDP_TEST_DROP_PERMILLE", "50");
    env.set("MCCL_RELIABLE", "tcp");
    options.transport = TransportKind::kUdp;
  }
  InProcessWorld world(kRanks, sim);
  auto comms = create_communicators(world, multicast_only(options));
  std::atomic<std::uint64_t> eager{0};
  std::vector<std::exception_ptr> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        run_rank(std::move(comms[static_cast<std::size_t>(r)]), 500, eager);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    try {
      if (errors[static_cast<std::size_t>(r)])
        std::rethrow_exception(errors[static_cast<std::size_t>(r)]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": " << e.what();
    }
  }
  if (progress == ProgressKind::kInline) {
    EXPECT_EQ(eager.load(), 0u) << "the inline engine must wait for the release";
  } else {
    EXPECT_GT(eager.load(), 0u) << "no collective completed eagerly";
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, DestroyWithoutBarrier,
                         ::testing::Combine(::testing::Values(ProgressKind::kInline,
                                                              ProgressKind::kThread),
                                            ::testing::Bool()),
                         name);

}  // namespace
}  // namespace mccl::testing
