// The compressed data-movement collectives: broadcast and allgather(v) of
// floating-point data through the codec (src/codec), which the user turned
// on (docs/compression.md). Each root encodes its shard once and multicasts
// the encoded stream, which is repaired like any other; every rank decodes
// every stream into the receive buffer, the root its own too, so that all
// ranks hold the same bits (the root's own data changes within the bound).
//
// An encoded stream's size depends on the data, so the ranks first learn
// it: a schedule (schedule.h) of
//   encode (LocalStep) -> sizes (chain broadcast / ring allgather of one
//   64-bit size per root) -> the multicast of the encoded streams
//   (DeferredStep, built from the sizes) -> decode (LocalStep).
// Statistics count bytes before and after encoding, the streams sent raw
// because they did not compress, and the largest bound in force.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "codec/codec.h"
#include "coll/collectives.h"
#include "mccl/types.h"

namespace mccl::coll {

// `count` elements of `type` at `buffer` from `root`; settings valid
// (codec::validate) and not kOff, type a float type.
std::shared_ptr<protocol::Operation> make_compressed_broadcast(protocol::Context& ctx,
                                                               const CollConfig& cfg, void* buffer,
                                                               std::size_t count, DataType type,
                                                               int root, const codec::Settings& s);

// Counts and displacements in elements of `type`; as make_allgatherv
// otherwise.
std::shared_ptr<protocol::Operation> make_compressed_allgatherv(
    protocol::Context& ctx, const CollConfig& cfg, const void* send, bool in_place, void* recv,
    std::span<const std::size_t> counts, std::span<const std::size_t> displacements, DataType type,
    const codec::Settings& s);

// Sums (ReduceOp::kSum) under Mode::kBound (compressed_reduce.cc,
// codec/sum_codes.h): every rank quantises its input once onto the grid
// of codec::sum_step(bound, N); the ring adds the integer codes exactly and
// packs them on the wire; the result is dequantised once. The allreduce
// then multicasts each block's packed codes (lossless), so every rank
// dequantises the same codes: bit-identical, |result - exact| <= bound +
// ulp(result)/2 whatever N is. Callers check compressible_sum() first.
bool compressible_sum(int ranks, DataType type, ReduceOp op, const codec::Settings& s);

// As make_reduce_scatterv, compressed.
std::shared_ptr<protocol::Operation> make_compressed_reduce_scatterv(
    protocol::Context& ctx, const CollConfig& cfg, const void* send, void* recv,
    std::span<const std::size_t> counts, DataType type, const codec::Settings& s);

// As make_allreduce (sum), compressed.
std::shared_ptr<protocol::Operation> make_compressed_allreduce(
    protocol::Context& ctx, const CollConfig& cfg, const void* send, bool in_place, void* recv,
    std::size_t count, DataType type, const codec::Settings& s);

// Adds one encoding to the communicator's statistics.
void count_encoding(protocol::Context& ctx, const codec::Settings& s,
                    const codec::EncodeInfo& info);

}  // namespace mccl::coll
