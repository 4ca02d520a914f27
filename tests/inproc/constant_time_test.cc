// Completion is constant-time: without loss, each rank sends the same small
// number of control messages per collective whatever N is, and never asks
// for a repair.
#include <gtest/gtest.h>

#include "harness.h"

namespace mccl::testing {
namespace {

struct PerRank {
  std::uint64_t max_control = 0;
  std::uint64_t min_control = UINT64_MAX;
  std::uint64_t repairs = 0;
};

PerRank allgather_control_messages(int n, std::size_t m) {
  InProcessWorld world(n, {.seed = 77});
  auto comms = create_communicators(world, multicast_only());
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(m));
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * m));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), m, r, 5);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), m));
  }
  drive(reqs, std::chrono::seconds(60));
  PerRank out;
  for (int r = 0; r < n; ++r) {
    Stats s = comms[r].stats();
    out.max_control = std::max(out.max_control, s.control_messages_sent);
    out.min_control = std::min(out.min_control, s.control_messages_sent);
    out.repairs += s.repairs_requested;
    for (int b = 0; b < n; ++b) {
      EXPECT_EQ(first_mismatch(recv[r].data() + b * m, m, b, 5), m);
    }
  }
  return out;
}

TEST(ConstantTime, AllgatherControlMessagesDoNotGrowWithRanks) {
  PerRank two = allgather_control_messages(2, 64 << 10);
  PerRank many = allgather_control_messages(128, 16 << 10);
  RecordProperty("control_per_rank_n2", std::to_string(two.max_control));
  RecordProperty("control_per_rank_n128", std::to_string(many.max_control));
  std::printf("loss-free allgather: control messages per rank: N=2 %llu..%llu, N=128 %llu..%llu\n",
              static_cast<unsigned long long>(two.min_control),
              static_cast<unsigned long long>(two.max_control),
              static_cast<unsigned long long>(many.min_control),
              static_cast<unsigned long long>(many.max_control));
  EXPECT_EQ(two.repairs, 0u);
  EXPECT_EQ(many.repairs, 0u);
  EXPECT_EQ(two.max_control, many.max_control);
  EXPECT_EQ(many.min_control, many.max_control);
  EXPECT_LE(many.max_control, 2u);  // one have, one release
}

TEST(ConstantTime, BroadcastControlMessagesDoNotGrowWithRanks) {
  for (int n : {2, 128}) {
    InProcessWorld world(n, {.seed = 78});
    auto comms = create_communicators(world, multicast_only());
    std::vector<std::vector<std::byte>> bufs(n, std::vector<std::byte>(100000));
    fill(bufs[0].data(), bufs[0].size(), 0, 6);
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) reqs.push_back(comms[r].ibroadcast(bufs[r].data(), 100000, 0));
    drive(reqs, std::chrono::seconds(60));
    for (int r = 0; r < n; ++r) {
      Stats s = comms[r].stats();
      EXPECT_LE(s.control_messages_sent, 2u) << "N=" << n << " rank " << r;
      EXPECT_EQ(s.repairs_requested, 0u);
      EXPECT_EQ(first_mismatch(bufs[r].data(), 100000, 0, 6), 100000u);
    }
  }
}

}  // namespace
}  // namespace mccl::testing
