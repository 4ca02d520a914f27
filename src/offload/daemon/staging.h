// Staging memory of a collective that does not run on shared buffers: the
// daemon's copy of the client's input and result.
#pragma once

#include <cstddef>
#include <memory>

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
    size_ = n;
  }
  std::byte* data() { return bytes_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  std::size_t size_ = 0;
};

}  // namespace mccl::offload::daemon
