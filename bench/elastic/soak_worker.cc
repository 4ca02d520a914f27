// soak_worker: one process of the elastic soak (bench/elastic/soak.py),
// which kills members and starts replacements while the job runs.
//
//   soak_worker DIR            a member of the first communicator (the TCP
//                              store of MCCL_BOOTSTRAP_ADDR, MCCL_RANK,
//                              MCCL_WORLD_SIZE)
//   soak_worker DIR join N     a replacement: joins at grow round N
//
// Steps run back to back (bench/elastic/steps.h: every rank's state is
// compared bit for bit at every step). Before each step rank 0 looks at
// the driver's files in DIR and broadcasts what it saw: DIR/stop ends the
// run; DIR/join-N asks the members to grow with one joiner in round N,
// on a TCP store at MCCL_BOOTSTRAP_ADDR's port plus N, whose size rank 0
// writes to DIR/size-N for the joiner. A step that fails with kPeerFailure
// is followed by a shrink, the agreement on the step and rank 0's state
// to all (steps.h), and done again. Prints, after "rank R" (R: the
// process's MCCL_RANK), "shrunk at T", "grown at T", "joined at T"
// (CLOCK_MONOTONIC) and at the end "done: S steps, state H".
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "mccl/mccl.hpp"
#include "steps.h"

namespace {

using namespace mccl::bench;

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// Written whole or not at all: the joiner reads it as soon as it exists.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  std::rename(tmp.c_str(), path.c_str());
}

struct Job {
  std::string dir;
  int me = -1;    // MCCL_RANK of this process
  int round = 1;  // the next grow round
};

void say(const Job& job, const char* what, const mccl::Communicator& c) {
  std::printf("rank %d %s at %.6f: rank %d of %d\n", job.me, what, monotonic_now(), c.rank(),
              c.size());
  std::fflush(stdout);
}

int run(Job job, mccl::Communicator comm, Progress p, bool shrunk) {
  for (;;) {
    std::int32_t control[2] = {0, 0};  // stop, grow
    try {
      if (shrunk) {
        agree_on_step(comm, p);
        share(comm, p);
      }
      shrunk = false;
      if (comm.rank() == 0) {
        control[0] = exists(job.dir + "/stop");
        control[1] = exists(job.dir + "/join-" + std::to_string(job.round));
      }
      comm.broadcast(control, sizeof control, 0);
      if (control[0] != 0) break;
      if (control[1] != 0) {
        const int n = comm.size();
        if (comm.rank() == 0) {
          write_atomically(job.dir + "/size-" + std::to_string(job.round), std::to_string(n));
        }
        auto boot = mccl::make_tcp_bootstrap(
            {.address = store_beside_first(job.round), .rank = comm.rank(), .size = n + 1});
        comm = comm.grow(*boot);
        share(comm, p);
        ++job.round;
        say(job, "grown", comm);
        continue;  // the joiner's first call is the control broadcast
      }
      if (!advance(comm, p, false, job.me)) return 4;
    } catch (const mccl::Error& e) {
      if (e.code() != mccl::ErrorCode::kPeerFailure) throw;
      comm = comm.shrink();
      shrunk = true;
      say(job, "shrunk", comm);
    }
  }
  std::printf("rank %d done: %lld steps, state %016llx\n", job.me, static_cast<long long>(p.step),
              static_cast<unsigned long long>(hash_of(p.state)));
  std::fflush(stdout);
  leave(comm);
  return 0;
}

int join(Job job, int round) {
  const std::string size_file = job.dir + "/size-" + std::to_string(round);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!exists(size_file)) {
    if (std::chrono::steady_clock::now() > until) {
      std::printf("rank %d: no %s within 60 s\n", job.me, size_file.c_str());
      return 5;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  int members = 0;
  std::ifstream(size_file) >> members;
  auto boot = mccl::make_tcp_bootstrap(
      {.address = store_beside_first(round), .rank = members, .size = members + 1});
  mccl::Communicator comm(*boot);
  Progress p;
  p.step = kNoState;
  job.round = round + 1;
  bool shrunk = false;
  try {
    share(comm, p);
    say(job, "joined", comm);
  } catch (const mccl::Error& e) {  // a process died during the grow
    if (e.code() != mccl::ErrorCode::kPeerFailure) throw;
    comm = comm.shrink();
    shrunk = true;
    say(job, "shrunk", comm);
  }
  return run(std::move(job), std::move(comm), std::move(p), shrunk);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: soak_worker DIR [join N]\n");
    return 2;
  }
  Job job;
  job.dir = argv[1];
  const char* rank = std::getenv("MCCL_RANK");
  job.me = rank != nullptr ? std::atoi(rank) : -1;
  try {
    if (argc > 3 && std::string(argv[2]) == "join") return join(std::move(job), std::atoi(argv[3]));
    auto boot = mccl::make_bootstrap_from_env();
    mccl::Communicator comm(*boot);
    Progress p;
    p.state.assign(4096, comm.rank() == 0 ? 1 : 0);
    share(comm, p);
    return run(std::move(job), std::move(comm), std::move(p), false);
  } catch (const mccl::Error& e) {
    std::printf("rank %d error %s: %s\n", job.me, mccl::to_string(e.code()), e.what());
    return 3;
  }
}
