#include "protocol/auth.h"

#include <cstdlib>
#include <cstring>
#include <random>

#include "common/log.h"
#include "common/settings.h"

#if MCCL_HAVE_SODIUM
#include <sodium.h>
#endif

namespace mccl::protocol {

#if MCCL_HAVE_SODIUM

void init_sodium() {
  if (sodium_init() < 0) std::abort();
}

namespace {

// The one-time Poly1305 key of (seq64, root, chunk): block `chunk` of
// ChaCha20-IETF under the communicator's key and the 12-byte nonce
// seq64 (LE) || root (LE). Distinct (nonce, block) pairs give independent
// keys.
void one_time_key(const AuthKey& key, std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                  unsigned char otk[crypto_onetimeauth_KEYBYTES]) {
  static_assert(crypto_stream_chacha20_ietf_NONCEBYTES == 12);
  static_assert(crypto_stream_chacha20_ietf_KEYBYTES == std::tuple_size_v<AuthKey>);
  static_assert(crypto_onetimeauth_BYTES == kMacBytes);
  unsigned char nonce[12];
  for (int i = 0; i < 8; ++i) nonce[i] = static_cast<unsigned char>(seq64 >> (8 * i));
  for (int i = 0; i < 4; ++i) nonce[8 + i] = static_cast<unsigned char>(root >> (8 * i));
  const unsigned char zeros[crypto_onetimeauth_KEYBYTES] = {};
  crypto_stream_chacha20_ietf_xor_ic(otk, zeros, sizeof zeros, nonce, chunk,
                                     reinterpret_cast<const unsigned char*>(key.data()));
}

void poly1305(const AuthKey& key, std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
              std::span<const std::byte> header, std::span<const std::byte> payload,
              unsigned char out[kMacBytes]) {
  unsigned char otk[crypto_onetimeauth_KEYBYTES];
  one_time_key(key, seq64, root, chunk, otk);
  crypto_onetimeauth_state s;
  crypto_onetimeauth_init(&s, otk);
  crypto_onetimeauth_update(&s, reinterpret_cast<const unsigned char*>(header.data()),
                            header.size());
  crypto_onetimeauth_update(&s, reinterpret_cast<const unsigned char*>(payload.data()),
                            payload.size());
  crypto_onetimeauth_final(&s, out);
  sodium_memzero(otk, sizeof otk);
}

}  // namespace

bool auth_available() { return true; }

AuthKey random_auth_key() {
  init_sodium();
  AuthKey k;
  randombytes_buf(k.data(), k.size());
  return k;
}

DatagramMac::DatagramMac(const AuthKey& key) : key_(key) { init_sodium(); }

void DatagramMac::compute(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                          std::span<const std::byte> header, std::span<const std::byte> payload,
                          std::byte out[kMacBytes]) const {
  poly1305(key_, seq64, root, chunk, header, payload, reinterpret_cast<unsigned char*>(out));
}

bool DatagramMac::verify(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                         std::span<const std::byte> header, std::span<const std::byte> payload,
                         const std::byte tag[kMacBytes]) const {
  unsigned char want[kMacBytes];
  poly1305(key_, seq64, root, chunk, header, payload, want);
  return crypto_verify_16(want, reinterpret_cast<const unsigned char*>(tag)) == 0;
}

#else  // built without libsodium: auth is off; nothing constructs a DatagramMac

bool auth_available() { return false; }

AuthKey random_auth_key() {
  std::random_device rd;
  AuthKey k;
  for (std::size_t i = 0; i < k.size(); i += 4) {
    const std::uint32_t v = rd();
    std::memcpy(k.data() + i, &v, 4);
  }
  return k;
}

DatagramMac::DatagramMac(const AuthKey& key) : key_(key) { std::abort(); }

void DatagramMac::compute(std::uint64_t, std::uint32_t, std::uint32_t, std::span<const std::byte>,
                          std::span<const std::byte>, std::byte*) const {
  std::abort();
}

bool DatagramMac::verify(std::uint64_t, std::uint32_t, std::uint32_t, std::span<const std::byte>,
                         std::span<const std::byte>, const std::byte*) const {
  std::abort();
}

#endif

common::Status auth_mode(int rank, std::optional<bool> explicit_choice, AuthMode& mode) {
  const std::string v =
      explicit_choice ? (*explicit_choice ? "on" : "off") : common::settings::kProtoAuth.get();
  mode = v == "off" ? AuthMode::kOff : v == "on" ? AuthMode::kOn : AuthMode::kAuto;
  if (mode == AuthMode::kOn && !auth_available()) {
    return common::unavailable_error(
        "rank " + std::to_string(rank) +
        ": authentication of datagrams is asked for (MCCL_PROTO_AUTH=on or "
        "CommOptions::authenticate), but this build has no libsodium (Debian: libsodium-dev; "
        "rebuild), so it cannot authenticate; ask for off or auto");
  }
  return common::Status::ok();
}

bool auth_resolved(AuthMode mode, bool built, bool auto_on) {
  return mode == AuthMode::kOn || (mode == AuthMode::kAuto && built && auto_on);
}

std::string auth_mismatch(int other, bool theirs, bool mine) {
  return "rank " + std::to_string(other) + " authenticates multicast datagrams " +
         (theirs ? "(on)" : "(off)") + " and this rank " + (mine ? "(on)" : "(off)") +
         ": every rank must resolve MCCL_PROTO_AUTH the same (set it alike; 'auto' is off in a "
         "build without libsodium and on InfiniBand)";
}

}  // namespace mccl::protocol
