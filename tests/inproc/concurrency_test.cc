// Several collectives in flight on one communicator, completing in any
// order; and ranks on their own threads rather than driven round-robin.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "harness.h"

namespace mccl::testing {
namespace {

// 20 collectives at once on every rank, a mix of broadcasts from different
// roots and allgathers of different sizes, with loss, duplication and
// reordering; results checked byte by byte.
TEST(Concurrency, TwentyInFlightWithLoss) {
  const int n = 5;
  const int kOps = 20;
  SimFabricOptions f{.loss = 0.1, .duplicate = 0.02, .reorder = 0.05, .seed = 2020};
  SCOPED_TRACE(describe(n, 0, f));
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, multicast_only());
  struct Op {
    bool bcast;
    int root;
    std::size_t bytes;
  };
  std::vector<Op> ops;
  std::mt19937 gen(2020);
  for (int i = 0; i < kOps; ++i) {
    ops.push_back({i % 2 == 0, static_cast<int>(gen() % n), 1 + gen() % 40000});
  }
  // bufs[op][rank]
  std::vector<std::vector<std::vector<std::byte>>> bufs(kOps);
  std::vector<std::vector<std::vector<std::byte>>> sends(kOps);
  std::vector<Request> reqs;
  for (int i = 0; i < kOps; ++i) {
    bufs[i].resize(n);
    sends[i].resize(n);
    for (int r = 0; r < n; ++r) {
      if (ops[i].bcast) {
        bufs[i][r].assign(ops[i].bytes, std::byte{0});
        if (r == ops[i].root) fill(bufs[i][r].data(), ops[i].bytes, r, i);
      } else {
        bufs[i][r].assign(ops[i].bytes * n, std::byte{0});
        sends[i][r].resize(ops[i].bytes);
        fill(sends[i][r].data(), ops[i].bytes, r, i);
      }
    }
  }
  // Every rank posts all 20 before anyone waits; ranks post in turn so the
  // early-arrival store sees traffic for collectives not started yet.
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < kOps; ++i) {
      if (ops[i].bcast) {
        reqs.push_back(comms[r].ibroadcast(bufs[i][r].data(), ops[i].bytes, ops[i].root));
      } else {
        reqs.push_back(comms[r].iallgather(sends[i][r].data(), bufs[i][r].data(), ops[i].bytes));
      }
    }
  }
  drive(reqs, std::chrono::seconds(60));
  for (int i = 0; i < kOps; ++i) {
    for (int r = 0; r < n; ++r) {
      if (ops[i].bcast) {
        ASSERT_EQ(first_mismatch(bufs[i][r].data(), ops[i].bytes, ops[i].root, i), ops[i].bytes)
            << "op " << i << " rank " << r;
      } else {
        for (int b = 0; b < n; ++b) {
          ASSERT_EQ(first_mismatch(bufs[i][r].data() + b * ops[i].bytes, ops[i].bytes, b, i),
                    ops[i].bytes)
              << "op " << i << " rank " << r << " block " << b;
        }
      }
    }
  }
  std::uint64_t early = 0;
  for (auto& c : comms) early += c.stats().early_arrivals_stored;
  EXPECT_GT(early, 0u) << "ranks posted in turn, so some datagrams must have come early";
}

TEST(Concurrency, RequestsCompleteInAnyOrder) {
  const int n = 3;
  InProcessWorld world(n, {.seed = 4});
  auto comms = create_communicators(world);
  std::vector<std::vector<std::byte>> small(n, std::vector<std::byte>(10));
  std::vector<std::vector<std::byte>> big(n, std::vector<std::byte>(1 << 20));
  fill(small[0].data(), 10, 0, 1);
  fill(big[0].data(), 1 << 20, 0, 2);
  run_on_threads(comms, [&](Communicator& c) {
    Request a = c.ibroadcast(big[c.rank()].data(), 1 << 20, 0);
    Request b = c.ibroadcast(small[c.rank()].data(), 10, 0);
    b.wait();  // the later, smaller one first
    a.wait();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(first_mismatch(small[r].data(), 10, 0, 1), 10u);
    EXPECT_EQ(first_mismatch(big[r].data(), 1 << 20, 0, 2), std::size_t{1} << 20);
  }
}

// Ranks as threads (8 threads on 2 cores): blocking calls, in-place
// allgather, allgatherv with uneven counts, barrier.
class Threads : public ::testing::TestWithParam<ProgressKind> {};

TEST_P(Threads, EightRanksBlockingCallsWithLoss) {
  const int n = 8;
  SimFabricOptions f{.loss = 0.05, .duplicate = 0.01, .reorder = 0.02, .seed = 88};
  SCOPED_TRACE(describe(n, 0, f));
  InProcessWorld world(n, f);
  auto comms = create_communicators(world, {.progress = GetParam()});
  std::vector<std::size_t> counts, displs;
  std::size_t total = 0;
  for (int r = 0; r < n; ++r) {
    counts.push_back(r == 3 ? 0 : 1000 * r + 17);  // one rank contributes nothing
    displs.push_back(total + 5);                   // gaps between blocks stay untouched
    total += counts.back() + 5;
  }
  run_on_threads(comms, [&](Communicator& c) {
    const int me = c.rank();
    std::vector<std::byte> bcast(100000);
    if (me == 6) fill(bcast.data(), bcast.size(), 6, 1);
    c.broadcast(bcast.data(), bcast.size(), 6);
    ASSERT_EQ(first_mismatch(bcast.data(), bcast.size(), 6, 1), bcast.size());

    std::vector<std::byte> inplace(n * 3000);
    fill(inplace.data() + me * 3000, 3000, me, 2);
    c.allgather(kInPlace, inplace.data(), 3000);
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(inplace.data() + b * 3000, 3000, b, 2), 3000u);
    }

    std::vector<std::byte> send(counts[me]);
    fill(send.data(), send.size(), me, 3);
    std::vector<std::byte> recv(total, std::byte{0xEE});
    c.allgatherv(send.data(), recv.data(), counts, displs);
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(recv.data() + displs[b], counts[b], b, 3), counts[b]);
      ASSERT_EQ(recv[displs[b] - 1], std::byte{0xEE}) << "gap before block " << b << " written";
    }
    c.barrier();
  });
}

INSTANTIATE_TEST_SUITE_P(Engines, Threads,
                         ::testing::Values(ProgressKind::kInline, ProgressKind::kThread),
                         [](const auto& param_info) {
                           return param_info.param == ProgressKind::kInline ? "Inline"
                                                                            : "HostThread";
                         });

// With the host-thread engine the collective advances while the
// application does something else: a request posted and never tested still
// completes.
TEST(HostThread, ProgressWithoutTheApplication) {
  const int n = 4;
  InProcessWorld world(n, {.loss = 0.05, .seed = 9});
  auto comms = create_communicators(world, {.progress = ProgressKind::kThread});
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * 200000));
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(200000));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), send[r].size(), r, 9);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), 200000));
  }
  // No test(), no wait(): only the engines' threads run.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto all_done = [&] {
    for (auto& c : comms) {
      if (c.stats().collectives_completed < 1) return false;
    }
    return true;
  };
  while (!all_done() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(all_done());
  for (auto& q : reqs) EXPECT_TRUE(q.test());
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(recv[r].data() + b * 200000, 200000, b, 9), 200000u);
    }
  }
}

}  // namespace
}  // namespace mccl::testing
