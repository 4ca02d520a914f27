// The steps the compressed collectives share (compressed.cc, the data
// movement; compressed_reduce.cc, the sums): a multicast of encoded
// streams whose sizes the ranks learn first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codec/code_buffer.h"
#include "coll/collectives.h"
#include "common/status.h"

namespace mccl::coll {

// What the steps of one collective share: the encoded stream of every root
// and its size.
struct Encoded {
  std::vector<std::vector<std::byte>> streams;  // by rank
  std::vector<std::uint64_t> sizes;             // by rank, exchanged as 8 bytes each
  // What to do with root r's stream once it is all here (decode it into
  // place), run by finish(r) at most once per stream: by the multicast step
  // as each stream completes, so that decoding overlaps with the streams
  // still arriving, and by the last step for whatever is left.
  std::function<common::Status(int root)> on_stream;
  // What to do as the first `bytes` of root r's stream are here (decode
  // the blocks they hold), run by the multicast step as they arrive, before
  // finish(r). Empty: nothing.
  std::function<common::Status(int root, std::uint64_t bytes)> on_prefix;
  std::vector<bool> finished;  // by rank

  Encoded() = default;
  Encoded(const Encoded&) = delete;
  Encoded& operator=(const Encoded&) = delete;
  // The streams' memory goes back to the pool they are borrowed from
  // (codec::borrow_stream_bytes).
  ~Encoded() {
    for (auto& s : streams) codec::return_stream_bytes(std::move(s));
  }

  common::Status finish(int root) {
    if (finished.empty()) finished.assign(streams.size(), false);
    if (finished[root] || !on_stream) return common::Status::ok();
    finished[root] = true;
    return on_stream(root);
  }
  common::Status prefix(int root, std::uint64_t bytes) {
    if (!on_prefix || (!finished.empty() && finished[root])) return common::Status::ok();
    return on_prefix(root, bytes);
  }
};

// counts[r] of a rank that is no root of the collective (a broadcast).
inline constexpr std::size_t kNotARoot = ~std::size_t{0};

// The largest stream a root may announce for `count` elements; a larger one
// means the ranks disagree, and fails the collective with kMismatch.
using SizeLimit = std::function<std::size_t(std::size_t count)>;

// Every rank's sizes[me] to every rank: a ring allgather of 8 bytes each,
// leftward (RingDirection::kLeftward: an FSDP step runs it beside a
// rightward reduce-scatter ring, behind whose bytes its N - 1 hops would
// otherwise wait), control messages of kind kP2pData without
// kReduceScatterFlag.
std::shared_ptr<protocol::Operation> size_exchange_step(protocol::Context& ctx,
                                                        const CollConfig& cfg,
                                                        const std::shared_ptr<Encoded>& enc,
                                                        std::uint64_t signature);

// The multicast of the streams of every root r with counts[r] !=
// kNotARoot, built when it starts (DeferredStep), from the sizes.
std::shared_ptr<protocol::Operation> mcast_step(protocol::Context& ctx, const CollConfig& cfg,
                                                std::shared_ptr<Encoded> enc,
                                                std::vector<std::size_t> counts, SizeLimit limit,
                                                std::uint64_t signature, std::string what);

}  // namespace mccl::coll
