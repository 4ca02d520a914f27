// What the TCP transport puts on the wire; all integers little-endian,
// encoded byte by byte.
//
// Address (24 bytes), each rank's contribution to the out-of-band allgather:
//    0 magic 0x5054434D ("MCTP") u32 | 4 version u16 | 6 zero u16
//    8 IPv4 address u32 (host order) | 12 port u16 | 14 zero u16
//   16 nonce u64 (random, fresh for every transport)
//
// Handshake (40 bytes): the rank that opens a connection sends kHello; the
// other checks every field against the allgather's addresses and answers
// kAccept, or closes (a stray connection, or the loser of two connections
// opened at once from both ends: the one the lower rank opened wins).
//    0 magic 0x4854434D ("MCTH") u32 | 4 version u16 | 6 kind u16
//    8 from rank u32 | 12 to rank u32 | 16 world size u32 | 20 zero u32
//   24 the receiver's nonce u64 | 32 the sender's nonce u64
//
// Then frames, each starting with a u32 word:
//  - a message: the word is its length (at most kMaxMessageBytes, so bit 31
//    is clear), followed by that many bytes;
//  - a control frame: bit 31 set, the ControlKind in the low byte, followed
//    by a u32 argument. kGoodbye (argument 0): the sender sends nothing more
//    on this connection; a connection closes once both ends said it (an
//    idle connection closed to make room, with nothing in flight lost).
//    kLeaving (0): the sender's transport is being destroyed, an orderly
//    exit. kPeerFailed (a rank): the sender lost that rank without an
//    orderly exit; the news travels around the ring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace mccl::transport::tcp::wire {

inline constexpr std::uint32_t kAddressMagic = 0x5054434D;
inline constexpr std::uint32_t kHandshakeMagic = 0x4854434D;
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kAddressBytes = 24;
inline constexpr std::size_t kHandshakeBytes = 40;
inline constexpr std::size_t kFrameHeaderBytes = 4;
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;
inline constexpr std::uint32_t kControlBit = 0x80000000u;
inline constexpr std::size_t kControlFrameBytes = 8;

enum class ControlKind : std::uint8_t { kGoodbye = 1, kLeaving = 2, kPeerFailed = 3, kLast = 3 };

inline constexpr std::uint32_t control_word(ControlKind k) {
  return kControlBit | static_cast<std::uint32_t>(k);
}

struct Address {
  std::uint32_t ipv4 = 0;  // host byte order
  std::uint16_t port = 0;
  std::uint64_t nonce = 0;
};

enum class HandshakeKind : std::uint16_t { kHello = 1, kAccept = 2 };

struct Handshake {
  HandshakeKind kind = HandshakeKind::kHello;
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  std::uint32_t size = 0;
  std::uint64_t to_nonce = 0;
  std::uint64_t from_nonce = 0;
};

void encode(const Address& a, std::span<std::byte, kAddressBytes> out);
// False (and why) when the bytes are not a version-1 TCP address.
bool decode(std::span<const std::byte, kAddressBytes> in, Address& a, std::string& why);

void encode(const Handshake& h, std::span<std::byte, kHandshakeBytes> out);
bool decode(std::span<const std::byte, kHandshakeBytes> in, Handshake& h, std::string& why);

}  // namespace mccl::transport::tcp::wire
