// elastic_worker: one rank of a job that keeps training through deaths
// (docs/elastic.md), for tests/mp/elastic_test.cc and bench/elastic/run.sh.
//
//   elastic_worker STEPS [KILL...]
//
// Every step runs an allreduce of a state vector and an allgather of each
// rank's hash of its state: every rank must hold the same state, checked
// bit for bit at every step. KILL is RANK@STEP (ranks of the first
// communicator): that process kills itself (SIGKILL) in the middle of
// step STEP's allgather. RANK@shrink-agreed or RANK@shrink-created: that
// process kills itself at that point of the first shrink it takes part in
// (MCCL_TEST_KILL_AT). A survivor whose collective fails with kPeerFailure
// shrinks and redoes the step. Prints "killed at T" (victim), "shrunk at T
// to N ranks, failed: ..." (survivors; T on CLOCK_MONOTONIC, the same in
// every process of a host) and "done: S steps on N ranks, state H", each
// line after "rank R " (R: the rank in the first communicator).
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

namespace {

double monotonic_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint64_t hash_of(const std::vector<std::int64_t>& v) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (std::int64_t x : v) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<std::uint64_t>(x >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

struct Kill {
  int rank = -1;
  int step = -1;      // -1: at a shrink point
  std::string point;  // MCCL_TEST_KILL_AT
};

// One step: the state becomes the sum of every rank's contribution (the
// same on every rank), then every rank's hash must agree. Throws
// mccl::Error when a peer dies; returns false on an inconsistency.
bool step(mccl::Communicator& c, std::vector<std::int64_t>& state, int n, bool die_midway,
          int first_rank) {
  std::vector<std::int64_t> contribution(state.size());
  for (std::size_t i = 0; i < state.size(); ++i) contribution[i] = state[i] % 1009 + n + i;
  std::vector<std::int64_t> sum(state.size());
  c.allreduce(contribution.data(), sum.data(), sum.size(), mccl::DataType::kInt64,
              mccl::ReduceOp::kSum);
  const std::uint64_t mine = hash_of(sum);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(c.size()));
  // Large enough to be in flight when a victim dies in it.
  std::vector<std::byte> pad_send(1 << 20),
      pad_recv((1 << 20) * static_cast<std::size_t>(c.size()));
  mccl::Request r = c.iallgather(pad_send.data(), pad_recv.data(), pad_send.size());
  if (die_midway) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (std::chrono::steady_clock::now() < until && !r.test()) c.progress();
    std::printf("rank %d killed at %.6f\n", first_rank, monotonic_now());
    std::fflush(stdout);
    ::raise(SIGKILL);
  }
  r.wait();
  c.allgather(&mine, all.data(), sizeof mine);
  for (std::uint64_t h : all) {
    if (h != mine) {
      std::printf("step: rank %d holds state %016llx, another rank %016llx\n", c.rank(),
                  static_cast<unsigned long long>(mine), static_cast<unsigned long long>(h));
      return false;
    }
  }
  state = std::move(sum);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: elastic_worker STEPS [RANK@STEP|RANK@shrink-agreed|...]\n");
    return 2;
  }
  const int steps = std::atoi(argv[1]);
  std::vector<Kill> kills;
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto at = arg.find('@');
    Kill k;
    k.rank = std::atoi(arg.substr(0, at).c_str());
    const std::string when = arg.substr(at + 1);
    if (when.rfind("shrink-", 0) == 0) {
      k.point = when;
    } else {
      k.step = std::atoi(when.c_str());
    }
    kills.push_back(k);
  }
  try {
    auto boot = mccl::make_bootstrap_from_env();
    const int me = boot->rank();  // in the first communicator, which names the victims
    for (const Kill& k : kills) {
      if (k.rank == me && !k.point.empty()) ::setenv("MCCL_TEST_KILL_AT", k.point.c_str(), 1);
    }
    mccl::Communicator comm(*boot);
    std::vector<std::int64_t> state(4096, me == 0 ? 1 : 0);
    // Rank 0's state everywhere: a starting point every rank shares.
    comm.broadcast(state.data(), state.size() * sizeof(std::int64_t), 0);
    for (int s = 0; s < steps;) {
      bool die = false;
      for (const Kill& k : kills) die = die || (k.rank == me && k.step == s);
      try {
        if (!step(comm, state, comm.size(), die, me)) return 4;
        ++s;
      } catch (const mccl::Error& e) {
        if (e.code() != mccl::ErrorCode::kPeerFailure) throw;
        std::vector<int> failed;
        comm = comm.shrink(&failed);
        std::string list;
        for (int f : failed) list += (list.empty() ? "" : ",") + std::to_string(f);
        std::printf("rank %d shrunk at %.6f to %d ranks, failed: %s (step %d)\n", me,
                    monotonic_now(), comm.size(), list.c_str(), s);
        std::fflush(stdout);
      }
    }
    std::printf("rank %d done: %d steps on %d ranks, state %016llx\n", me, steps, comm.size(),
                static_cast<unsigned long long>(hash_of(state)));
    return 0;
  } catch (const mccl::Error& e) {
    std::printf("error %s: %s\n", mccl::to_string(e.code()), e.what());
    return 3;
  }
}
