// The communicator's statistics as the protocol keeps them: written by the
// progress engine's thread, read by the application at any time, hence
// relaxed atomics.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

#include "mccl/stats.h"

namespace mccl::protocol {

struct Counters {
  using C = std::atomic<std::uint64_t>;
  C mcast_datagrams_sent{0}, mcast_bytes_sent{0};
  C mcast_datagrams_received{0}, mcast_bytes_received{0};
  C repairs_requested{0}, repair_bytes_requested{0};
  C repairs_served{0}, repair_bytes_served{0};
  C control_messages_sent{0}, p2p_bytes_sent{0};
  C dropped_invalid{0}, dropped_stale{0}, dropped_duplicate{0};
  C early_arrivals_stored{0}, early_arrivals_dropped{0};
  C collectives_completed{0};
  C eager_completions{0};
  C p2p_collectives{0};
  C loss_reports_sent{0}, rate_decreases{0}, link_estimate_mbit{0};
  // McastTimeline of the last multicast collective, field by field.
  C last_started{0}, last_first_sent{0}, last_last_sent{0}, last_first_arrival{0};
  C last_last_arrival{0}, last_held{0}, last_released{0}, last_completed{0};
  // Compression (coll/compressed.h): this rank's encodings.
  C compress_bytes_in{0}, compress_bytes_out{0}, compress_raw_fallbacks{0};
  C compress_max_bound_bits{0};  // float64 bits: positive doubles order as integers

  static void add(C& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

  // Raises the largest error bound in force to `bound` (>= 0).
  void note_bound(double bound) {
    const auto bits = std::bit_cast<std::uint64_t>(bound);
    std::uint64_t seen = compress_max_bound_bits.load(std::memory_order_relaxed);
    while (bits > seen &&
           !compress_max_bound_bits.compare_exchange_weak(seen, bits, std::memory_order_relaxed)) {
    }
  }

  Stats snapshot() const {
    auto g = [](const C& c) { return c.load(std::memory_order_relaxed); };
    Stats s;
    s.mcast_datagrams_sent = g(mcast_datagrams_sent);
    s.mcast_bytes_sent = g(mcast_bytes_sent);
    s.mcast_datagrams_received = g(mcast_datagrams_received);
    s.mcast_bytes_received = g(mcast_bytes_received);
    s.repairs_requested = g(repairs_requested);
    s.repair_bytes_requested = g(repair_bytes_requested);
    s.repairs_served = g(repairs_served);
    s.repair_bytes_served = g(repair_bytes_served);
    s.control_messages_sent = g(control_messages_sent);
    s.p2p_bytes_sent = g(p2p_bytes_sent);
    s.dropped_invalid = g(dropped_invalid);
    s.dropped_stale = g(dropped_stale);
    s.dropped_duplicate = g(dropped_duplicate);
    s.early_arrivals_stored = g(early_arrivals_stored);
    s.early_arrivals_dropped = g(early_arrivals_dropped);
    s.collectives_completed = g(collectives_completed);
    s.eager_completions = g(eager_completions);
    s.p2p_collectives = g(p2p_collectives);
    s.loss_reports_sent = g(loss_reports_sent);
    s.rate_decreases = g(rate_decreases);
    s.link_estimate_mbit = g(link_estimate_mbit);
    s.compress_bytes_in = g(compress_bytes_in);
    s.compress_bytes_out = g(compress_bytes_out);
    s.compress_raw_fallbacks = g(compress_raw_fallbacks);
    s.compress_max_bound = std::bit_cast<double>(g(compress_max_bound_bits));
    s.last_mcast = {g(last_started),       g(last_first_sent),   g(last_last_sent),
                    g(last_first_arrival), g(last_last_arrival), g(last_held),
                    g(last_released),      g(last_completed)};
    return s;
  }

  // Once per collective, when it completes (not per datagram).
  void publish(const McastTimeline& t) {
    auto p = [](C& c, std::uint64_t v) { c.store(v, std::memory_order_relaxed); };
    p(last_started, t.started_ns);
    p(last_first_sent, t.first_sent_ns);
    p(last_last_sent, t.last_sent_ns);
    p(last_first_arrival, t.first_arrival_ns);
    p(last_last_arrival, t.last_arrival_ns);
    p(last_held, t.held_ns);
    p(last_released, t.released_ns);
    p(last_completed, t.completed_ns);
  }
};

}  // namespace mccl::protocol
