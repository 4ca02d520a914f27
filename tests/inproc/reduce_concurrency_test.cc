// Reductions in flight together with other collectives: the FSDP pattern
// (allgather the next layer's weights while reduce-scattering the last
// layer's gradients), a mix of every collective, two communicators driven
// from one thread, and the reduce-scatter's send share at its extremes.
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness.h"
#include "reduce_util.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

constexpr DataType kF32 = DataType::kFloat32;
constexpr ReduceOp kSum = ReduceOp::kSum;

// One layer on every rank: an allgather of `m` bytes per rank and a
// reduce-scatter of `count` floats per rank.
struct Layer {
  std::vector<std::vector<std::byte>> ag_send, ag_recv, rs_send, rs_recv;
};

Layer make_layer(int n, std::size_t m, std::size_t count, std::uint64_t salt) {
  Layer l;
  for (int r = 0; r < n; ++r) {
    l.ag_send.emplace_back(m);
    fill(l.ag_send.back().data(), m, r, salt);
    l.ag_recv.emplace_back(m * n);
    l.rs_send.push_back(make_input(kF32, kSum, r, 0, n * count, salt));
    l.rs_recv.emplace_back(count * 4);
  }
  return l;
}

void check_layer(const Layer& l, int n, std::size_t m, std::size_t count, std::uint64_t salt) {
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(l.ag_recv[r].data() + b * m, m, b, salt), m)
          << "allgather: rank " << r << " block " << b;
    }
    ASSERT_TRUE(check_reduced(kF32, kSum, l.rs_recv[r].data(), n, r * count, count, salt))
        << "reduce_scatter: rank " << r;
  }
}

// 8 layers, each an allgather and a reduce-scatter posted together, all 16
// collectives in flight at once on every rank, with loss, duplication and
// reordering on the multicast side; every byte checked.
TEST(Overlap, EightAllgatherReduceScatterPairsWithLoss) {
  const int n = 5, kLayers = 8;
  const std::size_t m = 40000, count = 30011;
  SimFabricOptions f{.loss = 0.1, .duplicate = 0.02, .reorder = 0.05, .seed = 4242};
  SCOPED_TRACE(describe(n, m, f));
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, multicast_only());
  std::vector<Layer> layers;
  for (int i = 0; i < kLayers; ++i) layers.push_back(make_layer(n, m, count, 100 + i));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kLayers; ++i) {
      auto& l = layers[i];
      reqs.push_back(comms[r].iallgather(l.ag_send[r].data(), l.ag_recv[r].data(), m));
      reqs.push_back(
          comms[r].ireduce_scatter(l.rs_send[r].data(), l.rs_recv[r].data(), count, kF32, kSum));
    }
  }
  drive(reqs, 120s);
  for (int i = 0; i < kLayers; ++i) check_layer(layers[i], n, m, count, 100 + i);
  std::uint64_t repairs = 0, p2p = 0;
  for (auto& c : comms) {
    repairs += c.stats().repairs_requested;
    p2p += c.stats().p2p_bytes_sent;
  }
  EXPECT_GT(repairs, 0u);
  // Each rank sends (N-1)/N of each reduce-scatter's input over the ring.
  EXPECT_EQ(p2p, std::uint64_t{kLayers} * n * (n - 1) * count * 4);
}

// The same on ranks driven by their own threads, pipelined as a training
// step runs: layer i's pair is posted before layer i-1's is waited for.
TEST(Overlap, PipelinedLayersOnThreads) {
  const int n = 4, kLayers = 8;
  const std::size_t m = 25000, count = 20000;
  InProcessWorld world(n, {.loss = 0.05, .reorder = 0.05, .seed = 99});
  auto comms = create_communicators(world, {.progress = ProgressKind::kThread});
  std::vector<Layer> layers;
  for (int i = 0; i < kLayers; ++i) layers.push_back(make_layer(n, m, count, 200 + i));
  run_on_threads(comms, [&](Communicator& c) {
    const int r = c.rank();
    std::vector<Request> prev;
    for (int i = 0; i < kLayers; ++i) {
      auto& l = layers[i];
      std::vector<Request> cur;
      cur.push_back(c.iallgather(l.ag_send[r].data(), l.ag_recv[r].data(), m));
      cur.push_back(c.ireduce_scatter(l.rs_send[r].data(), l.rs_recv[r].data(), count, kF32, kSum));
      for (auto& q : prev) q.wait();
      prev = std::move(cur);
    }
    for (auto& q : prev) q.wait();
  });
  for (int i = 0; i < kLayers; ++i) check_layer(layers[i], n, m, count, 200 + i);
}

