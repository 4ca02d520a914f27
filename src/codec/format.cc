#include "codec/format.h"

#include <cstring>
#include <string>

#include "common/little_endian.h"

namespace mccl::codec {

using common::get_le;
using common::put_le;

void write_header(const StreamHeader& h, std::byte* out) {
  std::memset(out, 0, kHeaderBytes);
  put_le<std::uint32_t>(out, kMagic);
  out[4] = static_cast<std::byte>(h.mode);
  out[5] = static_cast<std::byte>(h.type);
  put_le<std::uint32_t>(out + 8, h.block_elems);
  put_le<std::uint64_t>(out + 16, h.count);
  put_le<std::uint64_t>(out + 24, std::bit_cast<std::uint64_t>(h.param));
}

common::Status read_header(std::span<const std::byte> in, StreamHeader& out) {
  if (in.size() < kHeaderBytes) {
    return common::invalid_argument("compressed stream of " + std::to_string(in.size()) +
                                    " bytes is shorter than its header");
  }
  const std::byte* p = in.data();
  if (get_le<std::uint32_t>(p) != kMagic || get_le<std::uint16_t>(p + 6) != 0 ||
      get_le<std::uint32_t>(p + 12) != 0) {
    return common::invalid_argument("compressed stream: bad magic or reserved field");
  }
  const auto mode = std::to_integer<unsigned>(p[4]);
  const auto type = std::to_integer<unsigned>(p[5]);
  if (mode > static_cast<unsigned>(Mode::kZfp) || type > static_cast<unsigned>(DataType::kUInt8)) {
    return common::invalid_argument("compressed stream: unknown mode " + std::to_string(mode) +
                                    " or type " + std::to_string(type));
  }
  out.mode = static_cast<Mode>(mode);
  out.type = static_cast<DataType>(type);
  out.block_elems = get_le<std::uint32_t>(p + 8);
  out.count = get_le<std::uint64_t>(p + 16);
  out.param = std::bit_cast<double>(get_le<std::uint64_t>(p + 24));
  return common::Status::ok();
}

}  // namespace mccl::codec
