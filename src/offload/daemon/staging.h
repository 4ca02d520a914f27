// Staging memory of a collective that does not run on shared buffers: the
// daemon's copy of the client's input and result, and the pool a session
// keeps it in between its collectives.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "common/clock.h"
#include "common/kept_buffers.h"

namespace mccl::offload::daemon {

// A byte buffer whose bytes are left uninitialised. Every byte the daemon
// delivers is first written by the client's input or by the collective, so
// zeroing is pure cost: for a 16 MiB allgather it was one page fault and a
// memset per page before the collective could start, hundreds of
// milliseconds on a loaded host during which the session thread noticed
// nothing, not even its client's death. The pages are now touched as data
// arrives, between the session loop's looks at its socket.
class StagingBuffer {
 public:
  // Replaces the contents with `n` uninitialised bytes (throws bad_alloc).
  void allocate(std::size_t n) {
    bytes_ = n > 0 ? std::make_unique_for_overwrite<std::byte[]>(n) : nullptr;
    size_ = capacity_ = n;
  }
  std::byte* data() { return bytes_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The bytes its memory holds, size() or more when it was reused.
  std::size_t capacity() const { return capacity_; }

 private:
  friend class StagingPool;
  std::unique_ptr<std::byte[]> bytes_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// The staging buffers of a session's finished collectives, kept for its
// next ones (common/kept_buffers.h). For a 2-rank allgather of 16 MiB a
// rank on loopback, fresh staging memory was about 21,000 page faults per
// collective, the largest single cost in the daemon's profile. Bounded, so
// a session that once ran a large collective does not hold its memory for
// long; one thread.
class StagingPool {
 public:
  static constexpr std::size_t kMostBuffers = 4;
  static constexpr std::size_t kMostBytes = std::size_t{512} << 20;
  // What was kept is freed once the session has run no collective for this
  // long.
  static constexpr std::chrono::seconds kIdleRelease{10};

  // `n` bytes: the smallest kept buffer that holds them, else a new one
  // (throws bad_alloc). Its bytes are not initialised either way.
  StagingBuffer take(std::size_t n);
  // Keeps `b`'s memory for a later take() within kMostBuffers and
  // kMostBytes (the smallest kept ones go first), else frees it. `now`
  // starts the idle time.
  void give_back(StagingBuffer&& b, common::TimePoint now);
  // Frees what is kept when nothing was given back since kIdleRelease
  // before `now`.
  void release_if_idle(common::TimePoint now);
  std::size_t kept_buffers() const { return kept_.count(); }
  std::size_t kept_bytes() const { return kept_.bytes(); }

 private:
  common::KeptBuffers kept_{kMostBuffers, kMostBytes};
  common::TimePoint last_given_{};
};

}  // namespace mccl::offload::daemon
