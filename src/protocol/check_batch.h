// A receiver's batch of datagrams (one poll of the transport) checked by
// the engine's thread and the helper threads together (helper_pool.h,
// MCCL_PROTO_HELPER_THREADS): each datagram's header, and its MAC or CRC,
// the receiver's one pass over the payload besides the kernel's copy. The
// engine then routes the checked datagrams in their order, as before.
//
// The engine's thread claims datagrams like any helper and waits only for
// those a helper is checking at that moment: helpers that are asleep or
// busy elsewhere leave it the whole batch, as without them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/helper_pool.h"
#include "protocol/wire.h"

namespace mccl::protocol {

// One datagram as the transport handed it over: whole in `header`, or
// landed, its header in `header` and its payload at `body`; then what
// decode_data found.
struct CheckedDatagram {
  std::span<const std::byte> header;
  std::span<const std::byte> body;
  bool landed = false;
  DataCheck check = DataCheck::kOk;
  DataHeader h;
  std::span<const std::byte> payload;
};

class CheckBatch final : public HelperJob {
 public:
  // Batches smaller than this many payload bytes are checked by the
  // engine's thread alone: the helpers' share would not pay for the
  // cache lines their results travel back in.
  static constexpr std::size_t kMinBytes = 16 << 10;

  // `lanes`: the MAC lanes there are (DatagramMac::seal_lanes()); a helper
  // of a higher lane takes nothing. Without a MAC, any number.
  explicit CheckBatch(unsigned lanes) : lanes_(lanes) {}

  // The owner's side, one thread: checks every datagram of `batch` (each
  // as decode_data would, against `tag`, `checksum` and `auth`, whose lane
  // is ignored) with the helpers; returns once all are checked.
  void run(std::span<CheckedDatagram> batch, std::uint32_t tag, bool checksum,
           const DataAuth& auth);
  // No batch comes any more: the pool forgets the job.
  void close() { closed_.store(true, std::memory_order_relaxed); }

  bool work(unsigned lane) override;
  bool finished() const override { return closed_.load(std::memory_order_relaxed); }
  // Datagrams the helpers checked, over every batch (tests).
  std::uint64_t helper_checks() const { return helper_checks_.load(std::memory_order_relaxed); }

 private:
  // The batch's state in one word, so that a claim never mixes two
  // batches: the batch's number, its size and the next datagram to claim.
  static constexpr int kIndexBits = 20;
  static constexpr std::uint64_t kIndexMask = (std::uint64_t{1} << kIndexBits) - 1;
  static std::uint64_t state_of(std::uint64_t batch, std::uint64_t size, std::uint64_t next) {
    return (batch << (2 * kIndexBits)) | (size << kIndexBits) | next;
  }
  // Claims one datagram of the current batch: its index, or false.
  bool claim(std::size_t& index);
  void check(std::size_t index, unsigned lane);

  const unsigned lanes_;
  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::size_t> checked_{0};  // of the current batch
  std::atomic<bool> closed_{false};
  std::atomic<std::uint64_t> helper_checks_{0};
  // The current batch's; written by run() before it publishes state_.
  CheckedDatagram* items_ = nullptr;
  std::uint32_t tag_ = 0;
  bool checksum_ = false;
  DataAuth auth_;
  std::uint64_t batches_ = 0;  // the owner's count
};

}  // namespace mccl::protocol
