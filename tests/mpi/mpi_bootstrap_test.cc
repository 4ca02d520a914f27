// MCCL under a real MPI launcher (tests/mpi/run_mpi.sh starts it with
// mpirun): creates a communicator three ways in turn —
//   1. the callback bootstrap over MPI_COMM_WORLD's MPI_Allgather,
//   2. the PMIx bootstrap (when launched by a PMIx server and MCCL has PMIx),
//   3. make_bootstrap_from_env() (PMIx under Open MPI, the TCP store when
//      MCCL_BOOTSTRAP_ADDR is set),
// and with each runs broadcasts from every root, an allgather and an
// allgatherv at several sizes over UDP loopback multicast, comparing every
// result byte with what MPI_Bcast / MPI_Allgather(v) give for the same
// input. Rank 0 prints a summary; every rank prints "finalizing" just
// before MPI_Finalize so that the wrapper can tell a hang inside
// MPI_Finalize (seen with MPICH 4.0.2) from a failure of the test.
//
// Exit: 0 all equal; 1 a difference; an MCCL error aborts the job (with
// MPI_Abort(3)) after printing it: the other ranks may be waiting inside an
// MPI call for this one.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mccl/callback_bootstrap.h"
#include "mccl/mccl.hpp"
#include "mccl/pmix_bootstrap.h"
#include "mccl/tcp_bootstrap.h"

namespace {

using Clock = std::chrono::steady_clock;

const std::size_t kSizes[] = {0, 1, 1461, 65536, std::size_t{1} << 20};
constexpr unsigned char kFill = 0xEE;  // untouched bytes of every receive buffer

int g_rank = 0, g_size = 1;

unsigned char pattern(int rank, std::size_t i, std::uint64_t salt) {
  std::uint64_t x = (std::uint64_t(rank) << 40) ^ i ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<unsigned char>(x & 0xFF);
}

std::vector<unsigned char> filled(std::size_t n, int rank, std::uint64_t salt) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = pattern(rank, i, salt);
  return v;
}

struct Outcome {
  long checks = 0;       // buffers compared
  long differences = 0;  // buffers that differ from MPI's
  double create_ms = 0;  // bootstrap + communicator
  double run_s = 0;
  std::string error;  // this rank's bootstrap disagrees with MPI
};

// Counts one comparison; prints the first differing byte.
void compare(Outcome& o, const std::vector<unsigned char>& mccl,
             const std::vector<unsigned char>& mpi, const std::string& what) {
  ++o.checks;
  if (mccl == mpi) return;
  ++o.differences;
  std::size_t i = 0;
  while (i < mccl.size() && i < mpi.size() && mccl[i] == mpi[i]) ++i;
  std::fprintf(stderr, "rank %d: %s differs from MPI at byte %zu of %zu (mccl %d, mpi %d)\n",
               g_rank, what.c_str(), i, mpi.size(), i < mccl.size() ? mccl[i] : -1,
               i < mpi.size() ? mpi[i] : -1);
}

void sweep(mccl::Communicator& comm, Outcome& o) {
  const int n = g_size, me = g_rank;
  std::uint64_t salt = 1;
  for (std::size_t m : kSizes) {
    const std::string at = " of " + std::to_string(m) + " B";
    for (int root = 0; root < n; ++root, ++salt) {
      std::vector<unsigned char> a(m, kFill), b(m, kFill);
      if (me == root) a = b = filled(m, root, salt);
      comm.broadcast(a.data(), m, root);
      MPI_Bcast(b.data(), static_cast<int>(m), MPI_BYTE, root, MPI_COMM_WORLD);
      compare(o, a, b, "broadcast from " + std::to_string(root) + at);
    }
    ++salt;
    {
      std::vector<unsigned char> send = filled(m, me, salt);
      std::vector<unsigned char> a(m * n, kFill), b(m * n, kFill);
      comm.allgather(send.data(), a.data(), m);
      MPI_Allgather(send.data(), static_cast<int>(m), MPI_BYTE, b.data(), static_cast<int>(m),
                    MPI_BYTE, MPI_COMM_WORLD);
      compare(o, a, b, "allgather" + at);
    }
    ++salt;
    {
      // Uneven blocks (rank 1's empty), out of rank order with gaps that
      // neither library may write.
      std::vector<std::size_t> counts(n), displs(n);
      std::vector<int> icounts(n), idispls(n);
      std::size_t total = 0;
      for (int i = 0; i < n; ++i) {
        const int r = n - 1 - i;  // last rank's block first
        counts[r] = r == 1 ? 0 : m + 13 * static_cast<std::size_t>(r);
        displs[r] = total;
        total += counts[r] + 5;
      }
      for (int r = 0; r < n; ++r) {
        icounts[r] = static_cast<int>(counts[r]);
        idispls[r] = static_cast<int>(displs[r]);
      }
      std::vector<unsigned char> send = filled(counts[me], me, salt);
      std::vector<unsigned char> a(total, kFill), b(total, kFill);
      comm.allgatherv(send.data(), a.data(), counts, displs);
      MPI_Allgatherv(send.data(), icounts[me], MPI_BYTE, b.data(), icounts.data(), idispls.data(),
                     MPI_BYTE, MPI_COMM_WORLD);
      compare(o, a, b, "allgatherv" + at);
    }
  }
  comm.barrier();
}

