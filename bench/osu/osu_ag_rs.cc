// mccl_osu_ag_rs: the FSDP pattern — an allgather of m bytes per rank and a
// reduce-scatter producing m bytes per rank (float32 sum over N·m bytes of
// input) started together through the nonblocking API and waited for
// together. Not an OSU test, but the same options, table and JSON (bench
// "ag_rs_concurrent"), so bench/fabric/run.sh treats it like the others.
#include <algorithm>
#include <cstring>
#include <vector>

#include "osu_common.h"
#include "reduce_data.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::pattern;
using mccl::bench::osu::reduce_expected;
using mccl::bench::osu::reduce_input;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<std::byte> ag_send, ag_recv;
std::vector<float> rs_send, rs_recv;
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_ag_rs", "Allgather + Reduce_scatter (concurrent) Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        const int me = comm.rank(), n = comm.size();
        const auto un = static_cast<std::size_t>(n);
        ag_send.assign(o.max_size, std::byte{1});
        ag_recv.assign(o.max_size * un, std::byte{0});
        rs_send.assign(o.max_size / sizeof(float) * un, 1.0f);
        rs_recv.assign(o.max_size / sizeof(float), 0.0f);
        Collective c;
        c.bench = "ag_rs_concurrent";
        c.title = "Allgather + Reduce_scatter (concurrent) Latency Test";
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
          for (std::size_t j = 0; j < m / sizeof(float) * un; ++j) {
            rs_send[j] = reduce_input(me, j, iter);
          }
          std::fill(rs_recv.begin(), rs_recv.end(), 0.0f);
        };
        c.check = [me, n](std::size_t m, int iter) {
          std::size_t wrong = 0;
          for (int r = 0; r < n; ++r) {
            const std::byte* block = ag_recv.data() + static_cast<std::size_t>(r) * m;
            for (std::size_t i = 0; i < m; ++i) wrong += block[i] != pattern(r, i, iter);
          }
          const std::size_t count = m / sizeof(float),
                            offset = count * static_cast<std::size_t>(me);
          for (std::size_t i = 0; i < count; ++i) {
            wrong += rs_recv[i] != reduce_expected(n, offset + i, iter);
          }
          return wrong;
        };
        return c;
      },
      sizeof(float));
}
