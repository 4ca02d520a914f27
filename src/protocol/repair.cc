#include "protocol/repair.h"

#include <algorithm>
#include <vector>

#include "protocol/context.h"
#include "protocol/wire.h"

namespace mccl::protocol {

bool parse_repair_ranges(std::span<const std::byte> body, std::uint64_t chunks,
                         const std::function<void(std::uint64_t, std::uint64_t)>& range) {
  if (body.size() % 8 != 0) return false;
  auto get32 = [&body](std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      v |= std::uint32_t(std::to_integer<unsigned>(body[at + i])) << (8 * i);
    }
    return v;
  };
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (std::size_t at = 0; at < body.size(); at += 8) {
    const std::uint64_t begin = get32(at), end = begin + get32(at + 4);
    if (end > chunks || begin >= end) return false;
    ranges.emplace_back(begin, end);
  }
  for (const auto& [begin, end] : ranges) range(begin, end);
  return true;
}

common::Status send_repair_data(Context& ctx, std::uint32_t seq, std::uint32_t root,
                                std::uint64_t signature, std::span<const std::byte> stream,
                                std::uint64_t begin, std::uint64_t end) {
  const std::uint32_t chunk = ctx.config().chunk_bytes;
  const std::uint64_t per_msg = std::max<std::uint64_t>(1, ctx.config().repair_max_bytes / chunk);
  for (std::uint64_t b = begin; b < end; b += per_msg) {
    const std::uint64_t e = std::min(end, b + per_msg);
    const std::uint64_t from = std::min<std::uint64_t>(b * chunk, stream.size());
    const std::uint64_t to = std::min<std::uint64_t>(e * chunk, stream.size());
    ControlHeader h{.kind = ControlKind::kRepairData,
                    .seq = seq,
                    .root = root,
                    .signature = signature,
                    .arg0 = static_cast<std::uint32_t>(b),
                    .arg1 = static_cast<std::uint32_t>(e - b)};
    const auto data = stream.subspan(from, to - from);
    if (auto st = ctx.send_control(ctx.right(), h, data); !st.is_ok()) {
      return st.code() == ErrorCode::kPeerFailure ? common::Status::ok() : st;
    }
    Counters::add(ctx.counters().repairs_served, e - b);
    Counters::add(ctx.counters().repair_bytes_served, data.size());
  }
  return common::Status::ok();
}

}  // namespace mccl::protocol
