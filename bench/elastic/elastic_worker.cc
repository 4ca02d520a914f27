// elastic_worker: one rank of a job that keeps training through deaths
// (docs/elastic.md), for tests/mp/elastic_test.cc and bench/elastic/run.sh.
//
//   elastic_worker STEPS [KILL...] [join:K@STEP]
//
// Every step runs an allreduce of a state vector and an allgather of each
// rank's hash of its state: every rank must hold the same state, checked
// bit for bit at every step. KILL is RANK@STEP (RANK: the process's
// MCCL_RANK): that process kills itself (SIGKILL) in the middle of step
// STEP's 1 MiB-per-rank collective (an allgather; ELASTIC_PAD=broadcast,
// reduce_scatter or allreduce picks another, steps.h). RANK@POINT, any other POINT: that process
// runs with MCCL_TEST_KILL_AT=POINT (shrink-agreed, shrink-created, created, collective:N,
// datagrams:N; common/test_kill.h). A survivor whose collective fails with kPeerFailure shrinks,
// agrees on the step with the others (steps.h) and redoes it. Prints "killed at T" (victim),
// "shrunk at T to N ranks, failed: ..." (survivors; T on CLOCK_MONOTONIC, the same in every process
// of a host) and "done: S steps on N ranks, state H", each line after "rank R " (R: the process's
// MCCL_RANK in the job).
//
// join:K@STEP: the job's last K processes are not members of the first
// communicator; at step STEP the members grow theirs with them on a TCP
// store at ELASTIC_GROW_ADDR (default: MCCL_BOOTSTRAP_ADDR's port plus
// one), which the grown
// communicator's rank 0 serves, and hand them the state and the step by
// broadcast. Prints "grow entered at T" and "grown at T" (members), "join
// entered at T" and "joined at T" (joiners).
// Exit 0 when every step was consistent.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"
#include "steps.h"

namespace {

using namespace mccl::bench;

struct Kill {
  int rank = -1;
  int step = -1;      // -1: at a shrink point
  std::string point;  // MCCL_TEST_KILL_AT
};

// The rendezvous of a grow: ELASTIC_GROW_ADDR when set (a test gives each
// job its own), else the first store's port plus one, on its host.
std::string grow_address() {
  if (const char* given = std::getenv("ELASTIC_GROW_ADDR"); given != nullptr) return given;
  return store_beside_first(1);
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : -1;
}

struct Plan {
  int steps = 0;
  std::vector<Kill> kills;
  int joiners = 0;  // the last `joiners` processes of the job join at grow_step
  int grow_step = -1;
};

// Runs steps from p.step on; shrinks after a death (then the survivors
// agree on the step), grows at the grow step. `me`: this process's rank in
// the job (names the victims).
int run(mccl::Communicator comm, Progress p, Plan plan, int me, bool shrunk) {
  for (;;) {
    try {
      // First, before the loop's test: a joiner cut short holds no step yet.
      if (shrunk) {
        agree_on_step(comm, p);
        share(comm, p);
      }
      shrunk = false;
      if (p.step >= plan.steps) break;
      if (p.step == plan.grow_step && plan.joiners > 0) {
        std::printf("rank %d grow entered at %.6f\n", me, monotonic_now());
        auto boot = mccl::make_tcp_bootstrap(
            {.address = grow_address(), .rank = comm.rank(), .size = comm.size() + plan.joiners});
        plan.joiners = 0;  // once, even if a death interrupts it
        comm = comm.grow(*boot);
        share(comm, p);
        std::printf("rank %d grown at %.6f to %d ranks\n", me, monotonic_now(), comm.size());
        std::fflush(stdout);
      }
      bool die = false;
      for (const Kill& k : plan.kills) die = die || (k.rank == me && k.step == p.step);
      if (!advance(comm, p, die, me)) return 4;
    } catch (const mccl::Error& e) {
      if (e.code() != mccl::ErrorCode::kPeerFailure) throw;
      std::vector<int> failed;
      comm = comm.shrink(&failed);
      shrunk = true;
      std::string list;
      for (int f : failed) list += (list.empty() ? "" : ",") + std::to_string(f);
      std::printf("rank %d shrunk at %.6f to %d ranks, failed: %s (step %lld)\n", me,
                  monotonic_now(), comm.size(), list.c_str(), static_cast<long long>(p.step));
      std::fflush(stdout);
    }
  }
  std::printf("rank %d done: %d steps on %d ranks, state %016llx\n", me, plan.steps, comm.size(),
              static_cast<unsigned long long>(hash_of(p.state)));
  std::fflush(stdout);
  leave(comm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: elastic_worker STEPS [RANK@STEP|RANK@POINT...] "
                 "[join:K@STEP]\n");
    return 2;
  }
  Plan plan;
  plan.steps = std::atoi(argv[1]);
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto at = arg.find('@');
    if (arg.rfind("join:", 0) == 0) {
      plan.joiners = std::atoi(arg.c_str() + 5);
      plan.grow_step = std::atoi(arg.c_str() + at + 1);
      continue;
    }
    Kill k;
    k.rank = std::atoi(arg.substr(0, at).c_str());
    const std::string when = arg.substr(at + 1);
    if (when.find_first_not_of("0123456789") == std::string::npos) {
      k.step = std::atoi(when.c_str());
    } else {
      k.point = when;  // MCCL_TEST_KILL_AT's
    }
    plan.kills.push_back(k);
  }
  try {
    // The job's last `joiners` processes join at the grow step; the others
    // are the first communicator's members, on a store of their own.
    const int me = env_int("MCCL_RANK"), world = env_int("MCCL_WORLD_SIZE");
    const int members = world - plan.joiners;
    for (const Kill& k : plan.kills) {
      if (k.rank == me && !k.point.empty()) ::setenv("MCCL_TEST_KILL_AT", k.point.c_str(), 1);
    }
    if (plan.joiners > 0 && me >= members) {
      int left = members;  // the members alive at the grow step
      for (const Kill& k : plan.kills) left -= k.step >= 0 && k.step < plan.grow_step ? 1 : 0;
      const int rank = left + (me - members);
      std::printf("rank %d join entered at %.6f\n", me, monotonic_now());
      auto boot = mccl::make_tcp_bootstrap(
          {.address = grow_address(), .rank = rank, .size = left + plan.joiners});
      mccl::Communicator comm(*boot);
      Progress p;
      p.step = kNoState;
      bool shrunk = false;
      try {
        share(comm, p);
        std::printf("rank %d joined at %.6f as rank %d of %d at step %lld\n", me, monotonic_now(),
                    comm.rank(), comm.size(), static_cast<long long>(p.step));
      } catch (const mccl::Error& e) {  // a process died during the grow
        if (e.code() != mccl::ErrorCode::kPeerFailure) throw;
        comm = comm.shrink();
        shrunk = true;
        std::printf("rank %d shrunk at %.6f while joining\n", me, monotonic_now());
      }
      std::fflush(stdout);
      plan.joiners = 0;
      return run(std::move(comm), std::move(p), plan, me, shrunk);
    }
    auto boot = plan.joiners > 0 ? mccl::make_tcp_bootstrap({.rank = me, .size = members})
                                 : mccl::make_bootstrap_from_env();
    const int first = boot->rank();  // names the victims
    mccl::Communicator comm(*boot);
    Progress p;
    p.state.assign(4096, first == 0 ? 1 : 0);
    share(comm, p);  // rank 0's state everywhere: a starting point every rank shares
    return run(std::move(comm), std::move(p), plan, first, false);
  } catch (const mccl::Error& e) {
    std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
