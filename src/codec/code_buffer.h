// Scratch memory for the integer codes of the compressed sums
// (sum_codes.h): eight bytes per element of a rank's summed block, and of
// the blocks an allreduce gathers. When the ring still kept the codes of
// the whole vector (256 MiB for a reduce-scatter of 128 MiB of float32),
// allocating them anew for every call cost a quarter of its CPU time in
// page faults and zeroing (docs/benchmarks/compression-codec-2026-11-26),
// so buffers are lent from a process-wide pool and come back when the
// collective lets go of them.
//
// The pool keeps at most kCodeBufferKeptBytes of returned buffers (the most
// recently returned first); the rest are freed at once. Thread-safe: the
// collectives of several communicators and progress threads borrow at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace mccl::codec {

inline constexpr std::size_t kCodeBufferKeptBytes = std::size_t{1} << 30;

// `count` int64 codes on loan; their values are unspecified until written.
// Move-only; the destructor returns the memory to the pool.
class CodeBuffer {
 public:
  CodeBuffer() = default;
  explicit CodeBuffer(std::size_t count);
  ~CodeBuffer();
  CodeBuffer(CodeBuffer&& other) noexcept;
  CodeBuffer& operator=(CodeBuffer&& other) noexcept;
  CodeBuffer(const CodeBuffer&) = delete;
  CodeBuffer& operator=(const CodeBuffer&) = delete;

  std::int64_t* data() { return mem_.get(); }
  const std::int64_t* data() const { return mem_.get(); }
  std::size_t size() const { return size_; }

 private:
  void give_back();

  std::unique_ptr<std::int64_t[]> mem_;
  std::size_t capacity_ = 0;  // elements allocated; at least size_
  std::size_t size_ = 0;
};

// Bytes the pool keeps for reuse now, for tests.
std::size_t code_buffer_kept_bytes();

// The encoded streams of a compressed collective (coll/compressed_steps.h)
// come from a second pool, of byte vectors, that keeps at most
// kCodeBufferKeptBytes of their capacity: a multicast allgather receives
// N-1 streams, and allocating them anew for every call cost 8 ranks on
// 2 cores 4-5% of an FSDP pair's CPU time in page faults and zeroing.
// borrow_stream_bytes: an empty vector, with the capacity of the smallest
// returned one of at least `bytes` where there is one (resizing it within
// that capacity zeroes, but faults in no page). Thread-safe.
std::vector<std::byte> borrow_stream_bytes(std::size_t bytes);
// Gives `v`'s memory back to the pool.
void return_stream_bytes(std::vector<std::byte> v);
// Bytes of capacity the stream pool keeps now, for tests.
std::size_t stream_bytes_kept();

}  // namespace mccl::codec
