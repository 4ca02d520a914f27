// The daemon's staged blocks (offload/daemon/staged_blocks.h) against a
// "client" that is this process: the root's bytes read by range, received
// blocks written back by write_held() in steps of final bytes and the rest
// at the end, this rank's own block never written early, and errors that
// name what failed.
#include "offload/daemon/staged_blocks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mccl::offload::daemon {
namespace {

using Bytes = std::vector<std::byte>;
constexpr std::size_t kStep = StagedBlocks::kStepBytes;

Bytes filled(std::size_t n, unsigned char v) { return Bytes(n, std::byte{v}); }

std::uint64_t address(Bytes& b) { return reinterpret_cast<std::uint64_t>(b.data()); }

// How many of b[from, to) equal v.
std::size_t count_of(const Bytes& b, std::size_t from, std::size_t to, unsigned char v) {
  return static_cast<std::size_t>(std::count(b.begin() + static_cast<std::ptrdiff_t>(from),
                                             b.begin() + static_cast<std::ptrdiff_t>(to),
                                             std::byte{v}));
}

TEST(StagedBlocks, FinalBytesAreWrittenBackInStepsAndTheRestAtTheEnd) {
  const std::size_t bytes = 3 * kStep + 100;
  Bytes client = filled(bytes, 0xA5), staging = filled(bytes, 0x11);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), {0, bytes}, {0, 0}, 0, false, 0);
  EXPECT_FALSE(blocks.write_held()) << "nothing has arrived";
  blocks.arrived(1, kStep - 1);
  EXPECT_FALSE(blocks.write_held()) << "under a step";
  EXPECT_EQ(count_of(client, 0, bytes, 0xA5), bytes);
  blocks.arrived(1, kStep + 10);
  EXPECT_EQ(count_of(client, 0, bytes, 0xA5), bytes) << "arrived() copies nothing";
  EXPECT_TRUE(blocks.write_held());
  EXPECT_EQ(count_of(client, 0, kStep + 10, 0x11), kStep + 10);
  EXPECT_EQ(count_of(client, kStep + 10, bytes, 0xA5), bytes - kStep - 10)
      << "a byte not yet final was written";
  EXPECT_FALSE(blocks.write_held()) << "written twice";
  ASSERT_TRUE(blocks.deliver_rest().is_ok());
  EXPECT_EQ(count_of(client, 0, bytes, 0x11), bytes);
}

TEST(StagedBlocks, OneCallWritesAtMostItsShare) {
  const std::size_t bytes = 3 * StagedBlocks::kMostPerCall;
  Bytes client = filled(bytes, 0xA5), staging = filled(bytes, 0x12);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), {0, bytes}, {0, 0}, 0, false, 0);
  blocks.arrived(1, bytes);
  EXPECT_TRUE(blocks.write_held());
  EXPECT_EQ(count_of(client, 0, bytes, 0x12), StagedBlocks::kMostPerCall);
  while (blocks.write_held()) {
  }
  EXPECT_EQ(client, staging);
}

TEST(StagedBlocks, AWholeBlockIsWrittenHoweverShort) {
  Bytes client = filled(10, 0xA5), staging = filled(10, 0x22);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), {0, 10}, {0, 0}, 0, false, 0);
  blocks.arrived(1, 10);
  EXPECT_TRUE(blocks.write_held());
  EXPECT_EQ(client, staging);
}

TEST(StagedBlocks, TheRootsBytesAreReadByRangeAndNeverWrittenBack) {
  const std::size_t bytes = 2 * kStep;
  Bytes client = filled(bytes, 0x33), staging = filled(bytes, 0x00);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), {bytes, 0}, {0, 0}, 0, true,
                      address(client));
  ASSERT_TRUE(blocks.fill(0, 1000).is_ok());
  EXPECT_EQ(count_of(staging, 0, 1000, 0x33), 1000u);
  EXPECT_EQ(count_of(staging, 1000, bytes, 0x00), bytes - 1000) << "read beyond the range";
  ASSERT_TRUE(blocks.fill(1000, bytes).is_ok());
  EXPECT_EQ(staging, client);
  staging.assign(bytes, std::byte{0x44});
  blocks.arrived(0, bytes);
  EXPECT_FALSE(blocks.write_held());
  ASSERT_TRUE(blocks.deliver_rest().is_ok());
  EXPECT_EQ(count_of(client, 0, bytes, 0x33), bytes) << "the root's own block was written back";
}

