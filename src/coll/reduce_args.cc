#include "coll/reduce_args.h"

#include "mccl/options.h"

namespace mccl::coll {

namespace {

struct Args {
  std::uint32_t algorithm, type, op;
};

Args decode(std::uint32_t v) { return {(v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF}; }

std::string algorithm_text(std::uint32_t a) {
  switch (a) {
    case 0:
      return "reduce_scatter";
    case 1 + static_cast<std::uint32_t>(AllreduceAlgorithm::kRsMulticast):
      return "allreduce (reduce-scatter + multicast allgather)";
    case 1 + static_cast<std::uint32_t>(AllreduceAlgorithm::kRing):
      return "allreduce (ring)";
    case 1 + static_cast<std::uint32_t>(AllreduceAlgorithm::kRecursiveDoubling):
      return "allreduce (recursive doubling)";
  }
  return "an unknown collective";
}

}  // namespace

std::uint32_t encode_reduce_args(DataType type, ReduceOp op, std::uint32_t algorithm) {
  return ((algorithm & 0xFF) << 16) | ((static_cast<std::uint32_t>(type) & 0xFF) << 8) |
         (static_cast<std::uint32_t>(op) & 0xFF);
}

std::string reduce_mismatch_text(int peer, std::uint32_t mine, std::uint32_t theirs) {
  const Args a = decode(mine), b = decode(theirs);
  const std::string p = "rank " + std::to_string(peer);
  std::string what;
  if (a.algorithm != b.algorithm) {
    if (a.algorithm == 0 || b.algorithm == 0) {
      what = p + " called " + algorithm_text(b.algorithm) + " where this rank called " +
             algorithm_text(a.algorithm);
    } else {
      what = p + " runs " + algorithm_text(b.algorithm) + ", this rank " +
             algorithm_text(a.algorithm) +
             " (another count, or MCCL_COLL_ALLREDUCE_ALGO / MCCL_COLL_ALLREDUCE_SMALL_BYTES set "
             "differently)";
    }
  } else if (a.type != b.type) {
    what = p + " passed datatype " + to_string(static_cast<DataType>(b.type)) + ", this rank " +
           to_string(static_cast<DataType>(a.type));
  } else if (a.op != b.op) {
    what = p + " passed op " + to_string(static_cast<ReduceOp>(b.op)) + ", this rank " +
           to_string(static_cast<ReduceOp>(a.op));
  } else {
    what = p + " passed other counts (or set MCCL_COLL_REDUCE_SEGMENT_BYTES differently)";
  }
  return "disagrees with " + p + ": " + what +
         "; every rank must pass the same counts, datatype and op";
}

}  // namespace mccl::coll
