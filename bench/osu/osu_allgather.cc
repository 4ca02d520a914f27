// mccl_osu_allgather: OSU's osu_allgather over MCCL. Same options, same
// table; launch with mpirun, mccl_run or tests/fabric/launch.sh.
#include <cstring>
#include <vector>

#include "osu_common.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::pattern;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<std::byte> send, recv;
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_allgather", "Allgather Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        const int me = comm.rank(), n = comm.size();
        send.assign(o.max_size, std::byte{1});
        recv.assign(o.max_size * static_cast<std::size_t>(n), std::byte{0});
        Collective c;
        c.bench = "allgather";
        c.title = "Allgather Latency Test";
        c.run = [&comm](std::size_t m) { comm.allgather(send.data(), recv.data(), m); };
        c.fill = [me, n](std::size_t m, int iter) {
          for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, iter);
          std::memset(recv.data(), 0, m * static_cast<std::size_t>(n));
        };
        c.check = [n](std::size_t m, int iter) {
          std::size_t wrong = 0;
          for (int r = 0; r < n; ++r) {
            const std::byte* block = recv.data() + static_cast<std::size_t>(r) * m;
            for (std::size_t i = 0; i < m; ++i) wrong += block[i] != pattern(r, i, iter);
          }
          return wrong;
        };
        return c;
      });
}
