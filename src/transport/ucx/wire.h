// What the UCX transport exchanges and puts in its active-message headers;
// all integers little-endian, encoded byte by byte.
//
// Address header (32 bytes), each rank's first contribution to the
// out-of-band allgather:
//    0 magic 0x3158434D ("MCX1") u32 | 4 version u16 | 6 flags u16
//    8 rank u32 | 12 world size u32 | 16 worker address length u32
//   20 zero u32 | 24 nonce u64 (random, fresh for every transport)
// The second contribution is the ucp worker address, zero-padded to the
// longest length of the first round.
//
// Active-message header (24 bytes), AM id kAmId:
//    0 session u64 (hash of every rank's nonce, in rank order)
//    8 sender rank u32 | 12 kind u16 | 14 zero u16
//   16 sequence number u64 (data: per sender and receiver, from 0;
//      hello and acknowledgement: 0)
// The AM payload is the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace mccl::transport::ucx::wire {

inline constexpr std::uint32_t kAddressMagic = 0x3158434D;
inline constexpr std::uint16_t kVersion = 1;
inline constexpr std::size_t kAddressHeaderBytes = 32;
inline constexpr std::size_t kAmHeaderBytes = 24;
inline constexpr std::uint32_t kMaxWorkerAddressBytes = 64 * 1024;
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;
inline constexpr unsigned kAmId = 0x4d43;  // "MC"

// Address header flags: every rank must agree on them.
// (Bit 0 was the one-sided reads of earlier releases, removed unused.)
inline constexpr std::uint16_t kFlagPeerFailures = 2;

struct AddressHeader {
  std::uint16_t flags = 0;
  std::uint32_t rank = 0;
  std::uint32_t size = 0;
  std::uint32_t address_length = 0;
  std::uint64_t nonce = 0;
};

enum class Kind : std::uint16_t { kData = 1, kHello = 2, kHelloAck = 3 };

struct AmHeader {
  std::uint64_t session = 0;
  std::uint32_t from = 0;
  Kind kind = Kind::kData;
  std::uint64_t seq = 0;
};

void encode(const AddressHeader& h, std::span<std::byte, kAddressHeaderBytes> out);
// False (and why) when the bytes are not a version-1 UCX address header.
bool decode(std::span<const std::byte, kAddressHeaderBytes> in, AddressHeader& h, std::string& why);

void encode(const AmHeader& h, std::span<std::byte, kAmHeaderBytes> out);
// False for a header of another length or an unknown kind.
bool decode(std::span<const std::byte> in, AmHeader& h);

// The session tag: FNV-1a over the nonces, then a final mix.
std::uint64_t session_of(std::span<const std::uint64_t> nonces);

}  // namespace mccl::transport::ucx::wire
