// Throughput of the in-memory fabric: one sender, N-1 receivers polled
// round-robin from this thread (how the in-process tests drive it).
#include <benchmark/benchmark.h>

#include <vector>

#include "transport/sim/sim_transport.h"

namespace mccl::transport::sim {
namespace {

class Counter final : public DatagramHandler {
 public:
  void on_datagrams(DatagramBatch batch) override {
    for (const auto& d : batch) bytes += d.size();
  }
  std::size_t bytes = 0;
};

void BM_SimMulticast(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  FabricConfig cfg;
  cfg.mtu = 1500;
  Fabric fabric(cfg);
  std::vector<std::unique_ptr<DatagramTransport>> eps;
  for (int r = 0; r < ranks; ++r) eps.push_back(fabric.join_datagram(1, r));
  std::vector<std::byte> header(40), payload(1460);
  std::vector<OutDatagram> batch(64, OutDatagram{header, payload});
  Counter sink;
  for (auto _ : state) {
    std::size_t accepted = 0;
    (void)eps[0]->send(batch, accepted);
    for (int r = 1; r < ranks; ++r) {
      std::size_t n = 0;
      (void)eps[r]->poll(sink, 1024, n);
    }
  }
  state.SetItemsProcessed(state.iterations() * 64 * (ranks - 1));  // deliveries
  state.SetBytesProcessed(state.iterations() * 64 * 1500 * (ranks - 1));
}
BENCHMARK(BM_SimMulticast)->Arg(2)->Arg(8)->Arg(64)->ArgName("ranks");

}  // namespace
}  // namespace mccl::transport::sim
