// Compressed sums (compressed.h, codec/sum_codes.h):
//   reduce-scatter  Schedule[ring of packed codes, dequantise]
//   allreduce       Schedule[ring of packed codes, pack own block, sizes,
//                            multicast of packed blocks, dequantise all]
// The ring quantises each block of this rank's input as it first needs it.
#include <bit>
#include <string>
#include <vector>

#include "codec/code_buffer.h"
#include "codec/sum_codes.h"
#include "coll/compress_choice.h"
#include "coll/compressed.h"
#include "coll/compressed_steps.h"
#include "coll/local_steps.h"
#include "coll/reduce_args.h"
#include "coll/ring_reduce_scatter.h"
#include "coll/schedule.h"
#include "coll/signature.h"
#include "protocol/context.h"

namespace mccl::coll {

namespace {

constexpr std::uint64_t kCompressedSumMark = 0x5C0DE5;

// What the steps share: this rank's own block of summed codes (borrowed
// scratch, returned when the collective ends).
struct Sums {
  codec::CodeBuffer result;
};

std::uint64_t signature_of(CollKind kind, DataType type, std::span<const std::size_t> counts,
                           std::size_t segment, const codec::Settings& s) {
  Signature sig(kind);
  sig.mix(static_cast<std::uint64_t>(type)).mix(static_cast<std::uint64_t>(ReduceOp::kSum));
  sig.mix(counts).mix(segment).mix(kCompressedSumMark).mix(std::bit_cast<std::uint64_t>(s.bound));
  return sig.value();
}

// The ring over the codes of `in` (`type`): block b is counts[b] int64
// codes, each segment quantised, added and packed in one pass as the ring
// reaches it (codec::add_and_pack).
std::shared_ptr<protocol::Operation> ring_step(protocol::Context& ctx, const CollConfig& cfg,
                                               std::shared_ptr<Sums> sums, const std::byte* in,
                                               std::span<const std::size_t> counts, DataType type,
                                               const codec::Settings& s, std::uint64_t sig,
                                               const std::string& what) {
  const int me = ctx.rank();
  sums->result = codec::CodeBuffer(counts[me]);
  ReduceLayout layout;
  layout.type = DataType::kInt64;
  layout.op = ReduceOp::kSum;
  std::vector<std::size_t> firsts;  // each block's first element
  std::size_t first = 0;
  for (std::size_t c : counts) {
    layout.bytes.push_back(c * sizeof(std::int64_t));
    layout.displs.push_back(first * sizeof(std::int64_t));
    firsts.push_back(first);
    first += c;
  }
  const double step = codec::sum_step(s.bound, ctx.size());
  const int n = ctx.size();
  const std::size_t value = size_of(type);
  // Where elements [offset, ...) of block b of the input lie; each hop also
  // notes the bound, so the statistics show that this rank compressed.
  auto at = [&ctx, in, firsts, value, bound = s.bound](int b, std::size_t offset) {
    ctx.counters().note_bound(bound);
    return in + (firsts[b] + offset) * value;
  };
  CodedSum coded;
  coded.value_bytes = value;
  coded.pack_own = [at, type, step, n](int b, std::size_t offset, std::size_t count,
                                       std::vector<std::byte>& out) {
    codec::pack_quantised(type, at(b, offset), count, step, n, out);
  };
  coded.add = [at, type, step, n](int b, std::size_t offset, std::size_t count,
                                  std::span<const std::byte> partial, std::vector<std::byte>& out) {
    return codec::add_and_pack(partial, type, at(b, offset), count, step, n, out);
  };
  coded.keep = [at, sums, type, step, n, me](std::size_t offset, std::size_t count,
                                             std::span<const std::byte> partial) {
    return codec::add_to_codes(partial, type, at(me, offset), count, step, n,
                               sums->result.data() + offset);
  };
  layout.coded = std::move(coded);
  // A segment of codes holds the elements that, packed at the rule's
  // assumed ratio, take MCCL_COLL_REDUCE_SEGMENT_BYTES on the wire, as an
  // exact segment does. Segments of that many bytes of int64 codes (the
  // choice until 2026-11-27) left 13 KB messages at ratio 2.5, and their
  // per-message work cost 8 ranks on 2 cores 12% of the reduce-scatter's time.
  const std::size_t elements =
      std::max<std::size_t>(1, cfg.reduce_segment_bytes * kAssumedCompressionRatio / value);
  const std::size_t segment = elements * sizeof(std::int64_t);
  return std::make_shared<RingReduceScatter>(ctx, std::move(layout), sig,
                                             encode_reduce_args(type, ReduceOp::kSum, 0), segment,
                                             rs_send_budget(ctx, cfg.rs_share), what);
}

std::shared_ptr<protocol::Operation> dequantise_step(protocol::Context& ctx,
                                                     std::shared_ptr<Sums> sums, std::byte* out,
                                                     DataType type, const codec::Settings& s) {
  return std::make_shared<LocalStep>(ctx, "dequantise", [&ctx, sums, out, type, s] {
    codec::dequantise_sum(type, sums->result.data(), sums->result.size(),
                          codec::sum_step(s.bound, ctx.size()), out);
    return common::Status::ok();
  });
}

std::size_t packed_limit(std::size_t count) { return (count / 1024 + 1) * 16 + count * 8; }

// Dequantises every block's summed codes from the packed streams (this
// rank's own too, so every rank runs the same bits through the same code),
// each as soon as its stream is complete (Encoded::on_stream) and in the
// last step whatever is left.
std::shared_ptr<protocol::Operation> gather_result_step(protocol::Context& ctx,
                                                        std::shared_ptr<Encoded> enc,
                                                        std::byte* out,
                                                        std::vector<std::size_t> counts,
                                                        std::vector<std::size_t> displs,
                                                        DataType type, const codec::Settings& s) {
  const double step = codec::sum_step(s.bound, ctx.size());
  enc->on_stream = [&ctx, enc_raw = enc.get(), out, counts, displs, type, step](int r) {
    codec::CodeBuffer codes(counts[r]);
    common::Status st = codec::unpack_codes(enc_raw->streams[r], counts[r], codes.data());
    if (!st.is_ok()) {
      return common::Status(st.code(), "rank " + std::to_string(ctx.rank()) +
                                           ": the summed block of rank " + std::to_string(r) +
                                           ": " + st.message());
    }
    codec::dequantise_sum(type, codes.data(), counts[r], step, out + displs[r] * size_of(type));
    return common::Status::ok();
  };
  return std::make_shared<LocalStep>(ctx, "dequantise", [enc, n = counts.size()] {
    for (std::size_t r = 0; r < n; ++r) {
      common::Status st = enc->finish(static_cast<int>(r));
      if (!st.is_ok()) return st;
    }
    return common::Status::ok();
  });
}

}  // namespace

bool compressible_sum(int ranks, DataType type, ReduceOp op, const codec::Settings& s) {
  // One rank's sum is its input: nothing to send, so nothing to compress.
  return s.mode == codec::Mode::kBound && op == ReduceOp::kSum && codec::compressible(type) &&
         ranks >= 2 && codec::sum_supported(ranks);
}

std::shared_ptr<protocol::Operation> make_compressed_reduce_scatterv(
    protocol::Context& ctx, const CollConfig& cfg, const void* send, void* recv,
    std::span<const std::size_t> counts, DataType type, const codec::Settings& s) {
  const std::uint64_t sig =
      signature_of(CollKind::kReduceScatter, type, counts, cfg.reduce_segment_bytes, s);
  const std::string what = "compressed reduce-scatter of " + std::to_string(counts[ctx.rank()]) +
                           " " + to_string(type) + " (sum, bound " + std::to_string(s.bound) +
                           ") on this rank";
  auto sums = std::make_shared<Sums>();
  std::vector<std::shared_ptr<protocol::Operation>> steps;
  steps.push_back(
      ring_step(ctx, cfg, sums, static_cast<const std::byte*>(send), counts, type, s, sig, what));
  steps.push_back(dequantise_step(ctx, sums, static_cast<std::byte*>(recv), type, s));
  auto route = [](const protocol::ControlHeader&) -> std::size_t { return 0; };
  return std::make_shared<Schedule>(ctx, what, std::move(steps), route, -1);
}

std::shared_ptr<protocol::Operation> make_compressed_allreduce(
    protocol::Context& ctx, const CollConfig& cfg, const void* send, bool in_place, void* recv,
    std::size_t count, DataType type, const codec::Settings& s) {
  const int n = ctx.size();
  const int me = ctx.rank();
  std::vector<std::size_t> counts(n), displs(n);
  std::size_t off = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = count / n + (static_cast<std::size_t>(r) < count % n ? 1 : 0);
    displs[r] = off;
    off += counts[r];
  }
  const std::uint64_t sig =
      signature_of(CollKind::kAllreduce, type, counts, cfg.reduce_segment_bytes, s);
  const std::string what = "compressed allreduce of " + std::to_string(count) + " " +
                           to_string(type) + " (sum, bound " + std::to_string(s.bound) + ")";
  auto* out = static_cast<std::byte*>(recv);
  const auto* in = in_place ? out : static_cast<const std::byte*>(send);
  auto sums = std::make_shared<Sums>();
  auto enc = std::make_shared<Encoded>();
  enc->streams.resize(n);
  enc->sizes.resize(n);
  std::vector<std::shared_ptr<protocol::Operation>> steps;
  steps.push_back(
      ring_step(ctx, cfg, sums, in, counts, type, s, sig, what + ", reduce-scatter step"));
  steps.push_back(std::make_shared<LocalStep>(ctx, "pack", [sums, enc, me] {
    enc->streams[me] = codec::borrow_stream_bytes(packed_limit(sums->result.size()));
    codec::pack_codes(sums->result.data(), sums->result.size(), enc->streams[me]);
    enc->sizes[me] = enc->streams[me].size();
    return common::Status::ok();
  }));
  steps.push_back(size_exchange_step(ctx, cfg, enc, sig));
  steps.push_back(mcast_step(ctx, cfg, enc, counts, packed_limit, sig, what + ", allgather step"));
  steps.push_back(gather_result_step(ctx, enc, out, counts, displs, type, s));
  auto route = [](const protocol::ControlHeader& h) -> std::size_t {
    if (h.kind != protocol::ControlKind::kP2pData) return 3;
    return (h.arg0 & kReduceScatterFlag) != 0 ? 0 : 2;
  };
  return std::make_shared<Schedule>(ctx, what, std::move(steps), route, 3);
}

}  // namespace mccl::coll
