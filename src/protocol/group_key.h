// The communicator key agreed at creation (docs/security.md, "The key's
// life"): a group Diffie-Hellman exchange, so that whoever only reads the
// bootstrap store (MCCL's TCP store, torch's c10d store, the PMIx or MPI
// exchange) learns nothing about the key that authenticates the datagrams.
//
// The scheme is Burmester-Desmedt over the prime-order group ristretto255
// (libsodium): two allgathers of 32 bytes per rank, whatever the world size,
// and O(N) group additions per rank. Ranks form a ring; rank i draws a
// secret scalar r_i and publishes
//   round 1:  z_i = r_i·G
//   round 2:  X_i = r_i·(z_{i+1} − z_{i−1})
// and computes K = N·r_i·z_{i−1} + (N−1)·X_i + (N−2)·X_{i+1} + … + X_{i+N−2},
// which is the same on every rank: (r_0·r_1 + r_1·r_2 + … + r_{N−1}·r_0)·G.
// Two ranks skip round 2 (K = r_i·z_{1−i}, plain Diffie-Hellman); one rank
// draws K alone. The communicator key is a keyed hash of K and every z, so
// it is bound to this exchange's transcript. A reader of the store sees z
// and X, from which K is as hard to find as a Diffie-Hellman secret.
//
// A party that can also write to the store can substitute shares (a man in
// the middle): the key is authenticated only as far as the store's writers
// are (MCCL's store admits only holders of the job secret). A substituted or
// malformed share makes the ranks' keys differ, which the confirmation
// (key_confirmation) turns into a kMismatch error at creation.
//
// Without libsodium (group_key_available() false) nothing here works;
// setup runs the exchange only when every rank authenticates, which needs
// libsodium on every rank.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "protocol/auth.h"

namespace mccl::protocol {

inline constexpr std::size_t kKeyShareBytes = 32;
using KeyShare = std::array<std::byte, kKeyShareBytes>;
// The exchange's secret scalar; wiped when destroyed.
struct KeyScalar {
  std::array<unsigned char, 32> bytes{};
  ~KeyScalar();
};
inline constexpr std::size_t kKeyConfirmBytes = 16;
using KeyConfirm = std::array<std::byte, kKeyConfirmBytes>;

// Whether the world needs round 2 (more than two ranks).
inline bool group_key_needs_round2(int size) { return size > 2; }

// Round 1: a fresh secret scalar and this rank's share z = r·G.
void group_key_begin(KeyScalar& r, KeyShare& z);

// Round 2: X = r·(z[rank+1] − z[rank−1]) from every rank's round-1 share
// (`z` holds `size` of them). False when a neighbour's share is not a
// valid group element or the result is the identity (a share chosen to
// cancel: only a writer of the store can do that).
bool group_key_round2(const KeyScalar& r, int rank, std::span<const KeyShare> z, KeyShare& x);

// The communicator key from every rank's shares (`x` is ignored, and may
// be empty, for two ranks or fewer; one rank draws a random key). False
// when a share is not a valid group element or a result is the identity.
bool group_key_finish(const KeyScalar& r, int rank, std::span<const KeyShare> z,
                      std::span<const KeyShare> x, AuthKey& key);

// A one-way digest of `key`, for the ranks to check that they all agree
// without revealing it.
KeyConfirm key_confirmation(const AuthKey& key);

}  // namespace mccl::protocol
