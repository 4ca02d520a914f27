// The TCP reliable transport (src/transport/tcp), ranks as threads (for the
// collective setup) and then driven from one thread on 127.0.0.1: ordered
// delivery of messages of 0..4 MiB, multi-part sends, peer failure, sends
// that never block, poll() and wait_fd(), stray connections, corrupt
// streams and setup errors.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/little_endian.h"
#include "mccl/error.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

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

TcpReliableConfig config(int rank, int size) {
  return {.rank = rank, .size = size, .bind_address = "127.0.0.1", .connect_timeout = 10s};
}

// Creates an n-rank mesh, one thread per rank for the collective setup.
std::vector<std::unique_ptr<ReliableTransport>> make_mesh(int n) {
  ThreadAllgather oob(n);
  std::vector<std::unique_ptr<ReliableTransport>> ts(static_cast<std::size_t>(n));
  std::vector<common::Status> st(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto ur = static_cast<std::size_t>(r);
      st[ur] = create_tcp_reliable(
          config(r, n), [&](auto mine) { return oob(r, mine); }, ts[ur]);
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

Bytes pattern(int from, int to, int index, std::size_t n) {
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
void drive(std::vector<std::unique_ptr<ReliableTransport>>& ts, std::vector<Recorder>& rec,
           const std::function<bool()>& done, std::chrono::seconds limit = 60s,
           std::size_t max = 64) {
  const auto until = Clock::now() + limit;
  while (!done()) {
    ASSERT_LT(Clock::now(), until) << "messages did not arrive in time";
    for (std::size_t r = 0; r < ts.size(); ++r) {
      if (!ts[r]) continue;
      std::size_t delivered = 0;
      ASSERT_TRUE(ts[r]->poll(rec[r], max, delivered).is_ok());
    }
  }
}

class TcpReliableMesh : public ::testing::TestWithParam<int> {};

TEST_P(TcpReliableMesh, DeliversEveryMessageWholeAndInOrder) {
  const int n = GetParam();
  auto ts = make_mesh(n);
  ASSERT_EQ(ts.size(), static_cast<std::size_t>(n));
  std::vector<std::size_t> sizes = {
      0,     1,     2,     3,     4,     5,      100,      1000,           16383,
      16384, 16385, 65535, 65536, 65537, 262144, 1u << 20, (4u << 20) - 1, 4u << 20,
      0,     7};
  for (int i = 0; i < 500; ++i) sizes.push_back(static_cast<std::size_t>(i % 97));
  for (int from = 0; from < n; ++from) {
    for (int to = 0; to < n; ++to) {
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        auto m = pattern(from, to, static_cast<int>(k), sizes[k]);
        ASSERT_TRUE(ts[static_cast<std::size_t>(from)]->send(to, m).is_ok());
      }
    }
  }
  std::vector<Recorder> rec(static_cast<std::size_t>(n));
  const std::size_t per_rank = sizes.size() * static_cast<std::size_t>(n);
  drive(ts, rec, [&] {
    for (const auto& r : rec) {
      if (r.events.size() < per_rank) return false;
    }
    return true;
  });
  for (int to = 0; to < n; ++to) {
    const Recorder& r = rec[static_cast<std::size_t>(to)];
    EXPECT_EQ(r.events.size(), per_rank);
    for (int from = 0; from < n; ++from) {
      auto got = r.from(from);
      ASSERT_EQ(got.size(), sizes.size()) << from << " -> " << to;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        ASSERT_EQ(got[k], pattern(from, to, static_cast<int>(k), sizes[k]))
            << "message " << k << " (" << sizes[k] << " bytes) " << from << " -> " << to;
      }
    }
  }
  auto* tcp = as_tcp(ts[0].get());
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(tcp->counters().messages_sent, per_rank);
  EXPECT_EQ(tcp->counters().messages_received, per_rank);
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpReliableMesh, ::testing::Values(3, 4));

TEST(TcpReliable, MultiPartSendsArriveConcatenated) {
  auto ts = make_mesh(3);
  const Bytes a = pattern(0, 0, 1, 3);
  const Bytes big = pattern(0, 0, 2, 100 * 1024);
  const Bytes one = pattern(0, 0, 3, 1);
  std::vector<std::span<const std::byte>> parts = {{}, a, {}, big, one};
  ASSERT_TRUE(ts[0]->send(1, parts).is_ok());
  // More parts than one gather-write takes.
  std::vector<Bytes> many;
  for (int i = 0; i < 150; ++i)
    many.push_back(pattern(0, 2, i, static_cast<std::size_t>(i % 5) * 50));
  std::vector<std::span<const std::byte>> many_parts(many.begin(), many.end());
  ASSERT_TRUE(ts[0]->send(2, many_parts).is_ok());
  ASSERT_TRUE(ts[0]->send(0, parts).is_ok());  // to self

  Bytes want1;
  for (const auto& p : parts) want1.insert(want1.end(), p.begin(), p.end());
  Bytes want2;
  for (const auto& p : many) want2.insert(want2.end(), p.begin(), p.end());
  std::vector<Recorder> rec(3);
  drive(ts, rec, [&] {
    return rec[0].events.size() == 1 && rec[1].events.size() == 1 && rec[2].events.size() == 1;
  });
  EXPECT_EQ(rec[1].from(0).at(0), want1);
  EXPECT_EQ(rec[2].from(0).at(0), want2);
  EXPECT_EQ(rec[0].from(0).at(0), want1);
}

TEST(TcpReliable, DestroyedPeerIsReportedOnceAfterItsLastMessages) {
  auto ts = make_mesh(3);
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(ts[2]->send(0, pattern(2, 0, k, 1000)).is_ok());
    ASSERT_TRUE(ts[2]->send(1, pattern(2, 1, k, 70000)).is_ok());
  }
  ts[2].reset();
  std::vector<Recorder> rec(3);
  // max = 1: the failure must come even from a poll whose budget a message used up.
  drive(
      ts, rec, [&] { return rec[0].failures(2) == 1 && rec[1].failures(2) == 1; }, 10s, 1);
  for (int r = 0; r < 2; ++r) {
    const Recorder& h = rec[static_cast<std::size_t>(r)];
    ASSERT_EQ(h.events.size(), 6u) << "five messages, then the failure";
    for (int k = 0; k < 5; ++k)
      EXPECT_EQ(h.events[static_cast<std::size_t>(k)].data,
                pattern(2, r, k, r == 0 ? 1000 : 70000));
    const auto& f = h.events.back();
    EXPECT_TRUE(f.failure);
    EXPECT_EQ(f.why.code(), ErrorCode::kPeerFailure);
    EXPECT_THAT(f.why.message(), AllOf(HasSubstr("rank " + std::to_string(r)), HasSubstr("rank 2"),
                                       HasSubstr("127.0.0.1:")));
  }
  // Reported exactly once, however long the survivors keep polling.
  for (int i = 0; i < 100; ++i) {
    for (int r = 0; r < 2; ++r) {
      std::size_t d = 0;
      ASSERT_TRUE(
          ts[static_cast<std::size_t>(r)]->poll(rec[static_cast<std::size_t>(r)], 64, d).is_ok());
    }
  }
  EXPECT_EQ(rec[0].failures(2), 1);
  EXPECT_EQ(rec[1].failures(2), 1);
  common::Status st = ts[0]->send(2, pattern(0, 2, 0, 10));
  EXPECT_EQ(st.code(), ErrorCode::kPeerFailure);
  EXPECT_THAT(st.message(), HasSubstr("rank 2"));
  // The survivors still talk to each other.
  ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, 9, 10)).is_ok());
  drive(
      ts, rec, [&] { return rec[1].from(0).size() == 1; }, 10s);
}

