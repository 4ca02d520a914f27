#include "protocol/incast.h"

#include <algorithm>

namespace mccl::protocol {

std::size_t auto_incast_bytes(std::uint32_t slowest_mbit) {
  if (slowest_mbit == 0) return kIncastAutoMinBytes;
  constexpr double kBytesPerMbit = 1e6 / 8;
  const double port = slowest_mbit * kBytesPerMbit * kIncastAutoSeconds;
  return std::clamp(static_cast<std::size_t>(port), kIncastAutoMinBytes, kIncastAutoMaxBytes);
}

}  // namespace mccl::protocol
