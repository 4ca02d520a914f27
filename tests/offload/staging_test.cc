// The daemon's staging memory is not touched when a collective starts: a
// zero-filled staging buffer cost a page fault and a memset per page before
// the collective began, during which the session noticed nothing, not even
// its client's death (the killed-rank tests in tests/mp measure that end to
// end; this checks the mechanism, in resident memory, not in time).
#include "offload/daemon/staging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace mccl::offload::daemon {
namespace {

// Resident bytes of this process (/proc/self/statm, second field).
long long resident_bytes() {
  long long size = 0, resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * ::sysconf(_SC_PAGESIZE) : -1;
}

TEST(StagingBuffer, AllocatingTouchesNoPages) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  const long long before = resident_bytes();
  ASSERT_GT(before, 0);
  StagingBuffer b;
  b.allocate(kBytes);
  const long long after = resident_bytes();
  // A zero-filled buffer made all 256 MiB resident; allow for the
  // allocator's and a sanitizer's bookkeeping.
  EXPECT_LT(after - before, 64ll << 20) << "resident before " << before << ", after " << after;
  ASSERT_EQ(b.size(), kBytes);
  b.data()[0] = std::byte{1};  // usable end to end
  b.data()[kBytes - 1] = std::byte{2};
  EXPECT_EQ(b.data()[kBytes - 1], std::byte{2});
}

TEST(StagingBuffer, EmptyHasNoMemory) {
  StagingBuffer b;
  b.allocate(0);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.data(), nullptr);
  b.allocate(10);
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.size(), 10u);
}

// A session's pool (StagingPool): a finished collective's buffer serves the
// next one that fits, so its pages are faulted in once, not per collective.
TEST(StagingPool, AGivenBackBufferServesTheNextCollectiveThatFits) {
  StagingPool pool;
  const common::TimePoint t0 = common::now();
  StagingBuffer a = pool.take(1 << 20);
  ASSERT_EQ(a.size(), std::size_t{1} << 20);
  std::byte* const memory = a.data();
  pool.give_back(std::move(a), t0);
  EXPECT_EQ(pool.kept_buffers(), 1u);
  StagingBuffer smaller = pool.take(1000);
  EXPECT_EQ(smaller.data(), memory);
  EXPECT_EQ(smaller.size(), 1000u);
  EXPECT_EQ(smaller.capacity(), std::size_t{1} << 20);
  EXPECT_EQ(pool.kept_buffers(), 0u);
  // Larger than anything kept: fresh memory.
  pool.give_back(std::move(smaller), t0);
  StagingBuffer larger = pool.take((1 << 20) + 1);
  EXPECT_NE(larger.data(), memory);
  EXPECT_EQ(pool.kept_buffers(), 1u);
}

TEST(StagingPool, TakesTheSmallestBufferThatFits) {
  StagingPool pool;
  const common::TimePoint t0 = common::now();
  StagingBuffer big = pool.take(8 << 20), mid = pool.take(2 << 20), small = pool.take(4096);
  std::byte* const mid_memory = mid.data();
  pool.give_back(std::move(big), t0);
  pool.give_back(std::move(small), t0);
  pool.give_back(std::move(mid), t0);
  StagingBuffer b = pool.take(1 << 20);
  EXPECT_EQ(b.data(), mid_memory);
  EXPECT_EQ(pool.kept_buffers(), 2u);
  EXPECT_EQ(pool.kept_bytes(), std::size_t{(8 << 20) + 4096});
}

TEST(StagingPool, KeepsAtMostItsBoundsAndDropsTheSmallestFirst) {
  StagingPool pool;
  const common::TimePoint t0 = common::now();
  for (std::size_t i = 1; i <= StagingPool::kMostBuffers + 2; ++i) {
    pool.give_back(pool.take(i * 4096), t0);
    StagingBuffer fresh;
    fresh.allocate(i * 8192);
    pool.give_back(std::move(fresh), t0);
  }
  EXPECT_EQ(pool.kept_buffers(), StagingPool::kMostBuffers);
  // The largest kept: the last ones given back.
  const std::size_t n = StagingPool::kMostBuffers + 2;
  StagingBuffer largest = pool.take(n * 8192);
  EXPECT_EQ(largest.capacity(), n * 8192);
  // One buffer above the byte bound is freed, not kept, and evicts nothing.
  const std::size_t before = pool.kept_buffers();
  StagingBuffer huge;
  huge.allocate(StagingPool::kMostBytes + 1);  // untouched: no pages
  pool.give_back(std::move(huge), t0);
  EXPECT_EQ(pool.kept_buffers(), before);
  EXPECT_LE(pool.kept_bytes(), StagingPool::kMostBytes);
}

TEST(StagingPool, ReleasesWhatItKeepsOnceIdle) {
  StagingPool pool;
  const common::TimePoint t0 = common::now();
  pool.give_back(pool.take(1 << 20), t0);
  pool.release_if_idle(t0 + StagingPool::kIdleRelease - std::chrono::milliseconds(1));
  EXPECT_EQ(pool.kept_buffers(), 1u);
  pool.release_if_idle(t0 + StagingPool::kIdleRelease);
  EXPECT_EQ(pool.kept_buffers(), 0u);
  EXPECT_EQ(pool.kept_bytes(), 0u);
}

TEST(StagingPool, AnEmptyRequestTakesNothing) {
  StagingPool pool;
  pool.give_back(pool.take(4096), common::now());
  StagingBuffer none = pool.take(0);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(pool.kept_buffers(), 1u);
}

}  // namespace
}  // namespace mccl::offload::daemon