TEST(TcpReliable, SendNeverBlocksWhenThePeerDoesNotRead) {
  auto ts = make_mesh(2);
  constexpr int kCount = 128;
  constexpr std::size_t kSize = 512 * 1024;  // 64 MiB in all, far beyond the socket buffers
  std::vector<Bytes> msgs;
  for (int k = 0; k < kCount; ++k) msgs.push_back(pattern(0, 1, k, kSize));
  auto slowest = Clock::duration::zero();
  const auto start = Clock::now();
  for (const auto& m : msgs) {
    const auto t0 = Clock::now();
    ASSERT_TRUE(ts[0]->send(1, m).is_ok());
    slowest = std::max(slowest, Clock::now() - t0);
  }
  const auto took = Clock::now() - start;
  EXPECT_LT(took, 3s);
  EXPECT_LT(slowest, 200ms);
  auto* tcp = as_tcp(ts[0].get());
  ASSERT_NE(tcp, nullptr);
  EXPECT_GT(tcp->queued_bytes(1), 16u << 20) << "the queue, not the caller, absorbs the excess";
  std::vector<Recorder> rec(2);
  drive(ts, rec, [&] { return rec[1].events.size() == kCount; });
  auto got = rec[1].from(0);
  for (int k = 0; k < kCount; ++k)
    ASSERT_EQ(got[static_cast<std::size_t>(k)], msgs[static_cast<std::size_t>(k)]) << k;
  EXPECT_EQ(tcp->queued_bytes(1), 0u);
}

