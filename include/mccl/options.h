// Options for a communicator. Every field is optional: a field that is set
// wins over the matching MCCL_* environment setting, which wins over the
// built-in default (`mccl_info` lists them all). Designated initialisers
// read best:
//
//   mccl::Communicator comm(boot, {.timeout = std::chrono::seconds(5)});
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "mccl/export.h"
#include "mccl/progress_thread.h"

namespace mccl {

enum class TransportKind { kAuto, kSim, kUdp, kIb };
// kInline: the caller's thread drives the protocol inside test()/wait().
// kThread: a pinned host thread does. kOffload: the mccl_offloadd daemon
// runs it outside this process (started on first use; docs/offload.md).
enum class ProgressKind { kInline, kThread, kOffload };
// kAuto: the point-to-point Bruck allgather / binomial-tree broadcast below
// the measured crossover (MCCL_COLL_ALLGATHER_MCAST_FROM_BYTES,
// MCCL_COLL_BCAST_MCAST_FROM_BYTES), multicast from it up; where the transport
// cannot multicast, the ring / pipelined chain above it (docs/algorithms.md).
// Where ranks share cores, small broadcasts of teams of 3 to 8 ranks take
// the flat tree (the root sends to every rank) instead of the binomial one,
// and small allgathers the star (every rank sends its block to rank 0, which
// sends every rank the result) instead of Bruck's.
enum class AllgatherAlgorithm { kAuto, kMulticast, kRing, kBruck, kStar };
enum class BroadcastAlgorithm { kAuto, kMulticast, kChain, kBinomial, kFlat };
// The settings' names: "multicast", "bruck", "binomial", ...
MCCL_API const char* to_string(AllgatherAlgorithm a);
MCCL_API const char* to_string(BroadcastAlgorithm a);
// kAuto: recursive doubling below MCCL_COLL_ALLREDUCE_SMALL_BYTES, else the
// ring reduce-scatter followed by the multicast allgather (the point-to-point
// ring allreduce when the transport cannot multicast).
enum class AllreduceAlgorithm { kAuto, kRsMulticast, kRing, kRecursiveDoubling };
// kAuto: the star (every rank signals rank 0, which releases them all) where
// 3 to 8 ranks share cores, the dissemination barrier (ceil(log2 N) rounds)
// otherwise (docs/algorithms.md).
enum class BarrierAlgorithm { kAuto, kDissemination, kStar };
// "dissemination", "star", "auto".
MCCL_API const char* to_string(BarrierAlgorithm a);

// Lossy compression of float data inside the collectives (docs/compression.md).
// Only calls that name a float datatype (float32, float64, bfloat16,
// float16) are compressed; integer data never is.
enum class CompressMode {
  kOff,    // exact
  kBf16,   // float32 rounded to bfloat16 (nearest even): relative error <= 2^-8
  kBound,  // every element within `bound` of the original; ranks bit-identical
  kZfp,    // ZFP at `zfp_rate` bits per value (float32/float64): no bound
};
struct Compression {
  CompressMode mode = CompressMode::kOff;
  double bound = 0.0;      // kBound: the absolute error bound, > 0
  double zfp_rate = 16.0;  // kZfp: bits per value, in [1, 64]
  // On links faster than this many Mbit/s the collective runs exact, since
  // the codec would cost more time than the wire saves; 0: the measured
  // rule (the codec's rate and the cores each rank has; docs/compression.md,
  // "When compression pays"); -1: compress at any link rate. Where the link
  // rate is unknown (no MCCL_UDP_RATE_MBIT, an interface without a speed)
  // the collective compresses. Every rank must choose alike.
  // (MCCL_COLL_COMPRESS_MAX_MBIT)
  std::int64_t max_link_mbit = 0;
};

// Options of one call; a field that is set wins over the communicator's.
struct CollOptions {
  std::optional<Compression> compression;
};

struct CommOptions {
  // Datagram transport. kAuto picks the in-memory fabric for in-process
  // bootstraps. (MCCL_TRANSPORT)
  std::optional<TransportKind> transport;
  // Who drives the protocol. (MCCL_PROGRESS)
  std::optional<ProgressKind> progress;
  // Deadline of every blocking wait inside a collective, and the default of
  // Request::wait(). (MCCL_COLL_TIMEOUT_MS)
  // A timeout too long for the clock (past ~292 years, e.g.
  // milliseconds::max()) means no deadline at all: deadlines saturate.
  std::optional<std::chrono::milliseconds> timeout;
  // How many roots of an allgather inject at once; 0: as many as the
  // incast budget allows (MCCL_COLL_ALLGATHER_ROOTS, MCCL_PROTO_INCAST_BYTES)
  std::optional<int> allgather_concurrent_roots;
  std::optional<AllgatherAlgorithm> allgather_algorithm;  // MCCL_COLL_ALLGATHER_ALGO
  std::optional<BroadcastAlgorithm> broadcast_algorithm;  // MCCL_COLL_BCAST_ALGO
  std::optional<AllreduceAlgorithm> allreduce_algorithm;  // MCCL_COLL_ALLREDUCE_ALGO
  std::optional<BarrierAlgorithm> barrier_algorithm;      // MCCL_COLL_BARRIER_ALGO
  // Share, in (0, 1], of the sending a reduce-scatter's ring (also inside an
  // allreduce) gets against the multicast injection of collectives running
  // beside it: per progress step a ring sends at most share / (1 - share)
  // times one multicast batch (at least one segment); 1 means no limit. A
  // value outside (0, 1] makes the constructor throw kInvalidArgument.
  // (MCCL_COLL_RS_SHARE)
  std::optional<double> reduce_scatter_send_share;
  // Drive this communicator from a progress thread shared with others
  // (progress_thread.h) instead of an engine of its own. `progress` must
  // then be unset or kThread, else the constructor throws kInvalidArgument.
  std::optional<ProgressThread> progress_thread;
  // Authenticate every multicast datagram with a MAC under a key agreed at
  // creation (docs/security.md); every rank must choose alike. True fails
  // creation with kUnavailable in a build without authentication
  // (libsodium and libcrypto). Unset: the environment, whose "auto" is on
  // where the build can, except over InfiniBand UD and, where
  // MCCL_PROTO_AUTH_AUTO_MAX_MBIT is set, where a rank's link is known to
  // be faster. (MCCL_PROTO_AUTH)
  std::optional<bool> authenticate;
  // How long creating the communicator waits for the reliable mesh to
  // connect and for every rank to hear the multicast group; then every rank
  // fails with kUnavailable naming the unreachable ranks. Must be positive.
  // Applies under every engine (the offload daemon gets it in the hello).
  // (MCCL_TRANSPORT_SETUP_TIMEOUT_MS)
  std::optional<std::chrono::milliseconds> setup_timeout;
  // Compression of the float collectives; every rank must choose alike
  // (kMismatch otherwise). (MCCL_COLL_COMPRESS, MCCL_COLL_COMPRESS_BOUND,
  // MCCL_COLL_COMPRESS_ZFP_RATE)
  std::optional<Compression> compression;
};

}  // namespace mccl
