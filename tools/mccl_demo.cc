// The multi-process demo (scripts/demo.sh runs it as 4 ranks under
// mccl_run): broadcast and allgather over UDP multicast on this host, with
// every byte checked, printing per size the latency and what each rank put
// on the network next to what a ring (allgather) or a chain (broadcast)
// would have sent.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mccl/mccl.hpp"
#include "mccl/tcp_bootstrap.h"

namespace {

using Clock = std::chrono::steady_clock;

std::byte pattern(int rank, std::size_t i, int iter) {
  return std::byte((rank * 131 + i * 7 + iter * 13) & 0xFF);
}

// Bytes this rank put on the network for collectives: multicast payload,
// repairs it served and point-to-point payload.
std::uint64_t bytes_out(const mccl::Communicator& c) {
  mccl::Stats s = c.stats();
  return s.mcast_bytes_sent + s.repair_bytes_served + s.p2p_bytes_sent;
}

// Largest value over ranks, through MCCL itself.
double max_over_ranks(mccl::Communicator& c, double mine) {
  std::vector<double> all(c.size());
  c.allgather(&mine, all.data(), sizeof mine);
  return *std::max_element(all.begin(), all.end());
}

struct Row {
  double us;        // mean latency, slowest rank
  double sent_max;  // bytes per rank per operation, busiest rank
  bool ok;
};

Row run(mccl::Communicator& c, bool allgather, std::size_t m, int iters) {
  const int n = c.size(), me = c.rank();
  std::vector<std::byte> send(m), recv(allgather ? m * n : m);
  bool ok = true;
  c.barrier();
  std::uint64_t before = bytes_out(c);
  auto t0 = Clock::now();
  for (int it = 0; it < iters; ++it) {
    if (allgather) {
      for (std::size_t i = 0; i < m; ++i) send[i] = pattern(me, i, it);
      c.allgather(send.data(), recv.data(), m);
      for (int r = 0; r < n && ok; ++r) {
        for (std::size_t i = 0; i < m; ++i) ok = ok && recv[r * m + i] == pattern(r, i, it);
      }
    } else {
      if (me == 0) {
        for (std::size_t i = 0; i < m; ++i) recv[i] = pattern(0, i, it);
      }
      c.broadcast(recv.data(), m, 0);
      for (std::size_t i = 0; i < m; ++i) ok = ok && recv[i] == pattern(0, i, it);
    }
  }
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
  double sent = double(bytes_out(c) - before) / iters;
  Row row{max_over_ranks(c, us), max_over_ranks(c, sent), max_over_ranks(c, ok ? 0 : 1) == 0};
  return row;
}

}  // namespace

int main() {
  try {
    auto boot = mccl::make_bootstrap_from_env();
    mccl::Communicator comm(*boot);
    const int n = comm.size();
    const bool lead = comm.rank() == 0;
    if (lead) {
      std::printf("MCCL %s demo: %d processes on this host, UDP multicast on loopback\n\n",
                  mccl::version_string(), n);
      std::printf("%-10s %10s %12s %16s %16s  %s\n", "operation", "bytes", "latency us",
                  "sent B/rank", "ring B/rank", "check");
    }
    bool all_ok = true;
    for (bool ag : {false, true}) {
      for (std::size_t m : {std::size_t{8}, std::size_t{1} << 10, std::size_t{64} << 10,
                            std::size_t{1} << 20, std::size_t{4} << 20}) {
        int iters = m >= (1u << 20) ? 5 : 50;
        Row row = run(comm, ag, m, iters);
        all_ok = all_ok && row.ok;
        // A ring allgather makes every rank send (N-1)·m; a chain broadcast
        // makes every rank but the last send m.
        double ring = ag ? double(n - 1) * m : double(m);
        if (lead) {
          std::printf("%-10s %10zu %12.1f %16.0f %16.0f  %s\n", ag ? "allgather" : "broadcast", m,
                      row.us, row.sent_max, ring, row.ok ? "ok" : "WRONG");
        }
      }
    }
    if (lead) {
      mccl::Stats s = comm.stats();
      std::printf(
          "\nsent B/rank: payload the busiest rank put on the network per operation (multicast,\n"
          "repairs served); ring B/rank: what a ring allgather or chain broadcast sends.\n"
          "rank 0 totals: %llu datagrams multicast, %llu chunks repaired for its neighbour, "
          "%llu requested.\n",
          (unsigned long long)s.mcast_datagrams_sent, (unsigned long long)s.repairs_served,
          (unsigned long long)s.repairs_requested);
    }
    return all_ok ? 0 : 2;
  } catch (const mccl::Error& e) {
    std::fprintf(stderr, "mccl_demo: %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
