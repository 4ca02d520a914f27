// offload_cpu: what an allgather costs the application process's CPU, per
// GiB, under the engine MCCL_PROGRESS names (thread or offload), and how
// long one allgather takes. One rank per process; joins the job through the
// environment (MCCL_BOOTSTRAP_ADDR, MCCL_RANK, MCCL_WORLD_SIZE). Public API
// only, so it measures what an application would see.
//
//   offload_cpu [--bytes M] [--iters N] [--warmup W] [--shm] [--stats]
//
// --shm: the buffers come from Communicator::allocate, which under the
// offload engine the daemon uses in place (zero copy).
//
// CPU is getrusage(RUSAGE_SELF) user + system over the timed loop: under the
// thread engine it includes the progress thread, under the offload engine
// only the application's own threads. "GiB allgathered" counts the whole
// receive buffer, ranks * M bytes per allgather. Under the offload engine
// the daemon (the one serving MCCL_OFFLOAD_SOCKET, else the one in this
// network namespace) is found in /proc and its CPU over the same loop is
// reported too (daemon_cpu_s): the work moved, not removed.
// --stats adds the getrusage details. Each rank prints one text line and
// one JSON line.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"

namespace {

struct Usage {
  double user = 0, sys = 0;
  long voluntary = 0, involuntary = 0;
  double cpu() const { return user + sys; }
};

Usage self_usage() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  Usage u;
  u.user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  u.sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  u.voluntary = ru.ru_nvcsw;
  u.involuntary = ru.ru_nivcsw;
  return u;
}

std::string net_ns(const std::string& pid) {
  char link[64] = {};
  const std::string path = "/proc/" + pid + "/ns/net";
  return ::readlink(path.c_str(), link, sizeof link - 1) > 0 ? link : "";
}

// The pid of the mccl_offloadd whose command line names `socket` (or, with
// `socket` empty, that runs in this process's network namespace: one
// daemon per host of the namespace cluster), or -1.
int find_daemon(const std::string& socket) {
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return -1;
  int found = -1;
  const std::string want = socket.empty() ? "" : "--socket=" + socket;
  const std::string my_ns = net_ns("self");
  while (dirent* e = ::readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (cmd.find("mccl_offloadd") == std::string::npos) continue;
    const bool match =
        socket.empty() ? net_ns(e->d_name) == my_ns : cmd.find(want) != std::string::npos;
    if (match) {
      found = pid;
      break;
    }
  }
  ::closedir(d);
  return found;
}

// utime + stime of `pid` in seconds (/proc/pid/stat fields 14 and 15), or
// -1 when it cannot be read.
double pid_cpu(int pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  // After ") " come fields 3, 4, ...: utime is field 14, stime 15.
  const char* p = line.c_str() + close + 2;
  unsigned long long ut = 0, st = 0;
  for (int field = 3; field <= 15 && *p != '\0'; ++field) {
    if (field == 14) ut = std::strtoull(p, nullptr, 10);
    if (field == 15) st = std::strtoull(p, nullptr, 10);
    p = std::strchr(p, ' ');
    if (p == nullptr) break;
    ++p;
  }
  return double(ut + st) / double(::sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = 4 << 20;
  int iters = 20, warmup = 3;
  bool stats = false, shm = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 0);
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else if (a == "--stats") {
      stats = true;
    } else if (a == "--shm") {
      shm = true;
    } else {
      std::fprintf(stderr,
                   "usage: offload_cpu [--bytes M] [--iters N] [--warmup W] [--shm] [--stats]\n");
      return 2;
    }
  }
  if (iters < 1 || warmup < 0) {
    std::fprintf(stderr, "offload_cpu: --iters must be >= 1 and --warmup >= 0\n");
    return 2;
  }
  const char* engine = std::getenv("MCCL_PROGRESS");
  try {
    auto boot = mccl::make_bootstrap_from_env();
    mccl::Communicator comm(*boot);
    const int n = comm.size();
    std::vector<std::byte> send_v, recv_v;
    std::byte* send = nullptr;
    std::byte* recv = nullptr;
    if (shm) {
      send = static_cast<std::byte*>(comm.allocate(bytes));
      recv = static_cast<std::byte*>(comm.allocate(bytes * n));
    } else {
      send_v.resize(bytes);
      recv_v.resize(bytes * n);
      send = send_v.data();
      recv = recv_v.data();
    }
    std::fill(send, send + bytes, std::byte{0x5a});
    for (int i = 0; i < warmup; ++i) comm.allgather(send, recv, bytes);
    const char* sock = std::getenv("MCCL_OFFLOAD_SOCKET");
    const bool offloaded = engine != nullptr && std::string(engine) == "offload";
    const int daemon = offloaded ? find_daemon(sock != nullptr ? sock : "") : -1;
    comm.barrier();
    const double d0 = pid_cpu(daemon);
    const Usage u0 = self_usage();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) comm.allgather(send, recv, bytes);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Usage u1 = self_usage();
    const double d1 = pid_cpu(daemon);
    const double gib = double(bytes) * n * iters / double(1ull << 30);
    const double cpu = u1.cpu() - u0.cpu();
    const double dcpu = (d0 >= 0 && d1 >= 0) ? d1 - d0 : -1;
    std::printf(
        "offload_cpu rank=%d engine=%s shm=%d ranks=%d bytes=%zu iters=%d wall_s=%.4f "
        "per_op_s=%.5f cpu_s=%.4f cpu_s_per_gib=%.4f daemon_cpu_s=%.4f\n",
        comm.rank(), engine ? engine : "inline", shm ? 1 : 0, n, bytes, iters, wall, wall / iters,
        cpu, cpu / gib, dcpu);
    if (stats) {
      std::printf(
          "offload_cpu_stats rank=%d user_s=%.4f sys_s=%.4f voluntary_switches=%ld "
          "involuntary_switches=%ld daemon_pid=%d\n",
          comm.rank(), u1.user - u0.user, u1.sys - u0.sys, u1.voluntary - u0.voluntary,
          u1.involuntary - u0.involuntary, daemon);
    }
    std::printf(
        "{\"bench\":\"offload_cpu\",\"rank\":%d,\"engine\":\"%s\",\"shm\":%d,\"ranks\":%d,"
        "\"bytes\":%zu,"
        "\"iters\":%d,\"wall_s\":%.6f,\"cpu_s\":%.6f,\"cpu_s_per_gib\":%.6f,"
        "\"daemon_cpu_s\":%.6f}\n",
        comm.rank(), engine ? engine : "inline", shm ? 1 : 0, n, bytes, iters, wall, cpu, cpu / gib,
        dcpu);
    std::fflush(stdout);
    if (shm) {
      comm.deallocate(send);
      comm.deallocate(recv);
    }
    return 0;
  } catch (const mccl::Error& e) {
    std::fprintf(stderr, "offload_cpu: %s\n", e.what());
    return 3;
  }
}
