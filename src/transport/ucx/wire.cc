// Byte-by-byte little-endian encoding of the UCX transport's headers
// (wire.h): no struct is ever copied onto the wire.
#include "transport/ucx/wire.h"

#include "common/hash.h"
#include "common/little_endian.h"

namespace mccl::transport::ucx::wire {

void encode(const AddressHeader& h, std::span<std::byte, kAddressHeaderBytes> out) {
  std::byte* p = out.data();
  common::put_le<std::uint32_t>(p + 0, kAddressMagic);
  common::put_le<std::uint16_t>(p + 4, kVersion);
  common::put_le<std::uint16_t>(p + 6, h.flags);
  common::put_le<std::uint32_t>(p + 8, h.rank);
  common::put_le<std::uint32_t>(p + 12, h.size);
  common::put_le<std::uint32_t>(p + 16, h.address_length);
  common::put_le<std::uint32_t>(p + 20, 0);
  common::put_le<std::uint64_t>(p + 24, h.nonce);
}

bool decode(std::span<const std::byte, kAddressHeaderBytes> in, AddressHeader& h,
            std::string& why) {
  const std::byte* p = in.data();
  if (common::get_le<std::uint32_t>(p) != kAddressMagic) {
    why = "not a UCX transport address (bad magic; is every rank using MCCL's UCX transport?)";
    return false;
  }
  if (common::get_le<std::uint16_t>(p + 4) != kVersion) {
    why = "UCX transport address of version " +
          std::to_string(common::get_le<std::uint16_t>(p + 4)) + ", this build speaks " +
          std::to_string(kVersion);
    return false;
  }
  h.flags = common::get_le<std::uint16_t>(p + 6);
  h.rank = common::get_le<std::uint32_t>(p + 8);
  h.size = common::get_le<std::uint32_t>(p + 12);
  h.address_length = common::get_le<std::uint32_t>(p + 16);
  h.nonce = common::get_le<std::uint64_t>(p + 24);
  if (h.address_length == 0 || h.address_length > kMaxWorkerAddressBytes) {
    why = "worker address length " + std::to_string(h.address_length) + " out of range";
    return false;
  }
  return true;
}

void encode(const AmHeader& h, std::span<std::byte, kAmHeaderBytes> out) {
  std::byte* p = out.data();
  common::put_le<std::uint64_t>(p + 0, h.session);
  common::put_le<std::uint32_t>(p + 8, h.from);
  common::put_le<std::uint16_t>(p + 12, static_cast<std::uint16_t>(h.kind));
  common::put_le<std::uint16_t>(p + 14, 0);
  common::put_le<std::uint64_t>(p + 16, h.seq);
}

bool decode(std::span<const std::byte> in, AmHeader& h) {
  if (in.size() != kAmHeaderBytes) return false;
  const std::byte* p = in.data();
  h.session = common::get_le<std::uint64_t>(p + 0);
  h.from = common::get_le<std::uint32_t>(p + 8);
  const auto kind = common::get_le<std::uint16_t>(p + 12);
  if (kind < static_cast<std::uint16_t>(Kind::kData) ||
      kind > static_cast<std::uint16_t>(Kind::kHelloAck)) {
    return false;
  }
  h.kind = static_cast<Kind>(kind);
  h.seq = common::get_le<std::uint64_t>(p + 16);
  return true;
}

std::uint64_t session_of(std::span<const std::uint64_t> nonces) {
  common::Fnv1a64 h;
  for (std::uint64_t n : nonces) h.add(n);
  return common::mix64(h.value());  // spreads the last bytes over every bit
}

}  // namespace mccl::transport::ucx::wire
