// Authentication of multicast datagrams (MCCL_PROTO_AUTH, docs/security.md).
//
// Each communicator has a 32-byte key, agreed by its ranks at creation
// (group_key.h). Every datagram carries a 16-byte AES-256-GMAC tag over its
// header and payload: AES-256-GCM under that key with the datagram as
// associated data and no message, and the 16-byte IV collective number
// (64-bit) || root || chunk. Each (collective, root, chunk) is sent once,
// so no IV ever tags two different datagrams. The 64-bit collective number
// is the 32-bit wire seq extended by the context (DataAuth::extend), so seq
// wrapping after 2^32 collectives reuses no IV either. GMAC rather than the
// Poly1305 of earlier releases: with AES-NI and carry-less multiply it
// costs a third as much per byte (docs/security.md, "Cost and default").
//
// Authentication needs libsodium (the key agreement) and OpenSSL's libcrypto
// (the MAC), both optional (the offload daemon's cross build has neither):
// built without them, MCCL_PROTO_AUTH=auto means off and =on fails
// creation. "auto" is also off over InfiniBand UD (auth_resolved).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace mccl::protocol {

inline constexpr std::size_t kMacBytes = 16;
using AuthKey = std::array<std::byte, 32>;

// True when this build can authenticate datagrams (libsodium and libcrypto).
bool auth_available();

// Which MAC a rank's build puts on datagrams; ranks compare it in their
// hellos, so a job mixing releases fails at creation, not on every datagram.
// kPoly1305 is what releases before AES-GMAC sent: this build never does.
enum class MacKind : std::uint8_t { kNone = 0, kPoly1305 = 1, kAesGmac = 2 };
MacKind mac_kind();
const char* to_string(MacKind k);

#if MCCL_HAVE_AUTH
// Before any other libsodium call (the key agreement of
// group_key.h): picks the fastest implementations for this CPU. Idempotent
// and thread-safe; aborts only without a random source.
void init_sodium();
#endif

// A fresh random key (libsodium's CSPRNG; the OS's random device in a build
// without authentication, where it is never used to authenticate).
AuthKey random_auth_key();

// What this rank asks for: `choice` (CommOptions::authenticate, else
// MCCL_PROTO_AUTH as setup read it); unset is auto. "on" fails here in a
// build without authentication.
enum class AuthMode : std::uint32_t { kOff = 0, kOn = 1, kAuto = 2 };
common::Status auth_mode(int rank, std::optional<bool> choice, AuthMode& mode);
// Whether a rank that asks for `mode`, built with authentication or not (`built`),
// authenticates on a transport whose `auto` is on (`auto_on`: UDP and the
// sim fabric, where any local user reaches the group; not InfiniBand UD,
// where the MAC would cost more than the link's time, docs/security.md).
// Every rank evaluates it for every rank, so a disagreement names the rank.
bool auth_resolved(AuthMode mode, bool built, bool auto_on);

// The error text when rank `other` resolved MCCL_PROTO_AUTH to `theirs`
// and this rank to `mine`; every setup path uses it.
std::string auth_mismatch(int other, bool theirs, bool mine);

// Computes and checks the tags of one communicator's datagrams (gmac.h).
// Thread-safe: a sender and a receiver on two threads each take their own
// AES context (each behind a lock that is uncontended in the common case),
// and so does each of `seal_lanes` helper threads, which seal and check
// datagrams beside the engine (helper_pool.h): lane 0 is the engine's,
// 1..seal_lanes the helpers'.
class DatagramMac {
 public:
  explicit DatagramMac(const AuthKey& key, unsigned seal_lanes = 0);
  ~DatagramMac();
  DatagramMac(const DatagramMac&) = delete;
  DatagramMac& operator=(const DatagramMac&) = delete;

  // The tag of a datagram of collective `seq64`, stream `root`, chunk
  // `chunk`: GMAC over `header` (everything before the tag) then `payload`,
  // with the AES context of `lane` (at most seal_lanes()).
  void compute(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
               std::span<const std::byte> header, std::span<const std::byte> payload,
               std::byte out[kMacBytes], unsigned lane = 0) const;
  // Constant-time comparison against the received `tag`, with the
  // receiving AES context of `lane`.
  bool verify(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
              std::span<const std::byte> header, std::span<const std::byte> payload,
              const std::byte tag[kMacBytes], unsigned lane = 0) const;

  unsigned seal_lanes() const { return static_cast<unsigned>(senders_.size() - 1); }

 private:
  struct Side;                                    // one keyed Gmac and its lock
  std::vector<std::unique_ptr<Side>> senders_;    // by lane
  std::vector<std::unique_ptr<Side>> receivers_;  // by lane
};

}  // namespace mccl::protocol
