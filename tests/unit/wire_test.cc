// The wire format (src/protocol/wire.h, docs/wire-protocol.md): header sizes,
// explicit little-endian byte order, round trips, and one test per
// validation rule so that every field a receiver checks is seen rejected
// with its own DataCheck. Random round trips name their seed.
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "common/crc32c.h"

namespace mccl::protocol {
namespace {

using Bytes = std::vector<std::byte>;

static_assert(kDataHeaderBytes == 40, "the data header is 40 bytes on the wire");
static_assert(kControlHeaderBytes == 32, "the control header is 32 bytes on the wire");

// chunk_count / chunk_length are constexpr: their edges are checked at
// compile time as well as below.
static_assert(chunk_count(0, 1460) == 0);
static_assert(chunk_count(1, 1460) == 1);
static_assert(chunk_count(1460, 1460) == 1);
static_assert(chunk_count(1461, 1460) == 2);
static_assert(chunk_count(100, 0) == 0);
static_assert(chunk_length(1461, 1460, 1) == 1);

constexpr std::uint32_t kTag = 0xA1B2C3D4;
constexpr std::uint32_t kChunk = 1460;

Bytes make_payload(std::size_t n, std::uint8_t salt = 0) {
  Bytes p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = std::byte((i * 31 + salt) & 0xFF);
  return p;
}

// A whole datagram: header followed by payload.
Bytes make_datagram(const DataHeader& h, const Bytes& payload, bool checksum = true) {
  Bytes d(kDataHeaderBytes + payload.size());
  encode_data_header(h, payload, checksum, d.data());
  std::copy(payload.begin(), payload.end(), d.begin() + kDataHeaderBytes);
  return d;
}

// A valid header for chunk `index` of a stream of `total` bytes.
DataHeader header_for(std::uint64_t total, std::uint32_t index, std::uint32_t chunk = kChunk) {
  DataHeader h;
  h.comm_tag = kTag;
  h.seq = 7;
  h.root = 3;
  h.chunk_index = index;
  h.chunk_bytes = chunk;
  h.total_bytes = total;
  h.payload_len = static_cast<std::uint16_t>(chunk_length(total, chunk, index));
  return h;
}

DataCheck check(const Bytes& d, bool checksum = true, std::uint32_t tag = kTag) {
  DataHeader h;
  std::span<const std::byte> payload;
  return decode_data(d, tag, checksum, h, payload);
}

// ---- data header: round trips and byte order ---------------------------------

TEST(WireData, RandomRoundTripSeed20240611) {
  std::mt19937_64 rng(20240611);
  const std::uint32_t chunks[] = {1, 7, 512, kChunk};
  for (int iter = 0; iter < 2000; ++iter) {
    const std::uint32_t chunk = chunks[iter % 4];
    // Totals from 1 byte to a few hundred chunks, often not a multiple.
    const std::uint64_t total = 1 + rng() % (std::uint64_t{chunk} * 300);
    const std::uint64_t count = chunk_count(total, chunk);
    DataHeader in;
    in.comm_tag = static_cast<std::uint32_t>(rng());
    in.seq = static_cast<std::uint32_t>(rng());
    in.root = static_cast<std::uint32_t>(rng());
    // Bias toward the last chunk, which is the short one.
    in.chunk_index = static_cast<std::uint32_t>(iter % 3 == 0 ? count - 1 : rng() % count);
    in.chunk_bytes = chunk;
    in.total_bytes = total;
    const std::uint64_t len = chunk_length(total, chunk, in.chunk_index);
    ASSERT_GE(len, 1u);
    ASSERT_LE(len, chunk);
    in.payload_len = static_cast<std::uint16_t>(len);
    Bytes payload = make_payload(len, static_cast<std::uint8_t>(iter));
    const bool checksum = iter % 2 == 0;
    Bytes d = make_datagram(in, payload, checksum);

    DataHeader out;
    std::span<const std::byte> got;
    ASSERT_EQ(decode_data(d, in.comm_tag, checksum, out, got), DataCheck::kOk)
        << "iteration " << iter << ": "
        << to_string(decode_data(d, in.comm_tag, checksum, out, got));
    EXPECT_EQ(out.comm_tag, in.comm_tag);
    EXPECT_EQ(out.seq, in.seq);
    EXPECT_EQ(out.root, in.root);
    EXPECT_EQ(out.chunk_index, in.chunk_index);
    EXPECT_EQ(out.chunk_bytes, in.chunk_bytes);
    EXPECT_EQ(out.total_bytes, in.total_bytes);
    EXPECT_EQ(out.payload_len, in.payload_len);
    EXPECT_EQ(out.flags, 0);
    EXPECT_EQ(got.data(), d.data() + kDataHeaderBytes);  // points into the datagram
    ASSERT_EQ(got.size(), payload.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), payload.begin()));
    if (!checksum) {
      EXPECT_EQ(out.crc, 0u);
    }
  }
}

