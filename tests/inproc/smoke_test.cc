#include <gtest/gtest.h>

#include "harness.h"

namespace mccl::testing {
namespace {

TEST(Smoke, BroadcastTwoRanks) {
  InProcessWorld world(2);
  auto comms = create_communicators(world);
  std::vector<std::vector<std::byte>> bufs(2, std::vector<std::byte>(5000));
  fill(bufs[0].data(), 5000, 0, 1);
  std::vector<Request> reqs;
  for (int r = 0; r < 2; ++r) reqs.push_back(comms[r].ibroadcast(bufs[r].data(), 5000, 0));
  drive(reqs, std::chrono::seconds(10));
  EXPECT_EQ(first_mismatch(bufs[1].data(), 5000, 0, 1), 5000u);
}

TEST(Smoke, AllgatherThreadsWithLoss) {
  SimFabricOptions f{.loss = 0.1, .duplicate = 0.05, .reorder = 0.05, .seed = 3};
  const int n = 5;
  const std::size_t m = 70000;
  InProcessWorld world(n, f);
  auto comms = create_communicators(world);
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * m));
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<std::byte> send(m);
    fill(send.data(), m, c.rank(), 9);
    c.allgather(send.data(), recv[c.rank()].data(), m);
  });
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(recv[r].data() + b * m, m, b, 9), m)
          << "rank " << r << " block " << b;
    }
  }
}

}  // namespace
}  // namespace mccl::testing
