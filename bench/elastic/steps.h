// What every elastic worker runs (bench/elastic): a training-like step whose
// state every rank must hold bit for bit, and the hand-over of that state
// to joiners. Header-only: shared by elastic_worker.cc and soak_worker.cc.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mccl/mccl.hpp"

namespace mccl::bench {

inline double monotonic_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline std::uint64_t hash_of(const std::vector<std::int64_t>& v) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  for (std::int64_t x : v) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<std::uint64_t>(x >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

// The large collective of every step, in flight when a victim dies in it:
// ELASTIC_PAD names it (allgather, the default; broadcast; reduce_scatter;
// allreduce), the same on every rank of a job. 1 MiB per rank.
struct Pad {
  explicit Pad(int ranks)
      : send(std::size_t{1} << 20),
        recv(send.size() * static_cast<std::size_t>(ranks)),
        kind(std::getenv("ELASTIC_PAD") != nullptr ? std::getenv("ELASTIC_PAD") : "allgather") {}
  mccl::Request start(mccl::Communicator& c) {
    const std::size_t ints = send.size() / sizeof(std::int32_t);
    if (kind == "broadcast") return c.ibroadcast(send.data(), send.size(), 0);
    if (kind == "reduce_scatter") {
      return c.ireduce_scatter(recv.data(), send.data(), ints, mccl::DataType::kInt32,
                               mccl::ReduceOp::kSum);
    }
    if (kind == "allreduce") {
      return c.iallreduce(send.data(), recv.data(), ints, mccl::DataType::kInt32,
                          mccl::ReduceOp::kSum);
    }
    return c.iallgather(send.data(), recv.data(), send.size());
  }
  std::vector<std::byte> send, recv;
  std::string kind;
};

// One step: the state becomes the sum of every rank's contribution (the
// same on every rank), then every rank's hash must agree. Throws
// mccl::Error when a peer dies; returns false on an inconsistency.
inline bool step(mccl::Communicator& c, std::vector<std::int64_t>& state, int n, bool die_midway,
                 int first_rank) {
  std::vector<std::int64_t> contribution(state.size());
  for (std::size_t i = 0; i < state.size(); ++i) contribution[i] = state[i] % 1009 + n + i;
  std::vector<std::int64_t> sum(state.size());
  c.allreduce(contribution.data(), sum.data(), sum.size(), mccl::DataType::kInt64,
              mccl::ReduceOp::kSum);
  const std::uint64_t mine = hash_of(sum);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(c.size()));
  // Large enough to be in flight when a victim dies in it.
  Pad pad(c.size());
  mccl::Request r = pad.start(c);
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

// The steps every rank completed and the state after them, and the state
// before the last one: a step can complete on some survivors of a death
// and fail on others (those that completed it had the victim's last
// contribution), so after a shrink the survivors agree on the step and
// those ahead step back (agree_on_step). What an application keeps for
// the same reason (docs/elastic.md, "What the application does").
struct Progress {
  std::int64_t step = 0;
  std::vector<std::int64_t> state;
  std::vector<std::int64_t> before;
};

// Runs the next step; on success it becomes the last completed one.
inline bool advance(mccl::Communicator& c, Progress& p, bool die_midway, int first_rank) {
  std::vector<std::int64_t> next = p.state;
  if (!step(c, next, c.size(), die_midway, first_rank)) return false;
  p.before = std::move(p.state);
  p.state = std::move(next);
  ++p.step;
  return true;
}

// The step of a joiner that has not received the state yet: it does not
// count in agree_on_step, and share() then hands it the state.
inline constexpr std::int64_t kNoState = INT64_MAX;

// Collective: every rank goes back to the lowest step any rank completed
// (at most one behind its own). After a shrink every survivor calls it and
// then share(), so that a joiner whose grow a death interrupted gets the
// state too.
inline void agree_on_step(mccl::Communicator& c, Progress& p) {
  std::int64_t lowest = 0;
  c.allreduce(&p.step, &lowest, 1, mccl::DataType::kInt64, mccl::ReduceOp::kMin);
  if (lowest < p.step) {
    p.state = p.before;
    p.step = lowest;
  }
}

// Before a rank exits: its peers may still be finishing the last
// collective, and a process that exits fails them (its connections close),
// so it waits until every rank has reached this point. A rank that
// finishes first exits at once; a peer that sees it leave during the
// barrier has nothing left to do, so that failure is not one.
inline void leave(mccl::Communicator& c) {
  try {
    c.barrier();
  } catch (const mccl::Error& e) {
    if (e.code() != mccl::ErrorCode::kPeerFailure) throw;
  }
}

// A TCP store beside the job's first one: MCCL_BOOTSTRAP_ADDR's host, its
// port plus `offset` (a grow's rendezvous).
inline std::string store_beside_first(int offset) {
  const char* first = std::getenv("MCCL_BOOTSTRAP_ADDR");
  const std::string a = first != nullptr ? first : "127.0.0.1:29500";
  const auto colon = a.rfind(':');
  return a.substr(0, colon + 1) + std::to_string(std::atoi(a.c_str() + colon + 1) + offset);
}

// Rank 0's step and state to every rank (the joiners' state transfer).
inline void share(mccl::Communicator& c, Progress& p) {
  c.broadcast(&p.step, sizeof p.step, 0);
  p.state.resize(4096);
  c.broadcast(p.state.data(), p.state.size() * sizeof(std::int64_t), 0);
  p.before = p.state;
}

}  // namespace mccl::bench
