// The candidates for the per-datagram MAC (MCCL_PROTO_AUTH), each over a
// 40-byte header and a payload kept apart as on the send path, beside the
// CRC32C that BM_EncodeHeader (wire_bench.cc) costs. The choice and its
// numbers are in docs/security.md. Run: build/bench/micro/mccl_micro
// --benchmark_filter=BM_Mac
#include <benchmark/benchmark.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <vector>

#include "common/crc32c.h"
#include "protocol/gmac.h"

namespace {

constexpr std::size_t kHeader = 40;

struct Input {
  explicit Input(std::size_t payload) : header(kHeader, 0x5A), data(payload, 0xA5) {
    if (sodium_init() < 0) std::abort();
    randombytes_buf(key.data(), key.size());
  }
  std::vector<unsigned char> header;
  std::vector<unsigned char> data;
  std::array<unsigned char, 32> key{};
  unsigned char tag[32]{};
};

void finish(benchmark::State& state, const Input& in) {
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(in.data.size()));
  state.SetItemsProcessed(state.iterations());
}

void BM_MacCrc32c(benchmark::State& state) {
  Input in(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    std::uint32_t c = mccl::common::crc32c(0, in.header.data(), kHeader);
    c = mccl::common::crc32c(c, in.data.data(), in.data.size());
    benchmark::DoNotOptimize(c);
  }
  finish(state, in);
}

// Keyed BLAKE2b with a 16-byte tag: no nonce, so nothing to reuse.
void BM_MacBlake2b(benchmark::State& state) {
  Input in(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    crypto_generichash_state s;
    crypto_generichash_init(&s, in.key.data(), in.key.size(), 16);
    crypto_generichash_update(&s, in.header.data(), kHeader);
    crypto_generichash_update(&s, in.data.data(), in.data.size());
    crypto_generichash_final(&s, in.tag, 16);
    benchmark::DoNotOptimize(in.tag);
  }
  finish(state, in);
}

// HMAC-SHA-256, truncated to 16 bytes on the wire.
void BM_MacHmacSha256(benchmark::State& state) {
  Input in(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    crypto_auth_hmacsha256_state s;
    crypto_auth_hmacsha256_init(&s, in.key.data(), in.key.size());
    crypto_auth_hmacsha256_update(&s, in.header.data(), kHeader);
    crypto_auth_hmacsha256_update(&s, in.data.data(), in.data.size());
    crypto_auth_hmacsha256_final(&s, in.tag);
    benchmark::DoNotOptimize(in.tag);
  }
  finish(state, in);
}

// Poly1305 under a one-time key: the first 32 bytes of ChaCha20(key, nonce)
// with a 12-byte nonce (seq, root, chunk), as ChaCha20-Poly1305 does.
void BM_MacPoly1305(benchmark::State& state) {
  Input in(static_cast<std::size_t>(state.range(0)));
  unsigned char nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {};
  std::uint32_t chunk = 0;
  for (auto _ : state) {
    std::memcpy(nonce + 8, &chunk, sizeof chunk);
    ++chunk;
    unsigned char otk[crypto_onetimeauth_KEYBYTES];
    crypto_stream_chacha20_ietf(otk, sizeof otk, nonce, in.key.data());
    crypto_onetimeauth_state s;
    crypto_onetimeauth_init(&s, otk);
    crypto_onetimeauth_update(&s, in.header.data(), kHeader);
    crypto_onetimeauth_update(&s, in.data.data(), in.data.size());
    crypto_onetimeauth_final(&s, in.tag);
    benchmark::DoNotOptimize(in.tag);
  }
  finish(state, in);
}

// AES-256-GCM with an empty message and the datagram as associated data
// (GMAC), libsodium's: needs the datagram contiguous and a unique 12-byte nonce.
void BM_MacSodiumAesGmac(benchmark::State& state) {
  if (crypto_aead_aes256gcm_is_available() == 0) {
    state.SkipWithError("no AES-NI/PCLMUL on this CPU");
    return;
  }
  Input in(static_cast<std::size_t>(state.range(0)));
  std::vector<unsigned char> datagram(in.header);
  datagram.insert(datagram.end(), in.data.begin(), in.data.end());
  crypto_aead_aes256gcm_state ctx;
  crypto_aead_aes256gcm_beforenm(&ctx, in.key.data());
  unsigned char nonce[crypto_aead_aes256gcm_NPUBBYTES] = {};
  unsigned char none[1] = {};  // the empty message and ciphertext
  std::uint32_t chunk = 0;
  for (auto _ : state) {
    std::memcpy(nonce + 8, &chunk, sizeof chunk);
    ++chunk;
    unsigned long long taglen = 0;
    crypto_aead_aes256gcm_encrypt_detached_afternm(none, in.tag, &taglen, none, 0, datagram.data(),
                                                   datagram.size(), nullptr, nonce, &ctx);
    benchmark::DoNotOptimize(in.tag);
  }
  finish(state, in);
}

