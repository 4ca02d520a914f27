// What the reliable transports' tests share (TCP, UCX): ranks as threads
// joined by an in-memory out-of-band allgather, a handler that records what
// a rank saw, deterministic message contents, and a loop that polls every
// rank until a condition holds or its deadline passes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "common/status.h"
#include "mccl/error.h"
#include "sleep_count.h"
#include "transport/oob.h"
#include "transport/reliable.h"

namespace mccl::transport::test {

using Bytes = std::vector<std::byte>;
using Mesh = std::vector<std::unique_ptr<ReliableTransport>>;

// An in-memory allgather for ranks on threads: the out-of-band channel.
class ThreadAllgather {
 public:
  explicit ThreadAllgather(int n) : n_(n) {}
  common::Status operator()(int rank, std::span<const std::byte> mine, Bytes& all) {
    std::unique_lock lock(mu_);
    const int round = rounds_[rank]++;
    auto& parts = parts_[round];
    parts.resize(static_cast<std::size_t>(n_));
    parts[static_cast<std::size_t>(rank)].assign(mine.begin(), mine.end());
    if (++arrived_[round] == n_) cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(20), [&] { return arrived_[round] == n_; })) {
      return common::timeout_error("test allgather timed out");
    }
    all.clear();
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return common::Status::ok();
  }
  // The exchange as rank `rank` calls it.
  OobAllgather of(int rank) {
    return [this, rank](std::span<const std::byte> mine, Bytes& all) {
      return (*this)(rank, mine, all);
    };
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, int> rounds_;
  std::map<int, int> arrived_;
  std::map<int, std::vector<Bytes>> parts_;
};

// An exchange scripted by a function that returns every rank's
// contribution, for tests that play the other ranks themselves.
template <typename F>
OobAllgather scripted(F f) {
  return [f](std::span<const std::byte> mine, Bytes& all) {
    all = f(mine);
    return common::Status::ok();
  };
}

// Creates an n-rank mesh with `create(rank, oob, out)`, one thread per rank
// (setup is collective).
inline Mesh make_mesh_with(
    int n, const std::function<common::Status(int, const OobAllgather&,
                                              std::unique_ptr<ReliableTransport>&)>& create) {
  ThreadAllgather oob(n);
  Mesh ts(static_cast<std::size_t>(n));
  std::vector<common::Status> st(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto ur = static_cast<std::size_t>(r);
      st[ur] = create(r, oob.of(r), ts[ur]);
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

// The bytes of message `index` from `from` to `to` (xorshift, never all zero).
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

// Polls every live transport (null entries are skipped) until `done`, at
// most `limit`.
inline void drive(Mesh& ts, std::vector<Recorder>& rec, const std::function<bool()>& done,
                  std::chrono::seconds limit = std::chrono::seconds(60), std::size_t max = 64) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "messages did not arrive in time";
    for (std::size_t r = 0; r < ts.size(); ++r) {
      if (!ts[r]) continue;
      std::size_t delivered = 0;
      common::Status s = ts[r]->poll(rec[r], max, delivered);
      ASSERT_TRUE(s.is_ok()) << s.message();
    }
  }
}

}  // namespace mccl::transport::test
