// Authentication of multicast datagrams (MCCL_PROTO_AUTH, docs/security.md).
//
// Each communicator has a random 32-byte key, drawn by rank 0 and spread by
// the bootstrap exchange at creation. Every datagram carries a 16-byte
// Poly1305 tag over its header and payload under a one-time key: the
// ChaCha20 block number `chunk` of (key, nonce = 64-bit collective number
// || root). Each (collective, root, chunk) therefore has its own one-time
// key, and the only datagrams that share one are a root's re-sends of the
// same chunk, whose bytes are identical. The 64-bit collective number is
// the 32-bit wire seq extended by the context (DataAuth::extend), so seq
// wrapping after 2^32 collectives reuses no key either.
//
// libsodium is optional (the offload daemon's cross build has none): built
// without it, MCCL_PROTO_AUTH=auto means off and =on fails creation. "auto"
// is also off over InfiniBand UD (auth_resolved).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/status.h"

namespace mccl::protocol {

inline constexpr std::size_t kMacBytes = 16;
using AuthKey = std::array<std::byte, 32>;

// True when this build has libsodium, i.e. can authenticate datagrams.
bool auth_available();

#if MCCL_HAVE_SODIUM
// Before any other libsodium call (the MAC, the key agreement of
// group_key.h): picks the fastest implementations for this CPU. Idempotent
// and thread-safe; aborts only without a random source.
void init_sodium();
#endif

// A fresh random key (libsodium's CSPRNG; the OS's random device without
// libsodium, where it is never used to authenticate).
AuthKey random_auth_key();

// What this rank asks for: `explicit_choice` (CommOptions), else
// MCCL_PROTO_AUTH. "on" fails here without libsodium.
enum class AuthMode : std::uint32_t { kOff = 0, kOn = 1, kAuto = 2 };
common::Status auth_mode(int rank, std::optional<bool> explicit_choice, AuthMode& mode);
// Whether a rank that asks for `mode`, with libsodium or not (`built`),
// authenticates on a transport whose `auto` is on (`auto_on`: UDP and the
// sim fabric, where any local user reaches the group; not InfiniBand UD,
// where the MAC would cost more than the link's time, docs/security.md).
// Every rank evaluates it for every rank, so a disagreement names the rank.
bool auth_resolved(AuthMode mode, bool built, bool auto_on);

// The error text when rank `other` resolved MCCL_PROTO_AUTH to `theirs`
// and this rank to `mine`; every setup path uses it.
std::string auth_mismatch(int other, bool theirs, bool mine);

class DatagramMac {
 public:
  explicit DatagramMac(const AuthKey& key);

  // The tag of a datagram of collective `seq64`, stream `root`, chunk
  // `chunk`: Poly1305 over `header` (everything before the tag) then
  // `payload`.
  void compute(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
               std::span<const std::byte> header, std::span<const std::byte> payload,
               std::byte out[kMacBytes]) const;
  // Constant-time comparison against the received `tag`.
  bool verify(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
              std::span<const std::byte> header, std::span<const std::byte> payload,
              const std::byte tag[kMacBytes]) const;

 private:
  AuthKey key_;
};

}  // namespace mccl::protocol
