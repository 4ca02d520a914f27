// Header encode and validate, with and without the CRC32C over the payload.
#include <benchmark/benchmark.h>

#include <vector>

#include "protocol/wire.h"

namespace mccl::protocol {
namespace {

DataHeader header(std::size_t payload) {
  DataHeader h;
  h.comm_tag = 0x1234;
  h.seq = 7;
  h.root = 3;
  h.chunk_index = 0;
  h.chunk_bytes = static_cast<std::uint32_t>(payload);
  h.total_bytes = payload * 100;
  h.payload_len = static_cast<std::uint16_t>(payload);
  return h;
}

void BM_EncodeHeader(benchmark::State& state) {
  const bool checksum = state.range(1) != 0;
  std::vector<std::byte> payload(state.range(0));
  std::byte out[kDataHeaderBytes];
  DataHeader h = header(payload.size());
  for (auto _ : state) {
    encode_data_header(h, payload, checksum, out);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * payload.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeHeader)->ArgsProduct({{1460, 4056, 8932}, {0, 1}})->ArgNames({"payload", "crc"});

void BM_DecodeAndValidate(benchmark::State& state) {
  const bool checksum = state.range(1) != 0;
  std::vector<std::byte> datagram(kDataHeaderBytes + state.range(0));
  std::span<const std::byte> payload(datagram.data() + kDataHeaderBytes, state.range(0));
  encode_data_header(header(payload.size()), payload, checksum, datagram.data());
  for (auto _ : state) {
    DataHeader h;
    std::span<const std::byte> p;
    benchmark::DoNotOptimize(decode_data(datagram, 0x1234, checksum, h, p));
  }
  state.SetBytesProcessed(state.iterations() * payload.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeAndValidate)
    ->ArgsProduct({{1460, 4056, 8932}, {0, 1}})
    ->ArgNames({"payload", "crc"});

}  // namespace
}  // namespace mccl::protocol
