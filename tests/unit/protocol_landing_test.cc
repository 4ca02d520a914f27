// Long messages landed in a collective's buffer (transport/reliable.h) over
// the real TCP transport: a binomial broadcast's message lands in place, and
// one whose collective ends first (it timed out, the caller has its buffer
// back) is written no more. Two contexts in one thread, the sim fabric for
// datagrams, TCP on 127.0.0.1 for messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "coll/bruck_allgather.h"
#include "coll/ring_allgather.h"
#include "coll/tree_broadcast.h"
#include "protocol/context.h"
#include "reliable_test_support.h"
#include "tcp_test_support.h"
#include "transport/sim/sim_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace mccl::protocol {
namespace {

using namespace std::chrono_literals;
using transport::test::Bytes;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kTag = 0x1A4D0001;
constexpr std::uint64_t kSignature = 0x5151;

struct World {
  transport::sim::Fabric fabric{transport::sim::FabricConfig{}};
  std::vector<std::unique_ptr<Context>> ctx;
  std::vector<transport::tcp::TcpTransport*> tcp;

  World(int n, ProtocolConfig pc) {
    auto mesh = transport::test::make_mesh_with(
        n, [n](int r, const transport::OobAllgather& oob, auto& out) {
          return transport::tcp::create_tcp_reliable(transport::tcp::test::loopback_config(r, n),
                                                     oob, out);
        });
    for (int r = 0; r < n; ++r) {
      auto& t = mesh[static_cast<std::size_t>(r)];
      tcp.push_back(transport::tcp::as_tcp(t.get()));
      ctx.push_back(
          std::make_unique<Context>(r, n, kTag, fabric.join_datagram(kTag, r), std::move(t), pc));
    }
  }
  std::uint64_t landed() const {
    std::uint64_t n = 0;
    for (const auto* t : tcp) n += t->counters().messages_landed;
    return n;
  }
};

Bytes pattern(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<unsigned>(i * 131 + 7));
  return b;
}

std::shared_ptr<coll::TreeBroadcast> broadcast(Context& ctx, Bytes& buffer, std::size_t segment) {
  return std::make_shared<coll::TreeBroadcast>(ctx, coll::TreeShape::kBinomial, buffer.data(),
                                               buffer.size(), 0, kSignature, segment);
}

TEST(ProtocolLanding, ABinomialBroadcastLandsInPlace) {
  World p(2, ProtocolConfig{});
  const std::size_t n = 3 << 20;  // one message, whole (2 ranks: nobody forwards)
  Bytes src = pattern(n), dst(n);
  auto a = broadcast(*p.ctx[0], src, 128 << 10);
  auto b = broadcast(*p.ctx[1], dst, 128 << 10);
  p.ctx[0]->start(a);
  p.ctx[1]->start(b);
  const auto until = Clock::now() + 20s;
  while (!(a->done() && b->done()) && Clock::now() < until) {
    p.ctx[0]->progress();
    p.ctx[1]->progress();
  }
  ASSERT_TRUE(b->done());
  ASSERT_TRUE(b->status().is_ok()) << b->status().message();
  EXPECT_EQ(dst, src);
  EXPECT_EQ(p.tcp[1]->counters().messages_landed, 1u);
}

// The root's socket takes part of a 16 MiB message and queues the rest,
// which only its own progress() sends; the receiver, alone progressing,
// lands the first part and times out waiting for the rest. Its buffer is
// then the caller's: once the root sends the rest, none of it is written.
TEST(ProtocolLanding, ACollectiveThatEndsAbandonsItsLanding) {
  ProtocolConfig pc;
  pc.op_timeout = 300ms;
  World p(2, pc);
  const std::size_t n = 16 << 20;
  Bytes src = pattern(n), dst(n);
  auto a = broadcast(*p.ctx[0], src, n);
  auto b = broadcast(*p.ctx[1], dst, n);
  p.ctx[1]->start(b);
  p.ctx[0]->start(a);  // sends what the socket takes
  const auto until = Clock::now() + 20s;
  while (!b->done() && Clock::now() < until) p.ctx[1]->progress();
  ASSERT_TRUE(b->done());
  EXPECT_EQ(b->status().code(), ErrorCode::kTimeout) << b->status().message();
  EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + (1 << 20), src.begin()))
      << "the first part had landed in place";
  std::fill(dst.begin(), dst.end(), std::byte{0x5A});
  const auto flush_until = Clock::now() + 2s;
  while (Clock::now() < flush_until) {
    p.ctx[0]->progress();
    p.ctx[1]->progress();
  }
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](std::byte x) { return x == std::byte{0x5A}; }))
      << "written after its collective ended";
  EXPECT_EQ(p.tcp[1]->counters().landings_abandoned, 1u);
  EXPECT_EQ(p.tcp[1]->counters().messages_landed, 0u);
}

