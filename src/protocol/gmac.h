// AES-256-GMAC of one datagram (protocol/auth.h): AES-256-GCM with the
// header and then the payload as associated data, no message, a 16-byte IV.
// The tag is exactly what OpenSSL's EVP AES-256-GCM gives for those inputs
// (the tests compare them); only the way there differs by CPU:
//
//  - with a carry-less multiply (every x86-64 CPU since 2010), GHASH runs
//    here (protocol/ghash.h), as many blocks per instruction as the CPU
//    allows, and OpenSSL encrypts only the one block E_K(J0) the tag is
//    masked with. OpenSSL 3.0's own GHASH of associated data multiplies 16
//    bytes at a time and reduces often: 2-3x slower (bench/micro/mac_bench.cc,
//    docs/security.md);
//  - otherwise OpenSSL's EVP computes the whole tag.
//
// Built only with authentication (MCCL_HAVE_AUTH). Not thread-safe: one
// caller at a time (DatagramMac keeps one per direction behind a lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "protocol/auth.h"
#include "protocol/ghash.h"

namespace mccl::protocol {

inline constexpr std::size_t kGmacIvBytes = ghash::kIvBytes;

class Gmac {
 public:
  // `width`: how GHASH runs, at most this CPU's best (a wider one is
  // narrowed to it); ghash::Width::kNone has OpenSSL compute every tag (the
  // tests compare every width). Aborts if OpenSSL cannot set up AES-256 (a
  // broken library: no datagram could be authenticated).
  explicit Gmac(const AuthKey& key, ghash::Width width = ghash::best_width());
  ~Gmac();
  Gmac(const Gmac&) = delete;
  Gmac& operator=(const Gmac&) = delete;

  // The tag of `header` then `payload` under `iv`. The header is at most
  // kMaxHeaderBytes (a datagram header; the payload may be any length).
  void tag(const std::byte iv[kGmacIvBytes], std::span<const std::byte> header,
           std::span<const std::byte> payload, std::byte out[kMacBytes]);

  // How GHASH runs (kNone: OpenSSL computes every tag).
  ghash::Width width() const { return width_; }

  static constexpr std::size_t kMaxHeaderBytes = ghash::kMaxHeaderBytes;

 private:
  struct OpenSsl;  // the EVP contexts: AES-256-GCM and AES-256-ECB
  std::unique_ptr<OpenSsl> ssl_;
  ghash::Width width_ = ghash::Width::kNone;
  ghash::Powers powers_;
};

}  // namespace mccl::protocol
