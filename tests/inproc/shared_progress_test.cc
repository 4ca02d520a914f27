// Several communicators on one shared progress thread (mccl::ProgressThread):
// collectives of all of them in flight at once, under loss, complete
// independently and byte-exact; the thread lets communicators leave.
#include <gtest/gtest.h>

#include "harness.h"
#include "reduce_util.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

constexpr DataType kF32 = DataType::kFloat32;
constexpr ReduceOp kSum = ReduceOp::kSum;

// Three communicators over the same 3 ranks, all nine contexts driven by
// one thread: FSDP pairs (allgather + reduce-scatter) on the first, int32
// allreduces on the second, broadcasts on the third.
TEST(SharedProgressThread, CollectivesOfSeveralCommunicatorsCompleteIndependently) {
  const int n = 3, kPairs = 8;
  const std::size_t m = 20000, count = 15001;
  InProcessWorld world(n, {.loss = 0.05, .duplicate = 0.01, .reorder = 0.05, .seed = 31});
  ProgressThread engine;
  auto fsdp = create_communicators(world, multicast_only({.progress_thread = engine}));
  auto dense = create_communicators(world, multicast_only({.progress_thread = engine}));
  auto bcast = create_communicators(world, multicast_only({.progress_thread = engine}));
  EXPECT_EQ(engine.communicators(), 3 * n);

  // Independence: an allgather that rank 2 has not joined yet cannot end,
  // and the other communicators' collectives finish regardless.
  std::vector<std::vector<std::byte>> late_send(n), late_recv(n);
  std::vector<Request> late;
  for (int r = 0; r < n; ++r) {
    late_send[r].resize(m);
    fill(late_send[r].data(), m, r, 7);
    late_recv[r].resize(m * n);
  }
  for (int r = 0; r < n - 1; ++r) {
    late.push_back(fsdp[r].iallgather(late_send[r].data(), late_recv[r].data(), m));
  }

  std::vector<std::vector<std::byte>> ar_send(n), ar_recv(n), bc(n);
  std::vector<Request> others;
  for (int r = 0; r < n; ++r) {
    ar_send[r] = make_input(DataType::kInt32, kSum, r, 0, count, 8);
    ar_recv[r].resize(count * 4);
    bc[r].resize(m);
    if (r == 1) fill(bc[r].data(), m, 1, 9);
    others.push_back(
        dense[r].iallreduce(ar_send[r].data(), ar_recv[r].data(), count, DataType::kInt32, kSum));
    others.push_back(bcast[r].ibroadcast(bc[r].data(), m, 1));
  }
  for (auto& q : others) q.wait();
  for (auto& q : late) EXPECT_FALSE(q.test()) << "an allgather missing a rank completed";
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(check_reduced(DataType::kInt32, kSum, ar_recv[r].data(), n, 0, count, 8));
    ASSERT_EQ(first_mismatch(bc[r].data(), m, 1, 9), m) << "broadcast, rank " << r;
  }

  // Rank 2 joins the allgather; meanwhile 8 FSDP pairs go on the same
  // communicator and allreduces on the other, all at once.
  late.push_back(fsdp[n - 1].iallgather(late_send[n - 1].data(), late_recv[n - 1].data(), m));
  struct Pair {
    std::vector<std::vector<std::byte>> ag_send, ag_recv, rs_send, rs_recv;
  };
  std::vector<Pair> pairs(kPairs);
  std::vector<Request> reqs;
  for (int i = 0; i < kPairs; ++i) {
    auto& p = pairs[i];
    for (int r = 0; r < n; ++r) {
      p.ag_send.emplace_back(m);
      fill(p.ag_send.back().data(), m, r, 100 + i);
      p.ag_recv.emplace_back(m * n);
      p.rs_send.push_back(make_input(kF32, kSum, r, 0, n * count, 100 + i));
      p.rs_recv.emplace_back(count * 4);
    }
  }
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kPairs; ++i) {
      auto& p = pairs[i];
      reqs.push_back(fsdp[r].iallgather(p.ag_send[r].data(), p.ag_recv[r].data(), m));
      reqs.push_back(
          fsdp[r].ireduce_scatter(p.rs_send[r].data(), p.rs_recv[r].data(), count, kF32, kSum));
    }
    reqs.push_back(
        dense[r].iallreduce(ar_send[r].data(), ar_recv[r].data(), count, DataType::kInt32, kSum));
  }
  for (auto& q : late) q.wait();
  for (auto& q : reqs) q.wait();
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(late_recv[r].data() + b * m, m, b, 7), m);
      for (int i = 0; i < kPairs; ++i) {
        ASSERT_EQ(first_mismatch(pairs[i].ag_recv[r].data() + b * m, m, b, 100 + i), m)
            << "pair " << i << " allgather, rank " << r << " block " << b;
      }
    }
    for (int i = 0; i < kPairs; ++i) {
      ASSERT_TRUE(
          check_reduced(kF32, kSum, pairs[i].rs_recv[r].data(), n, r * count, count, 100 + i))
          << "pair " << i << " reduce_scatter, rank " << r;
    }
    ASSERT_TRUE(check_reduced(DataType::kInt32, kSum, ar_recv[r].data(), n, 0, count, 8));
  }
  std::uint64_t repairs = 0;
  for (auto& c : fsdp) repairs += c.stats().repairs_requested;
  EXPECT_GT(repairs, 0u) << "loss was injected but nothing was repaired";

  // Communicators leave the thread when destroyed; it keeps serving the rest.
  late.clear();
  reqs.clear();
  others.clear();
  bcast.clear();
  EXPECT_EQ(engine.communicators(), 2 * n);
  std::vector<Request> last;
  for (int r = 0; r < n; ++r) {
    last.push_back(
        dense[r].iallreduce(ar_send[r].data(), ar_recv[r].data(), count, DataType::kInt32, kSum));
  }
  for (auto& q : last) q.wait();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(check_reduced(DataType::kInt32, kSum, ar_recv[r].data(), n, 0, count, 8));
  }
}

