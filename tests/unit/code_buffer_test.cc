// The compressed sums' scratch codes and the encoded streams' bytes
// (codec/code_buffer.h): a returned buffer is lent again rather than
// allocated anew, buffers in use at once are distinct, and the pool keeps
// no more than its cap.
#include "codec/code_buffer.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace mccl::codec {
namespace {

TEST(CodeBuffer, AReturnedBufferIsLentAgain) {
  const std::int64_t* first = nullptr;
  {
    CodeBuffer b(100000);
    ASSERT_EQ(b.size(), 100000u);
    std::iota(b.data(), b.data() + b.size(), 0);
    first = b.data();
  }
  EXPECT_GE(code_buffer_kept_bytes(), 100000 * sizeof(std::int64_t));
  CodeBuffer again(50000);  // smaller: the same memory serves
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), 50000u);
}

TEST(CodeBuffer, BuffersInUseAtOnceAreDistinct) {
  CodeBuffer a(4096), b(4096);
  ASSERT_NE(a.data(), nullptr);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_NE(a.data(), b.data());
  std::fill(a.data(), a.data() + a.size(), 1);
  std::fill(b.data(), b.data() + b.size(), 2);
  EXPECT_EQ(a.data()[4095], 1);
  EXPECT_EQ(b.data()[0], 2);
}

TEST(CodeBuffer, MovingHandsTheLoanOver) {
  CodeBuffer a(10);
  const std::int64_t* p = a.data();
  CodeBuffer b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  EXPECT_EQ(a.data(), nullptr);
  CodeBuffer empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(CodeBuffer(0).data(), nullptr);
}

TEST(CodeBuffer, ThePoolKeepsNoMoreThanItsCap) {
  const std::size_t big = kCodeBufferKeptBytes / sizeof(std::int64_t) / 2 + 1;
  {
    CodeBuffer a(big), b(big);  // together past the cap
  }
  EXPECT_LE(code_buffer_kept_bytes(), kCodeBufferKeptBytes);
  EXPECT_GE(code_buffer_kept_bytes(), big * sizeof(std::int64_t));  // the last returned stays
}

TEST(StreamBytes, AReturnedVectorIsLentAgainEmptyWithItsCapacity) {
  std::vector<std::byte> v = borrow_stream_bytes(1 << 20);
  EXPECT_TRUE(v.empty());
  v.resize(1 << 20, std::byte{7});
  const std::byte* first = v.data();
  const std::size_t kept_before = stream_bytes_kept();
  return_stream_bytes(std::move(v));
  EXPECT_GE(stream_bytes_kept(), kept_before + (1u << 20));
  std::vector<std::byte> again = borrow_stream_bytes(1000);  // smaller: the same memory serves
  EXPECT_TRUE(again.empty());
  EXPECT_GE(again.capacity(), 1u << 20);
  again.resize(1000);
  EXPECT_EQ(again.data(), first);
  std::vector<std::byte> other = borrow_stream_bytes(1000);  // none kept: a new one
  other.resize(1000);
  EXPECT_NE(other.data(), first);
  return_stream_bytes(std::move(again));
  return_stream_bytes(std::move(other));
  return_stream_bytes({});  // nothing to keep
}

}  // namespace
}  // namespace mccl::codec
