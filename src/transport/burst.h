// How much a multicast root may send at once, above its paced rate, when
// several roots inject together: one rule for every transport that paces
// (the UDP transport's token bucket, the in-memory fabric's model of it).
//
// A root's burst leaves at the whole link rate, so while k roots burst
// together every receiver's switch port fills at k times the rate it
// drains. Bursts that are harmless alone (a bucket of four 64 KB GSO runs)
// overflow a port's buffer once k is large: at 32 hosts and 1 Gbit/s that
// incast cost 4.5·m of repairs per rank (docs/scale.md). So the bursts of
// all roots injecting at once share one budget, the bytes a receiver's
// port is assumed to absorb; each root gets budget / k, never less than
// `floor` (the smallest message it can send) and never more than it would
// burst alone.
#pragma once

#include <algorithm>
#include <cstddef>

namespace mccl::transport {

// `own`: the burst the transport allows a root alone; `senders`: roots
// injecting at once (share_link); `budget`: what their bursts together may
// put into one port, 0 for no limit.
inline std::size_t root_burst_bytes(std::size_t own, unsigned senders, std::size_t budget,
                                    std::size_t floor) {
  if (budget == 0) return own;
  const std::size_t share = budget / std::max(1u, senders);
  return std::max(floor, std::min(own, share));
}

}  // namespace mccl::transport
