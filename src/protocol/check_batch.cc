#include "protocol/check_batch.h"

#include <thread>

namespace mccl::protocol {

void CheckBatch::run(std::span<CheckedDatagram> batch, std::uint32_t tag, bool checksum,
                     const DataAuth& auth) {
  if (batch.empty()) return;
  // No helper reads these until it claims from the state published below.
  items_ = batch.data();
  tag_ = tag;
  checksum_ = checksum;
  auth_ = auth;
  if (batch.size() > kIndexMask) {  // more than any poll returns: alone, in order
    for (std::size_t i = 0; i < batch.size(); ++i) check(i, 0);
    return;
  }
  checked_.store(0, std::memory_order_relaxed);
  ++batches_;
  // Release: the fields above reach a helper whose claim reads this state.
  state_.store(
      state_of(batches_ & ((std::uint64_t{1} << (64 - 2 * kIndexBits)) - 1), batch.size(), 0),
      std::memory_order_release);
  std::size_t index = 0;
  while (claim(index)) check(index, 0);
  // What is left is being checked by helpers right now: one datagram each.
  while (checked_.load(std::memory_order_acquire) < batch.size()) std::this_thread::yield();
}

bool CheckBatch::claim(std::size_t& index) {
  std::uint64_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    const std::uint64_t next = s & kIndexMask;
    const std::uint64_t size = (s >> kIndexBits) & kIndexMask;
    if (next >= size) return false;
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      index = static_cast<std::size_t>(next);
      return true;
    }
  }
}

void CheckBatch::check(std::size_t index, unsigned lane) {
  CheckedDatagram& d = items_[index];
  DataAuth auth = auth_;
  auth.lane = lane;
  d.check = d.landed ? decode_data(d.header, d.body, tag_, checksum_, auth, d.h, d.payload)
                     : decode_data(d.header, tag_, checksum_, auth, d.h, d.payload);
  // Release: the result reaches the owner, which reads it after this count.
  checked_.fetch_add(1, std::memory_order_release);
}

bool CheckBatch::work(unsigned lane) {
  if (lane > lanes_) return false;
  std::size_t index = 0;
  if (!claim(index)) return false;
  helper_checks_.fetch_add(1, std::memory_order_relaxed);
  check(index, lane);
  return true;
}

}  // namespace mccl::protocol
