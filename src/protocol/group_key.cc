#include "protocol/group_key.h"

#include <cstring>

#if MCCL_HAVE_AUTH
#include <sodium.h>
#endif

namespace mccl::protocol {

#if MCCL_HAVE_AUTH

namespace {

static_assert(crypto_core_ristretto255_BYTES == kKeyShareBytes);
static_assert(crypto_core_ristretto255_SCALARBYTES == 32);

const unsigned char* u8(const KeyShare& s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
unsigned char* u8(KeyShare& s) { return reinterpret_cast<unsigned char*>(s.data()); }

// The share of the rank `d` places after `rank` on the ring.
const KeyShare& at(std::span<const KeyShare> v, int rank, int d) {
  const auto n = static_cast<int>(v.size());
  return v[static_cast<std::size_t>(((rank + d) % n + n) % n)];
}

// The communicator key: a hash of the group element K and the transcript.
void derive(const KeyShare& k, std::span<const KeyShare> z, AuthKey& key) {
  static constexpr char kLabel[] = "mccl group key v1";
  crypto_generichash_state h;
  crypto_generichash_init(&h, nullptr, 0, key.size());
  crypto_generichash_update(&h, reinterpret_cast<const unsigned char*>(kLabel), sizeof kLabel);
  crypto_generichash_update(&h, u8(k), k.size());
  for (const KeyShare& s : z) crypto_generichash_update(&h, u8(s), s.size());
  crypto_generichash_final(&h, reinterpret_cast<unsigned char*>(key.data()), key.size());
}

}  // namespace

KeyScalar::~KeyScalar() { sodium_memzero(bytes.data(), bytes.size()); }

void group_key_begin(KeyScalar& r, KeyShare& z) {
  init_sodium();
  // A zero scalar would make z the identity, which scalarmult refuses.
  do {
    crypto_core_ristretto255_scalar_random(r.bytes.data());
  } while (crypto_scalarmult_ristretto255_base(u8(z), r.bytes.data()) != 0);
}

bool group_key_round2(const KeyScalar& r, int rank, std::span<const KeyShare> z, KeyShare& x) {
  init_sodium();
  if (z.size() < 3 || rank < 0 || static_cast<std::size_t>(rank) >= z.size()) return false;
  KeyShare diff;
  if (crypto_core_ristretto255_sub(u8(diff), u8(at(z, rank, 1)), u8(at(z, rank, -1))) != 0) {
    return false;
  }
  return crypto_scalarmult_ristretto255(u8(x), r.bytes.data(), u8(diff)) == 0;
}

bool group_key_finish(const KeyScalar& r, int rank, std::span<const KeyShare> z,
                      std::span<const KeyShare> x, AuthKey& key) {
  init_sodium();
  const std::size_t n = z.size();
  if (rank < 0 || static_cast<std::size_t>(rank) >= n) return false;
  if (n == 1) {
    key = random_auth_key();
    return true;
  }
  KeyShare k;
  if (n == 2) {
    if (crypto_scalarmult_ristretto255(u8(k), r.bytes.data(), u8(at(z, rank, 1))) != 0) {
      return false;
    }
    derive(k, z, key);
    return true;
  }
  if (x.size() != n) return false;
  // N·r_i·z_{i−1} ...
  unsigned char n_scalar[32] = {};
  for (int b = 0; b < 8; ++b) n_scalar[b] = static_cast<unsigned char>(std::uint64_t{n} >> (8 * b));
  unsigned char nr[32];
  crypto_core_ristretto255_scalar_mul(nr, r.bytes.data(), n_scalar);
  const bool ok_first = crypto_scalarmult_ristretto255(u8(k), nr, u8(at(z, rank, -1))) == 0;
  sodium_memzero(nr, sizeof nr);
  if (!ok_first) return false;
  // ... + Σ_{j=0}^{N−2} (N−1−j)·X_{i+j}, as running sums: X_{i+j} joins
  // `run` at step j and is added to k at steps j..N−2, N−1−j times.
  KeyShare run = at(x, rank, 0);
  if (crypto_core_ristretto255_is_valid_point(u8(run)) != 1) return false;
  for (std::size_t j = 0;; ++j) {
    if (crypto_core_ristretto255_add(u8(k), u8(k), u8(run)) != 0) return false;
    if (j + 2 >= n) break;
    if (crypto_core_ristretto255_add(u8(run), u8(run), u8(at(x, rank, static_cast<int>(j) + 1))) !=
        0) {
      return false;
    }
  }
  if (crypto_core_ristretto255_is_valid_point(u8(k)) != 1) return false;
  derive(k, z, key);
  sodium_memzero(k.data(), k.size());
  return true;
}

KeyConfirm key_confirmation(const AuthKey& key) {
  init_sodium();
  static constexpr char kLabel[] = "mccl key confirmation v1";
  KeyConfirm out;
  crypto_generichash(reinterpret_cast<unsigned char*>(out.data()), out.size(),
                     reinterpret_cast<const unsigned char*>(kLabel), sizeof kLabel,
                     reinterpret_cast<const unsigned char*>(key.data()), key.size());
  return out;
}

#else  // without libsodium: never used (setup runs it only when authenticating)

KeyScalar::~KeyScalar() { std::memset(bytes.data(), 0, bytes.size()); }
void group_key_begin(KeyScalar&, KeyShare& z) { z.fill(std::byte{0}); }
bool group_key_round2(const KeyScalar&, int, std::span<const KeyShare>, KeyShare&) { return false; }
bool group_key_finish(const KeyScalar&, int, std::span<const KeyShare>, std::span<const KeyShare>,
                      AuthKey&) {
  return false;
}
KeyConfirm key_confirmation(const AuthKey&) { return {}; }

#endif

}  // namespace mccl::protocol
