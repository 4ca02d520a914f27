// mccl_osu_allgather: OSU's osu_allgather over MCCL. Same options, same
// table; launch with mpirun, mccl_run or tests/fabric/launch.sh. With
// --compress the data are float32 (Gaussian), moved by the typed call.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "osu_common.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::pattern;
using mccl::bench::osu::sample_value;
using mccl::bench::osu::within_guarantee;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<float> fsend, frecv;
double largest_error = 0;

Collective bytes_allgather(mccl::Communicator& comm, const Options& o) {
  const int me = comm.rank(), n = comm.size();
  using mccl::bench::osu::Buffer;
  auto send_owned = std::make_shared<Buffer>(comm, o, o.max_size, std::byte{1});
  auto recv_owned =
      std::make_shared<Buffer>(comm, o, o.max_size * static_cast<std::size_t>(n), std::byte{0});
  std::byte* send = send_owned->data();
  std::byte* recv = recv_owned->data();
  Collective c;
  c.keep = {send_owned, recv_owned};
  c.run = [&comm, send, recv](std::size_t m) { comm.allgather(send, recv, m); };
  c.fill = [me, n, send, recv](std::size_t m, int iter) {
    for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, iter);
    std::memset(recv, 0, m * static_cast<std::size_t>(n));
  };
  c.check = [n, recv](std::size_t m, int iter) {
    std::size_t wrong = 0;
    for (int r = 0; r < n; ++r) {
      const std::byte* block = recv + static_cast<std::size_t>(r) * m;
      for (std::size_t i = 0; i < m; ++i) wrong += block[i] != pattern(r, i, iter);
    }
    return wrong;
  };
  return c;
}

// Float32 elements (m / 4 per rank), compressed as --compress says; the
// untimed data are Gaussian too, so that every iteration compresses alike.
Collective float_allgather(mccl::Communicator& comm, const Options& o) {
  const int me = comm.rank(), n = comm.size();
  const std::size_t max = o.max_size / sizeof(float);
  fsend.resize(max);
  for (std::size_t i = 0; i < max; ++i) fsend[i] = sample_value(me, i, -1);
  frecv.assign(max * static_cast<std::size_t>(n), 0.0f);
  Collective c;
  const mccl::CollOptions call = o.call_options();
  c.run = [&comm, call](std::size_t m) {
    comm.allgather(fsend.data(), frecv.data(), m / sizeof(float), mccl::DataType::kFloat32, call);
  };
  c.fill = [me, n](std::size_t m, int iter) {
    for (std::size_t i = 0; i < m / sizeof(float); ++i) fsend[i] = sample_value(me, i, iter);
    std::fill(frecv.begin(), frecv.begin() + static_cast<std::ptrdiff_t>(m / 4 * n), 0.0f);
  };
  c.check = [n, comp = o.compression](std::size_t m, int iter) {
    std::size_t wrong = 0;
    const std::size_t k = m / sizeof(float);
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < k; ++i) {
        const float want = sample_value(r, i, iter), got = frecv[r * k + i];
        largest_error = std::max(largest_error, std::fabs(double(got) - want));
        wrong += !within_guarantee(comp, want, got);
      }
    }
    return wrong;
  };
  c.max_error = [] { return std::exchange(largest_error, 0.0); };
  return c;
}
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_allgather", "Allgather Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        Collective c = o.compression ? float_allgather(comm, o) : bytes_allgather(comm, o);
        c.bench = "allgather";
        c.title = "Allgather Latency Test";
        return c;
      });
}
