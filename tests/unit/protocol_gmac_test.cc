// src/protocol/gmac: a datagram's AES-256-GMAC tag, from the vector GHASH
// and from OpenSSL throughout, against OpenSSL's AES-256-GCM called here
// directly (the associated data header || payload, a 16-byte IV, no
// message). Every payload length up to several 256-byte steps, headers that
// end on and off a block boundary, unaligned payloads, and datagram sizes.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "protocol/gmac.h"

namespace mccl::protocol {
namespace {

using Tag = std::array<std::byte, kMacBytes>;

Tag reference(const AuthKey& key, const std::byte* iv, std::span<const std::byte> header,
              std::span<const std::byte> payload) {
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  Tag t{};
  int n = 0;
  unsigned char none[1];
  const auto u = [](const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); };
  EXPECT_EQ(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, nullptr, nullptr), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, 16, nullptr), 1);
  EXPECT_EQ(EVP_EncryptInit_ex(c, nullptr, nullptr, u(key.data()), u(iv)), 1);
  std::vector<std::byte> aad(header.begin(), header.end());
  aad.insert(aad.end(), payload.begin(), payload.end());
  if (!aad.empty()) {
    EXPECT_EQ(EVP_EncryptUpdate(c, nullptr, &n, u(aad.data()), static_cast<int>(aad.size())), 1);
  }
  EXPECT_EQ(EVP_EncryptFinal_ex(c, none, &n), 1);
  EXPECT_EQ(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, t.data()), 1);
  EVP_CIPHER_CTX_free(c);
  return t;
}

struct Inputs {
  Inputs() {
    std::mt19937_64 rng(20261126);
    for (auto& b : key) b = static_cast<std::byte>(rng());
    for (auto& b : iv) b = static_cast<std::byte>(rng());
    bytes.resize(70000);
    for (auto& b : bytes) b = static_cast<std::byte>(rng());
  }
  AuthKey key{};
  std::array<std::byte, kGmacIvBytes> iv{};
  std::vector<std::byte> bytes;
};

// Payload lengths: every one to 1100 (all partial blocks, partial 64-byte
// loads and 256-byte steps), then datagram sizes and their neighbours.
std::vector<std::size_t> payload_lengths() {
  std::vector<std::size_t> v;
  for (std::size_t n = 0; n <= 1100; ++n) v.push_back(n);
  for (std::size_t n : {1416, 1432, 4095, 4096, 4097, 8916, 8932, 8972, 9000, 65507})
    v.push_back(n);
  return v;
}

void expect_reference_tags(bool force_portable) {
  const Inputs in;
  Gmac gmac(in.key, force_portable);
  for (std::size_t h : {0, 1, 8, 15, 16, 17, 40, 56, 64}) {
    const std::span<const std::byte> header(in.bytes.data(), h);
    for (std::size_t n : payload_lengths()) {
      const std::span<const std::byte> payload(in.bytes.data() + 100 + n % 61, n);
      Tag got{};
      gmac.tag(in.iv.data(), header, payload, got.data());
      ASSERT_EQ(got, reference(in.key, in.iv.data(), header, payload))
          << "header " << h << " payload " << n;
    }
  }
}

TEST(Gmac, VectorGhashGivesOpenSslsTags) {
  const Inputs in;
  if (!Gmac(in.key).vector_ghash()) {
    GTEST_SKIP() << "this CPU lacks AVX-512 (F, BW, VL) or VPCLMULQDQ: OpenSSL computes every tag";
  }
  expect_reference_tags(false);
}

TEST(Gmac, PortablePathGivesOpenSslsTags) { expect_reference_tags(true); }

TEST(Gmac, TheTagDependsOnEveryInput) {
  Inputs in;
  Gmac gmac(in.key);
  const std::span<const std::byte> header(in.bytes.data(), 40);
  const std::span<const std::byte> payload(in.bytes.data() + 64, 1432);
  Tag base{};
  gmac.tag(in.iv.data(), header, payload, base.data());
  Tag t{};
  in.iv[15] ^= std::byte{1};
  gmac.tag(in.iv.data(), header, payload, t.data());
  EXPECT_NE(t, base) << "another IV";
  in.iv[15] ^= std::byte{1};
  in.bytes[64 + 1431] ^= std::byte{0x80};
  gmac.tag(in.iv.data(), header, payload, t.data());
  EXPECT_NE(t, base) << "the payload's last bit";
  in.bytes[64 + 1431] ^= std::byte{0x80};
  gmac.tag(in.iv.data(), header.first(39), payload, t.data());
  EXPECT_NE(t, base) << "a header a byte shorter";
  AuthKey other = in.key;
  other[0] ^= std::byte{1};
  Gmac(other).tag(in.iv.data(), header, payload, t.data());
  EXPECT_NE(t, base) << "another key";
  gmac.tag(in.iv.data(), header, payload, t.data());
  EXPECT_EQ(t, base) << "the same inputs again";
}

}  // namespace
}  // namespace mccl::protocol