TEST(TcpReliable, PollWithNothingPendingReturnsAtOnce) {
  auto ts = make_mesh(3);
  Recorder rec;
  const auto start = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    std::size_t d = 7;
    ASSERT_TRUE(ts[1]->poll(rec, 64, d).is_ok());
    EXPECT_EQ(d, 0u);
  }
  EXPECT_LT(Clock::now() - start, 500ms);
  EXPECT_TRUE(rec.events.empty());
  pollfd p{ts[1]->wait_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "wait_fd must be quiet when nothing is pending";
}

TEST(TcpReliable, WaitFdWakesForArrivalsAndForMessagesHeldBackByMax) {
  auto ts = make_mesh(2);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, k, 10)).is_ok());
  pollfd p{ts[1]->wait_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  Recorder rec;
  std::size_t d = 0;
  // Loopback may deliver the three frames in more than one segment.
  const auto until = Clock::now() + 5s;
  while (rec.events.empty() && Clock::now() < until) ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());
  ASSERT_EQ(rec.events.size(), 1u);
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "two messages still wait";
  while (rec.events.size() < 3 && Clock::now() < until) ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());
  ASSERT_EQ(rec.events.size(), 3u);
  ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TEST(TcpReliable, WorldOfOneNeedsNoAddressAndDeliversToSelf) {
  std::unique_ptr<ReliableTransport> t;
  bool called = false;
  ASSERT_TRUE(create_tcp_reliable(
                  {.rank = 0, .size = 1},
                  [&](auto m) {
                    called = true;
                    return Bytes(m.begin(), m.end());
                  },
                  t)
                  .is_ok());
  EXPECT_FALSE(called);
  ASSERT_TRUE(t->send(0, pattern(0, 0, 0, 5)).is_ok());
  pollfd p{t->wait_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  Recorder rec;
  std::size_t d = 0;
  ASSERT_TRUE(t->poll(rec, 8, d).is_ok());
  EXPECT_EQ(d, 1u);
  EXPECT_EQ(rec.from(0).at(0), pattern(0, 0, 0, 5));
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  EXPECT_EQ(t->send(1, pattern(0, 0, 0, 5)).code(), ErrorCode::kInvalidArgument);
}

TEST(TcpReliable, BadConfigIsRejected) {
  std::unique_ptr<ReliableTransport> t;
  auto oob = [](std::span<const std::byte> m) { return Bytes(m.begin(), m.end()); };
  EXPECT_EQ(create_tcp_reliable({.rank = 0, .size = 0}, oob, t).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(create_tcp_reliable({.rank = 2, .size = 2, .bind_address = "127.0.0.1"}, oob, t).code(),
            ErrorCode::kInvalidArgument);
  for (const char* bad : {"", "0.0.0.0", "localhost", "10.0.0"}) {
    common::Status st = create_tcp_reliable({.rank = 0, .size = 2, .bind_address = bad}, oob, t);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(st.message(), HasSubstr("bind_address"));
  }
  EXPECT_EQ(create_tcp_reliable(
                {.rank = 0, .size = 2, .bind_address = "127.0.0.1", .connect_timeout = 0ms}, oob, t)
                .code(),
            ErrorCode::kInvalidArgument);
}

TEST(TcpReliable, OutOfBandFailuresComeBackAsStatus) {
  std::unique_ptr<ReliableTransport> t;
  common::Status st = create_tcp_reliable(
      config(0, 2),
      [](std::span<const std::byte>) -> Bytes {
        throw Error(ErrorCode::kTimeout, "bootstrap: ranks never arrived: 1");
      },
      t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_THAT(st.message(), HasSubstr("never arrived: 1"));
  // Two ranks, but an allgather of the wrong length (mixed transports).
  st = create_tcp_reliable(
      config(0, 2), [](std::span<const std::byte> m) { return Bytes(m.begin(), m.end()); }, t);
  EXPECT_EQ(st.code(), ErrorCode::kMismatch);
  // A contribution that is not a TCP address.
  st = create_tcp_reliable(
      config(0, 2),
      [](std::span<const std::byte> m) {
        Bytes all(m.begin(), m.end());
        all.resize(2 * m.size(), std::byte{0x55});
        return all;
      },
      t);
  EXPECT_EQ(st.code(), ErrorCode::kMismatch);
  EXPECT_THAT(st.message(), HasSubstr("rank 1"));
}

// ---- A fake peer: the test plays one rank by hand on a raw socket. ---------

Bytes address_blob(std::uint16_t port, std::uint64_t nonce) {
  Bytes b(wire::kAddressBytes);
  wire::encode(wire::Address{INADDR_LOOPBACK, port, nonce},
               std::span<std::byte, wire::kAddressBytes>(b.data(), wire::kAddressBytes));
  return b;
}

wire::Address decode_blob(std::span<const std::byte> all, int rank) {
  wire::Address a;
  std::string why;
  EXPECT_TRUE(wire::decode(all.subspan(static_cast<std::size_t>(rank) * wire::kAddressBytes)
                               .first<wire::kAddressBytes>(),
                           a, why))
      << why;
  return a;
}

int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void send_all(int fd, const void* data, std::size_t n) {
  ASSERT_EQ(::send(fd, data, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
}

// Rank 1 is real; the test is rank 0 (the lower rank, which connects). It
// first sends junk and a hello with a wrong nonce (both must be rejected),
// then a valid handshake, then `after(fd)` runs on the connection.
void with_fake_rank0(const std::function<void(ReliableTransport&, int fd)>& after) {
  const std::uint64_t fake_nonce = 0x1234567887654321ull;
  std::unique_ptr<ReliableTransport> t;
  int fd = -1;
  int junk = -1;
  int liar = -1;
  common::Status st = create_tcp_reliable(
      config(1, 2),
      [&](std::span<const std::byte> mine) {
        Bytes all = address_blob(1, fake_nonce);  // rank 0's address is never used
        all.insert(all.end(), mine.begin(), mine.end());
        const wire::Address me = decode_blob(all, 1);
        // A stranger with junk, and one that knows the format but not the nonce.
        junk = connect_to(me.port);
        const char text[] = "GET / HTTP/1.0\r\nHost: x\r\n\r\n.............";
        send_all(junk, text, sizeof text);
        std::array<std::byte, wire::kHandshakeBytes> hs;
        wire::encode(
            wire::Handshake{wire::HandshakeKind::kHello, 0, 1, 2, me.nonce + 1, fake_nonce}, hs);
        liar = connect_to(me.port);
        send_all(liar, hs.data(), hs.size());
        // The real rank 0.
        wire::encode(wire::Handshake{wire::HandshakeKind::kHello, 0, 1, 2, me.nonce, fake_nonce},
                     hs);
        fd = connect_to(me.port);
        send_all(fd, hs.data(), hs.size());
        return all;  // the strangers stay connected until the end
      },
      t);
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::array<std::byte, wire::kHandshakeBytes> answer;
  ASSERT_EQ(::recv(fd, answer.data(), answer.size(), MSG_WAITALL),
            static_cast<ssize_t>(answer.size()));
  wire::Handshake h;
  std::string why;
  ASSERT_TRUE(wire::decode(answer, h, why)) << why;
  EXPECT_EQ(h.kind, wire::HandshakeKind::kAccept);
  EXPECT_EQ(h.from, 1u);
  EXPECT_EQ(h.to_nonce, fake_nonce);
  after(*t, fd);
  ::close(fd);
  ::close(junk);
  ::close(liar);
}

TEST(TcpReliable, StrayConnectionsAreRejectedAndBytewiseFramesReassembled) {
  with_fake_rank0([](ReliableTransport& t, int fd) {
    // Two messages dribbled one byte at a time, then one in a burst.
    const Bytes m1 = pattern(0, 1, 0, 300);
    const Bytes m2 = pattern(0, 1, 1, 20000);  // longer than the in-buffer threshold
    Bytes stream;
    for (const Bytes* m : {&m1, &m2, &m1}) {
      std::array<std::byte, 4> len;
      common::put_le<std::uint32_t>(len.data(), static_cast<std::uint32_t>(m->size()));
      stream.insert(stream.end(), len.begin(), len.end());
      stream.insert(stream.end(), m->begin(), m->end());
    }
    Recorder rec;
    std::size_t d = 0;
    const std::size_t dribble = 4 + m1.size() + 4 + 1000;
    for (std::size_t i = 0; i < dribble; ++i) {
      send_all(fd, stream.data() + i, 1);
      if (i % 7 == 0) {
        ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
      }
    }
    send_all(fd, stream.data() + dribble, stream.size() - dribble);
    const auto until = Clock::now() + 10s;
    while (rec.events.size() < 3 && Clock::now() < until) ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    ASSERT_EQ(rec.events.size(), 3u);
    EXPECT_EQ(rec.events[0].data, m1);
    EXPECT_EQ(rec.events[1].data, m2);
    EXPECT_EQ(rec.events[2].data, m1);
    EXPECT_FALSE(rec.events[2].failure);
  });
}

TEST(TcpReliable, CorruptLengthIsAPeerFailure) {
  with_fake_rank0([](ReliableTransport& t, int fd) {
    const std::uint32_t huge = 0xFFFFFFF0u;
    std::array<std::byte, 4> len;
    common::put_le<std::uint32_t>(len.data(), huge);
    send_all(fd, len.data(), len.size());
    Recorder rec;
    std::size_t d = 0;
    const auto until = Clock::now() + 10s;
    while (rec.events.empty() && Clock::now() < until) ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    ASSERT_EQ(rec.events.size(), 1u);
    EXPECT_TRUE(rec.events[0].failure);
    EXPECT_EQ(rec.events[0].peer, 0);
    EXPECT_THAT(rec.events[0].why.message(), HasSubstr("corrupt"));
    EXPECT_EQ(t.send(0, pattern(1, 0, 0, 4)).code(), ErrorCode::kPeerFailure);
  });
}

TEST(TcpReliable, SilentPeerTimesOutNamingIt) {
  // Rank 0 connects to a "rank 1" that listens but never answers.
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t alen = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen);
  std::unique_ptr<ReliableTransport> t;
  TcpReliableConfig c = config(0, 2);
  c.connect_timeout = 300ms;
  const auto start = Clock::now();
  common::Status st = create_tcp_reliable(
      c,
      [&](std::span<const std::byte> mine) {
        Bytes all(mine.begin(), mine.end());
        Bytes other = address_blob(ntohs(a.sin_port), 42);
        all.insert(all.end(), other.begin(), other.end());
        return all;
      },
      t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("rank 0"), HasSubstr("ranks 1"),
                                  HasSubstr("never answered the handshake")));
  EXPECT_LT(Clock::now() - start, 2s);
  ::close(lfd);

  // Rank 1 waits for a rank 0 that never connects.
  c = config(1, 2);
  c.connect_timeout = 300ms;
  st = create_tcp_reliable(
      c,
      [&](std::span<const std::byte> mine) {
        Bytes all = address_blob(9, 42);
        all.insert(all.end(), mine.begin(), mine.end());
        return all;
      },
      t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("rank 0"), HasSubstr("never connected")));
}

}  // namespace
}  // namespace mccl::transport::tcp
