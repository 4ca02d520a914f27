#include "codec/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "codec/bf16.h"
#include "codec/elements.h"
#include "codec/format.h"
#include "codec/prefix_decoder.h"
#include "codec/quantize.h"
#include "codec/zfp_codec.h"
#include "common/enum_names.h"

namespace mccl::codec {

namespace {

// kBound gives up on a stream whose first blocks shrink by less than 10%:
// the codec would cost CPU and save next to nothing.
constexpr std::size_t kProbeBlocks = 4;
constexpr double kWorthIt = 0.9;

bool all_finite(DataType type, const std::byte* in, std::size_t count) {
  bool finite = true;
  with_element(type, [&]<typename E>() {
    using Bits = typename E::Bits;
    for (std::size_t i = 0; i < count && finite; ++i) {
      Bits b;
      std::memcpy(&b, in + i * sizeof(Bits), sizeof(Bits));
      finite = std::isfinite(E::widen(b));
    }
  });
  return finite;
}

// The mode a stream of `type` really uses under `s` (before kBound's probe).
Mode effective_mode(const Settings& s, DataType type, const std::byte* in, std::size_t count) {
  // mode_serves() leaves integer types only kOff.
  if (count == 0 || !mode_serves(s.mode, type)) return Mode::kOff;
  if (s.mode == Mode::kZfp && !all_finite(type, in, count))
    return Mode::kOff;  // zfp breaks on NaN/Inf
  return s.mode;
}

std::size_t bound_payload_max(DataType type, std::size_t count) {
  const std::size_t full = count / kBlockElems, tail = count % kBlockElems;
  return full * bound_block_max_bytes(type, kBlockElems) +
         (tail > 0 ? bound_block_max_bytes(type, tail) : 0);
}

// Writes kBound's blocks after the header; false when the probe says the
// data does not compress (the caller then writes a raw stream).
bool encode_bound(DataType type, const std::byte* in, std::size_t count, double bound,
                  std::vector<std::byte>& out) {
  const std::size_t es = size_of(type);
  out.resize(kHeaderBytes + bound_payload_max(type, count));
  std::size_t at = kHeaderBytes;
  for (std::size_t first = 0, block = 0; first < count; first += kBlockElems, ++block) {
    const std::size_t n = std::min<std::size_t>(kBlockElems, count - first);
    at += bound_encode_block(type, in + first * es, n, bound, out.data() + at);
    const std::size_t done = first + n;
    if (block + 1 == kProbeBlocks || (block + 1 < kProbeBlocks && done == count)) {
      if (static_cast<double>(at - kHeaderBytes) > kWorthIt * static_cast<double>(done * es)) {
        return false;
      }
    }
  }
  out.resize(at);
  return true;
}

void encode_raw(DataType type, const std::byte* in, std::size_t count,
                std::vector<std::byte>& out) {
  const std::size_t bytes = count * size_of(type);
  out.resize(kHeaderBytes + bytes);
  write_header({Mode::kOff, type, 0, count, 0.0}, out.data());
  if (bytes > 0) std::memcpy(out.data() + kHeaderBytes, in, bytes);
}

constexpr common::EnumName<Mode> kModeNames[] = {
    {Mode::kOff, "off"}, {Mode::kBf16, "bf16"}, {Mode::kBound, "bound"}, {Mode::kZfp, "zfp"}};
}  // namespace

const char* to_string(Mode mode) { return common::name_of(mode, kModeNames); }

bool parse_mode(const std::string& text, Mode& out) {
  std::optional<Mode> mode = common::value_named(text, kModeNames);
  if (mode) out = *mode;
  return mode.has_value();
}

bool compressible(DataType type) {
  return type == DataType::kFloat32 || type == DataType::kFloat64 || type == DataType::kBFloat16 ||
         type == DataType::kFloat16;
}

bool mode_serves(Mode mode, DataType type) {
  switch (mode) {
    case Mode::kOff:
      return true;
    case Mode::kBound:
      return compressible(type);
    case Mode::kBf16:
      return type == DataType::kFloat32;
    case Mode::kZfp:
      return type == DataType::kFloat32 || type == DataType::kFloat64;
  }
  return false;
}

bool zfp_available() {
#ifdef MCCL_HAVE_ZFP
  return true;
#else
  return false;
#endif
}

common::Status validate(const Settings& s, const std::string& what) {
  if (s.max_link_mbit < -1) {
    return common::invalid_argument(
        what + ": max_link_mbit " + std::to_string(s.max_link_mbit) +
        " must be -1 (any link rate), 0 (the measured rule) or a rate in Mbit/s");
  }
  switch (s.mode) {
    case Mode::kOff:
    case Mode::kBf16:
      return common::Status::ok();
    case Mode::kBound:
      if (s.bound > 0 && s.bound <= 1e300) return common::Status::ok();
      return common::invalid_argument(what + ": compression bound " + std::to_string(s.bound) +
                                      " must be a positive finite number (at most 1e300)");
    case Mode::kZfp:
      if (!zfp_available()) {
        return common::unavailable_error(what +
                                         ": compression mode zfp needs libzfp, which this "
                                         "build lacks (Debian: libzfp-dev, then reconfigure)");
      }
      if (s.zfp_rate >= 1 && s.zfp_rate <= 64) return common::Status::ok();
      return common::invalid_argument(what + ": zfp rate " + std::to_string(s.zfp_rate) +
                                      " must lie in [1, 64] bits per value");
  }
  return common::invalid_argument(what + ": unknown compression mode");
}

common::Status encode(const Settings& s, DataType type, const std::byte* in, std::size_t count,
                      std::vector<std::byte>& out, EncodeInfo* info) {
  EncodeInfo local;
  EncodeInfo& i = info != nullptr ? *info : local;
  i = {count * size_of(type), 0, true, 0.0};
  const Mode mode = effective_mode(s, type, in, count);
  if (mode == Mode::kBf16) {
    out.resize(kHeaderBytes + count * 2);
    write_header({Mode::kBf16, type, 0, count, 0.0}, out.data());
    bf16_encode(in, count, out.data() + kHeaderBytes);
    i.raw = false;
  } else if (mode == Mode::kZfp) {
    out.resize(kHeaderBytes + zfp_max_bytes(type, count, s.zfp_rate));
    write_header({Mode::kZfp, type, 0, count, s.zfp_rate}, out.data());
    std::size_t written = 0;
    common::Status st = zfp_encode(type, in, count, s.zfp_rate, out.data() + kHeaderBytes, written);
    if (!st.is_ok()) return st;
    i.raw = false;
  } else if (mode == Mode::kBound && encode_bound(type, in, count, s.bound, out)) {
    write_header({Mode::kBound, type, kBlockElems, count, s.bound}, out.data());
    i.raw = false;
    i.bound = s.bound;
  } else {
    encode_raw(type, in, count, out);
  }
  i.encoded_bytes = out.size();
  return common::Status::ok();
}

common::Status decode(std::span<const std::byte> in, DataType type, std::size_t count,
                      std::byte* out) {
  return PrefixDecoder(type, count, out).finish(in);
}

std::size_t max_encoded_bytes(const Settings& s, DataType type, std::size_t count) {
  std::size_t payload = count * size_of(type);
  if (compressible(type) && s.mode == Mode::kBound) {
    payload = std::max(payload, bound_payload_max(type, count));
  } else if (compressible(type) && s.mode == Mode::kZfp) {
    payload = std::max(payload, zfp_max_bytes(type, count, s.zfp_rate));
  }
  return kHeaderBytes + payload;
}

}  // namespace mccl::codec