TEST(WireData, EveryChunkOfAStreamRoundTripsLastOneShorter) {
  const std::uint64_t total = 5 * kChunk + 123;
  for (std::uint32_t i = 0; i < 6; ++i) {
    DataHeader h = header_for(total, i);
    EXPECT_EQ(h.payload_len, i < 5 ? kChunk : 123u);
    Bytes d = make_datagram(h, make_payload(h.payload_len));
    EXPECT_EQ(check(d), DataCheck::kOk) << "chunk " << i;
  }
}

TEST(WireData, ByteOrderIsLittleEndianFieldByField) {
  DataHeader h;
  h.comm_tag = 0x11223344;
  h.seq = 0x01020304;
  h.root = 0x00000005;
  h.chunk_index = 0x0000A0B0;
  h.chunk_bytes = 0x000005B4;  // 1460
  h.total_bytes = 0x0102030405060708ull;
  h.payload_len = 0x05B4;
  h.flags = 0;
  std::array<std::byte, kDataHeaderBytes> out{};
  encode_data_header(h, {}, /*checksum=*/false, out.data());
  const std::uint8_t expect[kDataHeaderBytes] = {
      0x43, 0x4D,              //  0 magic 0x4D43 ("CM")
      0x01,                    //  2 version
      0x01,                    //  3 kind = data
      0x44, 0x33, 0x22, 0x11,  //  4 comm_tag
      0x04, 0x03, 0x02, 0x01,  //  8 seq
      0x05, 0x00, 0x00, 0x00,  // 12 root
      0xB0, 0xA0, 0x00, 0x00,  // 16 chunk_index
      0xB4, 0x05, 0x00, 0x00,  // 20 chunk_bytes
      0x08, 0x07, 0x06, 0x05,  // 24 total_bytes (low word)
      0x04, 0x03, 0x02, 0x01,  // 28 total_bytes (high word)
      0xB4, 0x05,              // 32 payload_len
      0x00, 0x00,              // 34 flags
      0x00, 0x00, 0x00, 0x00,  // 36 crc (disabled)
  };
  for (std::size_t i = 0; i < kDataHeaderBytes; ++i) {
    EXPECT_EQ(std::to_integer<unsigned>(out[i]), expect[i]) << "byte " << i;
  }
}

TEST(WireData, ChecksumCoversBytes0To35AndThePayloadStoredLittleEndian) {
  DataHeader h = header_for(1000, 0, 1000);
  Bytes payload = make_payload(1000);
  Bytes d = make_datagram(h, payload, true);
  std::uint32_t crc = common::crc32c(0, d.data(), 36);
  crc = common::crc32c(crc, payload.data(), payload.size());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(std::to_integer<unsigned>(d[36 + i]), (crc >> (8 * i)) & 0xFF) << "crc byte " << i;
  }
}

// ---- data header: each validation rule -----------------------------------------

class WireReject : public ::testing::Test {
 protected:
  // A valid middle chunk of a three-chunk stream.
  DataHeader h = header_for(3 * kChunk - 10, 1);
  Bytes payload = make_payload(kChunk);
  Bytes good = make_datagram(h, payload);
};

TEST_F(WireReject, BaselineIsAccepted) { EXPECT_EQ(check(good), DataCheck::kOk); }

TEST_F(WireReject, TooShort) {
  EXPECT_EQ(check({}), DataCheck::kTooShort);
  EXPECT_EQ(check(Bytes(good.begin(), good.begin() + kDataHeaderBytes - 1)), DataCheck::kTooShort);
}

TEST_F(WireReject, BadMagic) {
  Bytes d = good;
  d[0] ^= std::byte{0x01};
  EXPECT_EQ(check(d), DataCheck::kBadMagic);
  d = good;
  d[1] = std::byte{0x52};  // the control magic's high byte
  EXPECT_EQ(check(d), DataCheck::kBadMagic);
}

