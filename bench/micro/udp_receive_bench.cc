// The UDP transport's receive path per datagram, kernel included: a 4 MiB
// stream of numbered datagrams sent to lo in slices (untimed), then read
// back (timed) by a handler that places each payload in a buffer, either by
// copying it out of the transport's receive slot (landing:0, two copies per
// byte: kernel to slot, slot to buffer) or by giving the transport landings
// so the kernel writes it in place (landing:1, one copy). With and without
// GRO, with datagrams of 1,472 bytes (MTU 1500) and 8,972 (MTU 9000). Needs
// multicast on lo; skips with an error where it is missing.
#include <benchmark/benchmark.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/udp/udp_transport.h"

namespace mccl::transport::udp {
namespace {

constexpr std::size_t kHeader = 40;
constexpr std::size_t kKeyOffset = 4;

// Places chunk k of the stream at buffer + k * chunk; with `land`, says
// where the next chunks go (key: the chunk index, then zeros).
class Placer final : public DatagramHandler {
 public:
  Placer(std::size_t chunk, std::size_t chunks, bool land)
      : chunk_(chunk), buf_(chunk * chunks), land_(land) {}

  LandingLayout landing_layout() const override {
    return land_ ? LandingLayout{kHeader, kKeyOffset} : LandingLayout{};
  }
  std::size_t landings(std::span<const std::byte> header, bool inclusive,
                       std::span<Landing> out) override {
    std::uint32_t c;
    std::memcpy(&c, header.data() + kKeyOffset, sizeof c);
    std::size_t n = 0;
    const std::size_t chunks = buf_.size() / chunk_;
    for (std::size_t k = c + (inclusive ? 0 : 1); k < chunks && n < out.size(); ++k, ++n) {
      out[n].payload = buf_.data() + k * chunk_;
      out[n].bytes = chunk_;
      out[n].key = key(static_cast<std::uint32_t>(k));
    }
    return n;
  }
  void on_landed(std::span<const LandedDatagram> batch) override { placed_ += batch.size(); }
  void on_datagrams(DatagramBatch batch) override {
    for (const auto& d : batch) {
      std::uint32_t c;
      std::memcpy(&c, d.data() + kKeyOffset, sizeof c);
      std::memcpy(buf_.data() + std::size_t{c} * chunk_, d.data() + kHeader, d.size() - kHeader);
      ++placed_;
    }
  }

  static std::array<std::byte, kLandingKeyBytes> key(std::uint32_t c) {
    std::array<std::byte, kLandingKeyBytes> k{};
    std::memcpy(k.data(), &c, sizeof c);
    return k;
  }
  std::size_t placed_ = 0;

 private:
  std::size_t chunk_;
  std::vector<std::byte> buf_;
  bool land_;
};

UdpConfig config(bool gro, std::size_t datagram) {
  UdpConfig c;
  c.iface = "lo";
  c.comm_tag = 0xBE7C;
  c.job_salt = 0x5EEDF00Dull;
  c.rate_mbit = -1;
  c.rcvbuf_bytes = 8u << 20;
  c.max_datagram = datagram;
  c.gso = "on";
  c.gro = gro ? "on" : "off";
  return c;
}

void BM_UdpReceive(benchmark::State& state) {
  const bool land = state.range(0) != 0;
  const bool gro = state.range(1) != 0;
  const auto datagram = static_cast<std::size_t>(state.range(2));
  const std::size_t chunk = datagram - kHeader;
  const std::size_t chunks = (std::size_t{4} << 20) / chunk;
  std::unique_ptr<DatagramTransport> tx, rx;
  if (!create_udp_transport(config(gro, datagram), tx).is_ok() ||
      !create_udp_transport(config(gro, datagram), rx).is_ok()) {
    state.SkipWithError("multicast on lo is not usable here");
    return;
  }
  std::vector<std::vector<std::byte>> datagrams(chunks);
  std::vector<OutDatagram> out(chunks);
  for (std::size_t k = 0; k < chunks; ++k) {
    datagrams[k].assign(kHeader + chunk, std::byte{static_cast<unsigned char>(k)});
    const auto key = Placer::key(static_cast<std::uint32_t>(k));
    std::memcpy(datagrams[k].data() + kKeyOffset, key.data(), key.size());
    std::span<const std::byte> d(datagrams[k]);
    out[k] = {d.first(kHeader), d.subspan(kHeader)};
  }
  Placer placer(chunk, chunks, land);
  constexpr std::size_t kSlice = 64;  // ~570 KB: well inside the receive buffer
  for (auto _ : state) {
    for (std::size_t at = 0; at < chunks; at += kSlice) {
      state.PauseTiming();
      std::span<const OutDatagram> rest(out.data() + at, std::min(kSlice, chunks - at));
      while (!rest.empty()) {
        std::size_t accepted = 0;
        if (!tx->send(rest, accepted).is_ok()) {
          state.SkipWithError("send failed");
          return;
        }
        rest = rest.subspan(accepted);
      }
      const std::size_t want = placer.placed_ + std::min(kSlice, chunks - at);
      state.ResumeTiming();
      for (int idle = 0; placer.placed_ < want && idle < 1000;) {
        std::size_t delivered = 0;
        if (!rx->poll(placer, 512, delivered).is_ok()) {
          state.SkipWithError("poll failed");
          return;
        }
        if (delivered == 0) {
          pollfd p{rx->wait_fd(), POLLIN, 0};
          ::poll(&p, 1, 1);
          ++idle;
        }
      }
    }
  }
  const UdpCounters k = as_udp(rx.get())->counters();
  state.counters["landed_share"] =
      k.datagrams_received == 0
          ? 0.0
          : static_cast<double>(k.landed) / static_cast<double>(k.datagrams_received);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * chunks * chunk));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * chunks));
}
BENCHMARK(BM_UdpReceive)
    ->ArgsProduct({{0, 1}, {0, 1}, {1472, 8972}})
    ->ArgNames({"landing", "gro", "datagram"})
    ->UseRealTime();

}  // namespace
}  // namespace mccl::transport::udp
