#include "coll/validate.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "coll/reduce_kernels.h"

namespace mccl::coll {

using common::Status;

namespace {
std::string at(int rank) { return "rank " + std::to_string(rank) + ": "; }

bool overlaps(std::uintptr_t a, std::size_t alen, std::uintptr_t b, std::size_t blen) {
  return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}
Status check_type_and_op(int rank, const std::string& what, DataType type, ReduceOp op) {
  if (!valid(type)) {
    return common::invalid_argument(at(rank) + what + "datatype " +
                                    std::to_string(static_cast<int>(type)) +
                                    " is not a mccl::DataType value");
  }
  if (!valid(op)) {
    return common::invalid_argument(at(rank) + what + "reduction op " +
                                    std::to_string(static_cast<int>(op)) +
                                    " is not a mccl::ReduceOp value");
  }
  return Status::ok();
}

// Elements to bytes, or an error when that does not fit a size_t.
Status to_bytes(int rank, const std::string& what, std::size_t count, DataType type,
                std::size_t& bytes) {
  const std::size_t es = size_of(type);
  if (count > std::numeric_limits<std::size_t>::max() / es) {
    return common::invalid_argument(at(rank) + what + std::to_string(count) + " elements of " +
                                    to_string(type) + " do not fit in memory");
  }
  bytes = count * es;
  return Status::ok();
}

std::string too_big(std::size_t max_bytes) {
  return "more than the " + std::to_string(max_bytes) +
         " bytes one rank's stream can carry (2^32 chunks; docs/wire-protocol.md)";
}
}  // namespace

std::size_t max_stream_bytes(std::size_t chunk_bytes) {
  constexpr std::size_t kMaxChunks = std::size_t{1} << 32;
  if (chunk_bytes > std::numeric_limits<std::size_t>::max() / kMaxChunks) {
    return std::numeric_limits<std::size_t>::max();
  }
  return chunk_bytes * kMaxChunks;
}

Status validate_allgather_size(int rank, int size, std::size_t bytes_per_rank,
                               std::size_t max_bytes) {
  if (bytes_per_rank > max_bytes) {
    return common::invalid_argument(at(rank) + "allgather: bytes_per_rank is " +
                                    std::to_string(bytes_per_rank) + ", " + too_big(max_bytes));
  }
  if (size > 0 && bytes_per_rank > std::numeric_limits<std::size_t>::max() / size) {
    return common::invalid_argument(at(rank) + "allgather: bytes_per_rank " +
                                    std::to_string(bytes_per_rank) + " times " +
                                    std::to_string(size) + " ranks overflows a size_t");
  }
  return Status::ok();
}

Status validate_broadcast(int rank, int size, const void* buffer, std::size_t bytes, int root,
                          std::size_t max_bytes) {
  if (root < 0 || root >= size) {
    return common::invalid_argument(at(rank) + "broadcast: root " + std::to_string(root) +
                                    " is out of range [0, " + std::to_string(size) + ")");
  }
  if (bytes > max_bytes) {
    return common::invalid_argument(at(rank) + "broadcast: bytes is " + std::to_string(bytes) +
                                    ", " + too_big(max_bytes));
  }
  if (buffer == nullptr && bytes > 0) {
    return common::invalid_argument(at(rank) + "broadcast: buffer is null but bytes is " +
                                    std::to_string(bytes));
  }
  if (reinterpret_cast<std::uintptr_t>(buffer) > UINTPTR_MAX - bytes) {
    return common::invalid_argument(at(rank) + "broadcast: buffer + bytes (" +
                                    std::to_string(bytes) + ") wraps around the address space");
  }
  return Status::ok();
}

namespace {

// Blocks of different ranks must not overlap in the receive buffer, or
// one root's data would silently overwrite another's. Empty blocks occupy
// nothing, wherever their displacements point. `extent`: where the last
// block ends.
Status check_blocks_disjoint(int rank, std::span<const std::size_t> counts,
                             std::span<const std::size_t> displacements, std::size_t& extent) {
  struct Block {
    std::size_t displ, count;
    int rank;
    bool operator<(const Block& o) const { return displ < o.displ; }
  };
  std::vector<Block> blocks;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > 0) blocks.push_back({displacements[r], counts[r], static_cast<int>(r)});
  }
  std::sort(blocks.begin(), blocks.end());
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    const Block &a = blocks[i - 1], &b = blocks[i];
    if (a.displ + a.count > b.displ) {
      return common::invalid_argument(
          at(rank) + "allgather: receive blocks overlap at displacement " +
          std::to_string(b.displ) + ": rank " + std::to_string(a.rank) + "'s (bytes " +
          std::to_string(a.displ) + " to " + std::to_string(a.displ + a.count) + ") and rank " +
          std::to_string(b.rank) + "'s (from " + std::to_string(b.displ) +
          "); no byte of the receive buffer may be written twice");
    }
  }
  extent = blocks.empty() ? 0 : blocks.back().displ + blocks.back().count;
  return Status::ok();
}

}  // namespace

