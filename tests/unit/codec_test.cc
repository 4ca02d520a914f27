// src/codec: the error bound holds on every element of random, adversarial
// and edge data; what cannot be bounded travels raw and bit-exact; integer
// data is never compressed; corrupt streams are refused, never overrun.
// The quantised sums of the reduce-scatter: codec_sum_test.cc.
#include "codec/codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "codec/bitpack.h"
#include "codec/format.h"
#include "codec/prefix_decoder.h"
#include "codec/zfp_codec.h"
#include "codec_test_data.h"

namespace mccl::codec {
namespace {

using namespace test;  // codec_test_data.h

constexpr std::size_t kBlock = 1024;  // codec/quantize.h's kBlockElems

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

// Encodes and decodes `in` (count elements of `type`), checks every element
// against `bound` (0: bit-exact), returns the encoded size.
std::size_t round_trip(const Settings& s, DataType type, std::span<const std::byte> in,
                       double bound, EncodeInfo* info_out = nullptr) {
  const std::size_t es = size_of(type);
  const std::size_t count = in.size() / es;
  std::vector<std::byte> enc;
  EncodeInfo info;
  EXPECT_TRUE(encode(s, type, in.data(), count, enc, &info).is_ok());
  EXPECT_EQ(info.encoded_bytes, enc.size());
  EXPECT_LE(enc.size(), max_encoded_bytes(s, type, count));
  std::vector<std::byte> out(in.size() + 1, std::byte{0x5A});  // one guard byte
  common::Status st = decode(enc, type, count, out.data());
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(out.back(), std::byte{0x5A}) << "wrote past the end";
  for (std::size_t i = 0; i < count; ++i) {
    const double x = widen(type, in.data() + i * es);
    const double y = widen(type, out.data() + i * es);
    if (bound == 0 || !std::isfinite(x)) {
      EXPECT_EQ(std::memcmp(in.data() + i * es, out.data() + i * es, es), 0) << "element " << i;
    } else {
      EXPECT_LE(std::fabs(y - x), bound) << "element " << i << ": " << x << " -> " << y;
    }
    if (::testing::Test::HasFailure()) break;
  }
  if (info_out != nullptr) *info_out = info;
  return enc.size();
}

// Every width and sizes around the 64-code groups that pack_fixed unrolls
// (and unpack shuffles eight at a time where AVX2 is there): code i at bits
// [i*bits, (i+1)*bits) of little-endian 64-bit words, as an independent
// bit-by-bit reference lays it out, and back from a buffer of exactly the
// packed size (a read past it is a sanitizer error).
TEST(CodecBitpack, EveryWidthAndSizeMatchesTheBitLayout) {
  std::mt19937_64 rng(77);
  for (unsigned bits = 0; bits <= 32; ++bits) {
    for (std::size_t n : {0, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 1024, 4133}) {
      std::vector<std::uint32_t> codes(n);
      const std::uint64_t mask = bits == 0 ? 0 : (std::uint64_t{1} << bits) - 1;
      for (auto& c : codes) c = static_cast<std::uint32_t>(rng() & mask);
      std::vector<std::byte> packed(packed_bytes(n, bits) + 8, std::byte{0x5A});
      pack(codes.data(), n, bits, packed.data());
      std::vector<std::byte> want(packed_bytes(n, bits), std::byte{0});
      for (std::size_t i = 0; i < n; ++i) {
        for (unsigned b = 0; b < bits; ++b) {
          if ((codes[i] >> b) & 1u) {
            const std::size_t at = i * bits + b;
            want[at / 8] |= std::byte{static_cast<unsigned char>(1u << (at % 8))};
          }
        }
      }
      ASSERT_TRUE(std::equal(want.begin(), want.end(), packed.begin()))
          << bits << " bits, " << n << " codes";
      EXPECT_EQ(packed[want.size()], std::byte{0x5A}) << "wrote past the packed size";
      const std::unique_ptr<std::byte[]> exact(new std::byte[want.size()]);
      std::copy(packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(want.size()),
                exact.get());
      std::vector<std::uint32_t> back(n, 0xFFFFFFFFu);
      unpack(exact.get(), n, bits, back.data());
      ASSERT_EQ(back, codes) << bits << " bits, " << n << " codes";
    }
  }
}

TEST(CodecBound, GaussianEveryTypeManyBoundsAndSizes) {
  for (DataType type : kFloatTypes) {
    for (double bound : {1e-1, 1e-2, 1e-3, 1e-5}) {
      for (std::size_t n : {0, 1, 2, 7, 1023, 1024, 1025, 3000, 4096}) {
        SCOPED_TRACE(std::string(to_string(type)) + " bound " + std::to_string(bound) + " n " +
                     std::to_string(n));
        const auto data = to_type(type, gaussian(n, 1.0, static_cast<std::uint32_t>(n)));
        round_trip({Mode::kBound, bound}, type, data, bound);
      }
    }
  }
}

TEST(CodecBound, CompressesGaussianAtOneHundredthSigma) {
  const auto data = to_type(DataType::kFloat32, gaussian(1 << 16, 2.5, 7));
  EncodeInfo info;
  const std::size_t enc = round_trip({Mode::kBound, 0.025}, DataType::kFloat32, data, 0.025, &info);
  EXPECT_FALSE(info.raw);
  EXPECT_EQ(info.bound, 0.025);
  // About 9 bits per value for +-4.5 sigma on a grid of 0.05 sigma.
  EXPECT_LT(static_cast<double>(enc), 0.32 * static_cast<double>(data.size()));
}

TEST(CodecBound, ConstantBlocksTakeOnlyTheirHeaders) {
  const std::vector<double> v(10 * kBlock, 3.25);
  const auto data = to_type(DataType::kFloat32, v);
  const std::size_t enc = round_trip({Mode::kBound, 1e-3}, DataType::kFloat32, data, 1e-3);
  EXPECT_LE(enc, 32 + 10 * 16u);
}

TEST(CodecBound, NanAndInfinityBlocksTravelRawAndBitExact) {
  for (DataType type : kFloatTypes) {
    auto v = gaussian(3 * kBlock + 5, 1.0, 3);
    v[10] = std::numeric_limits<double>::quiet_NaN();
    v[kBlock + 3] = std::numeric_limits<double>::infinity();
    v[3 * kBlock + 4] = -std::numeric_limits<double>::infinity();
    const auto data = to_type(type, v);
    // Blocks 0, 1 and 3 raw (exact), block 2 quantised: every element is
    // checked, non-finite ones for identical bits.
    round_trip({Mode::kBound, 1e-2}, type, data, 1e-2);
  }
}

TEST(CodecBound, AllNanStreamIsSentRawAndSaysSo) {
  const std::vector<float> v(5000, std::numeric_limits<float>::quiet_NaN());
  EncodeInfo info;
  round_trip({Mode::kBound, 1.0}, DataType::kFloat32, bytes_of(v), 0, &info);
  EXPECT_TRUE(info.raw);
  EXPECT_EQ(info.encoded_bytes, 32 + v.size() * 4);
}

TEST(CodecBound, DenormalsAndSignedZeros) {
  std::vector<float> v(3000);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i % 97);
    if (i % 3 == 0) v[i] = -v[i];
  }
  v[5] = -0.0f;
  round_trip({Mode::kBound, 1e-40}, DataType::kFloat32, bytes_of(v), 1e-40);
  round_trip({Mode::kBound, 1e-3}, DataType::kFloat32, bytes_of(v), 1e-3);
}

