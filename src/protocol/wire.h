// The wire format: the header of every multicast datagram and of every
// message on the reliable transport. docs/wire-protocol.md holds the bit
// diagrams; this file is their single implementation. All fields are
// little-endian and encoded byte by byte, never by casting structs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/auth.h"
#include "transport/datagram.h"

namespace mccl::protocol {

inline constexpr std::uint16_t kDataMagic = 0x4D43;     // "CM" on the wire (LE of 'M','C')
inline constexpr std::uint16_t kControlMagic = 0x524D;  // "MR"
inline constexpr std::uint8_t kWireVersion = 1;

// ---- Multicast datagrams -------------------------------------------------

// 40 bytes, plus the 16-byte MAC (bytes 40..55) when the header's flags
// carry kFlagMac, as every datagram does under MCCL_PROTO_AUTH.
inline constexpr std::size_t kDataHeaderBytes = 40;
inline constexpr std::size_t kAuthDataHeaderBytes = kDataHeaderBytes + kMacBytes;
inline constexpr std::uint8_t kKindData = 1;
inline constexpr std::uint16_t kFlagMac = 1;

constexpr std::size_t data_header_bytes(bool auth) {
  return auth ? kAuthDataHeaderBytes : kDataHeaderBytes;
}

struct DataHeader {
  std::uint32_t comm_tag = 0;
  std::uint32_t seq = 0;   // collective sequence number on the communicator
  std::uint32_t root = 0;  // rank whose stream this chunk belongs to
  std::uint32_t chunk_index = 0;
  std::uint32_t chunk_bytes = 0;  // payload bytes of every chunk but the last
  std::uint64_t total_bytes = 0;  // size of the root's whole stream
  std::uint16_t payload_len = 0;
  std::uint16_t flags = 0;  // 0 or kFlagMac; the encoder adds kFlagMac itself
  std::uint32_t crc = 0;    // CRC32C of bytes 0..35 and the payload, or 0
};

// How a communicator authenticates its datagrams. The nonce of a MAC takes
// the collective's 64-bit number, which the 32-bit wire seq stands for:
// the number nearest to (ref_seq, ref_seq64), two values of one collective
// (the context's next). Exact while the collectives in flight span less
// than 2^31, which the context's window (2^16) guarantees.
struct DataAuth {
  const DatagramMac* mac = nullptr;  // null: datagrams carry no MAC
  std::uint32_t ref_seq = 0;
  std::uint64_t ref_seq64 = 0;
  unsigned lane = 0;  // the MAC's context that computes tags (DatagramMac's lanes)
  std::uint64_t extend(std::uint32_t seq) const {
    return ref_seq64 + static_cast<std::uint64_t>(
                           static_cast<std::int64_t>(static_cast<std::int32_t>(seq - ref_seq)));
  }
};

// Writes the header for `payload`; computes the CRC when `checksum` is set.
void encode_data_header(const DataHeader& h, std::span<const std::byte> payload, bool checksum,
                        std::byte out[kDataHeaderBytes]);
// With `auth.mac`, writes the 56-byte header: kFlagMac, no CRC (the MAC
// detects corruption too), the MAC. Without, as above.
void encode_data_header(const DataHeader& h, std::span<const std::byte> payload, bool checksum,
                        const DataAuth& auth, std::byte* out);

enum class DataCheck {
  kOk,
  kTooShort,
  kBadMagic,
  kBadVersion,
  kBadKind,
  kBadFlags,
  kForeignTag,
  kBadLength,  // payload_len disagrees with the datagram or with the layout
  kBadChunk,   // chunk index or chunk size out of bounds
  kBadChecksum,
  kBadMac,  // not sent by a member, or altered on the way
};
const char* to_string(DataCheck c);

// Bytes 4..19 of a data header (tag, seq, root, chunk index): what tells a
// datagram from every other, the key of a landing (transport/datagram.h).
inline constexpr std::size_t kDataKeyOffset = 4;
static_assert(transport::kLandingKeyBytes == 16, "the data key is four 32-bit fields");
struct DataKey {
  std::uint32_t seq = 0;
  std::uint32_t root = 0;
  std::uint32_t chunk_index = 0;
};
// Writes the kLandingKeyBytes of the key at `out` (a header's
// kDataKeyOffset, or a landing's key).
void encode_data_key(std::uint32_t tag, const DataKey& k, std::byte* out);
// The key of a data header of this communicator (`tag`); false where
// `header` is too short, not a data header, or of another communicator.
// Nothing else is checked: the key only guides where bytes may land.
bool peek_data_key(std::span<const std::byte> header, std::uint32_t tag, DataKey& k);

// Parses and validates everything that can be checked without knowing the
// collective: framing, magic, version, tag, chunk layout, checksum. On kOk,
// `payload` points into `datagram`.
DataCheck decode_data(std::span<const std::byte> datagram, std::uint32_t expected_tag,
                      bool checksum, DataHeader& h, std::span<const std::byte>& payload);
// With `auth.mac`, a datagram must carry kFlagMac and a MAC that verifies
// (checked last, after every cheap field); the CRC is then not checked.
DataCheck decode_data(std::span<const std::byte> datagram, std::uint32_t expected_tag,
                      bool checksum, const DataAuth& auth, DataHeader& h,
                      std::span<const std::byte>& payload);
// The same for a datagram read in two pieces (a landed one): `header`
// holds exactly the header, `body` the payload; on kOk `payload` is `body`.
DataCheck decode_data(std::span<const std::byte> header, std::span<const std::byte> body,
                      std::uint32_t expected_tag, bool checksum, const DataAuth& auth,
                      DataHeader& h, std::span<const std::byte>& payload);

// Number of chunks of a stream (0 for an empty stream).
constexpr std::uint64_t chunk_count(std::uint64_t total, std::uint32_t chunk_bytes) {
  return chunk_bytes == 0 ? 0 : (total + chunk_bytes - 1) / chunk_bytes;
}
// Payload bytes of chunk `index` of a stream.
constexpr std::uint64_t chunk_length(std::uint64_t total, std::uint32_t chunk_bytes,
                                     std::uint64_t index) {
  std::uint64_t start = index * chunk_bytes;
  return start >= total ? 0 : (total - start < chunk_bytes ? total - start : chunk_bytes);
}

// ---- Reliable-transport messages ----------------------------------------

inline constexpr std::size_t kControlHeaderBytes = 32;

enum class ControlKind : std::uint8_t {
  kHave = 1,           // sender holds every byte of the collective
  kRelease = 2,        // sender will request nothing more from the receiver
  kRepairRequest = 3,  // body: (first_chunk u32, count u32) ranges of stream `root`
  kRepairData = 4,     // arg0 = first chunk; body = the chunks' bytes
  kAbort = 5,          // arg0 = error code, arg1 = origin rank; body = message text
  kP2pData = 6,        // point-to-point algorithms: arg0/arg1 are theirs; body = bytes
  kBarrier = 7,        // arg0 = round
  kCallRefused = 8,    // arg0 = error code, arg1 = origin rank; body = why it refused seq
  kLossReport = 9,     // to `root`: arg0 = first chunk of its stream lost, arg1 = chunks lost
  kP2pMessage = 10,    // send/receive (protocol/p2p.h): seq = message number, root = tag,
                       // signature = total bytes, arg0 = segment index; body = bytes
  kMembership = 11,    // shrink (protocol/membership.h): seq = exchange number, arg0 = round,
                       // arg1 = flags; body = the exchange's bytes
};
const char* to_string(ControlKind k);

struct ControlHeader {
  ControlKind kind = ControlKind::kHave;
  std::uint32_t comm_tag = 0;
  std::uint32_t seq = 0;
  std::uint32_t root = 0;
  std::uint64_t signature = 0;  // digest of the collective's arguments
  std::uint32_t arg0 = 0;
  std::uint32_t arg1 = 0;
};

void encode_control_header(const ControlHeader& h, std::byte out[kControlHeaderBytes]);

// Validates framing, magic, version, kind and tag; on success `body` is the
// rest of the message.
bool decode_control(std::span<const std::byte> message, std::uint32_t expected_tag,
                    ControlHeader& h, std::span<const std::byte>& body);

}  // namespace mccl::protocol
