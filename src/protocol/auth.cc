#include "protocol/auth.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

#include "common/enum_names.h"
#include "common/little_endian.h"
#include "common/log.h"

#if MCCL_HAVE_AUTH
#include <openssl/crypto.h>
#include <sodium.h>

#include "protocol/gmac.h"
#endif

namespace mccl::protocol {

namespace {
constexpr common::EnumName<MacKind> kMacNames[] = {
    {MacKind::kNone, "none (built without authentication)"},
    {MacKind::kPoly1305, "Poly1305 (an MCCL release before AES-GMAC)"},
    {MacKind::kAesGmac, "AES-256-GMAC"}};
}  // namespace

const char* to_string(MacKind k) { return common::name_of(k, kMacNames, "unknown"); }

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

struct DatagramMac::Side {
  explicit Side(const AuthKey& key) : gmac(key) {}

  void tag(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
           std::span<const std::byte> header, std::span<const std::byte> payload,
           std::byte out[kMacBytes]) {
    std::byte iv[kGmacIvBytes];
    common::put_le(iv, seq64);
    common::put_le(iv + 8, root);
    common::put_le(iv + 12, chunk);
    std::lock_guard lock(mu);
    gmac.tag(iv, header, payload, out);
  }

  std::mutex mu;
  Gmac gmac;
};

DatagramMac::DatagramMac(const AuthKey& key, unsigned seal_lanes) {
  for (unsigned i = 0; i <= seal_lanes; ++i) {
    senders_.push_back(std::make_unique<Side>(key));
    receivers_.push_back(std::make_unique<Side>(key));
  }
}

DatagramMac::~DatagramMac() = default;

void DatagramMac::compute(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                          std::span<const std::byte> header, std::span<const std::byte> payload,
                          std::byte out[kMacBytes], unsigned lane) const {
  if (lane >= senders_.size()) std::abort();  // a caller's bug: no such lane
  senders_[lane]->tag(seq64, root, chunk, header, payload, out);
}

bool DatagramMac::verify(std::uint64_t seq64, std::uint32_t root, std::uint32_t chunk,
                         std::span<const std::byte> header, std::span<const std::byte> payload,
                         const std::byte tag[kMacBytes], unsigned lane) const {
  if (lane >= receivers_.size()) std::abort();  // a caller's bug: no such lane
  std::byte want[kMacBytes];
  receivers_[lane]->tag(seq64, root, chunk, header, payload, want);
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

struct DatagramMac::Side {};

DatagramMac::DatagramMac(const AuthKey&, unsigned) { std::abort(); }
DatagramMac::~DatagramMac() = default;

void DatagramMac::compute(std::uint64_t, std::uint32_t, std::uint32_t, std::span<const std::byte>,
                          std::span<const std::byte>, std::byte*, unsigned) const {
  std::abort();
}

bool DatagramMac::verify(std::uint64_t, std::uint32_t, std::uint32_t, std::span<const std::byte>,
                         std::span<const std::byte>, const std::byte*, unsigned) const {
  std::abort();
}

#endif

common::Status auth_mode(int rank, std::optional<bool> choice, AuthMode& mode) {
  mode = !choice ? AuthMode::kAuto : *choice ? AuthMode::kOn : AuthMode::kOff;
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
