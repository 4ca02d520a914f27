// AES-256-GMAC of one datagram (protocol/auth.h): AES-256-GCM with the
// header and then the payload as associated data, no message, a 16-byte IV.
// The tag is exactly what OpenSSL's EVP AES-256-GCM gives for those inputs
// (the tests compare them); only the way there differs by CPU:
//
//  - with AVX-512 and VPCLMULQDQ, GHASH runs here, kStepBlocks blocks per
//    step with the powers H^kStepBlocks..H^1 and one reduction per step,
//    and OpenSSL encrypts only the one block E_K(J0) the tag is masked
//    with. OpenSSL 3.0's own GHASH of associated data multiplies 16 bytes
//    at a time and reduces often: 1.3-2x slower (bench/micro/mac_bench.cc,
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

namespace mccl::protocol {

inline constexpr std::size_t kGmacIvBytes = 16;

class Gmac {
 public:
  // `force_portable`: OpenSSL computes every tag even where this CPU could
  // run the vector GHASH (the tests compare both). Aborts if OpenSSL cannot
  // set up AES-256 (a broken library: no datagram could be authenticated).
  explicit Gmac(const AuthKey& key, bool force_portable = false);
  ~Gmac();
  Gmac(const Gmac&) = delete;
  Gmac& operator=(const Gmac&) = delete;

  // The tag of `header` then `payload` under `iv`. The header is at most
  // kMaxHeaderBytes (a datagram header; the payload may be any length).
  void tag(const std::byte iv[kGmacIvBytes], std::span<const std::byte> header,
           std::span<const std::byte> payload, std::byte out[kMacBytes]);

  // Whether tags come from the vector GHASH (false: OpenSSL throughout).
  bool vector_ghash() const { return vector_; }

  static constexpr std::size_t kMaxHeaderBytes = 64;
  // Blocks per step of the vector GHASH: one reduction each, so one link
  // of the serial chain per step.
  static constexpr std::size_t kStepBlocks = 64;

 private:
  struct OpenSsl;  // the EVP contexts: AES-256-GCM and AES-256-ECB
  std::unique_ptr<OpenSsl> ssl_;
  bool vector_ = false;
  // H^kStepBlocks..H^1 then three zero blocks (what a step's last, partial
  // 4-block load reads beyond H^1), byte-reflected, for the vector GHASH.
  alignas(64) std::byte powers_[(kStepBlocks + 3) * 16] = {};
  // The IV's length block times H, reflected: J0's part common to every IV.
  alignas(16) std::byte iv_term_[16] = {};
};

}  // namespace mccl::protocol
