// src/protocol/gmac: a datagram's AES-256-GMAC tag, from GHASH at every
// width this CPU has (protocol/ghash.h) and from OpenSSL throughout, against OpenSSL's AES-256-GCM
// called here directly (the associated data header || payload, a 16-byte IV, no message). Every
// payload length up to several 256-byte steps, headers that end on and off a block boundary,
// unaligned payloads, and datagram sizes.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
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

void expect_reference_tags(ghash::Width width) {
  const Inputs in;
  Gmac gmac(in.key, width);
  ASSERT_EQ(gmac.width(), width);
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

class GmacWidth : public testing::TestWithParam<ghash::Width> {};

TEST_P(GmacWidth, GivesOpenSslsTags) {
  const ghash::Width w = GetParam();
  if (static_cast<int>(w) > static_cast<int>(ghash::best_width())) {
    GTEST_SKIP() << "this CPU's carry-less multiply reaches "
                 << ghash::to_string(ghash::best_width()) << ", not " << ghash::to_string(w);
  }
  expect_reference_tags(w);
}

INSTANTIATE_TEST_SUITE_P(Widths, GmacWidth,
                         testing::Values(ghash::Width::kNone, ghash::Width::kXmm,
                                         ghash::Width::kYmm, ghash::Width::kZmm),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case ghash::Width::kNone:
                               return std::string("OpenSsl");
                             case ghash::Width::kXmm:
                               return std::string("Pclmul128");
                             case ghash::Width::kYmm:
                               return std::string("Vpclmul256");
                             case ghash::Width::kZmm:
                               return std::string("Vpclmul512");
                           }
                           return std::string("Unknown");
                         });

TEST(Gmac, EveryWidthNarrowsToThisCpus) {
  const Inputs in;
  const ghash::Width best = ghash::best_width();
  EXPECT_EQ(Gmac(in.key).width(), best);
  EXPECT_EQ(Gmac(in.key, ghash::Width::kZmm).width(), best) << "the widest asked for";
  EXPECT_EQ(Gmac(in.key, ghash::Width::kNone).width(), ghash::Width::kNone);
}

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
