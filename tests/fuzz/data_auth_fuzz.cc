// Fuzzes the authenticated decoder of multicast datagrams (src/protocol/
// wire.cc, decode_data with a DataAuth; MCCL_PROTO_AUTH). The fuzzer cannot
// forge a GMAC tag, so it may sign the datagram itself with the
// receiver's key (then every bounds check after the MAC is reached), and
// then spoil it. Input:
//
//   byte 0      mode: 1 checksum, 2 sign, 4 flip one bit after signing,
//               8 sign for the same seq one epoch (2^32 collectives) later,
//               16 the receiver does not authenticate
//   bytes 1-4   the receiver's reference seq (DataAuth::ref_seq)
//   bytes 5-12  its 64-bit collective number (ref_seq64)
//   bytes 13-14 which bit to flip (modulo the datagram's bits)
//   the rest    the datagram
//
// Checks: a datagram is accepted only when it was signed with the
// receiver's key for the right 64-bit collective and not altered since (or,
// by a receiver that does not authenticate, only when it carries no MAC
// flag); an accepted one has its chunk inside its stream and its payload
// inside the datagram, and re-encodes to the same bytes.
#include <cstring>
#include <vector>

#include "common/little_endian.h"
#include "fuzz_util.h"
#include "protocol/auth.h"
#include "protocol/wire.h"

namespace p = mccl::protocol;

namespace {

constexpr std::uint32_t kTag = 0x5EED0001;  // the tag of the seed corpus
constexpr std::size_t kPrefix = 15;

const p::DatagramMac& receiver_mac() {
  static const p::DatagramMac mac([] {
    p::AuthKey key;
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = std::byte(0x40 + i);
    return key;
  }());
  return mac;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!p::auth_available() || size < kPrefix) return 0;
  const std::uint8_t mode = data[0];
  const bool checksum = (mode & 1) != 0, sign = (mode & 2) != 0, flip = (mode & 4) != 0,
             later_epoch = (mode & 8) != 0, plain_receiver = (mode & 16) != 0;
  const auto* prefix = reinterpret_cast<const std::byte*>(data);
  p::DataAuth auth{.mac = plain_receiver ? nullptr : &receiver_mac(),
                   .ref_seq = mccl::common::get_le<std::uint32_t>(prefix + 1),
                   .ref_seq64 = mccl::common::get_le<std::uint64_t>(prefix + 5)};
  const std::uint16_t flip_at = mccl::common::get_le<std::uint16_t>(prefix + 13);
  std::vector<std::byte> d(prefix + kPrefix, prefix + size);

  bool signed_right = false;
  if (sign && d.size() >= p::kAuthDataHeaderBytes) {
    // As a member would: the tag over the header's first 40 bytes and the payload.
    const std::uint32_t seq = mccl::common::get_le<std::uint32_t>(d.data() + 8);
    const std::uint32_t root = mccl::common::get_le<std::uint32_t>(d.data() + 12);
    const std::uint32_t chunk = mccl::common::get_le<std::uint32_t>(d.data() + 16);
    const std::uint64_t seq64 = auth.extend(seq) + (later_epoch ? std::uint64_t{1} << 32 : 0);
    receiver_mac().compute(seq64, root, chunk, std::span(d).first(p::kDataHeaderBytes),
                           std::span(d).subspan(p::kAuthDataHeaderBytes),
                           d.data() + p::kDataHeaderBytes);
    signed_right = !later_epoch;
    if (flip) {
      const std::size_t bit = flip_at % (d.size() * 8);
      d[bit / 8] ^= std::byte(1u << (bit % 8));
      signed_right = false;
    }
  }

  p::DataHeader h;
  std::span<const std::byte> payload;
  const p::DataCheck c = p::decode_data(d, kTag, checksum, auth, h, payload);
  MCCL_FUZZ_CHECK(p::to_string(c) != nullptr);
  if (c != p::DataCheck::kOk) return 0;

  const std::size_t header_bytes = p::data_header_bytes(!plain_receiver);
  if (plain_receiver) {
    MCCL_FUZZ_CHECK(h.flags == 0);
  } else {
    // Accepted only what the key's holder sent, unaltered, for this collective.
    MCCL_FUZZ_CHECK(signed_right);
    MCCL_FUZZ_CHECK(h.flags == p::kFlagMac);
  }
  MCCL_FUZZ_CHECK(h.comm_tag == kTag && h.chunk_bytes > 0);
  MCCL_FUZZ_CHECK(payload.data() == d.data() + header_bytes);
  MCCL_FUZZ_CHECK(payload.size() == h.payload_len && d.size() == header_bytes + h.payload_len);
  MCCL_FUZZ_CHECK(h.chunk_index < p::chunk_count(h.total_bytes, h.chunk_bytes));
  const std::uint64_t start = std::uint64_t{h.chunk_index} * h.chunk_bytes;
  MCCL_FUZZ_CHECK(start < h.total_bytes && h.payload_len <= h.total_bytes - start);
  MCCL_FUZZ_CHECK(h.payload_len <= h.chunk_bytes);

  // The encoder gives the same bytes back. It writes no CRC under a MAC, so
  // a signed datagram whose CRC field holds something (only a key holder
  // could send one) re-encodes alike up to that field.
  std::vector<std::byte> again(header_bytes);
  p::encode_data_header(h, payload, checksum, auth, again.data());
  if (plain_receiver) {
    const std::size_t compared = checksum ? p::kDataHeaderBytes : p::kDataHeaderBytes - 4;
    MCCL_FUZZ_CHECK(std::memcmp(again.data(), d.data(), compared) == 0);
  } else if (h.crc == 0) {
    MCCL_FUZZ_CHECK(std::memcmp(again.data(), d.data(), header_bytes) == 0);
  } else {
    MCCL_FUZZ_CHECK(std::memcmp(again.data(), d.data(), p::kDataHeaderBytes - 4) == 0);
  }
  return 0;
}
