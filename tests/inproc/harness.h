// Shared helpers of the in-process tests: worlds of N ranks over the
// in-memory fabric, driven either by one thread per rank or round-robin
// from the test's own thread (which scales to 128 ranks on 2 cores).
#pragma once

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

// Runs body(comm) on one thread per rank; rethrows the first exception.
void run_on_threads(std::vector<Communicator>& comms,
                    const std::function<void(Communicator&)>& body);

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

// "ranks=8 bytes=1460 loss=0.01 seed=7": what a failing test prints.
std::string describe(int ranks, std::size_t bytes, const SimFabricOptions& fabric);

}  // namespace mccl::testing
