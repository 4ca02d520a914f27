// The library's own CPU time per small collective, with no wire and no
// waiting: two ranks of an in-process world driven round-robin from this
// thread, through the public API (the call, the algorithm table, the
// operation's life in the protocol context, the reliable transport's
// messages between the two ranks, the request's completion). What a
// latency-bound collective pays on every rank beside the kernel's system
// calls, which this leaves out.
#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <vector>

#include "mccl/inprocess.h"
#include "mccl/mccl.hpp"

namespace mccl {
namespace {

// Advances both ranks' requests until both are done.
void drive(std::array<Request, 2>& requests) {
  bool done0 = false, done1 = false;
  while (!(done0 && done1)) {
    if (!done0) done0 = requests[0].test();
    if (!done1) done1 = requests[1].test();
  }
}

struct Pair {
  InProcessWorld world{2};
  std::vector<Communicator> comms = create_communicators(world);
};

void BM_SmallBroadcast(benchmark::State& state) {
  Pair p;
  std::vector<std::byte> bufs[2] = {std::vector<std::byte>(state.range(0)),
                                    std::vector<std::byte>(state.range(0))};
  for (auto _ : state) {
    std::array<Request, 2> requests = {p.comms[0].ibroadcast(bufs[0].data(), bufs[0].size(), 0),
                                       p.comms[1].ibroadcast(bufs[1].data(), bufs[1].size(), 0)};
    drive(requests);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SmallBroadcast)->Arg(1)->Arg(1024)->ArgName("bytes");

void BM_Barrier(benchmark::State& state) {
  Pair p;
  for (auto _ : state) {
    std::array<Request, 2> requests = {p.comms[0].ibarrier(), p.comms[1].ibarrier()};
    drive(requests);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Barrier);

}  // namespace
}  // namespace mccl
