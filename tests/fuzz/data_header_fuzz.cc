// Fuzzes the decoder of every multicast datagram (src/protocol/wire.cc,
// decode_data): whatever arrives on the group, it must either reject the
// datagram or return a header whose chunk lies inside its stream and a
// payload inside the datagram; an accepted datagram re-encodes to itself.
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "protocol/wire.h"

namespace p = mccl::protocol;

namespace {
constexpr std::uint32_t kTag = 0x5EED0001;  // the tag of the seed corpus
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // First byte: whether the receiver checks CRCs; the rest is the datagram.
  const bool checksum = (data[0] & 1) != 0;
  const auto dgram = mccl::fuzz::as_bytes(data + 1, size - 1);
  p::DataHeader h;
  std::span<const std::byte> payload;
  const p::DataCheck c = p::decode_data(dgram, kTag, checksum, h, payload);
  MCCL_FUZZ_CHECK(p::to_string(c) != nullptr);
  if (c != p::DataCheck::kOk) return 0;

  MCCL_FUZZ_CHECK(h.comm_tag == kTag && h.flags == 0 && h.chunk_bytes > 0);
  MCCL_FUZZ_CHECK(payload.data() == dgram.data() + p::kDataHeaderBytes);
  MCCL_FUZZ_CHECK(payload.size() == h.payload_len);
  MCCL_FUZZ_CHECK(h.chunk_index < p::chunk_count(h.total_bytes, h.chunk_bytes));
  // Where the receiver will copy the payload: inside the stream.
  const std::uint64_t start = std::uint64_t{h.chunk_index} * h.chunk_bytes;
  MCCL_FUZZ_CHECK(start < h.total_bytes && h.payload_len <= h.total_bytes - start);
  MCCL_FUZZ_CHECK(h.payload_len <= h.chunk_bytes);

  std::byte again[p::kDataHeaderBytes];
  p::encode_data_header(h, payload, checksum, again);
  // Without checksums the CRC field is carried, not computed: compare the rest.
  const std::size_t compared = checksum ? p::kDataHeaderBytes : p::kDataHeaderBytes - 4;
  MCCL_FUZZ_CHECK(std::memcmp(again, dgram.data(), compared) == 0);
  return 0;
}
