// The two halves of a repair that both a collective in flight and a rank
// that already completed eagerly (Context's eager copies) perform: reading
// the ranges a kRepairRequest asks for, and sending chunks of a stream to
// the right neighbour as kRepairData messages.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "common/status.h"

namespace mccl::protocol {

class Context;

// Calls `range(begin, end)` for each (first_chunk u32, count u32) range of a
// kRepairRequest body. False, after calling it for none, when the body is
// malformed or a range is empty or reaches past `chunks`.
bool parse_repair_ranges(std::span<const std::byte> body, std::uint64_t chunks,
                         const std::function<void(std::uint64_t, std::uint64_t)>& range);

// Sends chunks [begin, end) of stream `root` of collective `seq` to the
// right neighbour, at most MCCL_PROTO_REPAIR_MAX_BYTES per message, and
// counts them as served. `stream` is the whole stream, laid out in chunks of
// the context's chunk size. A neighbour that is gone is no error here: it
// may have asked, then found the chunks in late multicast, released this
// rank and exited. Whether it was still needed is decided when the
// transport reports it (Context::check_failed_peers).
common::Status send_repair_data(Context& ctx, std::uint32_t seq, std::uint32_t root,
                                std::uint64_t signature, std::span<const std::byte> stream,
                                std::uint64_t begin, std::uint64_t end);

}  // namespace mccl::protocol
