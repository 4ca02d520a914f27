#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mccl::common {

namespace {

constexpr std::uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

std::uint32_t crc_table(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// One dependent chain of crc32 instructions: each waits for the one before
// (3 cycles), so one chain moves about 8 bytes per 3 cycles.
__attribute__((target("sse4.2"))) std::uint32_t crc_sse42(std::uint32_t crc, const unsigned char* p,
                                                          std::size_t n) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

// The register after `n` more zero bytes is linear in the register, so it is
// four table lookups, one per byte of the register. That lets three chains
// run side by side over three adjacent blocks and be joined afterwards:
// crc(A B) = shift(crc(A), |B|) ^ crc_from_0(B).
class ZeroShift {
 public:
  explicit ZeroShift(std::size_t n) : block_(n) {
    std::uint32_t basis[32];
    for (int bit = 0; bit < 32; ++bit) {
      std::uint32_t c = 1u << bit;
      for (std::size_t i = 0; i < n; ++i) c = kTable[c & 0xFF] ^ (c >> 8);
      basis[bit] = c;
    }
    for (int byte = 0; byte < 4; ++byte) {
      for (std::uint32_t v = 0; v < 256; ++v) {
        std::uint32_t c = 0;
        for (int bit = 0; bit < 8; ++bit) {
          if ((v >> bit) & 1u) c ^= basis[8 * byte + bit];
        }
        table_[byte][v] = c;
      }
    }
  }
  std::size_t block() const { return block_; }
  std::uint32_t operator()(std::uint32_t c) const {
    return table_[0][c & 0xFF] ^ table_[1][(c >> 8) & 0xFF] ^ table_[2][(c >> 16) & 0xFF] ^
           table_[3][c >> 24];
  }

 private:
  std::size_t block_;
  std::uint32_t table_[4][256];
};

// Three chains over three blocks of `shift.block()` bytes each, while at
// least that much is left.
__attribute__((target("sse4.2"))) std::uint32_t crc_three_lanes(std::uint32_t crc,
                                                                const unsigned char*& p,
                                                                std::size_t& n,
                                                                const ZeroShift& shift) {
  const std::size_t b = shift.block();
  while (n >= 3 * b) {
    std::uint64_t c0 = crc, c1 = 0, c2 = 0;
    for (std::size_t i = 0; i < b; i += 8) {
      std::uint64_t v0, v1, v2;
      std::memcpy(&v0, p + i, 8);
      std::memcpy(&v1, p + b + i, 8);
      std::memcpy(&v2, p + 2 * b + i, 8);
      c0 = _mm_crc32_u64(c0, v0);
      c1 = _mm_crc32_u64(c1, v1);
      c2 = _mm_crc32_u64(c2, v2);
    }
    crc = shift(shift(static_cast<std::uint32_t>(c0)) ^ static_cast<std::uint32_t>(c1)) ^
          static_cast<std::uint32_t>(c2);
    p += 3 * b;
    n -= 3 * b;
  }
  return crc;
}

// Long blocks where there is room (fewer joins), shorter ones for the
// rest; the remainder in one chain. Blocks are multiples of 8; 448 takes
// all but 88 bytes of an MTU-1500 datagram's 1432-byte payload in one round.
std::uint32_t crc_sse42_lanes(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  static const ZeroShift long_blocks(1024);
  static const ZeroShift mid_blocks(448);
  static const ZeroShift short_blocks(128);
  crc = crc_three_lanes(crc, p, n, long_blocks);
  crc = crc_three_lanes(crc, p, n, mid_blocks);
  crc = crc_three_lanes(crc, p, n, short_blocks);
  return crc_sse42(crc, p, n);
}

bool have_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (have_sse42()) return ~crc_sse42_lanes(crc, p, len);
#endif
  return ~crc_table(crc, p, len);
}

}  // namespace mccl::common