TEST(CodecBound, RangesPastTheBoundsSpanFallBackRaw) {
  // 1e30 next to 1 at bound 1e-3: 1e33 steps cannot be coded, the block is
  // sent raw; and floats whose spacing exceeds the bound (1e8 at bound 1)
  // can only be reproduced exactly.
  std::vector<float> v(2 * kBlock);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::size_t i = 0; i < kBlock; ++i) v[i] = i % 2 ? 1e30f * u(rng) : u(rng);
  for (std::size_t i = kBlock; i < v.size(); ++i) v[i] = 1e8f + 8.0f * static_cast<float>(i % 5);
  round_trip({Mode::kBound, 1e-3}, DataType::kFloat32, bytes_of(v), 1e-3);
  round_trip({Mode::kBound, 1.0}, DataType::kFloat32, bytes_of(v), 1.0);
  std::vector<double> d = {1e300, -1e300, 1e-300, 0.0};
  round_trip({Mode::kBound, 1e-3}, DataType::kFloat64, bytes_of(d), 1e-3);
}

TEST(CodecBound, AdversarialHalfStepsAndRoundingEdges) {
  // Values exactly between grid points, and just either side of them, where
  // the reconstruction's float rounding decides whether the bound holds.
  for (double bound : {0.1, 1e-3, 0.3, 1.0 / 3.0}) {
    std::vector<float> v;
    for (int k = -2000; k < 2000; ++k) {
      const double mid = (k + 0.5) * 2 * bound;
      v.push_back(static_cast<float>(mid));
      v.push_back(std::nextafter(static_cast<float>(mid), 1e30f));
      v.push_back(std::nextafter(static_cast<float>(mid), -1e30f));
    }
    round_trip({Mode::kBound, bound}, DataType::kFloat32, bytes_of(v), bound);
  }
  // Large magnitudes where a float's spacing is close to the bound.
  std::vector<float> big;
  for (int i = 0; i < 4000; ++i) big.push_back(16777216.0f + 2.0f * static_cast<float>(i));
  round_trip({Mode::kBound, 1.0}, DataType::kFloat32, bytes_of(big), 1.0);
  round_trip({Mode::kBound, 1.5}, DataType::kFloat32, bytes_of(big), 1.5);
}

