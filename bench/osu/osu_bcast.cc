// mccl_osu_bcast: OSU's osu_bcast over MCCL (root 0). Same options, same
// table; launch with mpirun, mccl_run or tests/fabric/launch.sh.
#include <cstring>
#include <vector>

#include "osu_common.h"

using mccl::bench::osu::Collective;
using mccl::bench::osu::Options;
using mccl::bench::osu::pattern;

namespace {
// Sized for the largest message once, as OSU allocates.
std::vector<std::byte> buffer;
}  // namespace

int main(int argc, char** argv) {
  return mccl::bench::osu::benchmark_main(argc, argv, "mccl_osu_bcast", "Broadcast Latency Test",
                                          [&](mccl::Communicator& comm, const Options& o) {
                                            buffer.assign(o.max_size, std::byte{1});
                                            const int me = comm.rank();
                                            Collective c;
                                            c.bench = "bcast";
                                            c.title = "Broadcast Latency Test";
                                            c.run = [&comm](std::size_t n) {
                                              comm.broadcast(buffer.data(), n, 0);
                                            };
                                            c.fill = [me](std::size_t n, int iter) {
                                              if (me != 0) {
                                                std::memset(buffer.data(), 0, n);
                                                return;
                                              }
                                              for (std::size_t i = 0; i < n; ++i)
                                                buffer[i] = pattern(0, i, iter);
                                            };
                                            c.check = [](std::size_t n, int iter) {
                                              std::size_t wrong = 0;
                                              for (std::size_t i = 0; i < n; ++i)
                                                wrong += buffer[i] != pattern(0, i, iter);
                                              return wrong;
                                            };
                                            return c;
                                          });
}
