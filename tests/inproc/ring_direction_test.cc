// The leftward ring allgather and chain broadcast (RingDirection,
// TreeShape::kLeftwardChain): a compressed collective's size exchange runs
// them so that its hops do not queue behind a concurrent reduce-scatter's
// bytes, which flow rightward. Each rank waits only on its right neighbour
// (the peer whose failure it reports) and every rank ends with every byte.
// Ranks as tasks on the in-memory fabric (simworld::World).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "coll/ring_allgather.h"
#include "coll/tree_broadcast.h"
#include "protocol/context.h"
#include "simworld/world.h"

namespace mccl {
namespace {

using namespace std::chrono_literals;
using Ops = std::vector<std::shared_ptr<protocol::Operation>>;

constexpr std::uint64_t kSignature = 0x1EF7;
constexpr std::size_t kSegment = 5;  // several segments per block, one short

std::byte value(int rank, std::size_t i) {
  return static_cast<std::byte>((static_cast<std::size_t>(rank) * 37 + i * 11) & 0xFF);
}

simworld::World world(int n) {
  simworld::WorldConfig w;
  w.ranks = n;
  return simworld::World(w);
}

void run(simworld::World& w, const Ops& ops) {
  simworld::RunResult result;
  const common::Status st = w.run(ops, 30s, result);
  ASSERT_TRUE(st.is_ok()) << st.message();
}

// Only the right neighbour is waited on, before anything arrived.
void expect_waits_on_right(const Ops& ops, const std::vector<int>& waiting, int n) {
  if (n < 3) return;  // both neighbours are the same rank
  for (int r : waiting) {
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    EXPECT_TRUE(ops[static_cast<std::size_t>(r)]->needs(right)) << "rank " << r;
    EXPECT_FALSE(ops[static_cast<std::size_t>(r)]->needs(left)) << "rank " << r;
  }
}

TEST(RingDirection, LeftwardAllgatherWaitsOnTheRightAndDeliversEveryBlock) {
  for (int n : {1, 2, 3, 5}) {
    simworld::World w = world(n);
    // Uneven blocks, rank 1's empty: 3 + 4r bytes, 0 for rank 1.
    std::vector<std::size_t> counts(static_cast<std::size_t>(n)), displs(counts.size());
    std::size_t total = 0;
    for (int r = 0; r < n; ++r) {
      counts[static_cast<std::size_t>(r)] = r == 1 ? 0 : 3 + 4 * static_cast<std::size_t>(r);
      displs[static_cast<std::size_t>(r)] = total;
      total += counts[static_cast<std::size_t>(r)];
    }
    std::vector<std::vector<std::byte>> bufs(static_cast<std::size_t>(n),
                                             std::vector<std::byte>(total));
    Ops ops;
    std::vector<int> everyone;
    for (int r = 0; r < n; ++r) {
      auto& b = bufs[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) {
        b[displs[static_cast<std::size_t>(r)] + i] = value(r, i);
      }
      ops.push_back(std::make_shared<coll::RingAllgather>(
          w.context(r), coll::BlockLayout{b.data(), counts, displs}, kSignature, kSegment,
          coll::RingDirection::kLeftward));
      everyone.push_back(r);
    }
    expect_waits_on_right(ops, everyone, n);
    run(w, ops);
    for (int r = 0; r < n; ++r) {
      for (int s = 0; s < n; ++s) {
        for (std::size_t i = 0; i < counts[static_cast<std::size_t>(s)]; ++i) {
          ASSERT_EQ(bufs[static_cast<std::size_t>(r)][displs[static_cast<std::size_t>(s)] + i],
                    value(s, i))
              << n << " ranks: rank " << r << ", byte " << i << " of rank " << s;
        }
      }
    }
  }
}

TEST(RingDirection, LeftwardChainBroadcastWaitsOnTheRightFromEveryRoot) {
  constexpr std::size_t kBytes = 13;
  for (int n : {1, 2, 3, 5}) {
    for (int root = 0; root < n; ++root) {
      simworld::World w = world(n);
      std::vector<std::vector<std::byte>> bufs(static_cast<std::size_t>(n),
                                               std::vector<std::byte>(kBytes));
      for (std::size_t i = 0; i < kBytes; ++i)
        bufs[static_cast<std::size_t>(root)][i] = value(root, i);
      Ops ops;
      std::vector<int> receivers;
      for (int r = 0; r < n; ++r) {
        ops.push_back(std::make_shared<coll::TreeBroadcast>(
            w.context(r), coll::TreeShape::kLeftwardChain, bufs[static_cast<std::size_t>(r)].data(),
            kBytes, root, kSignature, kSegment));
        if (r != root) receivers.push_back(r);
      }
      expect_waits_on_right(ops, receivers, n);
      run(w, ops);
      for (int r = 0; r < n; ++r) {
        for (std::size_t i = 0; i < kBytes; ++i) {
          ASSERT_EQ(bufs[static_cast<std::size_t>(r)][i], value(root, i))
              << n << " ranks, root " << root << ": rank " << r << ", byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace mccl
