#include "protocol/gmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace mccl::protocol {

namespace {

// A failure of OpenSSL on a context that was keyed successfully means a
// broken library; no datagram can be sent or checked without it.
[[noreturn]] void crypto_failed(const char* what) {
  common::logf(common::LogLevel::kError, -1, "OpenSSL %s failed: cannot authenticate datagrams",
               what);
  std::abort();
}

const unsigned char* u8(const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); }

}  // namespace

struct Gmac::OpenSsl {
  explicit OpenSsl(const AuthKey& key) : gcm(EVP_CIPHER_CTX_new()), ecb(EVP_CIPHER_CTX_new()) {
    const unsigned char* k = u8(key.data());
    if (gcm == nullptr || ecb == nullptr ||
        EVP_EncryptInit_ex(gcm, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(gcm, EVP_CTRL_GCM_SET_IVLEN, kGmacIvBytes, nullptr) != 1 ||
        EVP_EncryptInit_ex(gcm, nullptr, nullptr, k, nullptr) != 1 ||
        EVP_EncryptInit_ex(ecb, EVP_aes_256_ecb(), nullptr, k, nullptr) != 1 ||
        EVP_CIPHER_CTX_set_padding(ecb, 0) != 1) {
      crypto_failed("AES-256 set-up");
    }
  }
  ~OpenSsl() {
    EVP_CIPHER_CTX_free(gcm);
    EVP_CIPHER_CTX_free(ecb);
  }

  // The whole tag: GCM keeps its key schedule and takes a new IV per tag.
  void gcm_tag(const std::byte iv[kGmacIvBytes], std::span<const std::byte> header,
               std::span<const std::byte> payload, std::byte out[kMacBytes]) {
    int n = 0;
    unsigned char none[1];  // GCM writes no output for an empty message
    bool ok = EVP_EncryptInit_ex(gcm, nullptr, nullptr, nullptr, u8(iv)) == 1;
    for (auto part : {header, payload}) {
      if (ok && !part.empty()) {
        ok = EVP_EncryptUpdate(gcm, nullptr, &n, u8(part.data()), static_cast<int>(part.size())) ==
             1;
      }
    }
    ok = ok && EVP_EncryptFinal_ex(gcm, none, &n) == 1 &&
         EVP_CIPHER_CTX_ctrl(gcm, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kMacBytes), out) == 1;
    if (!ok) crypto_failed("AES-256-GMAC");
  }

  // E_K(in): the block the vector path masks its GHASH with (and H itself).
  void encrypt_block(const unsigned char in[16], unsigned char out[16]) {
    int n = 0;
    if (EVP_EncryptUpdate(ecb, out, &n, in, 16) != 1 || n != 16) crypto_failed("AES-256 block");
  }

  EVP_CIPHER_CTX* gcm;
  EVP_CIPHER_CTX* ecb;
};

Gmac::Gmac(const AuthKey& key, ghash::Width width) : ssl_(std::make_unique<OpenSsl>(key)) {
  const ghash::Width best = ghash::best_width();
  width_ = static_cast<std::uint8_t>(width) <= static_cast<std::uint8_t>(best) ? width : best;
  if (width_ == ghash::Width::kNone) return;
  unsigned char zero[16] = {};
  unsigned char h[16];
  ssl_->encrypt_block(zero, h);
  ghash::expand(h, powers_);
  OPENSSL_cleanse(h, sizeof h);
}

Gmac::~Gmac() { OPENSSL_cleanse(&powers_, sizeof powers_); }

void Gmac::tag(const std::byte iv[kGmacIvBytes], std::span<const std::byte> header,
               std::span<const std::byte> payload, std::byte out[kMacBytes]) {
  if (header.size() > kMaxHeaderBytes) std::abort();  // a caller's bug: headers are fixed
  if (width_ != ghash::Width::kNone) {
    unsigned char j0[16];
    unsigned char s[16];
    unsigned char mask[16];
    ghash::datagram(width_, powers_, iv, header, payload, j0, s);
    ssl_->encrypt_block(j0, mask);
    for (std::size_t i = 0; i < kMacBytes; ++i) out[i] = std::byte(s[i] ^ mask[i]);
    return;
  }
  ssl_->gcm_tag(iv, header, payload, out);
}

}  // namespace mccl::protocol
