// mccl_osu_bcast: OSU's osu_bcast over MCCL (root 0). Same options, same
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
std::vector<float> fbuffer;
double largest_error = 0;

Collective bytes_bcast(mccl::Communicator& comm, const Options& o) {
  auto owned = std::make_shared<mccl::bench::osu::Buffer>(comm, o, o.max_size, std::byte{1});
  std::byte* buffer = owned->data();
  const int me = comm.rank();
  Collective c;
  c.keep.push_back(owned);
  c.run = [&comm, buffer](std::size_t n) { comm.broadcast(buffer, n, 0); };
  c.fill = [me, buffer](std::size_t n, int iter) {
    if (me != 0) {
      std::memset(buffer, 0, n);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) buffer[i] = pattern(0, i, iter);
  };
  c.check = [buffer](std::size_t n, int iter) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += buffer[i] != pattern(0, i, iter);
    return wrong;
  };
  return c;
}

// Float32 elements (m / 4), compressed as --compress says; the untimed data
// are Gaussian too, so that every iteration compresses alike. The root's
// own copy changes within the bound too (docs/compression.md).
Collective float_bcast(mccl::Communicator& comm, const Options& o) {
  const int me = comm.rank();
  fbuffer.resize(o.max_size / sizeof(float));
  for (std::size_t i = 0; i < fbuffer.size(); ++i) fbuffer[i] = sample_value(0, i, -1);
  Collective c;
  const mccl::CollOptions call = o.call_options();
  c.run = [&comm, call](std::size_t m) {
    comm.broadcast(fbuffer.data(), m / sizeof(float), mccl::DataType::kFloat32, 0, call);
  };
  c.fill = [me](std::size_t m, int iter) {
    for (std::size_t i = 0; i < m / sizeof(float); ++i) {
      fbuffer[i] = me == 0 ? sample_value(0, i, iter) : 0.0f;
    }
  };
  c.check = [comp = o.compression](std::size_t m, int iter) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < m / sizeof(float); ++i) {
      const float want = sample_value(0, i, iter), got = fbuffer[i];
      largest_error = std::max(largest_error, std::fabs(double(got) - want));
      wrong += !within_guarantee(comp, want, got);
    }
    return wrong;
  };
  c.max_error = [] { return std::exchange(largest_error, 0.0); };
  return c;
}
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(argc, argv, "mccl_osu_bcast", "Broadcast Latency Test",
                                          [&](mccl::Communicator& comm, const Options& o) {
                                            Collective c = o.compression ? float_bcast(comm, o)
                                                                         : bytes_bcast(comm, o);
                                            c.bench = "bcast";
                                            c.title = "Broadcast Latency Test";
                                            return c;
                                          });
}
