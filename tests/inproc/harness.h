// Shared helpers of the in-process tests: worlds of N ranks over the
// in-memory fabric, driven either by one thread per rank or round-robin
// from the test's own thread (which scales to 128 ranks on 2 cores).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mccl/mccl.hpp"

namespace mccl::testing {

// Runs `call` and returns the code of the mccl::Error it throws (kOk when
// it throws nothing); keeps the message for assertions.
template <typename F>
ErrorCode code_of(F&& call, std::string* message = nullptr) {
  try {
    call();
  } catch (const Error& e) {
    if (message != nullptr) *message = e.what();
    return e.code();
  }
  return ErrorCode::kOk;
}

// The byte rank `rank` contributes at `index` in test `salt`: cheap,
// different for every rank and position, so any misplacement shows.
inline std::byte pattern(int rank, std::size_t index, std::uint64_t salt) {
  std::uint64_t x =
      (static_cast<std::uint64_t>(rank) << 40) ^ index ^ (salt * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::byte>(x & 0xFF);
}

void fill(std::byte* p, std::size_t n, int rank, std::uint64_t salt);
// n float32 values drawn from N(0, 1) with `seed` (compression tests).
std::vector<float> gaussian_floats(std::size_t n, std::uint32_t seed);
// Index of the first wrong byte, or n when all are right.
std::size_t first_mismatch(const std::byte* p, std::size_t n, int rank, std::uint64_t salt);

// Advances every request from this thread until all are done; throws the
// first request's error; fails with a message after `deadline`.
void drive(std::vector<Request>& requests, std::chrono::milliseconds deadline);
// The same, and also advances every communicator in `comms` on each pass,
// also those of ranks whose own requests are done: with the inline engine
// a finished rank may still owe its peers messages queued in the reliable
// transport (UCX), which only its progress sends.
void drive(std::vector<Request>& requests, std::chrono::milliseconds deadline,
           const std::vector<Communicator*>& comms);

// One communicator per rank of `world`, rank r's made with options_of(r)
// (ranks that differ where they must agree: the mismatch tests).
std::vector<Communicator> create_communicators_each(
    InProcessWorld& world, const std::function<CommOptions(int rank)>& options_of);

// Runs body(comm) on one thread per rank; rethrows the first exception.
void run_on_threads(std::vector<Communicator>& comms,
                    const std::function<void(Communicator&)>& body);

// `o` with broadcasts and allgathers on multicast at every size: for tests
// of the multicast protocol (repairs, early arrivals, eager completion,
// constant-time completion), whose small sizes the algorithm table would
// otherwise serve point to point.
inline CommOptions multicast_only(CommOptions o = {}) {
  o.allgather_algorithm = AllgatherAlgorithm::kMulticast;
  o.broadcast_algorithm = BroadcastAlgorithm::kMulticast;
  return o;
}

// Sets environment variables for the communicators created in its scope
// (the settings registry is read at creation) and restores them after.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const std::string& name, const std::string& value);

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A test run once per progress engine (the failure tests): the parameter
// is the engine, options() sets it. Under offload the communicators go to a
// daemon of this test process's own (a job named after the pid, so that
// test processes running beside it, or another tree's, never share one)
// whose log is discarded (a failed client would otherwise keep it). The
// daemon owns real UDP loopback multicast, not the world's in-memory
// fabric: fabric faults and kill_rank() do not reach it.
class EngineTest : public ::testing::TestWithParam<ProgressKind> {
 protected:
  void SetUp() override {
    if (!offload()) return;
    env_.set("MCCL_OFFLOAD_JOB", "test" + std::to_string(::getpid()));
    env_.set("MCCL_OFFLOAD_LOG", "/dev/null");
  }
  bool offload() const { return GetParam() == ProgressKind::kOffload; }
  CommOptions options(CommOptions o = {}) const {
    o.progress = GetParam();
    return o;
  }
  // The same share of datagrams lost in the daemon as `loss` on the world's
  // fabric (its UDP test hook; read when the daemon starts).
  void mirror_loss(double loss) {
    if (offload()) {
      env_.set("MCCL_UDP_TEST_DROP_PERMILLE", std::to_string(static_cast<int>(loss * 1000)));
    }
  }

 private:
  ScopedEnv env_;
};

inline std::string engine_name(const ::testing::TestParamInfo<ProgressKind>& info) {
  switch (info.param) {
    case ProgressKind::kInline:
      return "inline";
    case ProgressKind::kThread:
      return "thread";
    case ProgressKind::kOffload:
      return "offload";
  }
  return "unknown";
}

// Instantiates the EngineTest suite `suite` once per engine:
// Engines/Suite.Case/inline, .../thread, .../offload.
#define MCCL_TEST_EVERY_ENGINE(suite)                                                 \
  INSTANTIATE_TEST_SUITE_P(                                                           \
      Engines, suite,                                                                 \
      ::testing::Values(::mccl::ProgressKind::kInline, ::mccl::ProgressKind::kThread, \
                        ::mccl::ProgressKind::kOffload),                              \
      ::mccl::testing::engine_name)

// "ranks=8 bytes=1460 loss=0.01 seed=7": what a failing test prints.
std::string describe(int ranks, std::size_t bytes, const SimFabricOptions& fabric);

}  // namespace mccl::testing
