// Long messages landed in a collective's buffer (transport/reliable.h) over
// the real TCP transport: a binomial broadcast's message lands in place, and
// one whose collective ends first (it timed out, the caller has its buffer
// back) is written no more; one for a collective not started yet lands in
// the early store's memory (protocol/early_messages.h). Two contexts in one thread, the sim fabric
// for datagrams, TCP on 127.0.0.1 for messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "coll/alltoall.h"
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

// The alltoall's exchange: `block` bytes from every rank to every other, in
// segments of `segment`; rank r's block for rank d is pattern(r * n + d).
struct Exchange {
  int n;
  std::size_t block;
  std::vector<Bytes> send, recv;
  std::vector<std::shared_ptr<coll::Alltoall>> ops;

  Exchange(World& w, std::size_t block_bytes, std::size_t segment)
      : n(static_cast<int>(w.ctx.size())), block(block_bytes) {
    for (int r = 0; r < n; ++r) {
      Bytes out(block * n);
      for (int d = 0; d < n; ++d) {
        const Bytes b = pattern_for(r * n + d);
        std::copy(b.begin(), b.end(), out.begin() + static_cast<std::ptrdiff_t>(d * block));
      }
      send.push_back(std::move(out));
      recv.emplace_back(block * n);
    }
    for (int r = 0; r < n; ++r) {
      coll::ExchangeLayout layout;
      layout.send = send[r].data();
      layout.recv = recv[r].data();
      for (int d = 0; d < n; ++d) {
        layout.send_counts.push_back(block);
        layout.send_displs.push_back(d * block);
        layout.recv_counts.push_back(block);
        layout.recv_displs.push_back(d * block);
      }
      ops.push_back(
          std::make_shared<coll::Alltoall>(*w.ctx[r], std::move(layout), kSignature, segment));
    }
  }
  Bytes pattern_for(int pair) const {
    Bytes b(block);
    for (std::size_t i = 0; i < block; ++i) b[i] = std::byte(static_cast<unsigned>(i * 13 + pair));
    return b;
  }
  // Runs every context until every exchange is done (at most 30 s).
  bool run(World& w) {
    const auto until = Clock::now() + 30s;
    auto done = [&] {
      return std::all_of(ops.begin(), ops.end(), [](const auto& op) { return op->done(); });
    };
    while (!done() && Clock::now() < until) {
      for (auto& c : w.ctx) c->progress();
    }
    return done();
  }
  void expect_exact() const {
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(ops[r]->status().is_ok()) << ops[r]->status().message();
      for (int from = 0; from < n; ++from) {
        const Bytes want = pattern_for(from * n + r);
        EXPECT_TRUE(std::equal(want.begin(), want.end(),
                               recv[r].begin() + static_cast<std::ptrdiff_t>(from * block)))
            << "rank " << r << ", the block from rank " << from;
      }
    }
  }
};

// Every segment of the alltoall lands where it belongs: 3 ranks, blocks of
// 300 KB in segments of 100 KB, 2 peers' 3 segments into each rank.
TEST(ProtocolLanding, TheAlltoallsSegmentsLand) {
  World w(3, ProtocolConfig{});
  Exchange x(w, 300000, 100000);
  for (int r = 0; r < 3; ++r) w.ctx[r]->start(x.ops[r]);
  ASSERT_TRUE(x.run(w));
  x.expect_exact();
  EXPECT_EQ(w.landed(), 3u * 2u * 3u);
}

// Rank 1 starts its alltoall only once rank 0's four 256 KiB segments have
// all arrived: each was landed early, in the early store's memory, and is
// handed over when rank 1 starts. Before that store landed anything, a
// message nobody was there to take was read through the connection's
// buffer and copied twice.
TEST(ProtocolLanding, SegmentsOfACollectiveNotStartedYetLandEarly) {
  World w(2, ProtocolConfig{});
  Exchange x(w, 1 << 20, 256 << 10);
  w.ctx[0]->start(x.ops[0]);
  const auto until = Clock::now() + 20s;
  while (w.tcp[1]->counters().messages_landed < 4 && Clock::now() < until) {
    w.ctx[0]->progress();
    w.ctx[1]->progress();
  }
  ASSERT_EQ(w.tcp[1]->counters().messages_landed, 4u) << "rank 0's segments, all early";
  w.ctx[1]->start(x.ops[1]);
  ASSERT_TRUE(x.run(w));
  x.expect_exact();
  EXPECT_EQ(w.tcp[1]->counters().messages_landed, 4u);
  EXPECT_EQ(w.tcp[0]->counters().messages_landed, 4u) << "rank 1's, into rank 0's exchange";
}

// A context that goes while a message for a collective it never started is
// landing in its early store: the transport is told to stop first, so
// nothing writes that memory once it is freed (AddressSanitizer's list).
TEST(ProtocolLanding, AContextThatGoesMidEarlyLandingStopsIt) {
  World w(2, ProtocolConfig{});
  Exchange x(w, 16 << 20, 16 << 20);
  w.ctx[0]->start(x.ops[0]);  // what the socket takes at once; the rest waits for rank 0
  const auto until = Clock::now() + 200ms;  // reads all the socket holds
  while (Clock::now() < until) w.ctx[1]->progress();
  EXPECT_EQ(w.tcp[1]->counters().messages_landed, 0u) << "16 MiB cannot have arrived";
  w.ctx[1].reset();
  const auto flush_until = Clock::now() + 1s;
  while (Clock::now() < flush_until) w.ctx[0]->progress();
}

}  // namespace
}  // namespace mccl::protocol
