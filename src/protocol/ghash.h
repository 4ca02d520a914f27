// GHASH, the polynomial hash of AES-GCM, computed with x86-64's carry-less
// multiply, for the datagram tags of protocol/gmac.h.
//
// OpenSSL 3.0's GHASH of associated data multiplies 16 bytes at a time and
// reduces after each; here each step takes up to kStepBlocks blocks, block
// i of n multiplied by H^(n-i), the products summed unreduced and reduced
// once per step, so the serial chain through the running hash has one link
// per KiB. How many blocks one instruction multiplies depends on the CPU
// (Width); the sums, and so the tags, are the same at every width.
//
// Built on x86-64 only (elsewhere best_width() is kNone and OpenSSL computes
// every tag). Nothing here blocks or allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mccl::protocol::ghash {

// Blocks per step of the hash: one reduction each.
inline constexpr std::size_t kStepBlocks = 64;
// The header bytes a datagram's hash takes apart from its payload.
inline constexpr std::size_t kMaxHeaderBytes = 64;
inline constexpr std::size_t kIvBytes = 16;

// Blocks per carry-less multiply: 1 with PCLMULQDQ (every x86-64 CPU since
// 2010), 2 with VPCLMULQDQ on 256-bit registers (AVX2: AMD Zen 3 on, Intel
// Ice Lake on), 4 on 512-bit ones (AVX-512 F, BW and VL). kNone: no
// carry-less multiply, or not x86-64.
enum class Width : std::uint8_t { kNone = 0, kXmm = 1, kYmm = 2, kZmm = 4 };
Width best_width();
const char* to_string(Width w);

// What a key's hashes need beyond the width: H's powers and the IV's
// length block times H. Secret: the owner wipes it.
struct Powers {
  // H^kStepBlocks..H^1 then three zero blocks (what a step's last, partial
  // wide load reads beyond H^1), byte-reflected.
  alignas(64) std::byte h[(kStepBlocks + 3) * 16] = {};
  // The same powers' two halves XORed, in both halves of each block: the
  // middle factor of a Karatsuba multiply (3 carry-less multiplies a block,
  // not 4).
  alignas(64) std::byte h_folded[(kStepBlocks + 3) * 16] = {};
  // The IV's length block times H, reflected: J0's part common to every IV.
  alignas(16) std::byte iv_term[16] = {};
};

// Fills `out` from H = E_K(0^128). Needs best_width() != kNone.
void expand(const unsigned char h_block[16], Powers& out);

// The two GHASH values of a GMAC tag of `header` || `payload` under a
// 16-byte `iv`: J0 (the counter block whose encryption masks the tag) and
// S (the hash of the associated data and the lengths block). `width` must
// not exceed best_width(); `header` is at most kMaxHeaderBytes.
void datagram(Width width, const Powers& powers, const std::byte iv[kIvBytes],
              std::span<const std::byte> header, std::span<const std::byte> payload,
              unsigned char j0[16], unsigned char s[16]);

}  // namespace mccl::protocol::ghash
