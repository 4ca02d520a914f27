// Elastic membership on the in-memory fabric (docs/elastic.md): a rank
// dies (InProcessWorld::kill_rank) during a collective, every survivor sees
// the collective fail, shrinks, and the survivors' communicator runs
// collectives byte-exact; revoke() fails every rank's collective at once.
// Under every engine. kill_rank() kills a node of the in-memory fabric,
// which the offload daemon does not use (it runs UDP and TCP): under
// offload only revoke and grow run here, and tests/mp/elastic_test.cc
// kills real processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

enum class Coll { kBroadcast, kAllgather, kReduceScatter, kAllreduce };

const char* name(Coll c) {
  switch (c) {
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kAllgather:
      return "allgather";
    case Coll::kReduceScatter:
      return "reduce_scatter";
    case Coll::kAllreduce:
      return "allreduce";
  }
  return "?";
}

// Starts `coll` (64 Ki int32 per rank, large enough to be in flight when a
// rank dies) and returns its request; `keep` holds the buffers.
Request start(Communicator& c, Coll coll, std::vector<std::vector<std::int32_t>>& keep) {
  constexpr std::size_t kCount = 64 << 10;
  const auto n = static_cast<std::size_t>(c.size());
  keep.assign(2, std::vector<std::int32_t>(kCount * n, c.rank() + 1));
  switch (coll) {
    case Coll::kBroadcast:
      return c.ibroadcast(keep[0].data(), kCount * 4, 0);
    case Coll::kAllgather:
      return c.iallgather(keep[0].data(), keep[1].data(), kCount * 4);
    case Coll::kReduceScatter:
      return c.ireduce_scatter(keep[0].data(), keep[1].data(), kCount, DataType::kInt32,
                               ReduceOp::kSum);
    case Coll::kAllreduce:
      return c.iallreduce(keep[0].data(), keep[1].data(), kCount, DataType::kInt32, ReduceOp::kSum);
  }
  return {};
}

// Runs an allgather, a broadcast from the last rank and an allreduce on
// `c`, checking every byte; `salt` makes each call's data its own.
void expect_collectives_work(Communicator& c, int salt) {
  const int n = c.size(), r = c.rank();
  constexpr std::size_t kBytes = 40000;
  std::vector<std::uint8_t> mine(kBytes), all(kBytes * n);
  auto byte_of = [&](int rank, std::size_t i) {
    return static_cast<std::uint8_t>(rank * 31 + i * 7 + salt);
  };
  for (std::size_t i = 0; i < kBytes; ++i) mine[i] = byte_of(r, i);
  c.allgather(mine.data(), all.data(), kBytes);
  for (int q = 0; q < n; ++q) {
    for (std::size_t i = 0; i < kBytes; ++i) {
      ASSERT_EQ(all[q * kBytes + i], byte_of(q, i)) << "rank " << r << ": block " << q;
    }
  }
  std::vector<std::uint8_t> b(kBytes);
  if (r == n - 1) b = mine;
  c.broadcast(b.data(), kBytes, n - 1);
  for (std::size_t i = 0; i < kBytes; ++i) ASSERT_EQ(b[i], byte_of(n - 1, i));
  std::vector<std::int32_t> x(1000, r + salt), sum(1000);
  c.allreduce(x.data(), sum.data(), x.size(), DataType::kInt32, ReduceOp::kSum);
  const std::int32_t want = n * (n - 1) / 2 + n * salt;
  for (std::int32_t v : sum) ASSERT_EQ(v, want);
}

constexpr const char* kKillsTheFabric =
    "kill_rank() kills a node of the in-memory fabric, which the offload daemon does not use "
    "(tests/mp/elastic_test.cc kills processes under offload)";

class Elastic : public EngineTest {
 protected:
  // `victims` die during `coll` on an `n`-rank world; every survivor must
  // see the collective fail, shrink, agree on `victims` and run
  // collectives on the n - |victims| ranks left.
  void kill_and_shrink(int n, std::vector<int> victims, Coll coll) {
    SCOPED_TRACE(std::string(name(coll)) + ", " + std::to_string(n) + " ranks");
    InProcessWorld world(n, {.seed = 77});
    auto comms = create_communicators(world, options({.timeout = 20s}));
    std::atomic<int> dead{0};
    const int survivors = n - static_cast<int>(victims.size());
    std::vector<std::vector<int>> agreed(n);
    std::vector<int> new_rank(n, -1), new_size(n, -1);
    run_on_threads(comms, [&](Communicator& c) {
      const int r = c.rank();
      std::vector<std::vector<std::int32_t>> keep;
      Request req = start(c, coll, keep);
      if (std::find(victims.begin(), victims.end(), r) != victims.end()) {
        world.kill_rank(r);  // dies with its part posted
        ++dead;
        (void)code_of([&] { req.wait(5s); });  // fails: this rank is dead
        return;
      }
      while (dead.load() < static_cast<int>(victims.size())) std::this_thread::yield();
      std::string msg;
      const ErrorCode code = code_of([&] { req.wait(); }, &msg);
      // A rank may have completed before the deaths; the next collective
      // then fails instead.
      if (code == ErrorCode::kOk) {
        EXPECT_EQ(code_of([&] { c.barrier(); }, &msg), ErrorCode::kPeerFailure) << msg;
      } else {
        EXPECT_EQ(code, ErrorCode::kPeerFailure) << "rank " << r << ": " << msg;
      }
      Communicator next = c.shrink(&agreed[r]);
      new_rank[r] = next.rank();
      new_size[r] = next.size();
      EXPECT_EQ(c.epoch(), 0u);
      EXPECT_EQ(next.epoch(), 1u) << "rank " << r;
      expect_collectives_work(next, 3);
      expect_collectives_work(next, 5);
    });
    std::sort(victims.begin(), victims.end());
    int expected_rank = 0;
    for (int r = 0; r < n; ++r) {
      if (std::binary_search(victims.begin(), victims.end(), r)) continue;
      EXPECT_EQ(agreed[r], victims) << "rank " << r;
      EXPECT_EQ(new_size[r], survivors) << "rank " << r;
      EXPECT_EQ(new_rank[r], expected_rank++) << "rank " << r;
    }
  }
};

