// The codec: lossy compression of floating-point data for the collectives,
// only ever where the user asked for it. It knows nothing of transports or
// collectives: coll/ asks it to encode a root's shard once and to decode it
// on every rank, the root included, so that every rank holds the same bits.
//
// Modes (docs/compression.md):
// - kBound: an error-bounded quantiser. Every decoded element lies within
//   `bound` of the original (|decoded - original| <= bound, checked on the
//   reconstruction as the decoder will compute it, so float rounding cannot
//   break it). Blocks holding NaN or +-Inf, or values the bound cannot
//   represent, travel raw and decode bit-exact.
// - kBf16: float32 rounded to bfloat16 (nearest even). Relative error
//   <= 2^-8; no absolute bound. Other types travel raw.
// - kZfp: ZFP fixed rate (bits per value) through libzfp, float32 and
//   float64 only; no error bound. Unavailable in a build without libzfp.
// Integer data is never compressed (encode refuses it).
//
// An encoded stream is self-describing (a header names mode, type, count
// and block size) and is made of blocks that each decode on their own.
// Where the first blocks do not shrink (kBound), the whole stream is sent
// raw instead (EncodeInfo::raw says so). Decoding validates every field
// against what the caller expects and never writes past `count` elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "mccl/types.h"

namespace mccl::codec {

enum class Mode : std::uint8_t { kOff = 0, kBf16 = 1, kBound = 2, kZfp = 3 };

struct Settings {
  Mode mode = Mode::kOff;
  double bound = 0.0;    // kBound: absolute error bound, > 0 and finite
  double zfp_rate = 16;  // kZfp: bits per value, in [1, 64]
  // When, not how: on links faster than this (Mbit/s) the collective runs
  // exact; 0 as coll/compress_choice.h measures, -1 at any link rate.
  std::int64_t max_link_mbit = 0;
};

// "off", "bf16", "bound", "zfp".
const char* to_string(Mode mode);
// Parses the names above; false for anything else.
bool parse_mode(const std::string& text, Mode& out);

// Whether `type` can be compressed at all (float32, float64, bfloat16,
// float16); integers never are.
bool compressible(DataType type);
// Whether a stream of `type` may use `mode`: kOff always; kBound any
// compressible type; kBf16 float32 only; kZfp float32 and float64 only
// (libzfp's element types). The encoder never writes any other pairing and
// the decoder refuses one, since it would size its output by the wrong type.
bool mode_serves(Mode mode, DataType type);
// Whether this build has libzfp.
bool zfp_available();
// Whether the settings are usable: kOff and kBf16 always; kBound with a
// positive bound of at most 1e300; kZfp with a rate in [1, 64] in a build
// with libzfp. The message names `what` (e.g. the setting or the argument).
common::Status validate(const Settings& s, const std::string& what);

struct EncodeInfo {
  std::size_t raw_bytes = 0;      // count * size_of(type)
  std::size_t encoded_bytes = 0;  // what was written
  bool raw = false;               // sent uncompressed (did not compress, or not compressible)
  double bound = 0.0;             // the absolute bound in force (kBound), 0 otherwise
};

// Encodes `count` elements of `type` at `in` into `out` (resized to the
// encoded size). kOff, or an integer type, writes a raw stream.
common::Status encode(const Settings& s, DataType type, const std::byte* in, std::size_t count,
                      std::vector<std::byte>& out, EncodeInfo* info = nullptr);

// Decodes a stream that encode() wrote into exactly `count` elements of
// `type` at `out`. kInvalidArgument (naming the field) when the stream is
// corrupt or does not hold `count` elements of `type`.
common::Status decode(std::span<const std::byte> in, DataType type, std::size_t count,
                      std::byte* out);

// The largest stream encode() can write for `count` elements of `type`.
std::size_t max_encoded_bytes(const Settings& s, DataType type, std::size_t count);

}  // namespace mccl::codec
