// The daemon's staging memory is not touched when a collective starts: a
// zero-filled staging buffer cost a page fault and a memset per page before
// the collective began, during which the session noticed nothing, not even
// its client's death (the killed-rank tests in tests/mp measure that end to
// end; this checks the mechanism, in resident memory, not in time).
#include "offload/daemon/staging.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace mccl::offload::daemon
