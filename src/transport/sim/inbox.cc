#include "transport/sim/inbox.h"

#include <algorithm>
#include <utility>

namespace mccl::transport::sim {
namespace {

constexpr std::size_t kInitialRing = 64;

bool earlier(const InboxEntry& a, const InboxEntry& b) {
  return a.at != b.at ? a.at < b.at : a.order < b.order;
}

// std::push_heap builds a max-heap; inverting the order makes it a min-heap.
bool later(const InboxEntry& a, const InboxEntry& b) { return earlier(b, a); }

}  // namespace

const InboxEntry& Inbox::ring_back() const {
  return ring_[(ring_head_ + ring_count_ - 1) & (ring_.size() - 1)];
}

void Inbox::ring_push(InboxEntry&& e) {
  if (ring_count_ == ring_.size()) {
    // Grow by doubling and unwrap, so the mask arithmetic stays valid.
    std::vector<InboxEntry> bigger(std::max(kInitialRing, ring_.size() * 2));
    for (std::size_t i = 0; i < ring_count_; ++i) {
      bigger[i] = std::move(ring_[(ring_head_ + i) & (ring_.size() - 1)]);
    }
    ring_ = std::move(bigger);
    ring_head_ = 0;
  }
  ring_[(ring_head_ + ring_count_) & (ring_.size() - 1)] = std::move(e);
  ++ring_count_;
}

InboxEntry Inbox::ring_pop() {
  InboxEntry e = std::move(ring_[ring_head_]);
  ring_head_ = (ring_head_ + 1) & (ring_.size() - 1);
  --ring_count_;
  return e;
}

bool Inbox::push(common::TimePoint at, const std::shared_ptr<const std::byte[]>& data,
                 std::uint32_t size) {
  if (queued() >= depth_) return false;
  InboxEntry e{at, next_order_++, data, size};
  if (ring_count_ == 0 || !earlier(e, ring_back())) {
    ring_push(std::move(e));
  } else {
    held_.push_back(std::move(e));
    std::push_heap(held_.begin(), held_.end(), later);
  }
  queued_hint_.store(queued(), std::memory_order_relaxed);
  return true;
}

std::size_t Inbox::pop_ready(common::TimePoint now, InboxEntry* out, std::size_t max) {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  while (n < max) {
    bool ring_ready = ring_count_ > 0 && ring_[ring_head_].at <= now;
    bool held_ready = !held_.empty() && held_.front().at <= now;
    if (ring_ready && held_ready) {
      // Both are due: the earlier goes first, so ties keep arrival order.
      held_ready = earlier(held_.front(), ring_[ring_head_]);
      ring_ready = !held_ready;
    }
    if (ring_ready) {
      out[n++] = ring_pop();
    } else if (held_ready) {
      std::pop_heap(held_.begin(), held_.end(), later);
      out[n++] = std::move(held_.back());
      held_.pop_back();
    } else {
      break;
    }
  }
  if (n) queued_hint_.store(queued(), std::memory_order_relaxed);
  return n;
}

std::optional<common::TimePoint> Inbox::earliest() {
  std::lock_guard lock(mu_);
  std::optional<common::TimePoint> t;
  if (ring_count_ > 0) t = ring_[ring_head_].at;
  if (!held_.empty() && (!t || held_.front().at < *t)) t = held_.front().at;
  return t;
}

}  // namespace mccl::transport::sim