TEST(CodecBound, RandomBitPatternsEveryType) {
  std::mt19937_64 rng(5);
  for (DataType type : kFloatTypes) {
    std::vector<std::byte> data(7 * kBlock * size_of(type) + 6 * size_of(type));
    for (auto& b : data) b = static_cast<std::byte>(rng());
    for (double bound : {1e-30, 1.0, 1e20}) round_trip({Mode::kBound, bound}, type, data, bound);
  }
}

TEST(CodecBound, IncompressibleDataIsSentRaw) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  std::vector<float> v(8 * kBlock);
  for (auto& x : v) x = u(rng);
  EncodeInfo info;
  round_trip({Mode::kBound, 1e-9}, DataType::kFloat32, bytes_of(v), 0, &info);
  EXPECT_TRUE(info.raw);
  EXPECT_EQ(info.bound, 0.0);
}

TEST(CodecInteger, NeverCompressedWhateverTheMode) {
  std::vector<std::int32_t> v(5000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i * 7919);
  for (Mode m : {Mode::kBf16, Mode::kBound, Mode::kZfp}) {
    EncodeInfo info;
    round_trip({m, 0.5, 8}, DataType::kInt32, bytes_of(v), 0, &info);
    EXPECT_TRUE(info.raw);
  }
  EXPECT_FALSE(compressible(DataType::kInt64));
  EXPECT_FALSE(compressible(DataType::kUInt8));
}

