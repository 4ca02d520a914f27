// mccl_osu_allreduce: OSU's osu_allreduce over MCCL: bytes/4 float32
// elements summed on every rank. Launch as mccl_osu_bcast.
#include <algorithm>
#include <vector>

#include "osu_common.h"
#include "reduce_data.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::reduce_expected;
using mccl::bench::osu::reduce_input;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<float> send, recv;
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_allreduce", "Allreduce Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        const int me = comm.rank(), n = comm.size();
        send.assign(o.max_size / sizeof(float), 1.0f);
        recv.assign(o.max_size / sizeof(float), 0.0f);
        Collective c;
        c.bench = "allreduce";
        c.title = "Allreduce Latency Test";
        c.run = [&comm](std::size_t bytes) {
          comm.allreduce(send.data(), recv.data(), bytes / sizeof(float), mccl::DataType::kFloat32,
                         mccl::ReduceOp::kSum);
        };
        c.fill = [me](std::size_t bytes, int iter) {
          for (std::size_t i = 0; i < bytes / sizeof(float); ++i)
            send[i] = reduce_input(me, i, iter);
          std::fill(recv.begin(), recv.end(), 0.0f);
        };
        c.check = [n](std::size_t bytes, int iter) {
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < bytes / sizeof(float); ++i) {
            wrong += recv[i] != reduce_expected(n, i, iter);
          }
          return wrong;
        };
        return c;
      },
      sizeof(float));
}
