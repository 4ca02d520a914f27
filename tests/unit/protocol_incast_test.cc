// Incast on the in-memory fabric with a port model: every receiver's link
// drains at the link rate behind a 64 KiB switch buffer. An 8-rank allgather
// whose roots share the link (each sends at 1/7 of it) fits the receivers'
// ports, and what it repairs stays under 2% of a rank's block; the same
// allgather with roots that ignore the share (each at the whole rate)
// overruns the ports and lives on repairs.
#include <gtest/gtest.h>

#include "protocol/incast.h"
#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

constexpr int kRanks = 8;
constexpr std::size_t kBlock = 1 << 20;

FabricConfig switched() {
  FabricConfig f;
  f.link_gbit_per_s = 1.0;
  f.port_buffer_bytes = 64 << 10;
  f.virtual_time = true;
  f.seed = 88;
  return f;
}

struct Outcome {
  std::uint64_t repair_bytes_max = 0;  // the most any rank asked for
  std::uint64_t port_drops = 0;
};

Outcome allgather(bool share) {
  std::vector<std::vector<unsigned>> shares(kRanks);
  Rig rig(kRanks, switched(), patient(), [&](auto inner, int r) {
    return std::make_unique<ShareRecorder>(std::move(inner), shares[static_cast<std::size_t>(r)],
                                           share);
  });
  Allgather a(rig, kBlock, 17);
  a.start_all(rig);
  EXPECT_TRUE(rig.run(a.ops, 60s));
  a.expect_exact();
  Outcome o;
  for (int r = 0; r < kRanks; ++r) {
    o.repair_bytes_max = std::max(o.repair_bytes_max, rig.stats(r).repair_bytes_requested);
  }
  o.port_drops = rig.fabric().counters().port_drops;
  return o;
}

TEST(ProtocolIncast, RootsSharingTheLinkRepairUnderTwoPercent) {
  const Outcome o = allgather(true);
  EXPECT_LE(o.repair_bytes_max, kBlock / 50) << o.port_drops << " datagrams dropped at ports";
}

TEST(ProtocolIncast, RootsIgnoringTheShareOverrunThePorts) {
  const Outcome o = allgather(false);
  EXPECT_GT(o.port_drops, 0u);
  EXPECT_GT(o.repair_bytes_max, kBlock / 2) << "expected the incast to be repaired";
}

// MCCL_PROTO_INCAST_BYTES=auto follows the slowest known link: 4 ms of it,
// never under 256 KiB (100 Mbit/s, or no rate known) nor over 4 MiB.
TEST(ProtocolIncastBudget, AutoFollowsTheSlowestKnownLinkWithinItsBounds) {
  EXPECT_EQ(auto_incast_bytes(0), kIncastAutoMinBytes);
  EXPECT_EQ(auto_incast_bytes(100), kIncastAutoMinBytes);
  EXPECT_EQ(auto_incast_bytes(1000), 500000u);
  EXPECT_EQ(auto_incast_bytes(2500), 1250000u);
  EXPECT_EQ(auto_incast_bytes(10000), kIncastAutoMaxBytes);
  EXPECT_EQ(auto_incast_bytes(400000), kIncastAutoMaxBytes);
}

}  // namespace
}  // namespace mccl::protocol::test
