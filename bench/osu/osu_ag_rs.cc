// mccl_osu_ag_rs: the FSDP pattern — an allgather of m bytes per rank and a
// reduce-scatter producing m bytes per rank (float32 sum over N·m bytes of
// input) started together through the nonblocking API and waited for
// together. Not an OSU test, but the same options, table and JSON (bench
// "ag_rs_concurrent"), so bench/fabric/run.sh treats it like the others.
// With --compress both move float32 Gaussian data through the typed calls
// with that compression (the reduce-scatter compresses under bound only).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "osu_common.h"
#include "reduce_data.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::pattern;
using mccl::bench::osu::reduce_expected;
using mccl::bench::osu::reduce_input;
using mccl::bench::osu::sample_value;
using mccl::bench::osu::within_guarantee;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<std::byte> ag_send, ag_recv;
std::vector<float> fag_send, fag_recv;
std::vector<float> rs_send, rs_recv;
double largest_error = 0;

Collective exact_pair(mccl::Communicator& comm, const Options& o) {
  const int me = comm.rank(), n = comm.size();
  const auto un = static_cast<std::size_t>(n);
  ag_send.assign(o.max_size, std::byte{1});
  ag_recv.assign(o.max_size * un, std::byte{0});
  rs_send.assign(o.max_size / sizeof(float) * un, 1.0f);
  rs_recv.assign(o.max_size / sizeof(float), 0.0f);
  Collective c;
  c.run = [&comm](std::size_t m) {
    mccl::Request ag = comm.iallgather(ag_send.data(), ag_recv.data(), m);
    mccl::Request rs = comm.ireduce_scatter(rs_send.data(), rs_recv.data(), m / sizeof(float),
                                            mccl::DataType::kFloat32, mccl::ReduceOp::kSum);
    ag.wait();
    rs.wait();
  };
  c.fill = [me, un](std::size_t m, int iter) {
    for (std::size_t i = 0; i < m; ++i) ag_send[i] = pattern(me, i, iter);
    std::memset(ag_recv.data(), 0, m * un);
    // Block r of the reduce-scatter input is rank r's; element j of the
    // whole vector gets reduce_input(me, j, iter).
    for (std::size_t j = 0; j < m / sizeof(float) * un; ++j) rs_send[j] = reduce_input(me, j, iter);
    std::fill(rs_recv.begin(), rs_recv.end(), 0.0f);
  };
  c.check = [me, n](std::size_t m, int iter) {
    std::size_t wrong = 0;
    for (int r = 0; r < n; ++r) {
      const std::byte* block = ag_recv.data() + static_cast<std::size_t>(r) * m;
      for (std::size_t i = 0; i < m; ++i) wrong += block[i] != pattern(r, i, iter);
    }
    const std::size_t count = m / sizeof(float), offset = count * static_cast<std::size_t>(me);
    for (std::size_t i = 0; i < count; ++i) {
      wrong += rs_recv[i] != reduce_expected(n, offset + i, iter);
    }
    return wrong;
  };
  return c;
}

// The reduce-scatter's element within its guarantee: the bound under
// kBound, plus what n float32 additions may round off (n * 2^-24 * sum |x|;
// the uncompressed ring's own error, and more than kBound's ulp/2).
bool sum_within(const std::optional<mccl::Compression>& comp, int n, double exact, double magnitude,
                float got) {
  const double err = std::fabs(double(got) - exact);
  const bool bound = comp && comp->mode == mccl::CompressMode::kBound;
  return err <= (bound ? comp->bound : 0.0) + n * 0x1p-24 * magnitude;
}

Collective compressed_pair(mccl::Communicator& comm, const Options& o) {
  const int me = comm.rank(), n = comm.size();
  const auto un = static_cast<std::size_t>(n);
  const std::size_t max = o.max_size / sizeof(float);
  fag_send.resize(max);
  rs_send.resize(max * un);
  for (std::size_t i = 0; i < max; ++i) fag_send[i] = sample_value(me, i, -1);
  for (std::size_t j = 0; j < max * un; ++j) rs_send[j] = sample_value(me + n, j, -1);
  fag_recv.assign(max * un, 0.0f);
  rs_recv.assign(max, 0.0f);
  const mccl::CollOptions call = o.call_options();
  Collective c;
  c.run = [&comm, call](std::size_t m) {
    const std::size_t k = m / sizeof(float);
    mccl::Request ag =
        comm.iallgather(fag_send.data(), fag_recv.data(), k, mccl::DataType::kFloat32, call);
    mccl::Request rs = comm.ireduce_scatter(rs_send.data(), rs_recv.data(), k,
                                            mccl::DataType::kFloat32, mccl::ReduceOp::kSum, call);
    ag.wait();
    rs.wait();
  };
  c.fill = [me, n, un](std::size_t m, int iter) {
    const std::size_t k = m / sizeof(float);
    for (std::size_t i = 0; i < k; ++i) fag_send[i] = sample_value(me, i, iter);
    for (std::size_t j = 0; j < k * un; ++j) rs_send[j] = sample_value(me + n, j, iter);
  };
  c.check = [me, n, comp = o.compression](std::size_t m, int iter) {
    std::size_t wrong = 0;
    const std::size_t k = m / sizeof(float);
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < k; ++i) {
        const float want = sample_value(r, i, iter), got = fag_recv[r * k + i];
        largest_error = std::max(largest_error, std::fabs(double(got) - want));
        wrong += !within_guarantee(comp, want, got);
      }
    }
    for (std::size_t i = 0; i < k; ++i) {
      double exact = 0, magnitude = 0;
      for (int r = 0; r < n; ++r) {
        const double x = sample_value(r + n, k * me + i, iter);
        exact += x;
        magnitude += std::fabs(x);
      }
      largest_error = std::max(largest_error, std::fabs(rs_recv[i] - exact));
      wrong += !sum_within(comp, n, exact, magnitude, rs_recv[i]);
    }
    return wrong;
  };
  c.max_error = [] { return std::exchange(largest_error, 0.0); };
  return c;
}
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_ag_rs", "Allgather + Reduce_scatter (concurrent) Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        Collective c = o.compression ? compressed_pair(comm, o) : exact_pair(comm, o);
        c.bench = "ag_rs_concurrent";
        c.title = "Allgather + Reduce_scatter (concurrent) Latency Test";
        return c;
      },
      sizeof(float));
}
