// Fuzzes the codec's decoder (src/codec/prefix_decoder.h) on any bytes a
// root may multicast as an encoded stream: fed whole (codec::decode) and in
// two growing prefixes, as the multicast step feeds it, it must refuse or
// decode alike, write the same elements when it decodes, and never write
// past the `count` elements it was given.
#include <algorithm>
#include <cstring>
#include <vector>

#include "codec/codec.h"
#include "codec/prefix_decoder.h"
#include "fuzz_util.h"

namespace c = mccl::codec;
using mccl::DataType;

namespace {
constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                               DataType::kFloat16};
constexpr std::byte kGuard{0x5A};
constexpr std::size_t kGuardBytes = 64;
}  // namespace

// Input: [0] the element type (mod 4), [1,3) the element count (little
// endian, below 65536), [3] where the first prefix ends (in 256ths of the
// stream), then the stream.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const DataType type = kTypes[data[0] % 4];
  const std::size_t count = data[1] | (std::size_t{data[2]} << 8);
  const auto stream = mccl::fuzz::as_bytes(data + 4, size - 4);
  const std::size_t split = stream.size() * data[3] / 256;
  const std::size_t bytes = count * mccl::size_of(type);

  std::vector<std::byte> whole(bytes + kGuardBytes, kGuard), fed(bytes + kGuardBytes, kGuard);
  const mccl::common::Status a = c::decode(stream, type, count, whole.data());
  c::PrefixDecoder d(type, count, fed.data());
  mccl::common::Status b = d.advance(stream, split);
  MCCL_FUZZ_CHECK(d.decoded() <= count);
  if (b.is_ok()) b = d.finish(stream);
  MCCL_FUZZ_CHECK(a.is_ok() == b.is_ok());
  if (a.is_ok()) {
    MCCL_FUZZ_CHECK(d.decoded() == count);
    MCCL_FUZZ_CHECK(std::memcmp(whole.data(), fed.data(), bytes) == 0);
  }
  for (std::size_t i = bytes; i < bytes + kGuardBytes; ++i) {
    MCCL_FUZZ_CHECK(whole[i] == kGuard && fed[i] == kGuard);
  }
  return 0;
}
