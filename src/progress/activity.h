// What an engine counts as activity when it decides to sleep: datagrams and
// messages received (Context::progress's result) and also data sent. Every
// engine drives its contexts through progress_counting_sends(). A
// root that only injects receives nothing, yet must not sleep between
// batches: a 1 ms sleep after each 64-datagram batch would cap it below
// 1 Gbit/s.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "progress/engine.h"
#include "protocol/context.h"

namespace mccl::progress {

// Grows whenever this rank sends data: multicast datagrams, repairs served,
// point-to-point payload (ring reduce-scatter, fallbacks).
inline std::uint64_t sent_so_far(const protocol::Context& ctx) {
  const auto& c = ctx.counters();
  constexpr auto r = std::memory_order_relaxed;
  return c.mcast_datagrams_sent.load(r) + c.repairs_served.load(r) + c.p2p_bytes_sent.load(r);
}

// One Context::progress() call; returns what it received, plus one when it
// sent anything, so that an engine that sleeps after a quiet spell treats
// sending as activity too.
inline std::size_t progress_counting_sends(protocol::Context& ctx) {
  const std::uint64_t before = sent_so_far(ctx);
  const std::size_t events = ctx.progress();
  return events + (sent_so_far(ctx) != before ? 1 : 0);
}

// How long a waiter that drives `op` itself spins after its last event,
// under either engine: `spin`'s choice for it, or for a latency-bound
// collective (whose next message is microseconds away) `latency_spin` where
// that is longer.
inline std::chrono::microseconds driving_spin(const protocol::Operation& op, const DriverSpin& spin,
                                              std::chrono::microseconds latency_spin) {
  const std::chrono::microseconds s = spin.for_bytes(op.moved_bytes());
  return op.latency_bound() ? std::max(s, latency_spin) : s;
}

// Whether an engine passes again at once rather than sleeping: after a
// pass that did something, always (a sender's next batch may be ready: a
// progress thread that slept after every pass with MCCL_PROGRESS_SPIN_US=0
// took a paced 16 MiB broadcast from 11 to 40 ms), and for `spin` after the
// last such pass.
inline bool pass_again(std::size_t events, std::chrono::steady_clock::duration since_last_event,
                       std::chrono::microseconds spin) {
  return events > 0 || since_last_event < spin;
}

}  // namespace mccl::progress
