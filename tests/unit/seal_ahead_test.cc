// src/protocol/seal_ahead and helper_pool: helpers seal a root's datagram headers ahead of
// it. Every header the root takes from them is the one it would have
// sealed itself (with a MAC and with a CRC); a root that gets ahead of them
// seals the rest; stop() leaves the stream's bytes alone; helpers beyond
// the MAC's lanes seal nothing.
#include "protocol/seal_ahead.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "protocol/auth.h"

namespace mccl::protocol {
namespace {

using namespace std::chrono_literals;

constexpr unsigned kHelpers = 2;
constexpr std::uint32_t kChunk = 1000;

// A stream of `chunks` chunks, the last one short, and a plan for it.
struct StreamUnderTest {
  StreamUnderTest(std::uint64_t count, const DatagramMac* mac)
      : chunks(count), bytes(count * kChunk - kChunk / 3), data(bytes) {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 131 + (i >> 9));
    plan.header.comm_tag = 0xC0FFEE;
    plan.header.seq = 7;
    plan.header.root = 3;
    plan.header.chunk_bytes = kChunk;
    plan.header.total_bytes = bytes;
    plan.data = data.data();
    plan.header_bytes = data_header_bytes(mac != nullptr);
    plan.checksum = true;
    plan.auth = {mac, 7, 7};
  }

  // What the root writes for chunk `c` without helpers.
  std::vector<std::byte> own_seal(std::uint64_t c) const {
    DataHeader h = plan.header;
    const std::uint64_t at = c * kChunk;
    const auto len = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - at));
    h.chunk_index = static_cast<std::uint32_t>(c);
    h.payload_len = static_cast<std::uint16_t>(len);
    std::vector<std::byte> out(plan.header_bytes);
    encode_data_header(h, {data.data() + at, len}, plan.checksum, plan.auth, out.data());
    return out;
  }

  std::uint64_t chunks;
  std::uint64_t bytes;
  std::vector<std::byte> data;
  SealPlan plan;
};

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// The root's loop: every chunk in order, taken where sealed, sealed here
// otherwise, each checked against the root's own; returns how many it took.
std::uint64_t send_all(const StreamUnderTest& s, SealJob& job, HelperPool& pool,
                       std::chrono::microseconds pause_per_range) {
  std::vector<std::byte> got(s.plan.header_bytes);
  std::uint64_t taken = 0;
  for (std::uint64_t c = 0; c < s.chunks; ++c) {
    if (job.take(c, got.data())) {
      ++taken;
      EXPECT_EQ(got, s.own_seal(c)) << "chunk " << c << " as a helper sealed it";
    }
    if ((c + 1) % SealJob::kRangeChunks == 0) {
      job.advance(c + 1);
      pool.wake();
      if (pause_per_range.count() > 0) std::this_thread::sleep_for(pause_per_range);
    }
  }
  job.stop();
  return taken;
}

std::shared_ptr<SealJob> post(HelperPool& pool, const SealPlan& plan) {
  auto job = std::make_shared<SealJob>(plan);
  pool.post(job);
  return job;
}

std::unique_ptr<DatagramMac> mac_with_lanes(unsigned lanes) {
  if (!auth_available()) return nullptr;
  return std::make_unique<DatagramMac>(random_auth_key(), lanes);
}

class SealAhead : public ::testing::TestWithParam<bool> {
 protected:
  // With a MAC where the build has one (else the case is skipped), or a CRC.
  void SetUp() override {
    if (GetParam()) {
      mac_ = mac_with_lanes(kHelpers);
      if (mac_ == nullptr) GTEST_SKIP() << "this build has no authentication";
    }
  }
  std::unique_ptr<DatagramMac> mac_;
};

TEST_P(SealAhead, TheRootTakesWhatItWouldHaveSealed) {
  StreamUnderTest s(40 * SealJob::kRangeChunks + 5, mac_.get());
  HelperPool& pool = HelperPool::shared(kHelpers);
  auto job = post(pool, s.plan);
  // The whole first window, before the root starts: those it must take.
  ASSERT_TRUE(wait_for([&] { return job->sealed_ranges() >= SealJob::kWindowRanges; }, 30s))
      << "the helpers sealed " << job->sealed_ranges() << " ranges in 30 s";
  const std::uint64_t taken = send_all(s, *job, pool, 200us);
  EXPECT_GE(taken, SealJob::kWindowRanges * SealJob::kRangeChunks);
  EXPECT_TRUE(job->finished());
}

TEST_P(SealAhead, ARootAheadOfTheHelpersSealsTheRestItself) {
  StreamUnderTest s(200 * SealJob::kRangeChunks, mac_.get());
  HelperPool& pool = HelperPool::shared(kHelpers);
  for (int round = 0; round < 5; ++round) {
    auto job = post(pool, s.plan);
    const std::uint64_t taken = send_all(s, *job, pool, 0us);  // checks every header taken
    EXPECT_LE(taken, s.chunks);
  }
}

TEST_P(SealAhead, StopLeavesTheStreamsBytesAlone) {
  auto s = std::make_unique<StreamUnderTest>(400 * SealJob::kRangeChunks, mac_.get());
  HelperPool& pool = HelperPool::shared(kHelpers);
  auto job = post(pool, s->plan);
  ASSERT_TRUE(wait_for([&] { return job->sealed_ranges() > 0; }, 30s));
  job->advance(200 * SealJob::kRangeChunks);  // more to claim than the first window
  pool.wake();
  job->stop();
  const std::uint64_t sealed = job->sealed_ranges();
  s.reset();  // the bytes go away: a helper still reading them fails under ASan
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(job->sealed_ranges(), sealed);
  EXPECT_TRUE(job->finished());
}

INSTANTIATE_TEST_SUITE_P(MacOrCrc, SealAhead, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Mac" : "Crc"; });

TEST(SealAheadLanes, HelpersBeyondTheMacsLanesSealNothing) {
  auto mac = mac_with_lanes(0);
  if (mac == nullptr) GTEST_SKIP() << "this build has no authentication";
  StreamUnderTest s(100 * SealJob::kRangeChunks, mac.get());
  HelperPool& pool = HelperPool::shared(kHelpers);
  auto job = post(pool, s.plan);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(job->sealed_ranges(), 0u);
  EXPECT_EQ(send_all(s, *job, pool, 0us), 0u);
}

}  // namespace
}  // namespace mccl::protocol