// The thread engine's waits, with and without a spin (both spins set
// explicitly, so that they apply on a machine of any size): a waiter that
// returns from its spin sees the collective's bytes, and with no spin the
// thread sleeps after every collective, so each new one must wake it.
// Small collectives back to back, as a latency benchmark runs them: the
// table sends them point to point (latency bound: the waiter spins), and a
// multicast pair follows each.
TEST(ThreadEngineWait, SpinningAndSleepingWaitersSeeEveryCollectivesBytes) {
  const int n = 2, kRounds = 200;
  const std::size_t m = 8;
  for (const char* spin : {"0", "5000"}) {
    SCOPED_TRACE(std::string("spin ") + spin);
    ScopedEnv env;
    env.set("MCCL_PROGRESS_SPIN_US", spin);
    env.set("MCCL_PROGRESS_WAIT_SPIN_US", spin);
    InProcessWorld world(n);
    auto comms = create_communicators(world, {.progress = ProgressKind::kThread});
    auto mcast = create_communicators(world, multicast_only({.progress = ProgressKind::kThread}));
    std::vector<std::vector<std::byte>> bc(n, std::vector<std::byte>(m)), send(n), recv(n);
    auto check = [&](int i, int root) {
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(first_mismatch(bc[r].data(), m, root, i), m)
            << "broadcast " << i << ", rank " << r;
        for (int b = 0; b < n; ++b) {
          ASSERT_EQ(first_mismatch(recv[r].data() + b * m, m, b, i), m)
              << "allgather " << i << ", rank " << r << ", block " << b;
        }
      }
    };
    for (int i = 0; i < kRounds; ++i) {
      const int root = i % n;
      std::vector<Request> reqs;
      for (int r = 0; r < n; ++r) {
        if (r == root) fill(bc[r].data(), m, root, i);
        send[r].resize(m);
        fill(send[r].data(), m, r, i);
        recv[r].assign(m * n, std::byte{0});
        reqs.push_back(comms[r].ibroadcast(bc[r].data(), m, root));
        reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), m));
      }
      for (auto& q : reqs) q.wait();
      check(i, root);
      if (::testing::Test::HasFatalFailure()) return;
      reqs.clear();
      for (int r = 0; r < n; ++r) {
        recv[r].assign(m * n, std::byte{0});
        if (r != root) bc[r].assign(m, std::byte{0});
        reqs.push_back(mcast[r].ibroadcast(bc[r].data(), m, root));
        reqs.push_back(mcast[r].iallgather(send[r].data(), recv[r].data(), m));
      }
      for (auto& q : reqs) q.wait();
      check(i, root);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(SharedProgressThread, InlineProgressWithASharedThreadIsRejected) {
  InProcessWorld world(1);
  ProgressThread engine;
  try {
    create_communicators(world, {.progress = ProgressKind::kInline, .progress_thread = engine});
    ADD_FAILURE() << "progress = kInline with a progress thread was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("progress_thread"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(engine.communicators(), 0);
}

}  // namespace
}  // namespace mccl::testing
