// reduce_scatter(v) and allreduce (all three algorithms) on 1..8 ranks, for
// element counts around the edges (0, 1, 7: fewer elements than ranks;
// 100003: not divisible), every datatype and op (a subset for the large
// count), with and without multicast loss. Results are checked against a
// float64 / exact integer reference, and for bitwise agreement: every rank
// ends an allreduce with the same bits, the two ring-based allreduces
// (which reduce each block in the same order) agree bit for bit, and a
// reduce_scatterv over the allreduce's blocks gives exactly its blocks.
#include <gtest/gtest.h>

#include <tuple>

#include "harness.h"
#include "reduce_util.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

struct Case {
  DataType type;
  ReduceOp op;
};

std::vector<Case> cases_for(std::size_t count) {
  std::vector<Case> out;
  if (count > 1000) {
    return {{DataType::kFloat32, ReduceOp::kSum},  {DataType::kBFloat16, ReduceOp::kSum},
            {DataType::kFloat16, ReduceOp::kProd}, {DataType::kInt64, ReduceOp::kSum},
            {DataType::kUInt8, ReduceOp::kMax},    {DataType::kFloat64, ReduceOp::kMin}};
  }
  for (auto t : {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16, DataType::kFloat16,
                 DataType::kInt32, DataType::kInt64, DataType::kUInt8}) {
    for (auto op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      out.push_back({t, op});
    }
  }
  return out;
}

constexpr AllreduceAlgorithm kAlgos[] = {AllreduceAlgorithm::kRsMulticast,
                                         AllreduceAlgorithm::kRing,
                                         AllreduceAlgorithm::kRecursiveDoubling};
constexpr int kRsMcast = 0, kRing = 1, kAlgoCount = 3;

// The allreduce's blocks: count/N elements each, the first count%N one more.
std::vector<std::size_t> blocks_of(std::size_t count, int n) {
  std::vector<std::size_t> b(n);
  for (int r = 0; r < n; ++r) b[r] = count / n + (static_cast<std::size_t>(r) < count % n ? 1 : 0);
  return b;
}

// Buffers of one (type, op) case on every rank.
struct CaseBuffers {
  std::vector<std::vector<std::byte>> rs_send, rs_recv, ar_send, rsv_recv;
  std::vector<std::vector<std::byte>> ar_recv[kAlgoCount];
};

using Param = std::tuple<int, std::size_t, double>;  // ranks, count, loss
class Reduce : public ::testing::TestWithParam<Param> {};