TEST(CodecBf16, RoundsToNearestEvenAndHalvesTheSize) {
  auto d = gaussian(5000, 3.0, 1);
  d[0] = std::numeric_limits<double>::quiet_NaN();
  d[1] = -std::numeric_limits<double>::infinity();
  std::vector<float> v(d.begin(), d.end());
  std::vector<std::byte> enc;
  ASSERT_TRUE(
      encode({Mode::kBf16}, DataType::kFloat32, as_bytes(std::span(v)).data(), v.size(), enc)
          .is_ok());
  EXPECT_EQ(enc.size(), 32 + v.size() * 2);
  std::vector<float> out(v.size());
  ASSERT_TRUE(
      decode(enc, DataType::kFloat32, v.size(), as_writable_bytes(std::span(out)).data()).is_ok());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], -std::numeric_limits<float>::infinity());
  for (std::size_t i = 2; i < v.size(); ++i) {
    EXPECT_EQ(out[i], common::bf16_in(common::bf16_out(v[i])));
    EXPECT_LE(std::fabs(out[i] - v[i]), std::fabs(v[i]) * 0x1p-8);  // half a unit in the 8th bit
  }
  // Other types are not narrowed: they travel raw.
  std::vector<double> dd(100, 1.0 / 3.0);
  EncodeInfo info;
  round_trip({Mode::kBf16}, DataType::kFloat64, bytes_of(dd), 0, &info);
  EXPECT_TRUE(info.raw);
}

TEST(CodecZfp, FixedRateSizeAndRoundTrip) {
  if (!zfp_available()) GTEST_SKIP() << "this build has no libzfp (Debian: libzfp-dev)";
  const auto v = gaussian(10000, 1.0, 2);
  for (double rate : {8.0, 16.0}) {
    std::vector<float> f(v.begin(), v.end());
    std::vector<std::byte> enc;
    EncodeInfo info;
    ASSERT_TRUE(encode({Mode::kZfp, 0, rate}, DataType::kFloat32, as_bytes(std::span(f)).data(),
                       f.size(), enc, &info)
                    .is_ok());
    EXPECT_FALSE(info.raw);
    EXPECT_NEAR(static_cast<double>(enc.size()), f.size() * rate / 8, 64);
    std::vector<float> out(f.size());
    ASSERT_TRUE(decode(enc, DataType::kFloat32, f.size(), as_writable_bytes(std::span(out)).data())
                    .is_ok());
    double err = 0;
    for (std::size_t i = 0; i < f.size(); ++i)
      err = std::max(err, double(std::fabs(out[i] - f[i])));
    EXPECT_LT(err, rate == 16 ? 1e-2 : 0.5);  // zfp has no bound; this is a sanity check
  }
  std::vector<float> nan(100, 1.0f);
  nan[50] = std::numeric_limits<float>::quiet_NaN();
  EncodeInfo info;
  round_trip({Mode::kZfp, 0, 8}, DataType::kFloat32, bytes_of(nan), 0, &info);
  EXPECT_TRUE(info.raw);
}

TEST(CodecSettings, ValidateNamesTheProblem) {
  EXPECT_TRUE(validate({Mode::kOff}, "x").is_ok());
  EXPECT_TRUE(validate({Mode::kBound, 1e-3}, "x").is_ok());
  for (double b : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()}) {
    const common::Status st = validate({Mode::kBound, b}, "MCCL_COLL_COMPRESS_BOUND");
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.message().find("MCCL_COLL_COMPRESS_BOUND"), std::string::npos);
  }
  if (zfp_available()) {
    EXPECT_EQ(validate({Mode::kZfp, 0, 0.5}, "r").code(), ErrorCode::kInvalidArgument);
  } else {
    EXPECT_EQ(validate({Mode::kZfp, 0, 16}, "r").code(), ErrorCode::kUnavailable);
  }
  Mode m;
  EXPECT_TRUE(parse_mode("bound", m) && m == Mode::kBound);
  EXPECT_FALSE(parse_mode("lz4", m));
}

