// What the UCX transport's tests share: UCX over TCP on lo for every test
// (set before any context is made), scoped UCX variables, a watchdog that
// turns a hang inside UCX into a named failure, ranks as threads joined by an
// in-memory allgather, and a recorder that drives them.
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
#include "transport/ucx/ucx_transport.h"
#include "transport/ucx/wire.h"

namespace mccl::transport::ucx::test {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

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

// ---- ranks as threads ------------------------------------------------------

// An in-memory allgather for ranks on threads: the out-of-band channel.
class ThreadAllgather {
 public:
  explicit ThreadAllgather(int n) : n_(n) {}
  Bytes operator()(int rank, std::span<const std::byte> mine) {
    std::unique_lock lock(mu_);
    const int round = rounds_[rank]++;
    auto& parts = parts_[round];
    parts.resize(static_cast<std::size_t>(n_));
    parts[static_cast<std::size_t>(rank)].assign(mine.begin(), mine.end());
    if (++arrived_[round] == n_) cv_.notify_all();
    if (!cv_.wait_for(lock, 20s, [&] { return arrived_[round] == n_; })) {
      throw Error(ErrorCode::kTimeout, "test allgather timed out");
    }
    Bytes all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, int> rounds_;
  std::map<int, int> arrived_;
  std::map<int, std::vector<Bytes>> parts_;
};

// The ranks are destroyed one after the other from one thread, so a
// rank's flush-mode endpoint closes wait for peers that do not progress:
// a short close budget keeps that cheap.
inline UcxReliableConfig config(int rank, int size) {
  return {.rank = rank, .size = size, .connect_timeout = 20s, .close_timeout = 200ms};
}

using Mesh = std::vector<std::unique_ptr<ReliableTransport>>;

// Creates an n-rank mesh, one thread per rank for the collective setup.
inline Mesh make_mesh(int n, const std::function<void(UcxReliableConfig&)>& tweak = {}) {
  ThreadAllgather oob(n);
  Mesh ts(static_cast<std::size_t>(n));
  std::vector<common::Status> st(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto ur = static_cast<std::size_t>(r);
      UcxReliableConfig c = config(r, n);
      if (tweak) tweak(c);
      st[ur] = create_ucx_reliable(
          c, [&](auto mine) { return oob(r, mine); }, ts[ur]);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(st[static_cast<std::size_t>(r)].is_ok())
        << "rank " << r << ": " << st[static_cast<std::size_t>(r)].message();
  }
  return ts;
}

// What a rank saw, in order.
struct Recorder : ReliableHandler {
  struct Event {
    int peer;
    bool failure;
    Bytes data;
    common::Status why;
  };
  void on_message(int peer, std::span<const std::byte> m) override {
    events.push_back({peer, false, Bytes(m.begin(), m.end()), {}});
  }
  void on_peer_failure(int peer, const common::Status& why) override {
    events.push_back({peer, true, {}, why});
  }
  std::vector<Bytes> from(int peer) const {
    std::vector<Bytes> out;
    for (const auto& e : events) {
      if (e.peer == peer && !e.failure) out.push_back(e.data);
    }
    return out;
  }
  int failures(int peer) const {
    int n = 0;
    for (const auto& e : events) n += e.peer == peer && e.failure;
    return n;
  }
  std::vector<Event> events;
};

inline Bytes pattern(int from, int to, int index, std::size_t n) {
  Bytes v(n);
  std::uint32_t x = static_cast<std::uint32_t>(from * 7919 + to * 104729 + index * 1299709) | 1;
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<std::byte>(x);
  }
  return v;
}

// Polls every live transport (null entries are skipped) until `done`.
inline void drive(Mesh& ts, std::vector<Recorder>& rec, const std::function<bool()>& done,
                  std::chrono::seconds limit = 40s, std::size_t max = 64) {
  const auto until = Clock::now() + limit;
  while (!done()) {
    ASSERT_LT(Clock::now(), until) << "messages did not arrive in time";
    for (std::size_t r = 0; r < ts.size(); ++r) {
      if (!ts[r]) continue;
      std::size_t delivered = 0;
      common::Status s = ts[r]->poll(rec[r], max, delivered);
      ASSERT_TRUE(s.is_ok()) << s.message();
    }
  }
}

}  // namespace mccl::transport::ucx::test
