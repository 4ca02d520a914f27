// idle: what a waiting rank spends while a late rank computes. Rank 1 sleeps
// LATE_US before each collective; rank 0 prints its CPU time per collective.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "mccl/communicator.h"
#include "mccl/tcp_bootstrap.h"
static double cpu_us() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
int main(int argc, char** argv) {
  const int late = std::atoi(argv[1]);
  const int iters = std::atoi(argv[2]);
  const char* what = argv[3];
  auto boot = mccl::make_bootstrap_from_env();
  mccl::Communicator comm(*boot);
  std::vector<std::byte> in(1024), out(1024 * comm.size());
  auto one = [&] {
    if (!std::strcmp(what, "barrier"))
      comm.barrier();
    else
      comm.allgather(in.data(), out.data(), in.size());
  };
  for (int i = 0; i < 50; ++i) one();
  const double c0 = cpu_us();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::microseconds(late));
    one();
  }
  const double cpu = cpu_us() - c0;
  const double wall =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (comm.rank() == 0)
    std::printf("%s late %d us: rank 0 cpu %.1f us per collective, wall %.1f us\n", what, late,
                cpu / iters, wall / iters);
  return 0;
}