// Every kind of collective in flight at once on one communicator, with
// loss: broadcast, allgatherv, barrier, reduce_scatterv, and allreduces
// small (recursive doubling) and large (reduce-scatter + multicast), posted
// in the same order everywhere and completed in whatever order they finish.
TEST(Overlap, EveryKindOfCollectiveOnOneCommunicator) {
  const int n = 5;
  const std::size_t m = 30001, small = 100, large = 40009;
  InProcessWorld world(n, {.loss = 0.08, .duplicate = 0.02, .reorder = 0.05, .seed = 606});
  auto comms = create_communicators(world);
  std::vector<std::size_t> counts(n), displs(n), rs_counts(n);
  std::size_t total = 0, rs_total = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = m + 97 * r;  // all different
    displs[r] = total;
    total += counts[r];
    rs_counts[r] = 1000 + 3 * r;
    rs_total += rs_counts[r];
  }
  std::vector<std::vector<std::byte>> bc(n), agv_send(n), agv_recv(n), rs_send(n), rs_recv(n);
  std::vector<std::vector<std::byte>> ar_small_send(n), ar_small(n), ar_large_send(n), ar_large(n);
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    bc[r].resize(m);
    if (r == 3) fill(bc[r].data(), m, 3, 61);
    agv_send[r].resize(counts[r]);
    fill(agv_send[r].data(), counts[r], r, 62);
    agv_recv[r].resize(total);
    rs_send[r] = make_input(DataType::kFloat64, ReduceOp::kMax, r, 0, rs_total, 63);
    rs_recv[r].resize(rs_counts[r] * 8);
    ar_small_send[r] = make_input(DataType::kInt64, kSum, r, 0, small, 64);
    ar_small[r].resize(small * 8);
    ar_large_send[r] = make_input(DataType::kBFloat16, kSum, r, 0, large, 65);
    ar_large[r].resize(large * 2);
  }
  for (int r = 0; r < n; ++r) {
    auto& c = comms[r];
    reqs.push_back(c.ibroadcast(bc[r].data(), m, 3));
    reqs.push_back(c.iallreduce(ar_large_send[r].data(), ar_large[r].data(), large,
                                DataType::kBFloat16, kSum));
    reqs.push_back(c.iallgatherv(agv_send[r].data(), agv_recv[r].data(), counts, displs));
    reqs.push_back(c.ibarrier());
    reqs.push_back(c.ireduce_scatterv(rs_send[r].data(), rs_recv[r].data(), rs_counts,
                                      DataType::kFloat64, ReduceOp::kMax));
    reqs.push_back(
        c.iallreduce(ar_small_send[r].data(), ar_small[r].data(), small, DataType::kInt64, kSum));
  }
  drive(reqs, 120s);
  std::size_t first = 0;
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(first_mismatch(bc[r].data(), m, 3, 61), m) << "broadcast, rank " << r;
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(agv_recv[r].data() + displs[b], counts[b], b, 62), counts[b])
          << "allgatherv, rank " << r << " block " << b;
    }
    ASSERT_TRUE(check_reduced(DataType::kFloat64, ReduceOp::kMax, rs_recv[r].data(), n, first,
                              rs_counts[r], 63))
        << "reduce_scatterv, rank " << r;
    first += rs_counts[r];
    ASSERT_TRUE(check_reduced(DataType::kInt64, kSum, ar_small[r].data(), n, 0, small, 64));
    ASSERT_TRUE(check_reduced(DataType::kBFloat16, kSum, ar_large[r].data(), n, 0, large, 65));
    ASSERT_EQ(ar_large[r], ar_large[0]) << "allreduce bits differ on rank " << r;
  }
}

// Two communicators over the same ranks, one thread driving both: one runs
// allgathers and broadcasts, the other reduce-scatters and allreduces.
TEST(TwoCommunicators, DrivenFromOneThread) {
  const int n = 3;
  const std::size_t m = 12345, count = 7777;
  InProcessWorld world(n, {.loss = 0.05, .seed = 8});
  auto a = create_communicators(world);
  auto b = create_communicators(world);
  Layer l = make_layer(n, m, count, 300);
  std::vector<std::vector<std::byte>> ar_send(n), ar_recv(n);
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    ar_send[r] = make_input(DataType::kInt32, ReduceOp::kMax, r, 0, count, 301);
    ar_recv[r].resize(count * 4);
    reqs.push_back(a[r].iallgather(l.ag_send[r].data(), l.ag_recv[r].data(), m));
    reqs.push_back(
        b[r].ireduce_scatter(l.rs_send[r].data(), l.rs_recv[r].data(), count, kF32, kSum));
    reqs.push_back(b[r].iallreduce(ar_send[r].data(), ar_recv[r].data(), count, DataType::kInt32,
                                   ReduceOp::kMax));
  }
  drive(reqs, 60s);
  check_layer(l, n, m, count, 300);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(
        check_reduced(DataType::kInt32, ReduceOp::kMax, ar_recv[r].data(), n, 0, count, 301));
  }
}