// The protocol's tag (protocol/gmac.h), with GHASH at one width (the
// run is skipped where the CPU lacks it) or through OpenSSL's EVP throughout
// (kNone): keyed once, a 16-byte IV per datagram, header and payload fed apart.
void mccl_gmac(benchmark::State& state, mccl::protocol::ghash::Width width) {
  namespace ghash = mccl::protocol::ghash;
  if (static_cast<int>(width) > static_cast<int>(ghash::best_width())) {
    state.SkipWithError("this CPU lacks that carry-less multiply width");
    return;
  }
  Input in(static_cast<std::size_t>(state.range(0)));
  mccl::protocol::AuthKey key;
  std::memcpy(key.data(), in.key.data(), key.size());
  mccl::protocol::Gmac gmac(key, width);
  state.SetLabel(width == ghash::Width::kNone ? "OpenSSL" : ghash::to_string(width));
  std::byte iv[mccl::protocol::kGmacIvBytes] = {};
  std::byte tag[mccl::protocol::kMacBytes];
  std::uint32_t chunk = 0;
  for (auto _ : state) {
    std::memcpy(iv + 12, &chunk, sizeof chunk);
    ++chunk;
    gmac.tag(iv, std::as_bytes(std::span(in.header)), std::as_bytes(std::span(in.data)), tag);
    benchmark::DoNotOptimize(tag);
  }
  finish(state, in);
}
void BM_MacOpensslAesGmac(benchmark::State& state) {
  mccl_gmac(state, mccl::protocol::ghash::Width::kNone);
}
void BM_MacMcclGmac128(benchmark::State& state) {
  mccl_gmac(state, mccl::protocol::ghash::Width::kXmm);
}
void BM_MacMcclGmac256(benchmark::State& state) {
  mccl_gmac(state, mccl::protocol::ghash::Width::kYmm);
}
void BM_MacMcclGmac512(benchmark::State& state) {
  mccl_gmac(state, mccl::protocol::ghash::Width::kZmm);
}

// The root's pass: the tag of each datagram of a 16 MiB message, one after
// another, so that the payload comes from beyond the core's caches as it
// does when a broadcast's root sends a buffer it last touched a message ago
// (the cases above hash one payload that stays in L1).
void mccl_gmac_stream(benchmark::State& state, mccl::protocol::ghash::Width width) {
  namespace ghash = mccl::protocol::ghash;
  if (static_cast<int>(width) > static_cast<int>(ghash::best_width())) {
    state.SkipWithError("this CPU lacks that carry-less multiply width");
    return;
  }
  constexpr std::size_t kMessage = std::size_t{16} << 20;
  const auto payload = static_cast<std::size_t>(state.range(0));
  Input in(kMessage);
  mccl::protocol::AuthKey key;
  std::memcpy(key.data(), in.key.data(), key.size());
  mccl::protocol::Gmac gmac(key, width);
  state.SetLabel(ghash::to_string(width));
  std::byte iv[mccl::protocol::kGmacIvBytes] = {};
  std::byte tag[mccl::protocol::kMacBytes];
  std::uint32_t chunk = 0;
  const auto* data = reinterpret_cast<const std::byte*>(in.data.data());
  for (auto _ : state) {
    for (std::size_t off = 0; off < kMessage; off += payload) {
      std::memcpy(iv + 12, &chunk, sizeof chunk);
      ++chunk;
      gmac.tag(iv, std::as_bytes(std::span(in.header)),
               std::span(data + off, std::min(payload, kMessage - off)), tag);
      benchmark::DoNotOptimize(tag);
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(kMessage));
}
void BM_MacMcclGmac512Stream(benchmark::State& state) {
  mccl_gmac_stream(state, mccl::protocol::ghash::Width::kZmm);
}
void BM_MacMcclGmac256Stream(benchmark::State& state) {
  mccl_gmac_stream(state, mccl::protocol::ghash::Width::kYmm);
}

// A plain copy of the payload, the work every delivered byte costs anyway.
void BM_MacMemcpy(benchmark::State& state) {
  Input in(static_cast<std::size_t>(state.range(0)));
  std::vector<unsigned char> dst(in.data.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), in.data.data(), in.data.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  finish(state, in);
}

#define MCCL_MAC_BENCH(fn) BENCHMARK(fn)->Arg(1432)->Arg(8932)->ArgName("payload")
MCCL_MAC_BENCH(BM_MacCrc32c);
MCCL_MAC_BENCH(BM_MacBlake2b);
MCCL_MAC_BENCH(BM_MacHmacSha256);
MCCL_MAC_BENCH(BM_MacPoly1305);
MCCL_MAC_BENCH(BM_MacSodiumAesGmac);
MCCL_MAC_BENCH(BM_MacOpensslAesGmac);
MCCL_MAC_BENCH(BM_MacMcclGmac128);
MCCL_MAC_BENCH(BM_MacMcclGmac256);
MCCL_MAC_BENCH(BM_MacMcclGmac512);
MCCL_MAC_BENCH(BM_MacMemcpy);
MCCL_MAC_BENCH(BM_MacMcclGmac512Stream);
MCCL_MAC_BENCH(BM_MacMcclGmac256Stream);

}  // namespace
