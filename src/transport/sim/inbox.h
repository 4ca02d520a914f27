// A receiver's queue of datagrams in flight towards it, ordered by the time
// each becomes visible (ties in arrival order).
//
// Almost every datagram arrives later than the one before it, so the queue
// is a ring kept in time order plus a small min-heap for the few that do not
// fit at its tail (reordered ones, and senders whose clocks were read a
// moment apart). Neither allocates once it has grown to its working size.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/clock.h"

namespace mccl::transport::sim {

struct InboxEntry {
  common::TimePoint at{};                   // when the receiver may see it
  std::uint64_t order = 0;                  // arrival number in this inbox; breaks ties
  std::shared_ptr<const std::byte[]> data;  // shared by all receivers unless corrupted
  std::uint32_t size = 0;
};

class Inbox {
 public:
  explicit Inbox(std::size_t depth) : depth_(depth) {}

  // Guards push(); the sender takes it once per batch.
  std::mutex& mutex() { return mu_; }

  // Caller holds mutex(). False (and nothing queued) when the inbox
  // already holds `depth` datagrams.
  bool push(common::TimePoint at, const std::shared_ptr<const std::byte[]>& data,
            std::uint32_t size);

  // May be read without the lock: pollers of an empty inbox (the common
  // case when many ranks spin) skip both the lock and the clock.
  bool maybe_empty() const { return queued_hint_.load(std::memory_order_relaxed) == 0; }

  // Moves up to `max` datagrams visible at `now` into `out`, earliest
  // first; returns how many. Takes the mutex itself.
  std::size_t pop_ready(common::TimePoint now, InboxEntry* out, std::size_t max);

  // The time the earliest queued datagram becomes visible; nullopt when
  // none is queued. Takes the mutex itself.
  std::optional<common::TimePoint> earliest();

 private:
  std::size_t queued() const { return ring_count_ + held_.size(); }
  const InboxEntry& ring_back() const;
  void ring_push(InboxEntry&& e);
  InboxEntry ring_pop();

  const std::size_t depth_;
  std::mutex mu_;
  std::atomic<std::size_t> queued_hint_{0};  // queued(), published after each change
  std::uint64_t next_order_ = 0;
  // Ring in (at, order) order; capacity is zero or a power of two.
  std::vector<InboxEntry> ring_;
  std::size_t ring_head_ = 0;
  std::size_t ring_count_ = 0;
  // Min-heap on (at, order) of datagrams that arrived out of time order.
  std::vector<InboxEntry> held_;
};

}  // namespace mccl::transport::sim