TEST(StagedBlocks, AnAllgathersBlocksLandAtTheirDisplacements) {
  // Blocks of ranks 0 and 2 around this rank's (1, in place) with a gap.
  const std::vector<std::size_t> counts{100, 50, 70}, displs{0, 200, 300};
  Bytes client = filled(400, 0xA5), staging = filled(400, 0x55);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), counts, displs, 1, true, 0);
  blocks.arrived(2, 70);
  EXPECT_TRUE(blocks.write_held());
  EXPECT_EQ(count_of(client, 300, 370, 0x55), 70u);
  EXPECT_EQ(count_of(client, 0, 300, 0xA5), 300u);
  ASSERT_TRUE(blocks.deliver_rest().is_ok());
  EXPECT_EQ(count_of(client, 0, 100, 0x55), 100u);
  EXPECT_EQ(count_of(client, 100, 300, 0xA5), 200u) << "the gap or the own block was written";
  EXPECT_EQ(count_of(client, 370, 400, 0xA5), 30u);
}

// Not in place: this rank's block is read from the client's send buffer and
// lands in the client's receive buffer too, but only at the end.
TEST(StagedBlocks, AnAllgathersOwnBlockIsReadFromItsSource) {
  Bytes client = filled(20, 0xA5), send = filled(10, 0x77), staging = filled(20, 0x00);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), {10, 10}, {0, 10}, 1, false,
                      address(send));
  ASSERT_TRUE(blocks.fill(0, 4).is_ok());
  ASSERT_TRUE(blocks.fill(4, 10).is_ok());
  EXPECT_EQ(count_of(staging, 10, 20, 0x77), 10u) << "read into this rank's block";
  EXPECT_EQ(count_of(staging, 0, 10, 0x00), 10u) << "read into another block";
  ASSERT_TRUE(blocks.deliver_rest().is_ok());
  EXPECT_EQ(count_of(client, 10, 20, 0x77), 10u);
}

// Not in place: the client's receive buffer gets this rank's block too, but
// only at the end.
TEST(StagedBlocks, ThisRanksBlockNotInTheClientIsWrittenAtTheEnd) {
  Bytes client = filled(20, 0xA5), staging = filled(20, 0x66);
  StagedBlocks blocks(::getpid(), staging.data(), address(client), {10, 10}, {0, 10}, 1, false, 0);
  blocks.arrived(1, 10);
  EXPECT_FALSE(blocks.write_held());
  EXPECT_EQ(count_of(client, 0, 20, 0xA5), 20u) << "written before the end";
  ASSERT_TRUE(blocks.deliver_rest().is_ok());
  EXPECT_EQ(client, staging);
}

TEST(StagedBlocks, FailuresNameWhatFailed) {
  Bytes staging(64);
  // Page 0 is never mapped: the client's buffer is gone.
  StagedBlocks gone(::getpid(), staging.data(), 0, {64, 64}, {0, 0}, 0, true, 1);
  auto st = gone.fill(0, 64);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("could not read the application's buffer"), std::string::npos)
      << st.message();
  gone.arrived(1, 64);
  EXPECT_FALSE(gone.write_held());
  EXPECT_FALSE(gone.write_held()) << "tried again after a failure";
  st = gone.deliver_rest();
  ASSERT_FALSE(st.is_ok()) << "the idle write's failure is reported at the end";
  EXPECT_NE(st.message().find("could not write"), std::string::npos) << st.message();
  st = gone.fill(0, 65);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("outside this rank's block"), std::string::npos) << st.message();
  StagedBlocks receiver(::getpid(), staging.data(), 0, {0, 64}, {0, 0}, 0, false, 0);
  EXPECT_FALSE(receiver.fill(0, 1).is_ok()) << "a receiver has no block to fill";
}

}  // namespace
}  // namespace mccl::offload::daemon