// MCCL_COLL_RS_SHARE bounds how much a reduce-scatter sends per progress
// call; whatever the share, the results are the same.
class RsShare : public ::testing::TestWithParam<const char*> {};

TEST_P(RsShare, ResultsDoNotDependOnIt) {
  ::setenv("MCCL_COLL_RS_SHARE", GetParam(), 1);
  const int n = 4;
  const std::size_t m = 30000, count = 50000;
  InProcessWorld world(n, {.loss = 0.05, .seed = 12});
  auto comms = create_communicators(world);
  ::unsetenv("MCCL_COLL_RS_SHARE");
  Layer l = make_layer(n, m, count, 400);
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    reqs.push_back(comms[r].iallgather(l.ag_send[r].data(), l.ag_recv[r].data(), m));
    reqs.push_back(
        comms[r].ireduce_scatter(l.rs_send[r].data(), l.rs_recv[r].data(), count, kF32, kSum));
  }
  drive(reqs, 60s);
  check_layer(l, n, m, count, 400);
}

INSTANTIATE_TEST_SUITE_P(Extremes, RsShare, ::testing::Values("0.001", "0.5", "1"));

// The share changes what a reduce-scatter sends in one progress step, not
// just how fast: with the inline engine, posting a collective runs exactly
// one step, after which rank 0 has sent part of its first ring step (its
// contribution to rank N-1's block) or, at share 1, all of it. Beside an
// allgather posted first, the same step also injected multicast: neither
// side waited for the other.
std::uint64_t first_step_bytes(double share, std::uint64_t* mcast_in_that_step) {
  const int n = 2;
  // The allgather: more than one injection batch (about 384 KiB), so some
  // is left for the reduce-scatter's step. Its blocks: 400 kB, 7 segments.
  const std::size_t m = 2000000, count = 100000;
  InProcessWorld world(n);
  // Multicast pinned: at 2 ranks the table takes a send at this size.
  auto comms = create_communicators(world, {.progress = ProgressKind::kInline,
                                            .allgather_algorithm = AllgatherAlgorithm::kMulticast,
                                            .reduce_scatter_send_share = share});
  Layer l = make_layer(n, m, count, 500);
  std::vector<Request> reqs;
  reqs.push_back(comms[0].iallgather(l.ag_send[0].data(), l.ag_recv[0].data(), m));
  const std::uint64_t mcast_before = comms[0].stats().mcast_bytes_sent;
  reqs.push_back(
      comms[0].ireduce_scatter(l.rs_send[0].data(), l.rs_recv[0].data(), count, kF32, kSum));
  const Stats after = comms[0].stats();
  *mcast_in_that_step = after.mcast_bytes_sent - mcast_before;
  reqs.push_back(comms[1].iallgather(l.ag_send[1].data(), l.ag_recv[1].data(), m));
  reqs.push_back(
      comms[1].ireduce_scatter(l.rs_send[1].data(), l.rs_recv[1].data(), count, kF32, kSum));
  drive(reqs, 60s);
  check_layer(l, n, m, count, 500);
  return after.p2p_bytes_sent;
}

TEST(RsShareSetting, BoundsWhatOneProgressStepSends) {
  const std::uint64_t block = 100000 * 4;
  std::uint64_t mcast_small = 0, mcast_half = 0, mcast_all = 0;
  const std::uint64_t small = first_step_bytes(0.05, &mcast_small);
  const std::uint64_t half = first_step_bytes(0.5, &mcast_half);
  const std::uint64_t all = first_step_bytes(1.0, &mcast_all);
  EXPECT_EQ(all, block) << "share 1: the whole first ring step in one progress step";
  EXPECT_GT(small, 0u) << "even the smallest share sends a segment per step";
  EXPECT_LT(small, half);
  EXPECT_LT(half, all);
  // The allgather posted first injected in the same steps.
  EXPECT_GT(mcast_small, 0u);
  EXPECT_GT(mcast_half, 0u);
  EXPECT_GT(mcast_all, 0u);
}

TEST(RsShareSetting, OptionOutOfRangeIsRejected) {
  InProcessWorld world(1);
  for (double bad : {0.0, -0.5, 1.5}) {
    try {
      create_communicators(world, {.reduce_scatter_send_share = bad});
      ADD_FAILURE() << "reduce_scatter_send_share=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("reduce_scatter_send_share"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
  }
}

TEST(RsShareSetting, OutOfRangeIsRejected) {
  ::setenv("MCCL_COLL_RS_SHARE", "0", 1);
  InProcessWorld world(1);
  try {
    create_communicators(world);
    ADD_FAILURE() << "MCCL_COLL_RS_SHARE=0 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("MCCL_COLL_RS_SHARE"), std::string::npos) << e.what();
  }
  ::unsetenv("MCCL_COLL_RS_SHARE");
}

}  // namespace
}  // namespace mccl::testing
