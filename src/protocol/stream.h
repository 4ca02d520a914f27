// One root's stream inside a multicast collective, as one rank holds it:
// where the bytes land, which chunks arrived, which were asked for, and
// which the right-hand neighbour is waiting for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/bitmap.h"
#include "common/clock.h"
#include "protocol/wire.h"

namespace mccl::protocol {

struct StreamSpec {
  int root = 0;
  std::byte* buffer = nullptr;  // the root reads from it, everyone else writes to it
  std::uint64_t bytes = 0;
};

class Stream {
 public:
  Stream(const StreamSpec& spec, std::uint32_t chunk_bytes, bool local);

  int root() const { return spec_.root; }
  std::uint64_t bytes() const { return spec_.bytes; }
  std::uint64_t chunks() const { return chunks_; }
  bool local() const { return local_; }
  // Every byte is here (always true for the root's own stream).
  bool complete() const { return have.all(); }
  std::uint64_t missing() const { return chunks_ - have.count(); }

  std::uint64_t offset(std::uint64_t chunk) const { return chunk * chunk_bytes_; }
  std::uint64_t length(std::uint64_t chunk) const {
    return chunk_length(spec_.bytes, chunk_bytes_, chunk);
  }
  // Bytes of chunks [begin, end).
  std::uint64_t span_bytes(std::uint64_t begin, std::uint64_t end) const {
    return std::min<std::uint64_t>(offset(end), spec_.bytes) - offset(begin);
  }
  std::span<const std::byte> chunk_data(std::uint64_t begin, std::uint64_t end) const {
    return {spec_.buffer + offset(begin), static_cast<std::size_t>(span_bytes(begin, end))};
  }

  // Where chunk `chunk` belongs: a landing for its datagram (transport/
  // datagram.h) while it is missing.
  std::byte* destination(std::uint64_t chunk) const { return spec_.buffer + offset(chunk); }
  // Copies a chunk in (unless `payload` already lies at its destination,
  // landed there); false when it was already here (nothing written).
  bool place(std::uint64_t chunk, std::span<const std::byte> payload);
  // Copies chunks [begin, end) in from one contiguous repair message; returns
  // how many of them were new.
  std::uint64_t place_range(std::uint64_t begin, std::uint64_t end,
                            std::span<const std::byte> data);

  // Receive-side bookkeeping, public for the collective that owns the stream.
  common::Bitmap have;
  common::Bitmap requested;
  common::Bitmap wanted;  // asked for by the right neighbour, not yet held
  std::uint64_t wanted_count = 0;
  std::uint64_t seen_end = 0;        // highest chunk index seen + 1
  std::uint64_t scan_from = 0;       // chunks below are held or requested
  common::TimePoint last_request{};  // when chunks of it were last asked for
  // Root-side injection cursor.
  std::uint64_t next_to_send = 0;

 private:
  StreamSpec spec_;
  std::uint32_t chunk_bytes_;
  std::uint64_t chunks_;
  bool local_;
};

}  // namespace mccl::protocol
