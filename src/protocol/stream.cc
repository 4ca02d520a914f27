#include "protocol/stream.h"

#include <cstring>

namespace mccl::protocol {

Stream::Stream(const StreamSpec& spec, std::uint32_t chunk_bytes, bool local)
    : spec_(spec),
      chunk_bytes_(chunk_bytes),
      chunks_(chunk_count(spec.bytes, chunk_bytes)),
      local_(local) {
  have.resize(chunks_);
  requested.resize(chunks_);
  wanted.resize(chunks_);
  if (local_) have.set_all();
}

bool Stream::place(std::uint64_t chunk, std::span<const std::byte> payload) {
  if (have.test(chunk)) return false;
  std::byte* to = destination(chunk);
  if (payload.data() != to) std::memcpy(to, payload.data(), payload.size());
  have.set(chunk);
  return true;
}

std::uint64_t Stream::place_range(std::uint64_t begin, std::uint64_t end,
                                  std::span<const std::byte> data) {
  std::uint64_t fresh = 0;
  for (std::uint64_t c = begin; c < end; ++c) {
    if (have.test(c)) continue;
    std::memcpy(spec_.buffer + offset(c), data.data() + (offset(c) - offset(begin)), length(c));
    have.set(c);
    ++fresh;
  }
  return fresh;
}

}  // namespace mccl::protocol