TEST_F(WireReject, BadVersion) {
  for (unsigned v : {0u, 2u, 255u}) {
    Bytes d = good;
    d[2] = std::byte(v);
    EXPECT_EQ(check(d), DataCheck::kBadVersion) << "version " << v;
  }
}

TEST_F(WireReject, BadKind) {
  for (unsigned k : {0u, 2u, 255u}) {
    Bytes d = good;
    d[3] = std::byte(k);
    EXPECT_EQ(check(d), DataCheck::kBadKind) << "kind " << k;
  }
}

TEST_F(WireReject, NonzeroFlags) {
  DataHeader f = h;
  for (std::uint16_t flags : {std::uint16_t{1}, std::uint16_t{0x8000}}) {
    f.flags = flags;
    EXPECT_EQ(check(make_datagram(f, payload)), DataCheck::kBadFlags) << "flags " << flags;
  }
}

TEST_F(WireReject, ForeignTag) {
  EXPECT_EQ(check(good, true, kTag + 1), DataCheck::kForeignTag);
  DataHeader f = h;
  f.comm_tag = 0;
  EXPECT_EQ(check(make_datagram(f, payload)), DataCheck::kForeignTag);
}

TEST_F(WireReject, DatagramShorterOrLongerThanHeaderPlusPayloadLen) {
  Bytes shorter(good.begin(), good.end() - 1);
  EXPECT_EQ(check(shorter), DataCheck::kBadLength);
  Bytes header_only(good.begin(), good.begin() + kDataHeaderBytes);
  EXPECT_EQ(check(header_only), DataCheck::kBadLength);
  Bytes longer = good;
  longer.push_back(std::byte{0});
  EXPECT_EQ(check(longer), DataCheck::kBadLength);
}

TEST_F(WireReject, PayloadLenDisagreesWithTheChunkLayout) {
  // A middle chunk one byte short, consistently framed.
  DataHeader f = h;
  f.payload_len = kChunk - 1;
  EXPECT_EQ(check(make_datagram(f, make_payload(kChunk - 1))), DataCheck::kBadLength);
  // The last chunk (kChunk - 10 bytes) claiming a full chunk.
  f = header_for(3 * kChunk - 10, 2);
  ASSERT_EQ(f.payload_len, kChunk - 10);
  f.payload_len = kChunk;
  EXPECT_EQ(check(make_datagram(f, make_payload(kChunk))), DataCheck::kBadLength);
  // A payload longer than the chunk size.
  f = h;
  f.payload_len = kChunk + 1;
  EXPECT_EQ(check(make_datagram(f, make_payload(kChunk + 1))), DataCheck::kBadLength);
}

TEST_F(WireReject, ChunkIndexOutOfBounds) {
  for (std::uint32_t index : {3u, 4u, 0xFFFFFFFFu}) {
    DataHeader f = h;
    f.chunk_index = index;
    f.payload_len = 10;
    EXPECT_EQ(check(make_datagram(f, make_payload(10))), DataCheck::kBadChunk) << "index " << index;
  }
}

TEST_F(WireReject, ChunkBytesZero) {
  DataHeader f = h;
  f.chunk_bytes = 0;
  EXPECT_EQ(check(make_datagram(f, payload)), DataCheck::kBadChunk);
}

TEST_F(WireReject, TotalZeroWithAChunk) {
  DataHeader f = h;
  f.total_bytes = 0;
  f.chunk_index = 0;
  f.payload_len = 0;
  EXPECT_EQ(check(make_datagram(f, {})), DataCheck::kBadChunk);
}

TEST_F(WireReject, CorruptedPayloadByteIsABadChecksum) {
  for (std::size_t at : {std::size_t{0}, std::size_t{kChunk / 2}, std::size_t{kChunk - 1}}) {
    Bytes d = good;
    d[kDataHeaderBytes + at] ^= std::byte{0x10};
    EXPECT_EQ(check(d), DataCheck::kBadChecksum) << "payload byte " << at;
  }
}

