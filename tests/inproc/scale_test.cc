// Ranks as tasks at scale: 256 ranks on the in-memory fabric with a switch
// model (per-port link and buffer, drops when a port's queue is full),
// driven in virtual time from this thread (simworld::World). What does not
// grow with N: the reliable peers a rank talks to (its ring neighbours),
// the control messages it sends, and the bytes it repairs beyond what the
// fabric took from it; every result byte-exact. No timing is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "coll/collectives.h"
#include "protocol/context.h"
#include "simworld/world.h"

namespace mccl {
namespace {

using namespace std::chrono_literals;
using Ops = std::vector<std::shared_ptr<protocol::Operation>>;

constexpr std::size_t kIncast = 256 << 10;

simworld::WorldConfig switched(int n, double loss, std::size_t incast) {
  simworld::WorldConfig w;
  w.ranks = n;
  w.fabric.link_gbit_per_s = 10;
  w.fabric.port_buffer_bytes = 512 << 10;
  w.fabric.sender_burst_bytes = 256 << 10;  // the UDP transport's bucket: four 64 KB GSO runs
  w.fabric.timed_reliable = true;
  w.fabric.latency = 2us;
  w.fabric.loss = loss;
  w.fabric.seed = 33;
  w.fabric.receive_depth = 1 << 20;
  w.protocol.incast_bytes = incast;
  return w;
}

coll::CollConfig multicast() {
  coll::CollConfig c;
  c.allgather = AllgatherAlgorithm::kMulticast;
  c.broadcast = BroadcastAlgorithm::kMulticast;
  return c;
}

std::byte value(int rank, std::size_t i) {
  return static_cast<std::byte>((static_cast<std::size_t>(rank) * 131 + i * 7 + (i >> 8)) & 0xFF);
}

// Per-rank maxima over the world after one collective.
struct Shape {
  std::uint64_t peers = 0, control = 0, port_drops = 0;
  std::int64_t excess_repair = 0;  // repair bytes beyond the bytes dropped to the rank
};

Shape shape(simworld::World& w) {
  Shape s;
  for (int r = 0; r < w.size(); ++r) {
    const Stats st = w.context(r).counters().snapshot();
    const auto f = w.fabric().rank_counters(r);
    s.peers = std::max<std::uint64_t>(s.peers, f.reliable_peers);
    s.control = std::max(s.control, st.control_messages_sent);
    s.port_drops += f.port_drops;
    const auto dropped = static_cast<std::int64_t>(f.lost_bytes + f.port_drop_bytes);
    s.excess_repair =
        std::max(s.excess_repair, static_cast<std::int64_t>(st.repair_bytes_requested) - dropped);
  }
  return s;
}

void run(simworld::World& w, const Ops& ops) {
  simworld::RunResult result;
  const common::Status st = w.run(ops, 60s, result);
  ASSERT_TRUE(st.is_ok()) << st.message();
}

Shape allgather(int n, std::size_t m, double loss, std::size_t incast) {
  simworld::World w(switched(n, loss, incast));
  std::vector<std::vector<std::byte>> bufs(static_cast<std::size_t>(n));
  std::vector<std::size_t> counts(static_cast<std::size_t>(n), m), displs(counts.size());
  for (std::size_t i = 0; i < displs.size(); ++i) displs[i] = i * m;
  Ops ops;
  for (int r = 0; r < n; ++r) {
    auto& b = bufs[static_cast<std::size_t>(r)];
    b.assign(m * static_cast<std::size_t>(n), std::byte{0});
    for (std::size_t i = 0; i < m; ++i) b[r * m + i] = value(r, i);
    ops.push_back(
        coll::make_allgatherv(w.context(r), multicast(), nullptr, true, b.data(), counts, displs));
  }
  run(w, ops);
  for (int r = 0; r < n; ++r) {
    for (int s = 0; s < n; ++s) {
      for (std::size_t i = 0; i < m; ++i) {
        if (bufs[static_cast<std::size_t>(r)][s * m + i] != value(s, i)) {
          ADD_FAILURE() << "rank " << r << " holds a wrong byte " << i << " of rank " << s;
          return {};
        }
      }
    }
  }
  return shape(w);
}

Shape broadcast(int n, std::size_t m, double loss) {
  simworld::World w(switched(n, loss, kIncast));
  std::vector<std::vector<std::byte>> bufs(static_cast<std::size_t>(n));
  Ops ops;
  for (int r = 0; r < n; ++r) {
    auto& b = bufs[static_cast<std::size_t>(r)];
    b.resize(m);
    for (std::size_t i = 0; i < m; ++i) b[i] = r == 0 ? value(0, i) : std::byte{0};
    ops.push_back(coll::make_broadcast(w.context(r), multicast(), b.data(), m, 0));
  }
  run(w, ops);
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < m; ++i) {
      if (bufs[static_cast<std::size_t>(r)][i] != value(0, i)) {
        ADD_FAILURE() << "rank " << r << " holds a wrong byte at " << i;
        return {};
      }
    }
  }
  return shape(w);
}

