// mccl_osu_alltoall: OSU's osu_alltoall over MCCL. Same options, same
// table; launch with mpirun or mccl_run. The size is the block each rank
// sends to each rank (OSU's), so a rank sends and receives N blocks.
// The exchange runs over the reliable transport only (no multicast), and
// the offload engine has none: the program then fails with kUnavailable.
#include <cstring>
#include <memory>

#include "osu_common.h"

using mccl::bench::osu::Buffer;
using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::pattern;

namespace {

// Which pattern block `from` sends to `to` carries: distinct for every
// pair, so a block delivered to the wrong rank or slot shows.
int pair_id(int from, int to, int n) { return from * n + to; }

Collective bytes_alltoall(mccl::Communicator& comm, const Options& o) {
  const int me = comm.rank(), n = comm.size();
  const std::size_t all = o.max_size * static_cast<std::size_t>(n);
  auto send_owned = std::make_shared<Buffer>(comm, o, all, std::byte{1});
  auto recv_owned = std::make_shared<Buffer>(comm, o, all, std::byte{0});
  std::byte* send = send_owned->data();
  std::byte* recv = recv_owned->data();
  Collective c;
  c.keep = {send_owned, recv_owned};
  c.run = [&comm, send, recv](std::size_t m) { comm.alltoall(send, recv, m); };
  c.fill = [me, n, send, recv](std::size_t m, int iter) {
    for (int to = 0; to < n; ++to) {
      std::byte* block = send + static_cast<std::size_t>(to) * m;
      for (std::size_t i = 0; i < m; ++i) block[i] = pattern(pair_id(me, to, n), i, iter);
    }
    std::memset(recv, 0, m * static_cast<std::size_t>(n));
  };
  c.check = [me, n, recv](std::size_t m, int iter) {
    std::size_t wrong = 0;
    for (int from = 0; from < n; ++from) {
      const std::byte* block = recv + static_cast<std::size_t>(from) * m;
      for (std::size_t i = 0; i < m; ++i)
        wrong += block[i] != pattern(pair_id(from, me, n), i, iter);
    }
    return wrong;
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(
      argc, argv, "mccl_osu_alltoall", "All-to-All Personalized Exchange Latency Test",
      [&](mccl::Communicator& comm, const Options& o) {
        if (o.compression) {
          throw mccl::Error(mccl::ErrorCode::kInvalidArgument,
                            "--compress: the alltoall moves bytes as they are");
        }
        Collective c = bytes_alltoall(comm, o);
        c.bench = "alltoall";
        c.title = "All-to-All Personalized Exchange Latency Test";
        return c;
      });
}