TEST_F(WireReject, EveryCorruptedHeaderByteIsRejected) {
  for (std::size_t i = 0; i < kDataHeaderBytes; ++i) {
    for (unsigned mask : {0x01u, 0x80u, 0xFFu}) {
      Bytes d = good;
      d[i] ^= std::byte(mask);
      EXPECT_NE(check(d), DataCheck::kOk) << "header byte " << i << " mask " << mask;
    }
  }
  // The fields the framing checks cannot see are caught by the CRC.
  for (std::size_t i : {8u, 12u, 36u}) {  // seq, root, crc
    Bytes d = good;
    d[i] ^= std::byte{0x01};
    EXPECT_EQ(check(d), DataCheck::kBadChecksum) << "header byte " << i;
  }
}

TEST_F(WireReject, ChecksumDisabledAcceptsCorruptedPayload) {
  Bytes d = make_datagram(h, payload, /*checksum=*/false);
  d[kDataHeaderBytes + 5] ^= std::byte{0xFF};
  EXPECT_EQ(check(d, /*checksum=*/false), DataCheck::kOk);
  // A receiver that checks rejects a sender that did not checksum (crc 0).
  EXPECT_EQ(check(make_datagram(h, payload, false), /*checksum=*/true), DataCheck::kBadChecksum);
}

TEST(WireData, EveryCheckHasAName) {
  for (int c = 0; c <= static_cast<int>(DataCheck::kBadMac); ++c) {
    EXPECT_STRNE(to_string(static_cast<DataCheck>(c)), "?");
  }
}

// ---- chunk layout -------------------------------------------------------------

TEST(WireLayout, ChunkCountEdges) {
  const std::uint32_t c = kChunk;
  EXPECT_EQ(chunk_count(0, c), 0u);
  EXPECT_EQ(chunk_count(1, c), 1u);
  EXPECT_EQ(chunk_count(c - 1, c), 1u);
  EXPECT_EQ(chunk_count(c, c), 1u);
  EXPECT_EQ(chunk_count(c + 1, c), 2u);
  EXPECT_EQ(chunk_count(2 * c, c), 2u);
  EXPECT_EQ(chunk_count(1000, 0), 0u);  // no chunk size, no chunks
  EXPECT_EQ(chunk_count(5, 1), 5u);
  EXPECT_EQ(chunk_count(std::uint64_t{1} << 40, 1u << 20), std::uint64_t{1} << 20);
}

TEST(WireLayout, ChunkLengthEdges) {
  const std::uint32_t c = kChunk;
  EXPECT_EQ(chunk_length(0, c, 0), 0u);
  EXPECT_EQ(chunk_length(1, c, 0), 1u);
  EXPECT_EQ(chunk_length(c - 1, c, 0), c - 1);
  EXPECT_EQ(chunk_length(c, c, 0), c);
  EXPECT_EQ(chunk_length(c, c, 1), 0u);  // past the end
  EXPECT_EQ(chunk_length(c + 1, c, 0), c);
  EXPECT_EQ(chunk_length(c + 1, c, 1), 1u);
  EXPECT_EQ(chunk_length(c + 1, c, 2), 0u);
  // The lengths of all chunks add up to the total.
  for (std::uint64_t total : {std::uint64_t{1}, std::uint64_t{c - 1}, std::uint64_t{c},
                              std::uint64_t{c + 1}, std::uint64_t{7 * c + 3}}) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < chunk_count(total, c); ++i) sum += chunk_length(total, c, i);
    EXPECT_EQ(sum, total);
  }
}

// ---- control header -----------------------------------------------------------

ControlHeader sample_control() {
  ControlHeader h;
  h.kind = ControlKind::kRepairData;
  h.comm_tag = kTag;
  h.seq = 0x01020304;
  h.root = 0x05060708;
  h.signature = 0x1122334455667788ull;
  h.arg0 = 0x99AABBCC;
  h.arg1 = 0xDDEEFF00;
  return h;
}

Bytes make_message(const ControlHeader& h, const Bytes& body = {}) {
  Bytes m(kControlHeaderBytes);
  encode_control_header(h, m.data());
  m.insert(m.end(), body.begin(), body.end());
  return m;
}

