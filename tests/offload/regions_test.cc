// The daemon's map of shared buffers: a range is used in place only when it
// lies wholly inside one registered block; boundaries checked byte-exact.
#include "offload/daemon/regions.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace mccl::offload::daemon {
namespace {

int memfd_of(std::size_t bytes, char fill) {
  int fd = ::memfd_create("regions-test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(bytes)), 0);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  std::memset(p, fill, bytes);
  ::munmap(p, bytes);
  return fd;
}

TEST(Regions, FindsRangesInsideABlockOnly) {
  Regions r;
  const std::uint64_t a = 0x10000, b = 0x40000, len = 4096;
  ASSERT_TRUE(r.add(memfd_of(len, 'a'), a, len).is_ok());
  ASSERT_TRUE(r.add(memfd_of(len, 'b'), b, len).is_ok());
  ASSERT_NE(r.find(a, len), nullptr);
  EXPECT_EQ(static_cast<char>(*r.find(a, 1)), 'a');
  EXPECT_EQ(static_cast<char>(*r.find(b + len - 1, 1)), 'b');
  EXPECT_EQ(r.find(a + 100, len - 100), r.find(a, 1) + 100);
  EXPECT_EQ(r.find(a, len + 1), nullptr);         // one byte past the end
  EXPECT_EQ(r.find(a - 1, 2), nullptr);           // starts before the block
  EXPECT_EQ(r.find(a + len, 1), nullptr);         // the byte after it
  EXPECT_EQ(r.find(a + len - 1, 2), nullptr);     // straddles the end
  EXPECT_EQ(r.find(a, 0), nullptr);               // empty ranges stage
  EXPECT_EQ(r.find(b - 1, len), nullptr);         // between blocks
  EXPECT_EQ(r.find(UINT64_MAX - 1, 2), nullptr);  // no wrap-around
}

TEST(Regions, RemovedAndReplacedBlocks) {
  Regions r;
  const std::uint64_t a = 0x20000, len = 8192;
  ASSERT_TRUE(r.add(memfd_of(len, 'x'), a, len).is_ok());
  r.remove(a);
  EXPECT_EQ(r.find(a, 1), nullptr);
  r.remove(a);  // twice: harmless
  ASSERT_TRUE(r.add(memfd_of(len, 'y'), a, len).is_ok());
  ASSERT_TRUE(r.add(memfd_of(len, 'z'), a, len).is_ok());  // same address again
  EXPECT_EQ(static_cast<char>(*r.find(a, 1)), 'z');
}

TEST(Regions, RefusesAMemfdSmallerThanAnnounced) {
  Regions r;
  auto st = r.add(memfd_of(4096, 'q'), 0x30000, 8192);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.find(0x30000, 1), nullptr);
}

}  // namespace
}  // namespace mccl::offload::daemon
