// mccl_osu_reduce_scatter: OSU's osu_reduce_scatter over MCCL. As in OSU the
// size is the whole vector each rank contributes (float32, sum); rank r
// receives counts[r] of its bytes/4 elements, the first (elements mod N)
// ranks one more than the rest. Launch as mccl_osu_bcast. With --compress
// the input is Gaussian and the call compresses (sums: under bound only);
// -c then checks |result - exact| <= bound + n * 2^-24 * sum |x| (what n
// float32 additions may round off).
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "osu_common.h"
#include "reduce_data.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::reduce_expected;
using mccl::bench::osu::reduce_input;
using mccl::bench::osu::sample_value;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<float> send, recv;
std::vector<std::size_t> counts;
double largest_error = 0;

// Splits bytes/4 elements over n ranks; returns rank `me`'s offset.
std::size_t split(std::size_t bytes, int n, int me) {
  const std::size_t elements = bytes / sizeof(float);
  std::size_t offset = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = elements / n + (static_cast<std::size_t>(r) < elements % n ? 1 : 0);
    if (r < me) offset += counts[r];
  }
  return offset;
}
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_reduce_scatter", "Reduce_scatter Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        const int me = comm.rank(), n = comm.size();
        send.assign(o.max_size / sizeof(float), 1.0f);
        recv.assign(o.max_size / sizeof(float) / n + 1, 0.0f);
        counts.assign(n, 0);
        Collective c;
        c.bench = "reduce_scatter";
        c.title = "Reduce_scatter Latency Test";
        const mccl::CollOptions call = o.call_options();
        c.run = [&comm, n, me, call](std::size_t bytes) {
          split(bytes, n, me);
          comm.reduce_scatterv(send.data(), recv.data(), counts, mccl::DataType::kFloat32,
                               mccl::ReduceOp::kSum, call);
        };
        if (o.compression) {
          for (std::size_t i = 0; i < send.size(); ++i) send[i] = sample_value(me, i, -1);
          c.fill = [me](std::size_t bytes, int iter) {
            for (std::size_t i = 0; i < bytes / sizeof(float); ++i)
              send[i] = sample_value(me, i, iter);
          };
          c.check = [n, me, comp = *o.compression](std::size_t bytes, int iter) {
            const std::size_t offset = split(bytes, n, me);
            const double bound = comp.mode == mccl::CompressMode::kBound ? comp.bound : 0.0;
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < counts[me]; ++i) {
              double exact = 0, magnitude = 0;
              for (int r = 0; r < n; ++r) {
                const double x = sample_value(r, offset + i, iter);
                exact += x;
                magnitude += std::fabs(x);
              }
              const double err = std::fabs(recv[i] - exact);
              largest_error = std::max(largest_error, err);
              wrong += err > bound + n * 0x1p-24 * magnitude;
            }
            return wrong;
          };
          c.max_error = [] { return std::exchange(largest_error, 0.0); };
          return c;
        }
        c.fill = [me](std::size_t bytes, int iter) {
          for (std::size_t i = 0; i < bytes / sizeof(float); ++i)
            send[i] = reduce_input(me, i, iter);
          std::fill(recv.begin(), recv.end(), 0.0f);
        };
        c.check = [n, me](std::size_t bytes, int iter) {
          const std::size_t offset = split(bytes, n, me);
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < counts[me]; ++i) {
            wrong += recv[i] != reduce_expected(n, offset + i, iter);
          }
          return wrong;
        };
        return c;
      },
      sizeof(float));
}