TEST_P(Reduce, EveryTypeOpAndAlgorithm) {
  auto [n, count, loss] = GetParam();
  const std::uint64_t seed = 900 + n * 31 + count % 1000 + static_cast<std::uint64_t>(loss * 10);
  SimFabricOptions f{.loss = loss, .duplicate = loss / 4, .reorder = loss / 2, .seed = seed};
  SCOPED_TRACE(describe(n, count, f));
  InProcessWorld world(n, f);
  std::vector<std::vector<Communicator>> comms;
  for (auto algo : kAlgos)
    comms.push_back(create_communicators(world, {.allreduce_algorithm = algo}));

  const auto cases = cases_for(count);
  const auto blocks = blocks_of(count, n);
  std::vector<CaseBuffers> bufs(cases.size());
  std::vector<Request> reqs;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto [t, op] = cases[c];
    const std::size_t es = size_of(t);
    const std::uint64_t salt = seed * 100 + c;
    auto& b = bufs[c];
    for (int r = 0; r < n; ++r) {
      b.rs_send.push_back(make_input(t, op, r, 0, n * count, salt));
      b.rs_recv.emplace_back(count * es);
      b.ar_send.push_back(make_input(t, op, r, 0, count, salt));
      b.rsv_recv.emplace_back(blocks[r] * es);
      for (auto& v : b.ar_recv) v.emplace_back(count * es);
    }
    b.ar_recv[kRing] = b.ar_send;  // the ring allreduce runs in place
  }
  // Every rank posts every collective in the same order; they all run at once.
  for (int r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const auto [t, op] = cases[c];
      auto& b = bufs[c];
      reqs.push_back(
          comms[0][r].ireduce_scatter(b.rs_send[r].data(), b.rs_recv[r].data(), count, t, op));
      reqs.push_back(
          comms[0][r].ireduce_scatterv(b.ar_send[r].data(), b.rsv_recv[r].data(), blocks, t, op));
      for (int a = 0; a < kAlgoCount; ++a) {
        const void* send = a == kRing ? kInPlace : b.ar_send[r].data();
        reqs.push_back(comms[a][r].iallreduce(send, b.ar_recv[a][r].data(), count, t, op));
      }
    }
  }
  drive(reqs, 120s);

  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto [t, op] = cases[c];
    SCOPED_TRACE(std::string(to_string(t)) + " " + to_string(op));
    const std::size_t es = size_of(t);
    const std::uint64_t salt = seed * 100 + c;
    const auto& b = bufs[c];
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(check_reduced(t, op, b.rs_recv[r].data(), n, r * count, count, salt))
          << "reduce_scatter, rank " << r;
    }
    for (int a = 0; a < kAlgoCount; ++a) {
      ASSERT_TRUE(check_reduced(t, op, b.ar_recv[a][0].data(), n, 0, count, salt))
          << "allreduce algorithm " << a;
      for (int r = 1; r < n; ++r) {
        ASSERT_EQ(b.ar_recv[a][r], b.ar_recv[a][0])
            << "allreduce algorithm " << a << ": rank " << r << " differs from rank 0";
      }
    }
    EXPECT_EQ(b.ar_recv[kRsMcast][0], b.ar_recv[kRing][0]) << "same reduction order, other bits";
    std::size_t off = 0;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(0, std::memcmp(b.rsv_recv[r].data(), b.ar_recv[kRsMcast][0].data() + off * es,
                               blocks[r] * es))
          << "reduce_scatterv block " << r << " differs from the allreduce's";
      off += blocks[r];
    }
  }
  if (n > 1 && count >= 1000) {
    // The default algorithm really multicast, and loss was really repaired.
    std::uint64_t mcast = 0, repairs = 0;
    for (auto& comm : comms[kRsMcast]) {
      mcast += comm.stats().mcast_bytes_sent;
      repairs += comm.stats().repairs_requested;
    }
    EXPECT_GT(mcast, 0u);
    if (loss > 0) {
      EXPECT_GT(repairs, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sweep, Reduce,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(std::size_t{0}, std::size_t{1},
                                                              std::size_t{7}, std::size_t{1000},
                                                              std::size_t{100003}),
                                            ::testing::Values(0.0, 0.1)));

// The same allreduce twice gives the same bits (the order is fixed, not
// the arrival order), with loss and reordering changing the arrival order.
TEST(ReduceDeterminism, RepeatedAllreduceIsBitwiseIdentical) {
  const int n = 5;
  const std::size_t count = 30011;
  InProcessWorld world(n, {.loss = 0.1, .reorder = 0.1, .seed = 5});
  auto comms = create_communicators(world);
  std::vector<std::vector<std::byte>> first(n), second(n);
  for (auto* out : {&first, &second}) {
    std::vector<std::vector<std::byte>> send(n);
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) {
      // Random-looking floats whose sum depends on the order.
      send[r] = make_input(DataType::kFloat32, ReduceOp::kSum, r, 0, count, 77);
      for (std::size_t i = 0; i < count; ++i) {
        float v;
        std::memcpy(&v, send[r].data() + 4 * i, 4);
        v = v * 1.0e-3f + static_cast<float>(mix(i + r) % 1000) * 1.0e3f;
        std::memcpy(send[r].data() + 4 * i, &v, 4);
      }
      (*out)[r].resize(count * 4);
      reqs.push_back(comms[r].iallreduce(send[r].data(), (*out)[r].data(), count,
                                         DataType::kFloat32, ReduceOp::kSum));
    }
    drive(reqs, 60s);
  }
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first[r], first[0]) << "rank " << r;
    EXPECT_EQ(second[r], first[0]) << "rank " << r << ", second run";
  }
}

}  // namespace
}  // namespace mccl::testing
