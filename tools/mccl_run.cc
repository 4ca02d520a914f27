// mccl_run: starts N processes of a program on this host as the ranks of one
// MCCL job, joined by the TCP-store bootstrap on a free loopback port (the
// single-host counterpart of mpirun for programs that use
// mccl::make_bootstrap_from_env()).
//
//   mccl_run -n 4 [-t SECONDS] [-x NAME=VALUE]... program [args...]
//
// Exits 0 when every rank did; otherwise with the first failing rank's code
// (124 when the deadline passed, after killing every rank). SIGINT, SIGTERM,
// SIGHUP and SIGQUIT are passed on to every rank (they run in process
// groups of their own, out of the terminal's reach), and mccl_run then ends
// by the same signal.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launcher.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: mccl_run -n RANKS [-t SECONDS] [-x NAME=VALUE]... program [args...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 0;
  int seconds = 300;
  std::vector<std::pair<std::string, std::string>> env;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    std::string opt = argv[i];
    if (i + 1 >= argc) return usage();
    if (opt == "-n") {
      ranks = std::atoi(argv[++i]);
    } else if (opt == "-t") {
      seconds = std::atoi(argv[++i]);
    } else if (opt == "-x") {
      std::string kv = argv[++i];
      auto eq = kv.find('=');
      if (eq == std::string::npos) return usage();
      env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else {
      return usage();
    }
  }
  if (ranks < 1 || seconds < 1 || i >= argc) return usage();
  std::string program = argv[i];
  if (program.find('/') == std::string::npos) program = "./" + program;
  std::vector<std::string> args(argv + i + 1, argv + argc);

  auto job = mccl::launch::run_job(program, args, ranks, env, std::chrono::seconds(seconds),
                                   /*capture=*/false);
  if (job.timed_out) {
    std::fprintf(stderr, "mccl_run: deadline of %d s passed; every rank was killed\n", seconds);
    return 124;
  }
  if (job.stopped_by != 0) {
    // Passed on to every rank; now end as the signal would have ended this
    // process, so that its caller (a shell, timeout(1)) sees it.
    std::fprintf(stderr, "mccl_run: stopped by %s; every rank was stopped\n",
                 strsignal(job.stopped_by));
    std::signal(job.stopped_by, SIG_DFL);
    std::raise(job.stopped_by);
    return 128 + job.stopped_by;
  }
  for (int r = 0; r < ranks; ++r) {
    if (job.ranks[r].exit_code != 0) {
      std::fprintf(stderr, "mccl_run: rank %d exited with %d\n", r, job.ranks[r].exit_code);
      return job.ranks[r].exit_code < 0 ? 1 : job.ranks[r].exit_code;
    }
  }
  return 0;
}
