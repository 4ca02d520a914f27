// A run of an allgather's blocks as one stream: blocks first, first + 1,
// ... (mod N), their bytes concatenated in that order, wherever the output
// holds them. Bruck's rounds send such runs; the star's result is the run of
// every block from 0.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>

#include "coll/ring_allgather.h"

namespace mccl::coll {

// Visits the pieces of `bytes` at `offset` of the stream of `blocks` blocks
// from `first_block`: visit(place in the output, offset within the bytes).
template <typename Visit>
void for_each_stream_piece(const BlockLayout& layout, int first_block, int blocks,
                           std::size_t offset, std::size_t bytes, Visit visit) {
  const int n = static_cast<int>(layout.counts.size());
  std::size_t start = 0;  // the stream offset where block i begins
  std::size_t done = 0;
  for (int i = 0; i < blocks && done < bytes; ++i) {
    const int block = (first_block + i) % n;
    const std::size_t count = layout.counts[block];
    if (offset + done < start + count) {
      const std::size_t at = offset + done - start;
      const std::size_t take = std::min(count - at, bytes - done);
      visit(std::span<std::byte>(layout.recv + layout.displacements[block] + at, take), done);
      done += take;
    }
    start += count;
  }
}

// Copies `data`, found at `offset` of the stream, to its blocks (nothing
// where it already lies there: it landed).
inline void place_in_blocks(const BlockLayout& layout, int first_block, int blocks,
                            std::size_t offset, std::span<const std::byte> data) {
  for_each_stream_piece(layout, first_block, blocks, offset, data.size(),
                        [&](std::span<std::byte> to, std::size_t at) {
                          if (to.data() != data.data() + at)
                            std::memcpy(to.data(), data.data() + at, to.size());
                        });
}

// Copies `out.size()` bytes at `offset` of the stream out of the blocks.
inline void gather_from_blocks(const BlockLayout& layout, int first_block, int blocks,
                               std::size_t offset, std::span<std::byte> out) {
  for_each_stream_piece(layout, first_block, blocks, offset, out.size(),
                        [&](std::span<std::byte> from, std::size_t at) {
                          std::memcpy(out.data() + at, from.data(), from.size());
                        });
}

}  // namespace mccl::coll