TEST(CodecDecode, RefusesCorruptOrMismatchedStreams) {
  const auto data = to_type(DataType::kFloat32, gaussian(3000, 1.0, 4));
  std::vector<std::byte> enc;
  ASSERT_TRUE(encode({Mode::kBound, 1e-2}, DataType::kFloat32, data.data(), 3000, enc).is_ok());
  std::vector<std::byte> out(data.size());
  EXPECT_FALSE(decode(enc, DataType::kFloat32, 2999, out.data()).is_ok());
  EXPECT_FALSE(decode(enc, DataType::kFloat64, 3000, out.data()).is_ok());
  EXPECT_FALSE(
      decode(std::span(enc).first(enc.size() - 1), DataType::kFloat32, 3000, out.data()).is_ok());
  EXPECT_FALSE(decode(std::span(enc).first(10), DataType::kFloat32, 3000, out.data()).is_ok());
  auto bad = enc;
  bad[0] = std::byte{0};
  EXPECT_FALSE(decode(bad, DataType::kFloat32, 3000, out.data()).is_ok());
  // Flipped bytes anywhere: an error or some values, never a write past
  // the buffer (the sanitizer builds check the reads).
  std::mt19937 rng(8);
  for (int i = 0; i < 2000; ++i) {
    auto c = enc;
    c[rng() % c.size()] ^= static_cast<std::byte>(1 + rng() % 255);
    std::vector<std::byte> o(data.size() + 1, std::byte{0x5A});
    (void)decode(c, DataType::kFloat32, 3000, o.data());
    ASSERT_EQ(o.back(), std::byte{0x5A});
  }
}

// A stream fed in growing prefixes, as a multicast delivers it, decodes to
// the bits decode() writes, and part of it is decoded before the end.
TEST(CodecPrefixDecoder, GrowingPrefixesDecodeAsTheWholeStreamDoes) {
  const std::size_t n = 5 * kBlock + 77;  // a short last block
  const auto v = gaussian(n, 1.0, 12);
  std::vector<Settings> modes = {{Mode::kOff}, {Mode::kBf16}, {Mode::kBound, 1e-2}};
  if (zfp_available()) modes.push_back({Mode::kZfp, 0, 16});
  for (const Settings& s : modes) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat16}) {
      SCOPED_TRACE(std::string(to_string(s.mode)) + " " + to_string(type));
      auto with_raw_block = v;  // zfp would then send all of it raw
      if (s.mode == Mode::kBound) with_raw_block[2 * kBlock + 5] = std::nan("");
      const auto data = to_type(type, with_raw_block);
      std::vector<std::byte> enc;
      EncodeInfo info;
      ASSERT_TRUE(encode(s, type, data.data(), n, enc, &info).is_ok());
      std::vector<std::byte> whole(data.size()), fed(data.size(), std::byte{0x5A});
      ASSERT_TRUE(decode(enc, type, n, whole.data()).is_ok());
      PrefixDecoder d(type, n, fed.data());
      std::mt19937 rng(3);
      std::uint64_t before_end = 0;
      for (std::size_t avail = 0; avail < enc.size(); avail += 1 + rng() % 700) {
        const std::uint64_t was = d.decoded();
        ASSERT_TRUE(d.advance(enc, avail).is_ok());
        ASSERT_GE(d.decoded(), was);
        before_end = d.decoded();
      }
      ASSERT_TRUE(d.finish(enc).is_ok());
      EXPECT_EQ(d.decoded(), n);
      EXPECT_EQ(fed, whole) << "the same bits as decode()";
      if (s.mode == Mode::kZfp && !info.raw) {
        EXPECT_EQ(before_end, 0u) << "zfp decodes at the end";
      } else {
        EXPECT_GT(before_end, n / 2) << "most of it decoded before the last byte";
      }
    }
  }
}

