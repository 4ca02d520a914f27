#include "protocol/incast.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "common/settings.h"

namespace mccl::protocol {

std::size_t auto_incast_bytes(std::uint32_t slowest_mbit) {
  if (slowest_mbit == 0) return kIncastAutoMinBytes;
  constexpr double kBytesPerMbit = 1e6 / 8;
  const double port = slowest_mbit * kBytesPerMbit * kIncastAutoSeconds;
  return std::clamp(static_cast<std::size_t>(port), kIncastAutoMinBytes, kIncastAutoMaxBytes);
}

std::size_t incast_bytes_from_settings(std::uint32_t slowest_mbit) {
  // get() holds "auto" or a count: the table's "auto|0.." admits nothing else.
  const std::string value = common::settings::kProtoIncastBytes.get();
  std::size_t bytes = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
  if (value == "auto" || ec != std::errc{} || end != value.data() + value.size()) {
    return auto_incast_bytes(slowest_mbit);
  }
  return bytes;
}

}  // namespace mccl::protocol
