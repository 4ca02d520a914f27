#include "protocol/auth.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

#include "common/log.h"
#include "common/settings.h"

#if MCCL_HAVE_AUTH
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sodium.h>
#endif

namespace mccl::protocol {

const char* to_string(MacKind k) {
  switch (k) {
    case MacKind::kNone:
      return "none (built without authentication)";
    case MacKind::kPoly1305:
      return "Poly1305 (an MCCL release before AES-GMAC)";
    case MacKind::kAesGmac:
      return "AES-256-GMAC";
  }
  return "unknown";
}

#if MCCL_HAVE_AUTH

void init_sodium() {
  if (sodium_init() < 0) std::abort();
}

bool auth_available() { return true; }
MacKind mac_kind() { return MacKind::kAesGmac; }

AuthKey random_auth_key() {
  init_sodium();
  AuthKey k;
  randombytes_buf(k.data(), k.size());
  return k;
}

namespace {

constexpr int kIvBytes = 16;

// A failure of OpenSSL on a context that was keyed successfully means a
// broken library; no datagram can be sent or checked without it.
[[noreturn]] void crypto_failed(const char* what) {
  common::logf(common::LogLevel::kError, -1, "OpenSSL %s failed: cannot authenticate datagrams",
               what);
  std::abort();
}

}  // namespace

// The key schedule is computed once; each tag re-initialises only the IV.
struct DatagramMac::Gmac {
  explicit Gmac(const AuthKey& key) : ctx(EVP_CIPHER_CTX_new()) {
    const auto* k = reinterpret_cast<const unsigned char*>(key.data());
    if (ctx == nullptr ||
        EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kIvBytes, nullptr) != 1 ||
        EVP_EncryptInit_ex(ctx, nullptr, nullptr, k, nullptr) != 1) {
      crypto_failed("AES-256-GCM set-up");
    }
  }
  ~Gmac() { EVP_CIPHER_CTX_free(ctx); }

  void tag(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
           std::span<const std::byte> header, std::span<const std::byte> payload,
           unsigned char out[kMacBytes]) {
    unsigned char iv[kIvBytes];
    for (int i = 0; i < 8; ++i) iv[i] = static_cast<unsigned char>(seq64 >> (8 * i));
    for (int i = 0; i < 4; ++i) iv[8 + i] = static_cast<unsigned char>(root >> (8 * i));
    for (int i = 0; i < 4; ++i) iv[12 + i] = static_cast<unsigned char>(chunk >> (8 * i));
    std::lock_guard lock(mu);
    int n = 0;
    unsigned char none[1];  // GCM writes no output for an empty message
    bool ok = EVP_EncryptInit_ex(ctx, nullptr, nullptr, nullptr, iv) == 1;
    for (auto part : {header, payload}) {
      if (ok && !part.empty()) {
        ok =
            EVP_EncryptUpdate(ctx, nullptr, &n, reinterpret_cast<const unsigned char*>(part.data()),
                              static_cast<int>(part.size())) == 1;
      }
    }
    ok = ok && EVP_EncryptFinal_ex(ctx, none, &n) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kMacBytes), out) == 1;
    if (!ok) crypto_failed("AES-256-GMAC");
  }

  std::mutex mu;
  EVP_CIPHER_CTX* ctx;
};

DatagramMac::DatagramMac(const AuthKey& key)
    : sender_(std::make_unique<Gmac>(key)), receiver_(std::make_unique<Gmac>(key)) {}

DatagramMac::~DatagramMac() = default;

void DatagramMac::compute(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                          std::span<const std::byte> header, std::span<const std::byte> payload,
                          std::byte out[kMacBytes]) const {
  sender_->tag(seq64, root, chunk, header, payload, reinterpret_cast<unsigned char*>(out));
}

bool DatagramMac::verify(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                         std::span<const std::byte> header, std::span<const std::byte> payload,
                         const std::byte tag[kMacBytes]) const {
  unsigned char want[kMacBytes];
  receiver_->tag(seq64, root, chunk, header, payload, want);
  return CRYPTO_memcmp(want, tag, kMacBytes) == 0;
}

#else  // built without authentication: nothing constructs a DatagramMac

bool auth_available() { return false; }
MacKind mac_kind() { return MacKind::kNone; }

AuthKey random_auth_key() {
  std::random_device rd;
  AuthKey k;
  for (std::size_t i = 0; i < k.size(); i += 4) {
    const std::uint32_t v = rd();
    std::memcpy(k.data() + i, &v, 4);
  }
  return k;
}

struct DatagramMac::Gmac {};

DatagramMac::DatagramMac(const AuthKey&) { std::abort(); }
DatagramMac::~DatagramMac() = default;

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
        "CommOptions::authenticate), but this build has no libsodium or no libcrypto (Debian: "
        "libsodium-dev and "
        "libssl-dev; rebuild), so it cannot authenticate; ask for off or auto");
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
         "build without authentication and on InfiniBand)";
}

}  // namespace mccl::protocol