TEST(CodecPrefixDecoder, RefusesWhatDecodeRefusesAndStopsAfterAnError) {
  const auto data = to_type(DataType::kFloat32, gaussian(3000, 1.0, 4));
  std::vector<std::byte> enc;
  ASSERT_TRUE(encode({Mode::kBound, 1e-2}, DataType::kFloat32, data.data(), 3000, enc).is_ok());
  std::vector<std::byte> out(data.size() + 1, std::byte{0x5A});
  {
    PrefixDecoder d(DataType::kFloat32, 2999, out.data());
    EXPECT_EQ(d.advance(enc, 100).code(), ErrorCode::kInvalidArgument) << "count in the header";
    EXPECT_FALSE(d.finish(enc).is_ok()) << "stays failed";
  }
  {
    PrefixDecoder d(DataType::kFloat32, 3000, out.data());
    EXPECT_TRUE(d.advance(enc, 20).is_ok()) << "no header yet: nothing to say";
    EXPECT_FALSE(d.finish(std::span(enc).first(enc.size() - 1)).is_ok()) << "truncated";
  }
  {
    auto bad = enc;
    bad[32 + 1] = std::byte{60};  // the first block's bit width, past 31
    PrefixDecoder d(DataType::kFloat32, 3000, out.data());
    const common::Status st = d.advance(bad, bad.size());
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.message().find("bits"), std::string::npos) << st.message();
    EXPECT_EQ(d.decoded(), 0u);
  }
  EXPECT_EQ(out.back(), std::byte{0x5A});
}

// A header may pair a mode with a type that mode never carries (zfp of
// bfloat16: libzfp would write float32s into a buffer sized for half as
// many bytes). Both decoders refuse it before writing anything.
TEST(CodecDecode, RefusesAModeTheTypeCannotUse) {
  struct Pairing {
    Mode mode;
    DataType type;
    double param;
  };
  const Pairing pairings[] = {{Mode::kZfp, DataType::kBFloat16, 2.0},
                              {Mode::kZfp, DataType::kFloat16, 16.0},
                              {Mode::kBf16, DataType::kFloat64, 0.0},
                              {Mode::kBound, DataType::kInt32, 1e-2}};
  constexpr std::size_t kCount = 15;
  for (const Pairing& p : pairings) {
    SCOPED_TRACE(std::string(to_string(p.mode)) + " " + to_string(p.type));
    EXPECT_FALSE(mode_serves(p.mode, p.type));
    // The payload is as long as the mode would make it for float32, so
    // only the pairing is wrong.
    const std::size_t payload =
        p.mode == Mode::kZfp ? zfp_max_bytes(DataType::kFloat32, kCount, p.param) : kCount * 4;
    std::vector<std::byte> stream(kHeaderBytes + payload, std::byte{0});
    write_header({p.mode, p.type, p.mode == Mode::kBound ? 1024u : 0u, kCount, p.param},
                 stream.data());
    const std::size_t bytes = kCount * size_of(p.type);
    std::vector<std::byte> whole(bytes + 64, std::byte{0x5A}), fed(bytes + 64, std::byte{0x5A});
    EXPECT_EQ(decode(stream, p.type, kCount, whole.data()).code(), ErrorCode::kInvalidArgument);
    PrefixDecoder d(p.type, kCount, fed.data());
    const common::Status st = d.advance(stream, stream.size());
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.message().find("cannot carry"), std::string::npos) << st.message();
    EXPECT_FALSE(d.finish(stream).is_ok());
    EXPECT_EQ(d.decoded(), 0u);
    for (std::size_t i = 0; i < whole.size(); ++i) {
      ASSERT_EQ(whole[i], std::byte{0x5A}) << "decode() wrote byte " << i;
      ASSERT_EQ(fed[i], std::byte{0x5A}) << "PrefixDecoder wrote byte " << i;
    }
  }
  for (DataType type : {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                        DataType::kFloat16, DataType::kInt32}) {
    EXPECT_TRUE(mode_serves(Mode::kOff, type));
  }
  EXPECT_TRUE(mode_serves(Mode::kZfp, DataType::kFloat64));
  EXPECT_TRUE(mode_serves(Mode::kBound, DataType::kBFloat16));
  EXPECT_TRUE(mode_serves(Mode::kBf16, DataType::kFloat32));
}

}  // namespace
}  // namespace mccl::codec
