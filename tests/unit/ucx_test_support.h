// What the UCX transport's tests share: UCX over TCP on lo for every test
// (set before any context is made), scoped UCX variables, a watchdog that
// turns a hang inside UCX into a named failure, and the UCX mesh of ranks as
// threads (the rest is reliable_test_support.h's).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mccl/error.h"
#include "reliable_test_support.h"
#include "transport/ucx/ucx_transport.h"
#include "transport/ucx/wire.h"

namespace mccl::transport::ucx::test {

using namespace transport::test;

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// ---- the environment: UCX over TCP on lo, and a watchdog ------------------

class UcxOverLoopback : public ::testing::Environment {
 public:
  void SetUp() override {
    ::setenv("UCX_TLS", "tcp", 1);
    ::setenv("UCX_NET_DEVICES", "lo", 1);
  }
};
inline const auto* const g_env = ::testing::AddGlobalTestEnvironment(new UcxOverLoopback);

// Sets UCX variables for one test and restores the defaults above.
class ScopedUcxEnv {
 public:
  ScopedUcxEnv(const char* tls, const char* devices) {
    ::setenv("UCX_TLS", tls, 1);
    if (devices != nullptr) {
      ::setenv("UCX_NET_DEVICES", devices, 1);
    } else {
      ::unsetenv("UCX_NET_DEVICES");
    }
  }
  ~ScopedUcxEnv() {
    ::setenv("UCX_TLS", "tcp", 1);
    ::setenv("UCX_NET_DEVICES", "lo", 1);
  }
};

// Sets one more UCX variable for one test, then unsets it.
class ScopedVar {
 public:
  ScopedVar(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedVar() { ::unsetenv(name_); }
  ScopedVar(const ScopedVar&) = delete;
  ScopedVar& operator=(const ScopedVar&) = delete;

 private:
  const char* name_;
};

// Aborts the process when a test runs past its budget: a hang inside UCX
// becomes a failure with a name instead of a stalled CI job.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds budget)
      : thread_([this, budget] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, budget, [&] { return done_; })) {
            const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
            std::fprintf(stderr,
                         "ucx_transport_test: %s.%s ran past %lld s (hung in UCX?); aborting\n",
                         info ? info->test_suite_name() : "?", info ? info->name() : "?",
                         static_cast<long long>(budget.count()));
            std::fflush(stderr);
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

class UcxTest : public ::testing::Test {
 protected:
  Watchdog watchdog_{60s};
};

// The conformance suite's guard: its ordered-delivery tests move 8 MiB
// messages between four ranks.
struct Watchdog100s : Watchdog {
  Watchdog100s() : Watchdog(std::chrono::seconds(100)) {}
};

// ---- ranks as threads ------------------------------------------------------

// The ranks are destroyed one after the other from one thread, so a
// rank's flush-mode endpoint closes wait for peers that do not progress:
// a short close budget keeps that cheap.
inline UcxReliableConfig config(int rank, int size) {
  return {.rank = rank, .size = size, .connect_timeout = 20s, .close_timeout = 200ms};
}

// Creates an n-rank mesh, one thread per rank for the collective setup.
inline Mesh make_mesh(int n, const std::function<void(UcxReliableConfig&)>& tweak = {}) {
  return make_mesh_with(n, [&](int r, const OobAllgather& oob, auto& out) {
    UcxReliableConfig c = config(r, n);
    if (tweak) tweak(c);
    return create_ucx_reliable(c, oob, out);
  });
}

}  // namespace mccl::transport::ucx::test
