// What an engine counts as activity when it decides to sleep: datagrams and
// messages received and also data sent (protocol::progress_counting_sends,
// which every engine and the offload daemon drive their contexts through),
// and how long a waiter spins after it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>

#include "progress/engine.h"
#include "protocol/context.h"

namespace mccl::progress {

using protocol::progress_counting_sends;

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
