// Fuzzes what a peer sends on the reliable transport: the control header
// (src/protocol/wire.cc, decode_control) and the body of a repair request
// (src/protocol/repair.cc, parse_repair_ranges), the one body whose numbers
// index the stream a rank serves from.
#include <cstring>

#include "fuzz_util.h"
#include "protocol/repair.h"
#include "protocol/wire.h"

namespace p = mccl::protocol;

namespace {
constexpr std::uint32_t kTag = 0x5EED0001;  // the tag of the seed corpus
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  // First four bytes: how many chunks the served stream has (what the
  // receiver knows from its own collective); the rest is the message.
  std::uint32_t chunks32;
  std::memcpy(&chunks32, data, 4);
  const std::uint64_t chunks = chunks32;
  const auto msg = mccl::fuzz::as_bytes(data + 4, size - 4);

  p::ControlHeader h;
  std::span<const std::byte> body;
  if (!p::decode_control(msg, kTag, h, body)) return 0;
  MCCL_FUZZ_CHECK(h.comm_tag == kTag);
  MCCL_FUZZ_CHECK(p::to_string(h.kind)[0] != '?');
  MCCL_FUZZ_CHECK(body.data() == msg.data() + p::kControlHeaderBytes);
  MCCL_FUZZ_CHECK(body.size() == msg.size() - p::kControlHeaderBytes);

  std::byte again[p::kControlHeaderBytes];
  p::encode_control_header(h, again);
  MCCL_FUZZ_CHECK(std::memcmp(again, msg.data(), p::kControlHeaderBytes) == 0);

  // Every range handed on is non-empty and inside the stream, and a body is
  // either taken whole or not at all.
  std::uint64_t calls = 0;
  const bool ok = p::parse_repair_ranges(body, chunks, [&](std::uint64_t b, std::uint64_t e) {
    MCCL_FUZZ_CHECK(b < e && e <= chunks);
    ++calls;
  });
  MCCL_FUZZ_CHECK(ok ? calls == body.size() / 8 : calls == 0);
  return 0;
}
