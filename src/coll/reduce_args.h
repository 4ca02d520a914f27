// Which argument two ranks disagree on, for the reducing collectives.
//
// Their messages carry the collective's signature, a digest of every
// argument that must match; a mismatch found that way says only "something
// differs". So each kP2pData message of a reduce-scatter or allreduce also
// carries the sender's datatype, op and algorithm in the header's `root`
// field (unused by these messages otherwise), and the receiver of a
// mismatching message names the argument: "rank 2 passed datatype int32,
// this rank float32". What they cannot show (counts, segment settings) is
// named as what remains.
#pragma once

#include <cstdint>
#include <string>

#include "mccl/types.h"

namespace mccl::coll {

// `algorithm`: 0 for a reduce-scatter, else 1 + the AllreduceAlgorithm the
// allreduce runs (never kAuto, which is resolved before).
std::uint32_t encode_reduce_args(DataType type, ReduceOp op, std::uint32_t algorithm);

// The part of a mismatch message after "rank R: collective #S (...) ":
// "disagrees with rank P: rank P passed op max, this rank sum; every rank
// must ...".
std::string reduce_mismatch_text(int peer, std::uint32_t mine, std::uint32_t theirs);

}  // namespace mccl::coll