TEST(WireControl, RoundTripEveryKindWithBody) {
  Bytes body = make_payload(37);
  for (int k = 1; k <= static_cast<int>(ControlKind::kMembership); ++k) {
    ControlHeader in = sample_control();
    in.kind = static_cast<ControlKind>(k);
    Bytes m = make_message(in, body);
    ControlHeader out;
    std::span<const std::byte> got;
    ASSERT_TRUE(decode_control(m, kTag, out, got)) << to_string(in.kind);
    EXPECT_EQ(out.kind, in.kind);
    EXPECT_EQ(out.comm_tag, in.comm_tag);
    EXPECT_EQ(out.seq, in.seq);
    EXPECT_EQ(out.root, in.root);
    EXPECT_EQ(out.signature, in.signature);
    EXPECT_EQ(out.arg0, in.arg0);
    EXPECT_EQ(out.arg1, in.arg1);
    ASSERT_EQ(got.size(), body.size());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), body.begin()));
    EXPECT_STRNE(to_string(in.kind), "?");
  }
}

TEST(WireControl, ByteOrderIsLittleEndian) {
  Bytes m = make_message(sample_control());
  const std::uint8_t expect[kControlHeaderBytes] = {
      0x4D, 0x52,                                      //  0 magic 0x524D ("MR")
      0x01,                                            //  2 version
      0x04,                                            //  3 kind = repair-data
      0xD4, 0xC3, 0xB2, 0xA1,                          //  4 comm_tag
      0x04, 0x03, 0x02, 0x01,                          //  8 seq
      0x08, 0x07, 0x06, 0x05,                          // 12 root
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 16 signature
      0xCC, 0xBB, 0xAA, 0x99,                          // 24 arg0
      0x00, 0xFF, 0xEE, 0xDD,                          // 28 arg1
  };
  ASSERT_EQ(m.size(), kControlHeaderBytes);
  for (std::size_t i = 0; i < kControlHeaderBytes; ++i) {
    EXPECT_EQ(std::to_integer<unsigned>(m[i]), expect[i]) << "byte " << i;
  }
}

TEST(WireControl, HeaderOnlyMessageHasAnEmptyBody) {
  ControlHeader out;
  std::span<const std::byte> body;
  ASSERT_TRUE(decode_control(make_message(sample_control()), kTag, out, body));
  EXPECT_TRUE(body.empty());
}

TEST(WireControl, UnknownKindRejected) {
  // 11 is kMembership, the last kind.
  for (unsigned k : {0u, 12u, 255u}) {
    Bytes m = make_message(sample_control());
    m[3] = std::byte(k);
    ControlHeader out;
    std::span<const std::byte> body;
    EXPECT_FALSE(decode_control(m, kTag, out, body)) << "kind " << k;
  }
}

TEST(WireControl, LossReportRoundTrips) {
  ControlHeader h = sample_control();
  h.kind = ControlKind::kLossReport;
  h.arg0 = 717;
  h.arg1 = 64;
  ControlHeader out;
  std::span<const std::byte> body;
  ASSERT_TRUE(decode_control(make_message(h), kTag, out, body));
  EXPECT_EQ(out.kind, ControlKind::kLossReport);
  EXPECT_EQ(out.arg0, 717u);
  EXPECT_EQ(out.arg1, 64u);
  EXPECT_STREQ(to_string(out.kind), "loss-report");
}

TEST(WireControl, ForeignTagRejected) {
  ControlHeader out;
  std::span<const std::byte> body;
  EXPECT_FALSE(decode_control(make_message(sample_control()), kTag ^ 1, out, body));
}

TEST(WireControl, ShortMessageRejected) {
  Bytes m = make_message(sample_control());
  ControlHeader out;
  std::span<const std::byte> body;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, kControlHeaderBytes - 1}) {
    EXPECT_FALSE(decode_control(std::span(m.data(), n), kTag, out, body)) << n << " bytes";
  }
}

TEST(WireControl, BadMagicOrVersionRejected) {
  ControlHeader out;
  std::span<const std::byte> body;
  Bytes m = make_message(sample_control());
  m[0] = std::byte{0x43};  // the data magic
  m[1] = std::byte{0x4D};
  EXPECT_FALSE(decode_control(m, kTag, out, body));
  m = make_message(sample_control());
  m[2] = std::byte{2};
  EXPECT_FALSE(decode_control(m, kTag, out, body));
  // A data datagram is never mistaken for a control message, nor the reverse.
  Bytes d = make_datagram(header_for(100, 0, 100), make_payload(100));
  EXPECT_FALSE(decode_control(d, kTag, out, body));
  EXPECT_EQ(check(make_message(sample_control(), make_payload(8))), DataCheck::kBadMagic);
}

}  // namespace
}  // namespace mccl::protocol
