// Recursive-doubling allreduce over the reliable transport, for small
// vectors: log2(N) rounds of latency instead of a ring's 2(N-1), at the
// price of sending the whole vector every round.
//
// With p the largest power of two <= N and rem = N - p:
//   round 0      ranks p.. send their vector to rank - p (the "fold");
//                ranks 0..rem-1 combine it in: x[i] op x[i+p]
//   rounds 1..L  (L = log2 p) rank r exchanges with r XOR 2^(k-1) and
//                combines: (lower rank's value) op (higher rank's value)
//   round L+1    ranks 0..rem-1 send the result back to rank + p
// Every rank combines the same values in the same order, so all ranks end
// with the same bits. Messages: kP2pData, arg0 = round, arg1 = segment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "coll/p2p_operation.h"
#include "mccl/types.h"

namespace mccl::coll {

class RecursiveDoublingAllreduce final : public P2pOperation {
 public:
  // `send` may equal `recv` (in place); `segment_bytes` is a multiple of
  // the element size; `args` from encode_reduce_args(), sent in every
  // message's `root` (reduce_args.h).
  RecursiveDoublingAllreduce(protocol::Context& ctx, DataType type, ReduceOp op,
                             const std::byte* send, std::byte* recv, std::size_t bytes,
                             std::uint64_t signature, std::uint32_t args, std::size_t segment_bytes,
                             std::string what);

  std::string describe() const override { return what_; }
  MCCL_OPERATION_HANDLERS;

 private:
  enum class Take { kNothing, kCombine, kCopy };
  struct Step {
    std::uint32_t round;
    int peer;
    bool send;
    Take take;
  };
  void plan();
  void advance();
  void absorb(const Step& s, std::uint32_t segment, std::span<const std::byte> body);
  std::size_t seg_len(std::uint32_t segment) const;

  DataType type_;
  ReduceOp op_;
  const std::byte* send_;
  std::byte* recv_;
  std::size_t bytes_;
  std::uint32_t args_;
  std::size_t segment_bytes_;
  std::uint32_t segments_;
  std::string what_;
  std::vector<Step> steps_;
  std::size_t current_ = 0;
  bool entered_ = false;        // the current step's sends are out
  std::uint32_t received_ = 0;  // segments of the current step
  struct Held {
    int peer;
    std::uint32_t segment;
    std::vector<std::byte> body;
  };
  std::map<std::uint32_t, std::vector<Held>> held_;  // by round
};

}  // namespace mccl::coll
