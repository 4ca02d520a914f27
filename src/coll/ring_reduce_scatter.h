// The bandwidth-optimal ring reduce-scatter over the reliable transport.
//
// Block b (the part of the result rank b keeps) is reduced along the ring
// starting at rank b+1: b+1 sends its contribution to b+2, which reduces
// its own into it and passes the partial on, ..., until rank b adds its own
// and keeps the result. Every element of block b is therefore
//   ((x[b+1] op x[b+2]) op ...) op x[b]        (ranks mod N)
// on whichever rank and run: the order is fixed, so the bits are too. Each
// rank sends N-1 blocks, (N-1)/N of the data.
//
// Blocks travel in segments (kP2pData, arg0 = kReduceScatterFlag | block,
// arg1 = segment) so that forwarding pipelines with receiving. A rank's
// first step (its contribution to block rank-1) leaves at start; every
// other send is a partial just received, reduced and forwarded. Sends go
// through a queue drained by at most `send_budget` bytes per progress call
// (MCCL_COLL_RS_SHARE), so a reduce-scatter leaves room for a multicast
// collective's injection in the same call.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"
#include "common/status.h"
#include "mccl/types.h"

namespace mccl::coll {

// Set in arg0 of every reduce-scatter message, so a composite that also
// runs a point-to-point allgather under the same sequence number (whose
// arg0 is a block index < N) tells them apart.
inline constexpr std::uint32_t kReduceScatterFlag = 0x80000000u;
// arg0 block of the empty message a rank sends when its first step has no
// data, so that each rank hears from its left neighbour (and compares
// signatures) in every reduce-scatter.
inline constexpr std::uint32_t kReduceScatterMarker = 0x7FFFFFFFu;

// A compressed sum's ring (coll/compressed_reduce.cc): the partials
// travel as packed integer codes (codec/sum_codes.h), and each hop adds
// this rank's codes in one pass over a segment. Elements [offset, offset +
// count) of block b, counted in elements from the block's start.
struct CodedSum {
  // This rank's codes, packed into `out` (a rank's first step).
  std::function<void(int block, std::size_t offset, std::size_t count, std::vector<std::byte>& out)>
      pack_own;
  // The left neighbour's packed partial plus this rank's codes, packed into
  // `out`; an error when `partial` is malformed.
  std::function<common::Status(int block, std::size_t offset, std::size_t count,
                               std::span<const std::byte> partial, std::vector<std::byte>& out)>
      add;
  // The same for this rank's own block, kept as its result.
  std::function<common::Status(std::size_t offset, std::size_t count,
                               std::span<const std::byte> partial)>
      keep;
  std::size_t value_bytes = 0;  // of the values coded (for the statistics)
};

struct ReduceLayout {
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  const std::byte* send = nullptr;  // block b at send + displs[b]
  std::byte* result = nullptr;      // this rank's reduced block
  // Where partials of block b are reduced before they are forwarded:
  // staging + displs[b] (the allreduce's receive buffer, which its
  // allgather overwrites later); null to use a pool of segment buffers.
  std::byte* staging = nullptr;
  std::vector<std::size_t> bytes;   // per block
  std::vector<std::size_t> displs;  // per block, into send and staging
  // Set for a compressed sum: `type` is then kInt64, `bytes` and `displs`
  // count 8 bytes per element, and `send`, `result` and `staging` are
  // unused (the hops read and write through `coded`). Needs 2 ranks or more.
  std::optional<CodedSum> coded;
};

class RingReduceScatter final : public P2pOperation {
 public:
  // `segment_bytes` is a multiple of the element size; `send_budget` bytes
  // per progress call, 0 for no limit; `args` from encode_reduce_args(),
  // sent in every message's `root` (reduce_args.h).
  RingReduceScatter(protocol::Context& ctx, ReduceLayout layout, std::uint64_t signature,
                    std::uint32_t args, std::size_t segment_bytes, std::size_t send_budget,
                    std::string what);

  std::string describe() const override { return what_; }
  MCCL_OPERATION_HANDLERS;

 private:
  struct Pending {
    std::uint32_t block;
    std::uint32_t segment;
    const std::byte* data;  // null for a compressed sum's segments
    std::size_t len;        // compressed: of the int64 codes, not the packed bytes
    int slot;               // pool slot holding `data` (compressed: the packed bytes), or -1
  };
  void enqueue(std::uint32_t block, std::uint32_t segment, const std::byte* data, std::size_t len,
               int slot);
  void drain();
  int take_slot();
  // A compressed sum's hop: the packed partial `body` of `raw_bytes` at
  // `offset` of `block`, plus this rank's codes, kept or queued.
  void add_coded(int block, std::uint32_t segment, std::size_t offset, std::size_t raw_bytes,
                 std::span<const std::byte> body);
  // The bytes to send for `p`: a compressed sum's packed codes.
  std::span<const std::byte> wire_of(const Pending& p);

  ReduceLayout layout_;
  std::uint32_t args_;
  std::size_t segment_bytes_;
  std::size_t send_budget_;
  std::string what_;
  std::size_t expected_ = 0;  // bytes still to receive from the left
  std::deque<Pending> queue_;
  std::vector<std::vector<std::byte>> pool_;
  std::vector<int> free_slots_;
  std::vector<std::byte> packed_;  // a compressed sum's first step, segment being sent
};

}  // namespace mccl::coll
