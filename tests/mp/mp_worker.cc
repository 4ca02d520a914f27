// One rank of a multi-process test: joins the job through the environment
// (MCCL_BOOTSTRAP_ADDR, MCCL_RANK, MCCL_WORLD_SIZE), runs the requested
// collectives over the real transports, checks every byte, and prints one
// "stats" line. Exit code 0 = all correct; 2 = wrong data; 3 = an MCCL
// error (its code and message are printed).
//
//   mp_worker sweep            broadcast from every root and allgather(v),
//                              sizes 0 .. 1 MiB around the datagram size
//   mp_worker die RANK         everyone starts an allgather; RANK exits
//                              mid-way; the others must fail, not hang
//   mp_worker expect-error     like die, for the survivors: exit 0 only if
//                              the collective failed with a peer failure
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "mccl/mccl.hpp"
#include "mccl/tcp_bootstrap.h"

namespace {

std::byte pattern(int rank, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (std::uint64_t(rank) << 40) ^ i ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return std::byte(x & 0xFF);
}

bool check(const std::byte* p, std::size_t n, int rank, std::uint64_t salt, const char* what) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(rank, i, salt)) {
      std::fprintf(stderr, "%s: wrong byte %zu of %zu (block of rank %d)\n", what, i, n, rank);
      return false;
    }
  }
  return true;
}

void print_stats(const mccl::Communicator& c) {
  mccl::Stats s = c.stats();
  std::printf("stats rank=%d mcast_bytes_sent=%llu mcast_datagrams_sent=%llu repairs_requested=%llu "
              "repairs_served=%llu control=%llu invalid=%llu early=%llu\n",
              c.rank(), (unsigned long long)s.mcast_bytes_sent,
              (unsigned long long)s.mcast_datagrams_sent, (unsigned long long)s.repairs_requested,
              (unsigned long long)s.repairs_served, (unsigned long long)s.control_messages_sent,
              (unsigned long long)s.dropped_invalid, (unsigned long long)s.early_arrivals_stored);
}

int sweep(mccl::Communicator& c) {
  const int n = c.size(), me = c.rank();
  const std::size_t payload = 8972 - 40;  // the default largest datagram's payload
  std::vector<std::size_t> sizes = {0, 1, 1459, 1460, 1461, payload - 1, payload, payload + 1,
                                    65536, 1 << 20};
  std::uint64_t salt = 1;
  for (std::size_t bytes : sizes) {
    for (int root = 0; root < n; ++root, ++salt) {
      std::vector<std::byte> buf(bytes);
      if (me == root) {
        for (std::size_t i = 0; i < bytes; ++i) buf[i] = pattern(root, i, salt);
      }
      c.broadcast(buf.data(), bytes, root);
      if (!check(buf.data(), bytes, root, salt, "broadcast")) return 2;
    }
    ++salt;
    std::vector<std::byte> send(bytes), recv(bytes * n);
    for (std::size_t i = 0; i < bytes; ++i) send[i] = pattern(me, i, salt);
    c.allgather(send.data(), recv.data(), bytes);
    for (int r = 0; r < n; ++r) {
      if (!check(recv.data() + r * bytes, bytes, r, salt, "allgather")) return 2;
    }
  }
  // allgatherv with uneven counts, one of them zero.
  std::vector<std::size_t> counts(n), displs(n);
  std::size_t total = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = r == 1 ? 0 : 3000 * r + 11;
    displs[r] = total;
    total += counts[r];
  }
  ++salt;
  std::vector<std::byte> send(counts[me]), recv(total);
  for (std::size_t i = 0; i < counts[me]; ++i) send[i] = pattern(me, i, salt);
  c.allgatherv(send.data(), recv.data(), counts, displs);
  for (int r = 0; r < n; ++r) {
    if (!check(recv.data() + displs[r], counts[r], r, salt, "allgatherv")) return 2;
  }
  c.barrier();
  return 0;
}

int die(mccl::Communicator& c, int victim) {
  const std::size_t m = 4 << 20;
  std::vector<std::byte> send(m), recv(m * c.size());
  if (c.rank() == victim) {
    mccl::Request r = c.iallgather(send.data(), recv.data(), m);
    for (int i = 0; i < 3; ++i) c.progress();
    std::printf("rank %d exits mid-collective\n", c.rank());
    std::fflush(stdout);
    _exit(0);  // no goodbye: as a crash
  }
  auto t0 = std::chrono::steady_clock::now();
  try {
    c.allgather(send.data(), recv.data(), m);
    c.barrier();
  } catch (const mccl::Error& e) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("rank %d failed after %.3f s with %s: %s\n", c.rank(), s, mccl::to_string(e.code()),
                e.what());
    return e.code() == mccl::ErrorCode::kPeerFailure ? 0 : 4;
  }
  std::printf("rank %d: the collective succeeded although rank %d died\n", c.rank(), victim);
  return 5;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "sweep";
  try {
    auto boot = mccl::make_bootstrap_from_env();
    mccl::Communicator comm(*boot);
    int rc = 1;
    if (mode == "sweep") {
      rc = sweep(comm);
    } else if (mode == "die" && argc > 2) {
      rc = die(comm, std::atoi(argv[2]));
    } else {
      std::fprintf(stderr, "usage: mp_worker sweep | die RANK\n");
      return 1;
    }
    print_stats(comm);
    return rc;
  } catch (const mccl::Error& e) {
    std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