// Allgatherv over TCP with `counts` per rank, by the collective `make`
// builds on each rank: every rank ends with every block. Returns how many
// messages landed.
template <typename Make>
std::uint64_t allgather_landed(const std::vector<std::size_t>& counts, Make make) {
  const int kRanks = static_cast<int>(counts.size());
  World w(kRanks, ProtocolConfig{});
  std::vector<std::size_t> displ(kRanks);
  std::size_t total = 0;
  for (int r = 0; r < kRanks; ++r) {
    displ[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  const Bytes expect = pattern(total);
  std::vector<Bytes> out(kRanks, Bytes(total));
  std::vector<std::shared_ptr<Operation>> ops;
  for (int r = 0; r < kRanks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    std::copy_n(expect.begin() + static_cast<std::ptrdiff_t>(displ[i]), counts[i],
                out[i].begin() + static_cast<std::ptrdiff_t>(displ[i]));
    ops.push_back(make(*w.ctx[i], coll::BlockLayout{out[i].data(), counts, displ}));
    w.ctx[i]->start(ops.back());
  }
  const auto until = Clock::now() + 30s;
  auto all_done = [&] {
    return std::all_of(ops.begin(), ops.end(), [](const auto& op) { return op->done(); });
  };
  while (!all_done() && Clock::now() < until) {
    for (auto& c : w.ctx) c->progress();
  }
  if (!all_done()) {
    ADD_FAILURE() << "the allgather did not end within 30 s";
    return 0;
  }
  for (int r = 0; r < kRanks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    EXPECT_TRUE(ops[i]->status().is_ok()) << ops[i]->status().message();
    EXPECT_EQ(out[i], expect) << "rank " << r;
  }
  return w.landed();
}

// Uneven blocks, 64 B to 250 KB, at 5 ranks.
const std::vector<std::size_t> kUnevenCounts = {100000, 37000, 250000, 64, 180000};

// Bruck's segments are a block long: a segment within one block lands
// there, one that spans two (a round's stream shorter than the largest
// block) lands only where they follow each other in the output, and is
// copied where the run wraps past the last block.
TEST(ProtocolLanding, BrucksSegmentsLandWithinABlockAndAreCopiedAcrossTwo) {
  EXPECT_GT(allgather_landed(kUnevenCounts,
                             [](Context& ctx, coll::BlockLayout layout) {
                               return std::make_shared<coll::BruckAllgather>(ctx, std::move(layout),
                                                                             kSignature, 40000);
                             }),
            0u);
}

// With equal blocks every Bruck segment is one block and lands: 4 ranks,
// 2 rounds of 1 and 2 blocks, 3 messages into each rank, whatever the
// configured segment.
TEST(ProtocolLanding, BrucksEqualBlocksAllLand) {
  const std::vector<std::size_t> counts(4, 300000);
  EXPECT_EQ(allgather_landed(counts,
                             [](Context& ctx, coll::BlockLayout layout) {
                               return std::make_shared<coll::BruckAllgather>(ctx, std::move(layout),
                                                                             kSignature, 40000);
                             }),
            4u * 3u);
}

// Blocks shorter than the configured segment: round 2's segment spans two
// blocks, and lands where they follow each other in the output. 4 ranks of
// 70 KB (longer than a connection's read buffer, so nothing arrives whole
// in it), segments of 150 KB: every rank's round-1 block lands, and round
// 2's pair (blocks r+2, r+3) everywhere but at rank 1, whose pair wraps.
TEST(ProtocolLanding, BrucksSegmentAcrossAdjacentBlocksLands) {
  const std::vector<std::size_t> counts(4, 70000);
  EXPECT_EQ(allgather_landed(counts,
                             [](Context& ctx, coll::BlockLayout layout) {
                               return std::make_shared<coll::BruckAllgather>(ctx, std::move(layout),
                                                                             kSignature, 150000);
                             }),
            4u + 3u);
}

// The ring's 40 KB segments land (those within one block).
TEST(ProtocolLanding, TheRingsSegmentsLand) {
  EXPECT_GT(allgather_landed(kUnevenCounts,
                             [](Context& ctx, coll::BlockLayout layout) {
                               return std::make_shared<coll::RingAllgather>(ctx, std::move(layout),
                                                                            kSignature, 40000);
                             }),
            0u);
}

}  // namespace
}  // namespace mccl::protocol