Outcome run_case(const std::function<std::unique_ptr<mccl::Bootstrap>()>& make) {
  Outcome o;
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    auto t0 = Clock::now();
    auto boot = make();
    if (boot->rank() != g_rank || boot->size() != g_size) {
      o.error = "the bootstrap says rank " + std::to_string(boot->rank()) + " of " +
                std::to_string(boot->size()) + ", MPI says " + std::to_string(g_rank) + " of " +
                std::to_string(g_size);
      return o;
    }
    mccl::Communicator comm(
        *boot, {.transport = mccl::TransportKind::kUdp, .timeout = std::chrono::seconds(30)});
    auto t1 = Clock::now();
    o.create_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    sweep(comm, o);
    o.run_s = std::chrono::duration<double>(Clock::now() - t1).count();
  } catch (const mccl::Error& e) {
    // The other ranks may be inside an MPI call that waits for this one:
    // carrying on would hang or mismatch collectives, so the job ends here.
    std::fprintf(stderr, "rank %d: MCCL error %s: %s\n", g_rank, mccl::to_string(e.code()),
                 e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return o;
}

// Rank 0 prints one line per case from every rank's outcome; returns
// whether every rank passed.
bool report(const char* name, const Outcome& o) {
  long mine[3] = {o.checks, o.differences, o.error.empty() ? 0 : 1};
  long sum[3] = {0, 0, 0};
  double slow[2] = {o.create_ms, o.run_s}, slowest[2] = {0, 0};
  MPI_Allreduce(mine, sum, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(slow, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const bool ok = sum[1] == 0 && sum[2] == 0;
  if (g_rank == 0) {
    std::printf("%-38s %8ld %8ld %7ld %11.1f %9.3f  %s\n", name, sum[0], sum[1], sum[2], slowest[0],
                slowest[1], ok ? "ok" : "FAILED");
    if (!o.error.empty()) std::printf("    rank 0: %s\n", o.error.c_str());
    std::fflush(stdout);
  }
  return ok;
}

void skipped(const char* name, const std::string& why) {
  if (g_rank == 0) {
    std::printf("%-38s skipped: %s\n", name, why.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int version_len = 0;
  MPI_Get_library_version(version, &version_len);
  std::string mpi_name(version, std::strcspn(version, ",\n"));
  for (char& c : mpi_name) c = c == '\t' ? ' ' : c;  // MPICH: "MPICH Version:\t4.0.2"
  if (g_rank == 0) {
    std::printf("mpi_bootstrap_test: MCCL %s, %s, %d ranks, sizes 0 1 1461 65536 1048576\n",
                mccl::version_string(), mpi_name.c_str(), g_size);
    std::printf("%-38s %8s %8s %7s %11s %9s\n", "bootstrap", "checks", "differ", "errors",
                "create ms", "sweep s");
    std::fflush(stdout);
  }
  bool ok = true;

  ok &= report("callback (MPI_Allgather)", run_case([] {
                 return mccl::make_callback_bootstrap(
                     g_rank, g_size, [](const void* mine, void* all, std::size_t n) {
                       MPI_Allgather(mine, static_cast<int>(n), MPI_BYTE, all, static_cast<int>(n),
                                     MPI_BYTE, MPI_COMM_WORLD);
                     });
               }));

  // Every rank sees the same environment, so every rank takes the same branch.
  const char* pmix_ns = std::getenv("PMIX_NAMESPACE");
  if (pmix_ns == nullptr || *pmix_ns == '\0') {
    skipped("pmix", "not launched by a PMIx server (PMIX_NAMESPACE is not set)");
  } else {
    bool built = true;
    try {
      mccl::make_pmix_bootstrap();
    } catch (const mccl::Error& e) {
      built = std::strstr(e.what(), "built without PMIx") == nullptr;
    }
    if (built) {
      ok &= report("pmix", run_case([] { return mccl::make_pmix_bootstrap(); }));
    } else {
      skipped("pmix", "this MCCL was built without PMIx");
    }
  }

  const char* addr = std::getenv("MCCL_BOOTSTRAP_ADDR");
  const std::string env_name = addr != nullptr && *addr != '\0'
                                   ? std::string("from_env (TCP store ") + addr + ")"
                               : pmix_ns != nullptr ? std::string("from_env (PMIx)")
                                                    : std::string("from_env");
  ok &= report(env_name.c_str(), run_case([] { return mccl::make_bootstrap_from_env(); }));

  if (g_rank == 0) {
    std::printf("RESULT: %s\n", ok ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
  // The wrapper counts these: all of them plus the RESULT line mean the
  // test is over, whatever MPI_Finalize then does.
  std::printf("rank %d finalizing\n", g_rank);
  std::fflush(stdout);
  MPI_Finalize();
  return ok ? 0 : 1;
}
