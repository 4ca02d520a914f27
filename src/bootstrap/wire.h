// The TCP store's wire format. Every frame is a 32-byte header followed by
// `length` payload bytes; all fields are little-endian and encoded byte by
// byte.
//
//    0               1               2               3
//   +---------------+---------------+---------------+---------------+
//  0|                       magic 0x5342434D ("MCBS")               |
//  4|            version (1)        |             kind              |
//  8|             rank of the sender (0xFFFFFFFF: the store)        |
// 12|       aux (hello: -, contribute: timeout ms, error: code)     |
// 16|                         round (64 bits)                       |
// 24|                    length of the payload (64 bits)            |
//   +---------------------------------------------------------------+
//
// Conversation: a rank connects and sends kHello (payload: world size and
// the milliseconds it will wait, u32 each, then the job secret, at most
// kMaxSecretBytes: only a process that knows it joins; see
// bootstrap/secret.h and docs/security.md); once every rank has arrived the
// store sends kWelcome to all. Round k of allgather: every rank sends
// kContribute with round k; the store answers each with kResult, the
// concatenation in rank order. kError (payload: the message) ends the
// conversation for good; kBye announces an orderly close.
//
// Between rounds a rank may let its connection go (kDetach, round: the
// next round it will take part in; then it closes), so that an idle store
// holds no connection per rank; it comes back with a kHello whose aux is
// kRejoin and whose round is that round, and the store answers kWelcome.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mccl::bootstrap::wire {

inline constexpr std::uint32_t kMagic = 0x5342434D;
inline constexpr std::uint16_t kVersion = 2;  // 2: the hello carries the job secret
inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kHelloBytes = 8;  // the fixed part; the secret follows
inline constexpr std::size_t kMaxSecretBytes = 256;
inline constexpr std::size_t kMaxHelloBytes = kHelloBytes + kMaxSecretBytes;
inline constexpr std::uint32_t kStoreRank = 0xFFFFFFFF;
// Largest contribution of one rank to one round. The bootstrap carries
// addresses and tags, not data; this bounds what a broken member can make
// the store allocate (only a rank that said hello with the job secret may
// contribute, and the store grows the buffer as the bytes arrive).
inline constexpr std::uint64_t kMaxContribution = std::uint64_t{256} << 20;
// Largest error message accepted.
inline constexpr std::uint64_t kMaxErrorBytes = 64 * 1024;

enum class Kind : std::uint16_t {
  kHello = 1,
  kWelcome = 2,
  kContribute = 3,
  kResult = 4,
  kError = 5,
  kBye = 6,
  kDetach = 7,
};

inline constexpr std::uint32_t kRejoin = 1;  // kHello's aux: a detached rank comes back

struct Header {
  Kind kind = Kind::kHello;
  std::uint32_t rank = 0;
  std::uint32_t aux = 0;
  std::uint64_t round = 0;
  std::uint64_t length = 0;
};

void encode(const Header& h, std::span<std::byte, kHeaderBytes> out);

// Checks magic, version and kind; on failure returns false and says why.
bool decode(std::span<const std::byte, kHeaderBytes> in, Header& h, std::string& why);

struct Hello {
  std::uint32_t size = 0;
  std::uint32_t wait_ms = 0;
  std::string secret;  // at most kMaxSecretBytes
};
std::vector<std::byte> encode(const Hello& h);
// `in` holds kHelloBytes to kMaxHelloBytes bytes.
Hello decode_hello(std::span<const std::byte> in);

// Whether `given` equals `expected`, in a time that depends only on the
// length of `expected` (no early exit that would leak a matching prefix).
bool secrets_equal(std::string_view expected, std::string_view given);

}  // namespace mccl::bootstrap::wire
