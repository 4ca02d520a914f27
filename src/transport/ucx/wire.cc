// Byte-by-byte little-endian encoding of the UCX transport's headers
// (wire.h): no struct is ever copied onto the wire.
#include "transport/ucx/wire.h"

namespace mccl::transport::ucx::wire {
namespace {

template <typename T>
void put(std::byte* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

template <typename T>
T get(const std::byte* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(std::to_integer<T>(p[i]) << (8 * i));
  return v;
}

}  // namespace

void encode(const AddressHeader& h, std::span<std::byte, kAddressHeaderBytes> out) {
  std::byte* p = out.data();
  put<std::uint32_t>(p + 0, kAddressMagic);
  put<std::uint16_t>(p + 4, kVersion);
  put<std::uint16_t>(p + 6, h.flags);
  put<std::uint32_t>(p + 8, h.rank);
  put<std::uint32_t>(p + 12, h.size);
  put<std::uint32_t>(p + 16, h.address_length);
  put<std::uint32_t>(p + 20, 0);
  put<std::uint64_t>(p + 24, h.nonce);
}

bool decode(std::span<const std::byte, kAddressHeaderBytes> in, AddressHeader& h,
            std::string& why) {
  const std::byte* p = in.data();
  if (get<std::uint32_t>(p) != kAddressMagic) {
    why = "not a UCX transport address (bad magic; is every rank using MCCL's UCX transport?)";
    return false;
  }
  if (get<std::uint16_t>(p + 4) != kVersion) {
    why = "UCX transport address of version " + std::to_string(get<std::uint16_t>(p + 4)) +
          ", this build speaks " + std::to_string(kVersion);
    return false;
  }
  h.flags = get<std::uint16_t>(p + 6);
  h.rank = get<std::uint32_t>(p + 8);
  h.size = get<std::uint32_t>(p + 12);
  h.address_length = get<std::uint32_t>(p + 16);
  h.nonce = get<std::uint64_t>(p + 24);
  if (h.address_length == 0 || h.address_length > kMaxWorkerAddressBytes) {
    why = "worker address length " + std::to_string(h.address_length) + " out of range";
    return false;
  }
  return true;
}

void encode(const AmHeader& h, std::span<std::byte, kAmHeaderBytes> out) {
  std::byte* p = out.data();
  put<std::uint64_t>(p + 0, h.session);
  put<std::uint32_t>(p + 8, h.from);
  put<std::uint16_t>(p + 12, static_cast<std::uint16_t>(h.kind));
  put<std::uint16_t>(p + 14, 0);
  put<std::uint64_t>(p + 16, h.seq);
}

bool decode(std::span<const std::byte> in, AmHeader& h) {
  if (in.size() != kAmHeaderBytes) return false;
  const std::byte* p = in.data();
  h.session = get<std::uint64_t>(p + 0);
  h.from = get<std::uint32_t>(p + 8);
  const auto kind = get<std::uint16_t>(p + 12);
  if (kind < static_cast<std::uint16_t>(Kind::kData) ||
      kind > static_cast<std::uint16_t>(Kind::kHelloAck)) {
    return false;
  }
  h.kind = static_cast<Kind>(kind);
  h.seq = get<std::uint64_t>(p + 16);
  return true;
}

std::uint64_t session_of(std::span<const std::uint64_t> nonces) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint64_t n : nonces) {
    for (int i = 0; i < 8; ++i) {
      h ^= (n >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  // splitmix64 finaliser: spreads the last bytes over every bit.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace mccl::transport::ucx::wire
