// The insides of the bootstrap's TCP store (store_server.h): what a
// connection holds and the server's state, shared by store_server.cc (the
// poll loop, accepting, reading and writing) and store_rounds.cc (what the
// frames mean: hellos, contributions, rounds, deadlines).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/store_server.h"
#include "bootstrap/wire.h"
#include "common/clock.h"

namespace mccl::bootstrap {

using common::TimePoint;
using Bytes = std::vector<std::byte>;

// The store's connections and its state, shared by store_server.cc (the
// poll loop and the I/O) and store_rounds.cc (admission and the rounds).

// An anonymous connection must say hello this soon (a rank sends it right
// after connecting), and at most this many wait at once: the oldest is
// dropped first, so strangers cannot hold the store's descriptors.
constexpr auto kAnonymousHelloWithin = std::chrono::seconds(5);
constexpr std::size_t kMaxAnonymous = 64;
// A payload grows by at most this much per read: its buffer follows the
// bytes that actually arrived, never the length a header announces.
constexpr std::size_t kGrowBytes = 64 * 1024;

inline std::int64_t ms_between(TimePoint a, TimePoint b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

inline std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

struct OutFrame {
  std::array<std::byte, wire::kHeaderBytes> header{};
  std::shared_ptr<const Bytes> payload;  // shared by every rank of a round; may be null
  std::size_t written = 0;               // of header + payload
  std::size_t size() const { return header.size() + (payload ? payload->size() : 0); }
};

struct Conn {
  Fd fd;
  int rank = -1;         // -1 until its hello is accepted
  TimePoint hello_by{};  // an anonymous connection that stays silent is closed then
  bool closed = false;
  bool said_bye = false;
  bool told_error = false;
  bool discard = false;             // after a protocol error: input is ignored
  bool close_when_flushed = false;  // refused: close once the answer is out
  // Reading: a header, then its payload.
  std::array<std::byte, wire::kHeaderBytes> hdr_buf{};
  std::size_t hdr_got = 0;
  wire::Header hdr;
  std::shared_ptr<Bytes> payload;
  std::size_t payload_want = 0;  // the header's length, checked
  std::size_t payload_got = 0;
  std::deque<OutFrame> out;
};

struct StoreServer::Impl {
  // Where the store reads the time: the steady clock; a test may pass a
  // clock of its own (tests/fuzz/store_server_fuzz.cc runs the deadlines
  // without waiting for them).
  using ClockFn = TimePoint (*)();

  Impl(Fd listen, sockaddr_in addr, int size, std::chrono::milliseconds timeout, std::string secret,
       ClockFn clock = &common::now)
      : clock_(clock),
        listen_(std::move(listen)),
        where_(to_string(addr)),
        secret_(std::move(secret)),
        size_(size),
        timeout_(timeout),
        start_(clock_()),
        accept_by_(common::saturating_add(start_, timeout)) {}

  // Serves until stopped: step() until it says the store is done, then an
  // orderly close of every connection (close_all()).
  void run();
  // One pass of the loop: deadlines, then poll() (for at most `max_wait_ms`
  // when it is not negative) and whatever became ready. False once the store
  // has stopped and has flushed what it could.
  bool step(int max_wait_ms = -1);
  void close_all();
  void stop() {
    stop_.store(true);
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);
  }

  // Events.
  void accept_all();
  void on_readable(Conn& c);
  bool accept_header(Conn& c);
  void drop_oldest_anonymous();
  void on_frame(Conn& c);
  void on_hello(Conn& c);
  void on_contribute(Conn& c);
  void on_rejoin(Conn& c);
  void on_closed(Conn& c, const std::string& why);
  void check_deadlines(TimePoint now);
  void complete_round();
  void flush(Conn& c);

  // Poisons the store (first failure wins) and tells every rank. `quiet`:
  // an expected end, logged at debug level only.
  void fail(common::Status why, bool quiet = false);
  void protocol_error(Conn& c, const std::string& what);
  void send(Conn& c, wire::Kind kind, std::uint32_t aux, std::uint64_t round,
            std::shared_ptr<const Bytes> payload);
  void send_error(Conn& c, const common::Status& st);
  std::string prefix() const { return "bootstrap store (rank 0, " + where_ + "): "; }
  TimePoint now() const { return clock_(); }
  // By when a connection accepted now must have said hello. Saturating: the
  // timeout may be as large as INT64_MAX ms, which overflows nanoseconds.
  TimePoint hello_due() const {
    return common::saturating_add(
        now(), std::min<std::chrono::milliseconds>(timeout_, kAnonymousHelloWithin));
  }

  const ClockFn clock_;
  Fd listen_;
  Fd wake_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  const std::string where_;
  const std::string secret_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const TimePoint start_;
  TimePoint accept_by_;  // every rank must have said hello by then

  // After stop(): the loop ends once every answer is out, or by then.
  std::optional<TimePoint> flush_by_;
  std::vector<pollfd> fds_;  // of the current pass, kept to spare allocations

  std::vector<std::unique_ptr<Conn>> conns_;
  // Per-rank tables hold the ranks that arrived, never the whole world up
  // front: a world size is a claim, and a store serves a few of them at most.
  std::unordered_map<int, Conn*> by_rank_;     // connected ranks
  std::unordered_set<int> arrived_;            // ranks that said hello, gone or not
  std::unordered_map<int, std::string> gone_;  // why a rank that arrived is gone
  std::unordered_set<int> detached_;           // arrived, connection let go between rounds
  int arrived_count_ = 0;
  bool welcomed_ = false;
  std::optional<common::Status> failed_;

  // The open allgather round.
  std::uint64_t round_ = 0;
  std::unordered_map<int, std::shared_ptr<Bytes>> contributions_;
  int count_ = 0;
  TimePoint round_opened_{};
  TimePoint round_by_ = TimePoint::max();
};

}  // namespace mccl::bootstrap
