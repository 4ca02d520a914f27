// The whole receive path of one datagram as a rank runs it: the protocol
// context polls it from the in-memory transport, decodes and validates it,
// finds the collective by sequence number, places the payload and marks the
// bitmap. The root's sends happen untimed; compare with BM_ReceivePath,
// which skips the context and the transport, and BM_PlainMemcpy, the floor.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "coll/collectives.h"
#include "protocol/context.h"
#include "protocol/wire.h"
#include "transport/sim/sim_transport.h"

namespace mccl::protocol {
namespace {

constexpr std::uint32_t kTag = 0x5EED;

void BM_ContextReceive(benchmark::State& state) {
  const auto chunk = static_cast<std::uint32_t>(state.range(0));
  const bool checksum = state.range(1) != 0;
  const std::size_t bytes = std::size_t{4} << 20;  // a 4 MiB broadcast
  transport::sim::FabricConfig fc;
  fc.mtu = chunk + kDataHeaderBytes;
  transport::sim::Fabric fabric(fc);
  ProtocolConfig pc;
  pc.chunk_bytes = chunk;
  pc.checksum = checksum;
  // Rank 1 of 2 receives from root 0; its right neighbour is the root, so
  // the broadcast completes as soon as every chunk is placed.
  Context ctx(1, 2, kTag, fabric.join_datagram(kTag, 1), fabric.join_reliable(kTag, 1, 2), pc);
  auto peer_dgram = fabric.join_datagram(kTag, 0);
  auto peer_rel = fabric.join_reliable(kTag, 0, 2);
  std::vector<std::byte> source(bytes, std::byte{0x5A}), dest(bytes);
  const std::size_t count = (bytes + chunk - 1) / chunk;
  std::vector<std::vector<std::byte>> datagrams(count);
  for (auto _ : state) {
    state.PauseTiming();
    auto op = coll::make_broadcast(ctx, coll::CollConfig{}, dest.data(), bytes, 0);
    ctx.start(op);
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t len = std::min<std::size_t>(chunk, bytes - i * chunk);
      std::span<const std::byte> payload(source.data() + i * chunk, len);
      DataHeader h;
      h.comm_tag = kTag;
      h.seq = op->seq();
      h.root = 0;
      h.chunk_index = static_cast<std::uint32_t>(i);
      h.chunk_bytes = chunk;
      h.total_bytes = bytes;
      h.payload_len = static_cast<std::uint16_t>(len);
      datagrams[i].resize(kDataHeaderBytes + len);
      std::memcpy(datagrams[i].data() + kDataHeaderBytes, payload.data(), len);
      encode_data_header(h, payload, checksum, datagrams[i].data());
    }
    for (std::size_t sent = 0; sent < count;) {
      std::vector<transport::OutDatagram> batch;
      for (std::size_t i = sent; i < count && batch.size() < 256; ++i) {
        std::span<const std::byte> d(datagrams[i]);
        batch.push_back({d.first(kDataHeaderBytes), d.subspan(kDataHeaderBytes)});
      }
      std::size_t accepted = 0;
      if (!peer_dgram->send(batch, accepted).is_ok() || accepted == 0) {
        state.SkipWithError("the in-memory fabric refused the datagrams");
        return;
      }
      sent += accepted;
    }
    state.ResumeTiming();
    // Until every chunk is placed; the broadcast then completes and retires.
    for (int polls = 0; !op->done(); ++polls) {
      if (polls > 1000000) {
        state.SkipWithError("broadcast did not complete");
        return;
      }
      ctx.progress();
    }
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_ContextReceive)->ArgsProduct({{1432, 8932}, {0, 1}})->ArgNames({"chunk", "crc"});

}  // namespace
}  // namespace mccl::protocol
