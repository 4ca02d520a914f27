// Large byte buffers kept between uses, so that memory a hot path writes is
// faulted in once rather than per use: a fresh buffer of more than a few
// hundred KiB is fresh pages (glibc maps it by itself from 128 KiB, and
// for good from 32 MiB), each one faulted in, zeroed by the kernel and
// charged to the memory cgroup as it is first written, then unmapped when
// freed. For a 16 MiB collective that cost more than the copy into them
// (offload/daemon/staging.h, transport/tcp/connection.h). Bounded in count
// and bytes; the smallest buffers are dropped first. One thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace mccl::common {

class KeptBuffers {
 public:
  struct Buffer {
    std::unique_ptr<std::byte[]> bytes;  // uninitialised
    std::size_t capacity = 0;
  };

  KeptBuffers(std::size_t most_buffers, std::size_t most_bytes)
      : most_buffers_(most_buffers), most_bytes_(most_bytes) {}

  // The smallest kept buffer of at least `n` bytes, removed from the kept
  // ones; an empty Buffer when none is that large (the caller allocates).
  Buffer take(std::size_t n);
  // Keeps `b` within the bounds (dropping the smallest kept ones first), or
  // frees it when it alone exceeds most_bytes.
  void give_back(Buffer b);
  void clear() { kept_.clear(); }
  std::size_t count() const { return kept_.size(); }
  std::size_t bytes() const;

 private:
  std::size_t most_buffers_, most_bytes_;
  std::vector<Buffer> kept_;  // by capacity, smallest first
};

}  // namespace mccl::common
