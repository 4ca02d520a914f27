// One rank of bench/setup/run.sh: what a communicator costs a process as N
// grows. It times its own bootstrap and communicator creation, runs one
// loss-free broadcast (64 KiB from rank 0) and one allgather (4 KiB per
// rank), checks both, and then, with the communicator alive, counts what it
// holds: open descriptors (/proc/self/fd), established TCP connections
// among them (the socket inodes of /proc/self/fd matched against
// /proc/self/net/tcp), and its resident memory (VmRSS, VmHWM). Prints one
// JSON line. Exit 0 when the data was right, 2 when not, 3 on an error.
//
// Times are CLOCK_MONOTONIC seconds (one clock for every process of a
// host), so the script can take the creation of the whole job as the last
// rank's "created_at" minus the first rank's "started_at".
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"
#include "mccl/tcp_bootstrap.h"

namespace {

double monotonic_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Held {
  int fds = 0;
  int tcp = 0;  // established TCP connections
};

// The inodes of the established TCP sockets of this network namespace.
std::set<unsigned long> established_tcp_inodes() {
  std::set<unsigned long> out;
  std::ifstream f("/proc/self/net/tcp");
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string sl, local, remote, state, queues, timer, retr, uid, timeout;
    unsigned long inode = 0;
    in >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (state == "01") out.insert(inode);  // TCP_ESTABLISHED
  }
  return out;
}

Held count_held() {
  Held h;
  const std::set<unsigned long> tcp = established_tcp_inodes();
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return h;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ++h.fds;
    char target[64] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(path.c_str(), target, sizeof target - 1) <= 0) continue;
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1 && tcp.count(inode) != 0) ++h.tcp;
  }
  ::closedir(d);
  --h.fds;  // the directory stream itself
  return h;
}

long status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  }
  return -1;
}

}  // namespace

int main() {
  const double started = monotonic_s();
  try {
    auto boot = mccl::make_bootstrap_from_env();
    const double booted = monotonic_s();
    mccl::Communicator comm(*boot);
    const double created = monotonic_s();
    const int rank = comm.rank(), n = comm.size();

    std::vector<unsigned char> buf(64 * 1024);
    if (rank == 0) {
      for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 1);
    }
    comm.broadcast(buf.data(), buf.size(), 0);
    bool ok = true;
    for (std::size_t i = 0; i < buf.size(); ++i) {
      ok = ok && buf[i] == static_cast<unsigned char>(i * 7 + 1);
    }
    const std::size_t m = 4096;
    std::vector<unsigned char> mine(m, static_cast<unsigned char>(rank * 13 + 5));
    std::vector<unsigned char> all(m * static_cast<std::size_t>(n));
    comm.allgather(mine.data(), all.data(), m);
    for (int r = 0; r < n; ++r) {
      ok = ok && all[static_cast<std::size_t>(r) * m] == static_cast<unsigned char>(r * 13 + 5) &&
           all[static_cast<std::size_t>(r) * m + m - 1] == static_cast<unsigned char>(r * 13 + 5);
    }
    const Held held = count_held();
    std::printf(
        "{\"rank\":%d,\"n\":%d,\"started_at\":%.6f,\"booted_at\":%.6f,\"created_at\":%.6f,"
        "\"bootstrap_ms\":%.3f,\"create_ms\":%.3f,\"fds\":%d,\"tcp\":%d,\"rss_kb\":%ld,"
        "\"hwm_kb\":%ld,\"validated\":%s}\n",
        rank, n, started, booted, created, (booted - started) * 1e3, (created - booted) * 1e3,
        held.fds, held.tcp, status_kb("VmRSS:"), status_kb("VmHWM:"), ok ? "true" : "false");
    std::fflush(stdout);
    // Everyone counted before anyone leaves (a leaving rank's peers would
    // count fewer).
    comm.barrier();
    return ok ? 0 : 2;
  } catch (const mccl::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  }
}
