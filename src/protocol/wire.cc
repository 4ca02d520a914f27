#include "protocol/wire.h"

#include "common/crc32c.h"
#include "common/enum_names.h"
#include "common/little_endian.h"

namespace mccl::protocol {

namespace {

constexpr std::size_t kCrcOffset = 36;

std::uint32_t data_crc(const std::byte* header, std::span<const std::byte> payload) {
  std::uint32_t c = common::crc32c(0, header, kCrcOffset);
  return common::crc32c(c, payload.data(), payload.size());
}

}  // namespace

void encode_data_header(const DataHeader& h, std::span<const std::byte> payload, bool checksum,
                        std::byte out[kDataHeaderBytes]) {
  encode_data_header(h, payload, checksum, DataAuth{}, out);
}

void encode_data_header(const DataHeader& h, std::span<const std::byte> payload, bool checksum,
                        const DataAuth& auth, std::byte* out) {
  const bool mac = auth.mac != nullptr;
  common::put_le<std::uint16_t>(out + 0, kDataMagic);
  out[2] = std::byte(kWireVersion);
  out[3] = std::byte(kKindData);
  encode_data_key(h.comm_tag, {h.seq, h.root, h.chunk_index}, out + kDataKeyOffset);
  common::put_le<std::uint32_t>(out + 20, h.chunk_bytes);
  common::put_le<std::uint64_t>(out + 24, h.total_bytes);
  common::put_le<std::uint16_t>(out + 32, h.payload_len);
  common::put_le<std::uint16_t>(out + 34,
                                static_cast<std::uint16_t>(h.flags | (mac ? kFlagMac : 0)));
  if (!mac) {
    common::put_le<std::uint32_t>(out + kCrcOffset, checksum ? data_crc(out, payload) : 0);
    return;
  }
  common::put_le<std::uint32_t>(out + kCrcOffset, 0);
  auth.mac->compute(auth.extend(h.seq), h.root, h.chunk_index,
                    std::span<const std::byte>(out, kDataHeaderBytes), payload,
                    out + kDataHeaderBytes, auth.lane);
}

DataCheck decode_data(std::span<const std::byte> d, std::uint32_t expected_tag, bool checksum,
                      DataHeader& h, std::span<const std::byte>& payload) {
  return decode_data(d, expected_tag, checksum, DataAuth{}, h, payload);
}

namespace {

// Every check of decode_data but the MAC's or the CRC's, for a datagram of
// `size` bytes whose header begins at `p` (at least kDataHeaderBytes).
DataCheck check_header(const std::byte* p, std::size_t size, std::uint32_t expected_tag, bool mac,
                       DataHeader& h) {
  if (common::get_le<std::uint16_t>(p) != kDataMagic) return DataCheck::kBadMagic;
  if (std::to_integer<std::uint8_t>(p[2]) != kWireVersion) return DataCheck::kBadVersion;
  if (std::to_integer<std::uint8_t>(p[3]) != kKindData) return DataCheck::kBadKind;
  h.comm_tag = common::get_le<std::uint32_t>(p + 4);
  h.seq = common::get_le<std::uint32_t>(p + 8);
  h.root = common::get_le<std::uint32_t>(p + 12);
  h.chunk_index = common::get_le<std::uint32_t>(p + 16);
  h.chunk_bytes = common::get_le<std::uint32_t>(p + 20);
  h.total_bytes = common::get_le<std::uint64_t>(p + 24);
  h.payload_len = common::get_le<std::uint16_t>(p + 32);
  h.flags = common::get_le<std::uint16_t>(p + 34);
  h.crc = common::get_le<std::uint32_t>(p + kCrcOffset);
  // Without the flag, a receiver that authenticates would accept what
  // anyone could send: the flag is required, not merely allowed.
  if (h.flags != (mac ? kFlagMac : 0)) return DataCheck::kBadFlags;
  if (h.comm_tag != expected_tag) return DataCheck::kForeignTag;
  if (size != data_header_bytes(mac) + h.payload_len) return DataCheck::kBadLength;
  if (h.chunk_bytes == 0) return DataCheck::kBadChunk;
  if (h.chunk_index >= chunk_count(h.total_bytes, h.chunk_bytes)) return DataCheck::kBadChunk;
  if (h.payload_len != chunk_length(h.total_bytes, h.chunk_bytes, h.chunk_index)) {
    return DataCheck::kBadLength;
  }
  return DataCheck::kOk;
}

// The MAC (checked last, after every cheap field) or the CRC.
DataCheck check_body(const std::byte* p, std::span<const std::byte> body, bool checksum,
                     const DataAuth& auth, const DataHeader& h) {
  if (auth.mac != nullptr) {
    if (!auth.mac->verify(auth.extend(h.seq), h.root, h.chunk_index,
                          std::span<const std::byte>(p, kDataHeaderBytes), body,
                          p + kDataHeaderBytes, auth.lane)) {
      return DataCheck::kBadMac;
    }
  } else if (checksum && h.crc != data_crc(p, body)) {
    return DataCheck::kBadChecksum;
  }
  return DataCheck::kOk;
}

}  // namespace

DataCheck decode_data(std::span<const std::byte> d, std::uint32_t expected_tag, bool checksum,
                      const DataAuth& auth, DataHeader& h, std::span<const std::byte>& payload) {
  const bool mac = auth.mac != nullptr;
  if (d.size() < kDataHeaderBytes) return DataCheck::kTooShort;
  DataCheck c = check_header(d.data(), d.size(), expected_tag, mac, h);
  if (c != DataCheck::kOk) return c;
  std::span<const std::byte> body = d.subspan(data_header_bytes(mac));
  c = check_body(d.data(), body, checksum, auth, h);
  if (c == DataCheck::kOk) payload = body;
  return c;
}

DataCheck decode_data(std::span<const std::byte> header, std::span<const std::byte> body,
                      std::uint32_t expected_tag, bool checksum, const DataAuth& auth,
                      DataHeader& h, std::span<const std::byte>& payload) {
  const bool mac = auth.mac != nullptr;
  if (header.size() < kDataHeaderBytes) return DataCheck::kTooShort;
  if (header.size() != data_header_bytes(mac)) return DataCheck::kBadLength;
  DataCheck c = check_header(header.data(), header.size() + body.size(), expected_tag, mac, h);
  if (c != DataCheck::kOk) return c;
  c = check_body(header.data(), body, checksum, auth, h);
  if (c == DataCheck::kOk) payload = body;
  return c;
}

void encode_data_key(std::uint32_t tag, const DataKey& k, std::byte* out) {
  common::put_le<std::uint32_t>(out + 0, tag);
  common::put_le<std::uint32_t>(out + 4, k.seq);
  common::put_le<std::uint32_t>(out + 8, k.root);
  common::put_le<std::uint32_t>(out + 12, k.chunk_index);
}

bool peek_data_key(std::span<const std::byte> header, std::uint32_t tag, DataKey& k) {
  if (header.size() < kDataHeaderBytes) return false;
  const std::byte* p = header.data();
  if (common::get_le<std::uint16_t>(p) != kDataMagic) return false;
  if (std::to_integer<std::uint8_t>(p[3]) != kKindData) return false;
  if (common::get_le<std::uint32_t>(p + kDataKeyOffset) != tag) return false;
  k.seq = common::get_le<std::uint32_t>(p + 8);
  k.root = common::get_le<std::uint32_t>(p + 12);
  k.chunk_index = common::get_le<std::uint32_t>(p + 16);
  return true;
}

namespace {
constexpr common::EnumName<DataCheck> kDataCheckNames[] = {
    {DataCheck::kOk, "ok"},
    {DataCheck::kTooShort, "too short"},
    {DataCheck::kBadMagic, "bad magic"},
    {DataCheck::kBadVersion, "bad version"},
    {DataCheck::kBadKind, "bad kind"},
    {DataCheck::kBadFlags, "bad flags"},
    {DataCheck::kForeignTag, "foreign communicator tag"},
    {DataCheck::kBadLength, "bad length"},
    {DataCheck::kBadChunk, "chunk out of bounds"},
    {DataCheck::kBadChecksum, "bad checksum"},
    {DataCheck::kBadMac, "failed authentication"}};
}  // namespace

const char* to_string(DataCheck c) { return common::name_of(c, kDataCheckNames); }

void encode_control_header(const ControlHeader& h, std::byte out[kControlHeaderBytes]) {
  common::put_le<std::uint16_t>(out + 0, kControlMagic);
  out[2] = std::byte(kWireVersion);
  out[3] = std::byte(static_cast<std::uint8_t>(h.kind));
  common::put_le<std::uint32_t>(out + 4, h.comm_tag);
  common::put_le<std::uint32_t>(out + 8, h.seq);
  common::put_le<std::uint32_t>(out + 12, h.root);
  common::put_le<std::uint64_t>(out + 16, h.signature);
  common::put_le<std::uint32_t>(out + 24, h.arg0);
  common::put_le<std::uint32_t>(out + 28, h.arg1);
}

bool decode_control(std::span<const std::byte> m, std::uint32_t expected_tag, ControlHeader& h,
                    std::span<const std::byte>& body) {
  if (m.size() < kControlHeaderBytes) return false;
  const std::byte* p = m.data();
  if (common::get_le<std::uint16_t>(p) != kControlMagic) return false;
  if (std::to_integer<std::uint8_t>(p[2]) != kWireVersion) return false;
  auto kind = std::to_integer<std::uint8_t>(p[3]);
  if (kind < 1 || kind > static_cast<std::uint8_t>(ControlKind::kMembership)) return false;
  h.kind = static_cast<ControlKind>(kind);
  h.comm_tag = common::get_le<std::uint32_t>(p + 4);
  if (h.comm_tag != expected_tag) return false;
  h.seq = common::get_le<std::uint32_t>(p + 8);
  h.root = common::get_le<std::uint32_t>(p + 12);
  h.signature = common::get_le<std::uint64_t>(p + 16);
  h.arg0 = common::get_le<std::uint32_t>(p + 24);
  h.arg1 = common::get_le<std::uint32_t>(p + 28);
  body = m.subspan(kControlHeaderBytes);
  return true;
}

namespace {
constexpr common::EnumName<ControlKind> kControlNames[] = {
    {ControlKind::kHave, "have"},
    {ControlKind::kRelease, "release"},
    {ControlKind::kRepairRequest, "repair-request"},
    {ControlKind::kRepairData, "repair-data"},
    {ControlKind::kAbort, "abort"},
    {ControlKind::kP2pData, "p2p-data"},
    {ControlKind::kBarrier, "barrier"},
    {ControlKind::kCallRefused, "call-refused"},
    {ControlKind::kLossReport, "loss-report"},
    {ControlKind::kP2pMessage, "p2p-message"},
    {ControlKind::kMembership, "membership"}};
}  // namespace

const char* to_string(ControlKind k) { return common::name_of(k, kControlNames); }

}  // namespace mccl::protocol
