// The receive path per datagram as the protocol runs it: validate the
// header (CRC included), find the collective, place the payload, mark the
// bitmap. Compared with a bare memcpy of the same bytes, which is the floor.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "protocol/stream.h"
#include "protocol/wire.h"

namespace mccl::protocol {
namespace {

constexpr std::uint32_t kTag = 0xABCD;

std::vector<std::vector<std::byte>> make_datagrams(std::size_t chunk, std::size_t count,
                                                   bool checksum) {
  std::vector<std::vector<std::byte>> out;
  std::vector<std::byte> payload(chunk, std::byte{0x5A});
  for (std::size_t i = 0; i < count; ++i) {
    DataHeader h;
    h.comm_tag = kTag;
    h.seq = 1;
    h.chunk_index = static_cast<std::uint32_t>(i);
    h.chunk_bytes = static_cast<std::uint32_t>(chunk);
    h.total_bytes = chunk * count;
    h.payload_len = static_cast<std::uint16_t>(chunk);
    std::vector<std::byte> d(kDataHeaderBytes + chunk);
    std::memcpy(d.data() + kDataHeaderBytes, payload.data(), chunk);
    encode_data_header(h, payload, checksum, d.data());
    out.push_back(std::move(d));
  }
  return out;
}

void BM_ReceivePath(benchmark::State& state) {
  const std::size_t chunk = state.range(0);
  const bool checksum = state.range(1) != 0;
  const std::size_t count = (4u << 20) / chunk;  // a 4 MiB stream
  auto datagrams = make_datagrams(chunk, count, checksum);
  std::vector<std::byte> buffer(chunk * count);
  for (auto _ : state) {
    Stream s({0, buffer.data(), chunk * count}, static_cast<std::uint32_t>(chunk), false);
    for (const auto& d : datagrams) {
      DataHeader h;
      std::span<const std::byte> p;
      if (decode_data(d, kTag, checksum, h, p) != DataCheck::kOk) state.SkipWithError("invalid");
      s.place(h.chunk_index, p);
    }
    benchmark::DoNotOptimize(buffer.data());
  }
  state.SetBytesProcessed(state.iterations() * chunk * count);
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_ReceivePath)->ArgsProduct({{1460, 4056, 8932}, {0, 1}})->ArgNames({"chunk", "crc"});

// Placement alone (copy into the user buffer at the chunk's offset and mark
// the bitmap), datagrams already validated: the protocol's cost over memcpy.
void BM_Place(benchmark::State& state) {
  const std::size_t chunk = state.range(0);
  const std::size_t count = (4u << 20) / chunk;
  auto datagrams = make_datagrams(chunk, count, false);
  std::vector<std::byte> buffer(chunk * count);
  for (auto _ : state) {
    Stream s({0, buffer.data(), chunk * count}, static_cast<std::uint32_t>(chunk), false);
    for (std::size_t i = 0; i < count; ++i) {
      s.place(i, std::span<const std::byte>(datagrams[i]).subspan(kDataHeaderBytes));
    }
    benchmark::DoNotOptimize(buffer.data());
  }
  state.SetBytesProcessed(state.iterations() * chunk * count);
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_Place)->Arg(1460)->Arg(4056)->Arg(8932)->ArgName("chunk");

void BM_PlainMemcpy(benchmark::State& state) {
  const std::size_t chunk = state.range(0);
  const std::size_t count = (4u << 20) / chunk;
  auto datagrams = make_datagrams(chunk, count, false);
  std::vector<std::byte> buffer(chunk * count);
  for (auto _ : state) {
    for (std::size_t i = 0; i < count; ++i) {
      std::memcpy(buffer.data() + i * chunk, datagrams[i].data() + kDataHeaderBytes, chunk);
    }
    benchmark::DoNotOptimize(buffer.data());
  }
  state.SetBytesProcessed(state.iterations() * chunk * count);
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_PlainMemcpy)->Arg(1460)->Arg(4056)->Arg(8932)->ArgName("chunk");

}  // namespace
}  // namespace mccl::protocol