Status validate_allgatherv(int rank, int size, const void* send, bool in_place, const void* recv,
                           std::span<const std::size_t> counts,
                           std::span<const std::size_t> displacements, std::size_t max_bytes) {
  const std::string op = "allgather: ";
  if (counts.size() != static_cast<std::size_t>(size) ||
      displacements.size() != static_cast<std::size_t>(size)) {
    return common::invalid_argument(
        at(rank) + op + "counts and displacements need " + std::to_string(size) + " entries, got " +
        std::to_string(counts.size()) + " and " + std::to_string(displacements.size()));
  }
  // Each block must fit the wire and its end (displacement + count) a
  // size_t and the address space: a wrapped end would place the block
  // before the receive buffer.
  const auto base = reinterpret_cast<std::uintptr_t>(recv);
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) {
    const std::string idx = "[" + std::to_string(r) + "]";
    if (counts[r] > max_bytes) {
      return common::invalid_argument(at(rank) + op + "counts" + idx + " is " +
                                      std::to_string(counts[r]) + ", " + too_big(max_bytes));
    }
    if (counts[r] == 0) continue;
    if (displacements[r] > std::numeric_limits<std::size_t>::max() - counts[r] ||
        displacements[r] + counts[r] > UINTPTR_MAX - base) {
      return common::invalid_argument(at(rank) + op + "displs" + idx + " + counts" + idx + " (" +
                                      std::to_string(displacements[r]) + " + " +
                                      std::to_string(counts[r]) +
                                      ") overflows: the block would end past the address space");
    }
    if (counts[r] > std::numeric_limits<std::size_t>::max() - total) {
      return common::invalid_argument(at(rank) + op + "the counts overflow a size_t at counts" +
                                      idx);
    }
    total += counts[r];
  }
  if (recv == nullptr && total > 0) {
    return common::invalid_argument(at(rank) + op + "receive buffer is null but " +
                                    std::to_string(total) + " bytes are to be received");
  }
  const std::size_t mine = counts[rank];
  if (!in_place && send == nullptr && mine > 0) {
    return common::invalid_argument(at(rank) + op + "send buffer is null but this rank sends " +
                                    std::to_string(mine) + " bytes");
  }
  if (!in_place && reinterpret_cast<std::uintptr_t>(send) > UINTPTR_MAX - mine) {
    return common::invalid_argument(at(rank) + op + "send buffer + counts[" + std::to_string(rank) +
                                    "] wraps around the address space");
  }
  std::size_t extent = 0;
  if (Status st = check_blocks_disjoint(rank, counts, displacements, extent); !st) return st;
  if (!in_place && mine > 0 && total > 0) {
    auto s = reinterpret_cast<std::uintptr_t>(send);
    auto r = reinterpret_cast<std::uintptr_t>(recv);
    bool same_as_own_block = s == r + displacements[rank];
    if (!same_as_own_block && overlaps(s, mine, r, extent)) {
      return common::invalid_argument(
          at(rank) + op +
          "send and receive buffers overlap; pass mccl::kInPlace as the send "
          "buffer for an in-place allgather");
    }
  }
  return Status::ok();
}

Status validate_reduce_scatterv(int rank, int size, const void* send, bool in_place,
                                const void* recv, std::span<const std::size_t> counts,
                                DataType type, ReduceOp op) {
  const std::string what = "reduce_scatter: ";
  if (Status st = check_type_and_op(rank, what, type, op); !st.is_ok()) return st;
  if (in_place) {
    return common::invalid_argument(at(rank) + what +
                                    "kInPlace is not supported; pass the send buffer");
  }
  if (counts.size() != static_cast<std::size_t>(size)) {
    return common::invalid_argument(at(rank) + what + "counts needs " + std::to_string(size) +
                                    " entries, got " + std::to_string(counts.size()));
  }
  std::size_t total = 0;
  for (auto c : counts) {
    if (c > std::numeric_limits<std::size_t>::max() - total) {
      return common::invalid_argument(at(rank) + what + "the counts overflow a size_t");
    }
    total += c;
  }
  std::size_t send_bytes = 0, recv_bytes = 0;
  if (Status st = to_bytes(rank, what, total, type, send_bytes); !st.is_ok()) return st;
  (void)to_bytes(rank, what, counts[rank], type, recv_bytes);  // <= total: fits
  if (send == nullptr && send_bytes > 0) {
    return common::invalid_argument(at(rank) + what + "send buffer is null but it holds " +
                                    std::to_string(total) + " elements");
  }
  if (recv == nullptr && recv_bytes > 0) {
    return common::invalid_argument(at(rank) + what + "receive buffer is null but " +
                                    std::to_string(counts[rank]) + " elements are to be received");
  }
  if (overlaps(reinterpret_cast<std::uintptr_t>(send), send_bytes,
               reinterpret_cast<std::uintptr_t>(recv), recv_bytes)) {
    return common::invalid_argument(at(rank) + what + "send and receive buffers overlap");
  }
  return Status::ok();
}

Status validate_allreduce(int rank, const void* send, bool in_place, const void* recv,
                          std::size_t count, DataType type, ReduceOp op) {
  const std::string what = "allreduce: ";
  if (Status st = check_type_and_op(rank, what, type, op); !st.is_ok()) return st;
  std::size_t bytes = 0;
  if (Status st = to_bytes(rank, what, count, type, bytes); !st.is_ok()) return st;
  if (recv == nullptr && bytes > 0) {
    return common::invalid_argument(at(rank) + what + "receive buffer is null but count is " +
                                    std::to_string(count));
  }
  if (in_place || send == recv) return Status::ok();
  if (send == nullptr && bytes > 0) {
    return common::invalid_argument(at(rank) + what + "send buffer is null but count is " +
                                    std::to_string(count) +
                                    "; pass mccl::kInPlace for an in-place allreduce");
  }
  if (overlaps(reinterpret_cast<std::uintptr_t>(send), bytes,
               reinterpret_cast<std::uintptr_t>(recv), bytes)) {
    return common::invalid_argument(at(rank) + what +
                                    "send and receive buffers overlap; pass mccl::kInPlace as "
                                    "the send buffer for an in-place allreduce");
  }
  return Status::ok();
}

}  // namespace mccl::coll
