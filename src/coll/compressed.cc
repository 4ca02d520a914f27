#include "coll/compressed.h"

#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "codec/code_buffer.h"
#include "codec/prefix_decoder.h"
#include "coll/compressed_steps.h"
#include "coll/local_steps.h"
#include "coll/ring_allgather.h"
#include "coll/schedule.h"
#include "coll/signature.h"
#include "coll/tree_broadcast.h"
#include "protocol/context.h"
#include "protocol/mcast_collective.h"

namespace mccl::coll {

namespace {

// Keeps a compressed call's signature apart from an uncompressed one's.
constexpr std::uint64_t kCompressedMark = 0xC0DEC;

SizeLimit limit_for(const codec::Settings& s, DataType type) {
  return [s, type](std::size_t count) { return codec::max_encoded_bytes(s, type, count); };
}

void mix_settings(Signature& sig, DataType type, const codec::Settings& s) {
  sig.mix(static_cast<std::uint64_t>(type)).mix(static_cast<std::uint64_t>(s.mode));
  sig.mix(std::bit_cast<std::uint64_t>(s.bound)).mix(std::bit_cast<std::uint64_t>(s.zfp_rate));
}

// Control messages: the size exchange's point-to-point data to step 1,
// the multicast's to step 2; datagrams to step 2.
std::shared_ptr<protocol::Operation> schedule_of(
    protocol::Context& ctx, const std::string& what,
    std::vector<std::shared_ptr<protocol::Operation>> steps) {
  auto route = [](const protocol::ControlHeader& h) -> std::size_t {
    return h.kind == protocol::ControlKind::kP2pData ? 1 : 2;
  };
  return std::make_shared<Schedule>(ctx, what, std::move(steps), route, 2);
}

std::shared_ptr<protocol::Operation> encode_step(protocol::Context& ctx,
                                                 std::shared_ptr<Encoded> enc, int root,
                                                 const std::byte* src, std::size_t count,
                                                 DataType type, const codec::Settings& s) {
  return std::make_shared<LocalStep>(ctx, "encode", [&ctx, enc, root, src, count, type, s] {
    codec::EncodeInfo info;
    enc->streams[root] = codec::borrow_stream_bytes(codec::max_encoded_bytes(s, type, count));
    common::Status st = codec::encode(s, type, src, count, enc->streams[root], &info);
    if (!st.is_ok()) return st;
    enc->sizes[root] = enc->streams[root].size();
    count_encoding(ctx, s, info);
    return common::Status::ok();
  });
}

// A step that fails at once: the sizes the ranks announced cannot be right.
std::shared_ptr<protocol::Operation> failed_step(protocol::Context& ctx, int root,
                                                 std::uint64_t size, std::size_t limit) {
  const std::string why = "rank " + std::to_string(ctx.rank()) + ": root rank " +
                          std::to_string(root) + " announced a compressed stream of " +
                          std::to_string(size) + " bytes, more than its encoder can write (" +
                          std::to_string(limit) +
                          "): every rank must call it with the same counts, type and compression";
  return std::make_shared<LocalStep>(ctx, "size check",
                                     [why] { return common::mismatch_error(why); });
}

}  // namespace

std::shared_ptr<protocol::Operation> mcast_step(protocol::Context& ctx, const CollConfig& cfg,
                                                std::shared_ptr<Encoded> enc,
                                                std::vector<std::size_t> counts, SizeLimit limit_of,
                                                std::uint64_t signature, std::string what) {
  const int concurrent = cfg.concurrent_roots;
  auto build = [&ctx, enc, counts, limit_of, signature, what,
                concurrent]() -> std::shared_ptr<protocol::Operation> {
    protocol::McastSpec spec;
    spec.what = what;
    spec.signature = signature;
    spec.concurrent_roots = concurrent;
    spec.on_stream_complete = [enc](int root) { return enc->finish(root); };
    if (enc->on_prefix) {
      spec.on_stream_prefix = [enc](int root, std::uint64_t bytes) {
        return enc->prefix(root, bytes);
      };
    }
    for (std::size_t r = 0; r < counts.size(); ++r) {
      if (counts[r] == kNotARoot) continue;
      const std::uint64_t size = enc->sizes[r];
      const std::size_t limit = limit_of(counts[r]);
      if (size > limit) return failed_step(ctx, static_cast<int>(r), size, limit);
      if (static_cast<int>(r) != ctx.rank()) {
        enc->streams[r] = codec::borrow_stream_bytes(size);
        enc->streams[r].resize(size);
      }
      spec.streams.push_back({static_cast<int>(r), enc->streams[r].data(), size});
    }
    return std::make_shared<protocol::McastCollective>(ctx, std::move(spec));
  };
  return std::make_shared<DeferredStep>(ctx, what, std::move(build));
}

std::shared_ptr<protocol::Operation> size_exchange_step(protocol::Context& ctx,
                                                        const CollConfig& cfg,
                                                        const std::shared_ptr<Encoded>& enc,
                                                        std::uint64_t signature) {
  const int n = ctx.size();
  std::vector<std::size_t> counts(n, sizeof(std::uint64_t)), displs(n);
  for (int r = 0; r < n; ++r) displs[r] = static_cast<std::size_t>(r) * sizeof(std::uint64_t);
  return std::make_shared<RingAllgather>(
      ctx, BlockLayout{reinterpret_cast<std::byte*>(enc->sizes.data()), counts, displs}, signature,
      cfg.segment_bytes, RingDirection::kLeftward);
}

namespace {

// Decodes every root's stream into place, this rank's own included: block
// by block as each stream's front arrives (Encoded::on_prefix), the rest
// once it is complete (Encoded::on_stream, from the multicast step), and in
// the last step whatever is left. Decoding so overlaps with the bytes
// still on the wire, the stream's own as well as the other roots'.
std::shared_ptr<protocol::Operation> decode_step(protocol::Context& ctx,
                                                 std::shared_ptr<Encoded> enc, std::byte* out,
                                                 std::vector<std::size_t> counts,
                                                 std::vector<std::size_t> displs, DataType type) {
  using Decoders = std::vector<std::optional<codec::PrefixDecoder>>;
  auto decoders = std::make_shared<Decoders>(counts.size());
  // Root r's decoder, or none where r sends nothing here to decode.
  auto decoder_of = [out, counts, displs, type, decoders](int r) -> codec::PrefixDecoder* {
    if (counts[r] == kNotARoot || out == nullptr) return nullptr;
    auto& d = (*decoders)[r];
    if (!d) d.emplace(type, counts[r], out + displs[r] * size_of(type));
    return &*d;
  };
  auto named = [&ctx](int r, common::Status st) {
    if (st.is_ok()) return st;
    return common::Status(st.code(), "rank " + std::to_string(ctx.rank()) +
                                         ": decoding root rank " + std::to_string(r) +
                                         "'s data: " + st.message());
  };
  enc->on_prefix = [enc_raw = enc.get(), decoder_of, named](int r, std::uint64_t bytes) {
    codec::PrefixDecoder* d = decoder_of(r);
    return d == nullptr
               ? common::Status::ok()
               : named(r, d->advance(enc_raw->streams[r], static_cast<std::size_t>(bytes)));
  };
  enc->on_stream = [enc_raw = enc.get(), decoder_of, named](int r) {
    codec::PrefixDecoder* d = decoder_of(r);
    return d == nullptr ? common::Status::ok() : named(r, d->finish(enc_raw->streams[r]));
  };
  return std::make_shared<LocalStep>(ctx, "decode", [enc, n = counts.size()] {
    for (std::size_t r = 0; r < n; ++r) {
      common::Status st = enc->finish(static_cast<int>(r));
      if (!st.is_ok()) return st;
    }
    return common::Status::ok();
  });
}

}  // namespace

void count_encoding(protocol::Context& ctx, const codec::Settings& s,
                    const codec::EncodeInfo& info) {
  auto& c = ctx.counters();
  protocol::Counters::add(c.compress_bytes_in, info.raw_bytes);
  protocol::Counters::add(c.compress_bytes_out, info.encoded_bytes);
  if (info.raw && s.mode != codec::Mode::kOff) protocol::Counters::add(c.compress_raw_fallbacks);
  c.note_bound(info.bound);
}

std::shared_ptr<protocol::Operation> make_compressed_broadcast(protocol::Context& ctx,
                                                               const CollConfig& cfg, void* buffer,
                                                               std::size_t count, DataType type,
                                                               int root, const codec::Settings& s) {
  Signature signature(CollKind::kBroadcast);
  signature.mix(static_cast<std::uint64_t>(root)).mix(count).mix(kCompressedMark);
  mix_settings(signature, type, s);
  const std::uint64_t sig = signature.value();
  const int n = ctx.size();
  auto enc = std::make_shared<Encoded>();
  enc->streams.resize(n);
  enc->sizes.resize(n);
  auto* buf = static_cast<std::byte*>(buffer);
  std::vector<std::size_t> counts(n, kNotARoot), displs(n, 0);
  counts[root] = count;
  const std::string what = "compressed broadcast of " + std::to_string(count) + " " +
                           to_string(type) + " from root " + std::to_string(root) + " (" +
                           codec::to_string(s.mode) + ")";
  std::vector<std::shared_ptr<protocol::Operation>> steps;
  steps.push_back(ctx.rank() == root ? encode_step(ctx, enc, root, buf, count, type, s)
                                     : std::make_shared<LocalStep>(
                                           ctx, "encode", [] { return common::Status::ok(); }));
  steps.push_back(std::make_shared<TreeBroadcast>(
      ctx, TreeShape::kLeftwardChain, reinterpret_cast<std::byte*>(&enc->sizes[root]),
      sizeof(std::uint64_t), root, sig, cfg.segment_bytes));
  steps.push_back(mcast_step(ctx, cfg, enc, counts, limit_for(s, type), sig, what));
  steps.push_back(decode_step(ctx, enc, buf, counts, displs, type));
  return schedule_of(ctx, what, std::move(steps));
}

std::shared_ptr<protocol::Operation> make_compressed_allgatherv(
    protocol::Context& ctx, const CollConfig& cfg, const void* send, bool in_place, void* recv,
    std::span<const std::size_t> counts, std::span<const std::size_t> displacements, DataType type,
    const codec::Settings& s) {
  Signature signature(CollKind::kAllgather);
  signature.mix(counts).mix(kCompressedMark);
  mix_settings(signature, type, s);
  const std::uint64_t sig = signature.value();
  const int n = ctx.size();
  const int me = ctx.rank();
  auto enc = std::make_shared<Encoded>();
  enc->streams.resize(n);
  enc->sizes.resize(n);
  auto* out = static_cast<std::byte*>(recv);
  const std::size_t es = size_of(type);
  const auto* src = in_place ? out + displacements[me] * es : static_cast<const std::byte*>(send);
  std::vector<std::size_t> cv(counts.begin(), counts.end());
  std::vector<std::size_t> dv(displacements.begin(), displacements.end());
  const std::string what = "compressed allgather of " + std::to_string(counts[me]) + " " +
                           to_string(type) + " from each rank (this one, " +
                           codec::to_string(s.mode) + ")";
  std::vector<std::shared_ptr<protocol::Operation>> steps;
  steps.push_back(encode_step(ctx, enc, me, src, counts[me], type, s));
  steps.push_back(size_exchange_step(ctx, cfg, enc, sig));
  steps.push_back(mcast_step(ctx, cfg, enc, cv, limit_for(s, type), sig, what));
  steps.push_back(decode_step(ctx, enc, out, cv, dv, type));
  return schedule_of(ctx, what, std::move(steps));
}

}  // namespace mccl::coll