TEST_P(Elastic, AKilledRankIsShrunkAwayDuringEveryCollective) {
  if (offload()) GTEST_SKIP() << kKillsTheFabric;
  for (Coll coll : {Coll::kBroadcast, Coll::kAllgather, Coll::kReduceScatter, Coll::kAllreduce}) {
    kill_and_shrink(4, {2}, coll);
  }
}

TEST_P(Elastic, EightRanksLoseOne) {
  if (offload()) GTEST_SKIP() << kKillsTheFabric;
  kill_and_shrink(8, {5}, Coll::kAllgather);
}

TEST_P(Elastic, RankZeroDies) {
  if (offload()) GTEST_SKIP() << kKillsTheFabric;
  kill_and_shrink(4, {0}, Coll::kAllreduce);
}

TEST_P(Elastic, TwoNeighboursDieAtOnce) {
  if (offload()) GTEST_SKIP() << kKillsTheFabric;
  // Ranks 1 and 3 of 4: each survivor's both ring neighbours are gone.
  kill_and_shrink(4, {1, 3}, Coll::kBroadcast);
  kill_and_shrink(8, {3, 4}, Coll::kAllgather);
}

TEST_P(Elastic, RevokeFailsEveryRanksCollectiveAndShrinkKeepsEveryone) {
  const int n = 4;
  InProcessWorld world(n, {.seed = 78});
  auto comms = create_communicators(world, options({.timeout = 20s}));
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  std::vector<std::string> msgs(n);
  std::vector<std::vector<int>> agreed(n, {-1});
  run_on_threads(comms, [&](Communicator& c) {
    const int r = c.rank();
    if (r == 1) {
      c.revoke();
    } else {
      // Waits for rank 1, which never joins: only the revoke ends it.
      std::vector<std::uint8_t> buf(100000);
      codes[r] = code_of([&] { c.broadcast(buf.data(), buf.size(), 1); }, &msgs[r]);
    }
    Communicator next = c.shrink(&agreed[r]);
    EXPECT_EQ(next.size(), n);
    EXPECT_EQ(next.rank(), r);
    EXPECT_EQ(next.epoch(), 1u);
    expect_collectives_work(next, 9);
    // The revoked communicator stays revoked.
    EXPECT_EQ(code_of([&] { c.barrier(); }), ErrorCode::kPeerFailure);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(agreed[r].empty()) << "rank " << r;
    if (r == 1) continue;
    EXPECT_EQ(codes[r], ErrorCode::kPeerFailure) << "rank " << r << ": " << msgs[r];
    EXPECT_NE(msgs[r].find("revoked by rank 1"), std::string::npos) << msgs[r];
  }
}

TEST_P(Elastic, ShrinkTwiceInARow) {
  if (offload()) GTEST_SKIP() << kKillsTheFabric;
  const int n = 6;
  InProcessWorld world(n, {.seed = 79});
  auto comms = create_communicators(world, options({.timeout = 20s}));
  std::atomic<int> dead{0};
  run_on_threads(comms, [&](Communicator& c) {
    if (c.rank() == 4) {
      world.kill_rank(4);
      ++dead;
      return;
    }
    while (dead.load() < 1) std::this_thread::yield();
    std::vector<int> failed;
    Communicator once = c.shrink(&failed);
    EXPECT_EQ(failed, std::vector<int>{4});
    // Rank 0 of the shrunk communicator (rank 0 here too) leaves next.
    if (once.rank() == 0) {
      world.kill_rank(0);
      ++dead;
      return;
    }
    while (dead.load() < 2) std::this_thread::yield();
    Communicator twice = once.shrink(&failed);
    EXPECT_EQ(failed, std::vector<int>{0});
    EXPECT_EQ(twice.size(), 4);
    EXPECT_EQ(once.epoch(), 1u);
    EXPECT_EQ(twice.epoch(), 2u);
    expect_collectives_work(twice, 11);
  });
}

// A communicator of one shrinks to itself: nothing failed, and the new one
// runs collectives.
TEST_P(Elastic, ARankAloneShrinksToItself) {
  InProcessWorld world(1);
  auto comms = create_communicators(world, options());
  std::vector<int> failed = {-1};
  Communicator next = comms[0].shrink(&failed);
  EXPECT_TRUE(failed.empty());
  EXPECT_EQ(next.size(), 1);
  EXPECT_EQ(next.rank(), 0);
  EXPECT_EQ(next.epoch(), 1u);
  expect_collectives_work(next, 19);
  EXPECT_EQ(code_of([&] { comms[0].barrier(); }), ErrorCode::kPeerFailure);
}

// grow(): three members and two joiners meet on a new rendezvous (another
// in-process world's bootstraps: ranks 0-2 the members, 3-4 the joiners);
// the members keep their ranks, the joiners get the state by one
// broadcast, and every collective of the five is byte-exact. The members'
// communicator stays usable.
TEST_P(Elastic, MembersGrowAndJoinersGetTheStateByOneBroadcast) {
  const int n = 3, k = 2;
  InProcessWorld first(n, {.seed = 80});
  InProcessWorld rendezvous(n + k, {.seed = 81});
  auto members = create_communicators(first, options({.timeout = 20s}));
  std::vector<std::thread> joiners;
  std::vector<std::string> errors(n + k);
  auto check = [&](Communicator& grown, int r) {
    EXPECT_EQ(grown.rank(), r);
    EXPECT_EQ(grown.size(), n + k);
    EXPECT_EQ(grown.epoch(), 1u) << "rank " << r << ": a joiner takes the members' epoch";
    std::vector<std::int64_t> state(5000, r == 0 ? 42 : 0);
    grown.broadcast(state.data(), state.size() * sizeof(std::int64_t), 0);
    for (std::int64_t v : state) ASSERT_EQ(v, 42);
    expect_collectives_work(grown, 13);
  };
  for (int j = n; j < n + k; ++j) {
    joiners.emplace_back([&, j] {
      errors[j] = "";
      try {
        auto boot = rendezvous.bootstrap(j);
        Communicator grown(*boot, options({.timeout = 20s}));
        check(grown, j);
      } catch (const Error& e) {
        errors[j] = e.what();
      }
    });
  }
  run_on_threads(members, [&](Communicator& c) {
    auto boot = rendezvous.bootstrap(c.rank());
    Communicator grown = c.grow(*boot);
    check(grown, c.rank());
    expect_collectives_work(c, 15);  // the members' own still works
  });
  for (auto& t : joiners) t.join();
  for (int j = n; j < n + k; ++j) EXPECT_EQ(errors[j], "") << "joiner " << j;
}

// A death, a shrink, then a replacement grows the survivors back to four.
TEST_P(Elastic, AShrunkCommunicatorGrowsBack) {
  if (offload()) GTEST_SKIP() << kKillsTheFabric;
  const int n = 4;
  InProcessWorld first(n, {.seed = 82});
  InProcessWorld rendezvous(n, {.seed = 83});
  auto comms = create_communicators(first, options({.timeout = 20s}));
  std::atomic<bool> killed{false};
  std::string joiner_error;
  std::thread joiner([&] {
    try {
      auto boot = rendezvous.bootstrap(n - 1);
      Communicator grown(*boot, options({.timeout = 20s}));
      EXPECT_EQ(grown.epoch(), 2u);
      expect_collectives_work(grown, 17);
    } catch (const Error& e) {
      joiner_error = e.what();
    }
  });
  run_on_threads(comms, [&](Communicator& c) {
    if (c.rank() == 1) {
      first.kill_rank(1);
      killed = true;
      return;
    }
    while (!killed) std::this_thread::yield();
    Communicator survivors = c.shrink();
    auto boot = rendezvous.bootstrap(survivors.rank());
    Communicator grown = survivors.grow(*boot);
    EXPECT_EQ(grown.size(), n);
    EXPECT_EQ(survivors.epoch(), 1u);
    EXPECT_EQ(grown.epoch(), 2u);
    expect_collectives_work(grown, 17);
  });
  joiner.join();
  EXPECT_EQ(joiner_error, "");
}

TEST_P(Elastic, GrowRefusesABootstrapThatRenumbersAMember) {
  InProcessWorld first(2), rendezvous(2);
  auto comms = create_communicators(first, options());
  run_on_threads(comms, [&](Communicator& c) {
    auto boot = rendezvous.bootstrap(1 - c.rank());  // the members swapped
    std::string msg;
    EXPECT_EQ(code_of([&] { (void)c.grow(*boot); }, &msg), ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("a member keeps its rank"), std::string::npos) << msg;
  });
}

MCCL_TEST_EVERY_ENGINE(Elastic);

}  // namespace
}  // namespace mccl::testing
