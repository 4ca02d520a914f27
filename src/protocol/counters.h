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
  // One per integer field of mccl::Stats, of the same name.
#define MCCL_COUNTER_(name, kind) C name{0};
  MCCL_STATS_FIELDS(MCCL_COUNTER_)
#undef MCCL_COUNTER_
  // McastTimeline of the last multicast collective, field by field.
  C last_started{0}, last_first_sent{0}, last_last_sent{0}, last_first_arrival{0};
  C last_last_arrival{0}, last_held{0}, last_released{0}, last_completed{0};
  // Compression (coll/compressed.h): the largest error bound in force.
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
#define MCCL_COPY_(name, kind) s.name = g(name);
    MCCL_STATS_FIELDS(MCCL_COPY_)
#undef MCCL_COPY_
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
