#include "protocol/seal_ahead.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "protocol/auth.h"

namespace mccl::protocol {

SealJob::SealJob(const SealPlan& plan)
    : plan_(plan),
      lanes_(plan.auth.mac != nullptr ? plan.auth.mac->seal_lanes() : ~0u),
      chunks_(chunk_count(plan.header.total_bytes, plan.header.chunk_bytes)),
      ranges_((chunks_ + kRangeChunks - 1) / kRangeChunks),
      ring_(kWindowRanges * kRangeChunks * plan.header_bytes),
      owner_(std::make_unique<std::atomic<std::uint64_t>[]>(kWindowRanges)) {
  for (std::uint64_t i = 0; i < kWindowRanges; ++i) owner_[i].store(0, std::memory_order_relaxed);
}

bool SealJob::take(std::uint64_t c, std::byte* out) {
  const std::uint64_t r = c / kRangeChunks;
  if (owner_[r % kWindowRanges].load(std::memory_order_acquire) == r + 1) {
    // No helper refills this slot before advance() passes r (claim()).
    std::memcpy(out, slot(r) + (c % kRangeChunks) * plan_.header_bytes, plan_.header_bytes);
    return true;
  }
  // The root seals this range itself: no helper should start on it now.
  std::uint64_t n = next_range_.load(std::memory_order_relaxed);
  while (n <= r && !next_range_.compare_exchange_weak(n, r + 1, std::memory_order_relaxed)) {
  }
  return false;
}

void SealJob::advance(std::uint64_t next) {
  // The root's reads of the slots it leaves come before any helper's
  // refill of them; sequentially consistent for HelperPool::wake()'s look
  // at idle helpers.
  root_range_.store(next / kRangeChunks, std::memory_order_seq_cst);
}

void SealJob::stop() {
  // With work()'s order (busy_ up, then stopped_ read), either a helper
  // sees stopped_ or this loop sees it busy.
  stopped_.store(true, std::memory_order_seq_cst);
  while (busy_.load(std::memory_order_seq_cst) > 0) std::this_thread::yield();
}

bool SealJob::finished() const {
  return stopped_.load(std::memory_order_relaxed) ||
         next_range_.load(std::memory_order_relaxed) >= ranges_;
}

bool SealJob::claim(std::uint64_t& range) {
  std::uint64_t r = next_range_.load(std::memory_order_relaxed);
  do {
    if (r >= ranges_ || r >= root_range_.load(std::memory_order_seq_cst) + kWindowRanges) {
      return false;
    }
  } while (!next_range_.compare_exchange_weak(r, r + 1, std::memory_order_relaxed));
  range = r;
  return true;
}

void SealJob::seal(std::uint64_t range, unsigned lane) {
  DataHeader h = plan_.header;
  DataAuth auth = plan_.auth;
  auth.lane = lane;
  std::byte* out = slot(range);
  const std::uint64_t end = std::min(chunks_, (range + 1) * kRangeChunks);
  for (std::uint64_t c = range * kRangeChunks; c < end; ++c, out += plan_.header_bytes) {
    const std::uint64_t at = c * h.chunk_bytes;
    const auto len = static_cast<std::size_t>(chunk_length(h.total_bytes, h.chunk_bytes, c));
    h.chunk_index = static_cast<std::uint32_t>(c);
    h.payload_len = static_cast<std::uint16_t>(len);
    encode_data_header(h, {plan_.data + at, len}, plan_.checksum, auth, out);
  }
}

bool SealJob::work(unsigned lane) {
  if (lane > lanes_) return false;
  busy_.fetch_add(1, std::memory_order_seq_cst);
  bool claimed = false;
  std::uint64_t r = 0;
  if (!stopped_.load(std::memory_order_seq_cst) && claim(r)) {
    claimed = true;
    // The slot goes forward only, and not while a slower helper still
    // fills it for an older range: then this range is left to the root.
    std::atomic<std::uint64_t>& owner = owner_[r % kWindowRanges];
    std::uint64_t cur = owner.load(std::memory_order_acquire);
    bool mine = false;
    while ((cur & kWriting) == 0 && cur < r + 1) {
      if (owner.compare_exchange_weak(cur, (r + 1) | kWriting, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        mine = true;
        break;
      }
    }
    if (mine) {
      seal(r, lane);
      owner.store(r + 1, std::memory_order_release);
      sealed_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  busy_.fetch_sub(1, std::memory_order_seq_cst);
  return claimed;
}

}  // namespace mccl::protocol
