// CRC32C against the RFC 3720 (iSCSI) test vectors, incremental use, and
// every length and alignment the SSE4.2 path splits differently.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace mccl::common {
namespace {

// Bitwise reference, independent of both the table and the instruction.
std::uint32_t crc_reference(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

TEST(Crc32c, EmptyInputLeavesTheCrcUnchanged) {
  EXPECT_EQ(crc32c(0, nullptr, 0), 0u);
  EXPECT_EQ(crc32c(0xE3069283u, nullptr, 0), 0xE3069283u);
}

TEST(Crc32c, Rfc3720ZeroBytes) {
  const std::vector<unsigned char> zeros(32, 0x00);
  EXPECT_EQ(crc32c(0, zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(Crc32c, Rfc3720OnesBytes) {
  const std::vector<unsigned char> ones(32, 0xFF);
  EXPECT_EQ(crc32c(0, ones.data(), ones.size()), 0x62A8AB43u);
}

TEST(Crc32c, Rfc3720IncrementingAndDecrementing) {
  unsigned char up[32];
  unsigned char down[32];
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<unsigned char>(i);
    down[i] = static_cast<unsigned char>(31 - i);
  }
  EXPECT_EQ(crc32c(0, up, sizeof up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(0, down, sizeof down), 0x113FDB5Cu);
}

TEST(Crc32c, CheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(crc32c(0, s, std::strlen(s)), 0xE3069283u);
}

TEST(Crc32c, IncrementalEqualsOneShotAtEverySplit) {
  const auto data = random_bytes(100, 3720);
  const std::uint32_t whole = crc32c(0, data.data(), data.size());
  for (std::size_t split = 0; split <= data.size(); ++split) {
    std::uint32_t c = crc32c(0, data.data(), split);
    c = crc32c(c, data.data() + split, data.size() - split);
    EXPECT_EQ(c, whole) << "split at " << split;
  }
}

TEST(Crc32c, ByteByByteEqualsOneShot) {
  const auto data = random_bytes(257, 11);
  std::uint32_t c = 0;
  for (unsigned char b : data) c = crc32c(c, &b, 1);
  EXPECT_EQ(c, crc32c(0, data.data(), data.size()));
}

// Lengths 0..200 at offsets 0..15 from an aligned buffer: covers the 8-byte
// main loop, the byte tail and unaligned loads.
TEST(Crc32c, OddLengthsAndAlignmentsMatchReference) {
  constexpr unsigned kSeed = 42;
  const auto data = random_bytes(256, kSeed);
  alignas(64) unsigned char buf[256 + 16];
  for (std::size_t offset = 0; offset < 16; ++offset) {
    std::memcpy(buf + offset, data.data(), data.size());
    for (std::size_t len = 0; len <= 200; ++len) {
      ASSERT_EQ(crc32c(0, buf + offset, len), crc_reference(data.data(), len))
          << "seed " << kSeed << " offset " << offset << " len " << len;
    }
  }
}

// The three-lane path joins blocks of 1024, 448 and 128 bytes: lengths around
// every multiple of their triples, at odd offsets, chained from a non-zero
// CRC too.
TEST(Crc32c, LaneBoundariesMatchReference) {
  const auto data = random_bytes(8192 + 64, 17);
  for (std::size_t base :
       {std::size_t{384}, std::size_t{768}, std::size_t{1344}, std::size_t{1432}, std::size_t{3072},
        std::size_t{3072 + 384}, std::size_t{6144}, std::size_t{8932 - 1000}}) {
    for (std::size_t len = base - 9; len <= base + 9; ++len) {
      for (std::size_t offset : {0, 1, 5}) {
        const unsigned char* p = data.data() + offset;
        ASSERT_EQ(crc32c(0, p, len), crc_reference(p, len))
            << "len " << len << " offset " << offset;
        const std::size_t head = len / 3;
        EXPECT_EQ(crc32c(crc32c(0, p, head), p + head, len - head), crc_reference(p, len))
            << "len " << len << " split at " << head;
      }
    }
  }
}

TEST(Crc32c, LargeBufferMatchesReference) {
  const auto data = random_bytes(1 << 16 | 5, 9);
  EXPECT_EQ(crc32c(0, data.data(), data.size()), crc_reference(data.data(), data.size()));
}

TEST(Crc32c, DetectsEverySingleBitFlip) {
  auto data = random_bytes(64, 5);
  const std::uint32_t good = crc32c(0, data.data(), data.size());
  for (std::size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    EXPECT_NE(crc32c(0, data.data(), data.size()), good) << "bit " << bit;
    data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
  }
}

}  // namespace
}  // namespace mccl::common