// Each rank's block of the int32 sum: rank r contributes (r + 1) * (e + 1).
Shape reduce_scatter(int n, std::size_t elems) {
  simworld::World w(switched(n, 0.0, kIncast));
  const std::size_t total = elems * static_cast<std::size_t>(n);
  std::vector<std::vector<std::int32_t>> in(static_cast<std::size_t>(n)),
      out(static_cast<std::size_t>(n));
  std::vector<std::size_t> counts(static_cast<std::size_t>(n), elems);
  Ops ops;
  for (int r = 0; r < n; ++r) {
    auto& x = in[static_cast<std::size_t>(r)];
    x.resize(total);
    for (std::size_t e = 0; e < total; ++e) x[e] = static_cast<std::int32_t>((r + 1) * (e + 1));
    out[static_cast<std::size_t>(r)].assign(elems, 0);
    ops.push_back(coll::make_reduce_scatterv(w.context(r), multicast(), x.data(),
                                             out[static_cast<std::size_t>(r)].data(), counts,
                                             DataType::kInt32, ReduceOp::kSum));
  }
  run(w, ops);
  const std::int64_t ranks_sum = static_cast<std::int64_t>(n) * (n + 1) / 2;
  for (int r = 0; r < n; ++r) {
    for (std::size_t e = 0; e < elems; ++e) {
      const std::size_t g = static_cast<std::size_t>(r) * elems + e;
      EXPECT_EQ(out[static_cast<std::size_t>(r)][e],
                static_cast<std::int32_t>(ranks_sum * static_cast<std::int64_t>(g + 1)))
          << "rank " << r << " element " << e;
      if (::testing::Test::HasFailure()) return {};
    }
  }
  return shape(w);
}

TEST(Scale, BroadcastTalksToTwoPeersAndSendsAsManyControlMessagesAt16And256Ranks) {
  const Shape small = broadcast(16, 256 << 10, 0.0);
  const Shape large = broadcast(256, 256 << 10, 0.0);
  EXPECT_LE(large.peers, 2u) << "a rank talks only to its ring neighbours";
  EXPECT_LE(large.control, 2u);
  EXPECT_LE(large.control, small.control + 1) << "control messages grow with N";
}

TEST(Scale, AllgatherOf256RanksStaysInsideTheIncastBudget) {
  const Shape small = allgather(16, 2048, 0.0, kIncast);
  const Shape large = allgather(256, 2048, 0.0, kIncast);
  EXPECT_EQ(large.port_drops, 0u) << "roots overran the receivers' ports";
  EXPECT_EQ(large.excess_repair, 0);
  EXPECT_LE(large.peers, 2u);
  EXPECT_LE(large.control, small.control + 1) << "control messages grow with N";
}

TEST(Scale, AllgatherWithoutTheBudgetOverrunsThePorts) {
  // The switch model must show the incast the budget prevents: 63 roots
  // bursting 16 KiB each at once into every receiver's 512 KiB port (64
  // ranks: the repairs of 256 would take the test many seconds).
  const Shape s = allgather(64, 16 << 10, 0.0, 0);
  EXPECT_GT(s.port_drops, 0u);
}

TEST(Scale, AllgatherAtOnePercentLossRepairsOnlyWhatWasLost) {
  const Shape s = allgather(256, 2048, 0.01, kIncast);
  EXPECT_EQ(s.port_drops, 0u);
  // Repairs are payload, drops count headers too: nothing beyond the loss.
  EXPECT_LE(s.excess_repair, 0);
  EXPECT_LE(s.peers, 2u);
}

TEST(Scale, ReduceScatterOf256RanksIsExactAndTalksToTwoPeers) {
  const Shape s = reduce_scatter(256, 256);
  EXPECT_LE(s.peers, 2u);
}

}  // namespace
}  // namespace mccl
