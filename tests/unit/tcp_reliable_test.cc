// The TCP reliable transport (src/transport/tcp), ranks as threads (for the
// collective setup) and then driven from one thread on 127.0.0.1: the
// reliable-transport conformance suite (reliable_conformance.h), then what
// is TCP's own: sends that never block, stray connections, corrupt streams
// and setup errors.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/little_endian.h"
#include "mccl/error.h"
#include "reliable_conformance.h"
#include "reliable_test_support.h"
#include "tcp_test_support.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace mccl::transport::tcp {
namespace {

using namespace std::chrono_literals;
using namespace transport::test;
using test::loopback_config;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

Mesh make_mesh(int n) {
  return make_mesh_with(n, [n](int r, const OobAllgather& oob, auto& out) {
    return create_tcp_reliable(loopback_config(r, n), oob, out);
  });
}

struct TcpTraits {
  struct Guard {};
  static Mesh make_mesh(int n) { return tcp::make_mesh(n); }
  static common::Status create(int rank, int size, const OobAllgather& oob,
                               std::unique_ptr<ReliableTransport>& out) {
    return create_tcp_reliable(loopback_config(rank, size), oob, out);
  }
  static common::Status create_alone(const OobAllgather& oob,
                                     std::unique_ptr<ReliableTransport>& out) {
    return create_tcp_reliable({.rank = 0, .size = 1}, oob, out);
  }
  // Around the connection's read-buffer sizes, up to 4 MiB.
  static std::vector<std::size_t> sizes() {
    return {0,     1,     2,     3,     4,     5,      100,      1000,           16383,
            16384, 16385, 65535, 65536, 65537, 262144, 1u << 20, (4u << 20) - 1, 4u << 20,
            0,     7};
  }
  static constexpr std::size_t kLarge = 100 * 1024;  // more than one read
  static constexpr bool kSelfSendWakes = true;
  static void check_counters(const Mesh& ts, std::size_t per_rank) {
    for (const auto& t : ts) {
      auto* tcp = as_tcp(t.get());
      ASSERT_NE(tcp, nullptr);
      EXPECT_EQ(tcp->counters().messages_sent, per_rank);
      EXPECT_EQ(tcp->counters().messages_received, per_rank);
    }
  }
};

}  // namespace
}  // namespace mccl::transport::tcp

namespace mccl::transport::test {
INSTANTIATE_TYPED_TEST_SUITE_P(Tcp, ReliableConformance, tcp::TcpTraits);
}  // namespace mccl::transport::test

namespace mccl::transport::tcp {
namespace {

TEST(TcpReliable, SendNeverBlocksWhenThePeerDoesNotRead) {
  auto ts = make_mesh(2);
  constexpr int kCount = 128;
  constexpr std::size_t kSize = 512 * 1024;  // 64 MiB in all, far beyond the socket buffers
  std::vector<Bytes> msgs;
  for (int k = 0; k < kCount; ++k) msgs.push_back(pattern(0, 1, k, kSize));
  // Nobody reads yet: a send that waited for room would never return (the
  // test's deadline ends it), and one that waited a while would sleep.
  const long sleeps_before = voluntary_sleeps();
  for (const auto& m : msgs) ASSERT_TRUE(ts[0]->send(1, m).is_ok());
  EXPECT_LT(voluntary_sleeps() - sleeps_before, kCount / 8) << "send() slept";
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

// Connections on demand with a cache of 3 (the two ring neighbours and one
// more) among 7 ranks: every rank sends to every other in turn, several
// rounds, so connections are opened, closed idle by the kGoodbye handshake
// and opened again, and dials cross (both ends send at once). Nothing is
// lost, duplicated or reordered, and once the traffic stops every rank is
// back within the bound (peers may open connections towards a rank faster
// than it closes idle ones, so the bound holds when things settle).
TEST(TcpReliable, BoundedCacheClosesIdleConnectionsWithoutLosingMessages) {
  constexpr int kRanks = 7;
  constexpr int kRounds = 4;
  auto ts = make_mesh_with(kRanks, [](int r, const OobAllgather& oob, auto& out) {
    TcpReliableConfig c = loopback_config(r, kRanks);
    c.max_connections = 3;
    return create_tcp_reliable(c, oob, out);
  });
  for (const auto& t : ts) {
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(as_tcp(t.get())->open_connections(), 2) << "only the ring neighbours at creation";
  }
  std::vector<Recorder> rec(kRanks);
  for (int round = 0; round < kRounds; ++round) {
    for (int from = 0; from < kRanks; ++from) {
      for (int k = 1; k < kRanks; ++k) {
        const int to = (from + k) % kRanks;
        ASSERT_TRUE(ts[static_cast<std::size_t>(from)]
                        ->send(to, pattern(from, to, round, 100 + static_cast<std::size_t>(k)))
                        .is_ok());
      }
    }
    // Let each round settle, so that connections go idle and are closed.
    const std::size_t want = static_cast<std::size_t>((round + 1) * (kRanks - 1));
    drive(ts, rec, [&] {
      for (const auto& r : rec) {
        if (r.events.size() < want) return false;
      }
      return true;
    });
  }
  std::uint64_t closed = 0;
  for (int to = 0; to < kRanks; ++to) {
    const Recorder& r = rec[static_cast<std::size_t>(to)];
    ASSERT_EQ(r.events.size(), static_cast<std::size_t>(kRounds * (kRanks - 1)));
    for (int from = 0; from < kRanks; ++from) {
      if (from == to) continue;
      const auto got = r.from(from);
      ASSERT_EQ(got.size(), static_cast<std::size_t>(kRounds)) << from << " -> " << to;
      const int k = (to - from + kRanks) % kRanks;
      for (int round = 0; round < kRounds; ++round) {
        EXPECT_EQ(got[static_cast<std::size_t>(round)],
                  pattern(from, to, round, 100 + static_cast<std::size_t>(k)));
      }
    }
    const TcpCounters c = as_tcp(ts[static_cast<std::size_t>(to)].get())->counters();
    EXPECT_FALSE(r.events.back().failure);
    EXPECT_EQ(c.messages_sent, static_cast<std::uint64_t>(kRounds * (kRanks - 1)));
    closed += c.connections_closed;
  }
  EXPECT_GT(closed, 0u) << "the cache never closed an idle connection";
  // Once quiet, every rank is back within its bound.
  drive(ts, rec, [&] {
    for (const auto& t : ts) {
      if (as_tcp(t.get())->open_connections() > 3) return false;
    }
    return true;
  });
}

TEST(TcpReliable, BadConfigIsRejected) {
  std::unique_ptr<ReliableTransport> t;
  auto oob = [](std::span<const std::byte> m, Bytes& all) {
    all.assign(m.begin(), m.end());
    return common::Status::ok();
  };
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
      loopback_config(1, 2), scripted([&](std::span<const std::byte> mine) {
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
      }),
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

// A rank that dies (its socket ends without kLeaving) is news for every
// rank, also one whose own connection to it stays open: the test plays rank
// 0 of 3 by hand, connected to ranks 1 and 2 (its ring neighbours), and
// resets only its connection to rank 1. Rank 1 reports rank 0 and tells
// rank 2 (kPeerFailed), which reports it too, naming who told it, and
// closes its own connection to it.
TEST(TcpReliable, ADeathIsNewsAroundTheRing) {
  const std::uint64_t fake_nonce = 0x0badc0ffee0ddf00ull;
  ThreadAllgather oob(3);
  Mesh ts(3);  // ts[0] stays empty: rank 0 is this test
  std::vector<common::Status> st(3);
  std::vector<std::thread> threads;
  for (int r = 1; r <= 2; ++r) {
    threads.emplace_back([&, r] {
      st[static_cast<std::size_t>(r)] =
          create_tcp_reliable(loopback_config(r, 3), oob.of(r), ts[static_cast<std::size_t>(r)]);
    });
  }
  Bytes all;  // nobody dials rank 0
  ASSERT_TRUE(oob(0, address_blob(1, fake_nonce), all).is_ok());
  int fd[3] = {-1, -1, -1};
  for (int q = 1; q <= 2; ++q) {  // the lower rank dials: rank 0 dials both
    const wire::Address a = decode_blob(all, q);
    fd[q] = connect_to(a.port);
    std::array<std::byte, wire::kHandshakeBytes> hs;
    wire::encode(wire::Handshake{wire::HandshakeKind::kHello, 0, static_cast<std::uint32_t>(q), 3,
                                 a.nonce, fake_nonce},
                 hs);
    send_all(fd[q], hs.data(), hs.size());
    ASSERT_EQ(::recv(fd[q], hs.data(), hs.size(), MSG_WAITALL), static_cast<ssize_t>(hs.size()));
  }
  for (auto& t : threads) t.join();
  for (int r = 1; r <= 2; ++r) ASSERT_TRUE(st[static_cast<std::size_t>(r)].is_ok());
  const linger reset{1, 0};  // close with RST: a crash, not an orderly exit
  ::setsockopt(fd[1], SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  ::close(fd[1]);
  std::vector<Recorder> rec(3);
  drive(
      ts, rec, [&] { return rec[1].failures(0) == 1 && rec[2].failures(0) == 1; },
      std::chrono::seconds(20));
  EXPECT_EQ(rec[2].events.back().why.code(), ErrorCode::kPeerFailure);
  EXPECT_THAT(rec[2].events.back().why.message(),
              AllOf(HasSubstr("rank 0"), HasSubstr("rank 1 reported it dead")));
  EXPECT_EQ(as_tcp(ts[1].get())->counters().failure_news_sent, 1u);
  // Rank 2 let its own connection to rank 0 go: rank 0's end reads EOF.
  std::array<std::byte, 64> sink;
  ssize_t n;
  while ((n = ::recv(fd[2], sink.data(), sink.size(), 0)) > 0) {
  }
  EXPECT_EQ(n, 0);
  ::close(fd[2]);
}

// An orderly exit (a destroyed transport says kLeaving) is not news: its
// ring neighbours report it, a rank that never talked to it hears nothing.
TEST(TcpReliable, AnOrderlyExitIsNotNews) {
  auto ts = make_mesh(4);
  ts[2].reset();  // neighbours 1 and 3; rank 0 never connected to it
  std::vector<Recorder> rec(4);
  drive(
      ts, rec, [&] { return rec[1].failures(2) == 1 && rec[3].failures(2) == 1; },
      std::chrono::seconds(20));
  for (int i = 0; i < 100; ++i) {
    for (int r : {0, 1, 3}) {
      std::size_t d = 0;
      ASSERT_TRUE(
          ts[static_cast<std::size_t>(r)]->poll(rec[static_cast<std::size_t>(r)], 64, d).is_ok());
    }
  }
  EXPECT_EQ(rec[0].failures(2), 0);
  EXPECT_EQ(as_tcp(ts[1].get())->counters().failure_news_sent, 0u);
  EXPECT_EQ(as_tcp(ts[3].get())->counters().failure_news_sent, 0u);
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
  TcpReliableConfig c = loopback_config(0, 2);
  c.connect_timeout = 300ms;
  common::Status st = create_tcp_reliable(c, scripted([&](std::span<const std::byte> mine) {
                                            Bytes all(mine.begin(), mine.end());
                                            Bytes other = address_blob(ntohs(a.sin_port), 42);
                                            all.insert(all.end(), other.begin(), other.end());
                                            return all;
                                          }),
                                          t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("rank 0"), HasSubstr("ranks 1"),
                                  HasSubstr("never answered the handshake")));
  ::close(lfd);

  // Rank 1 waits for a rank 0 that never connects.
  c = loopback_config(1, 2);
  c.connect_timeout = 300ms;
  st = create_tcp_reliable(c, scripted([&](std::span<const std::byte> mine) {
                             Bytes all = address_blob(9, 42);
                             all.insert(all.end(), mine.begin(), mine.end());
                             return all;
                           }),
                           t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_THAT(st.message(), AllOf(HasSubstr("rank 0"), HasSubstr("never connected")));
}

// Long messages land where the handler says (reliable.h): a message whose
// first byte is kLandMe is landed, its first 8 bytes kept apart; others are
// delivered whole, in order with the landed ones.
constexpr std::byte kLandMe{0xA5};

struct Lander : Recorder {
  std::size_t head_seen = SIZE_MAX;  // the smallest head landing() was shown
  int asked = 0;
  Bytes dest;
  std::vector<Bytes> heads;  // of the landed messages, in order
  MessageLanding message_landing(int, std::span<const std::byte> head,
                                 std::size_t length) override {
    ++asked;
    head_seen = std::min(head_seen, head.size());
    if (head.empty() || head[0] != kLandMe) return {};
    dest.assign(length - 8, std::byte{0});
    return {8, dest};
  }
  void on_message_landed(int peer, std::span<const std::byte> head,
                         std::span<const std::byte> body) override {
    heads.emplace_back(head.begin(), head.end());
    EXPECT_EQ(body.data(), dest.data()) << "delivered where it landed";
    events.push_back({peer, false, Bytes(head.begin(), head.end()), {}});
    events.back().data.insert(events.back().data.end(), body.begin(), body.end());
  }
};

Bytes frame(const Bytes& m) {
  Bytes f(4);
  common::put_le<std::uint32_t>(f.data(), static_cast<std::uint32_t>(m.size()));
  f.insert(f.end(), m.begin(), m.end());
  return f;
}

TEST(TcpReliable, LongMessagesLandWhereTheHandlerSaysInOrder) {
  with_fake_rank0([](ReliableTransport& t, int fd) {
    ASSERT_EQ(t.landing_head_bytes(), 64u);
    const Bytes small = pattern(0, 1, 0, 300);
    Bytes landed = pattern(0, 1, 1, 200000);
    landed[0] = kLandMe;
    Bytes whole = pattern(0, 1, 2, 100000);
    whole[0] = std::byte{0};
    Bytes stream;
    for (const Bytes* m :
         {&small, const_cast<const Bytes*>(&landed), const_cast<const Bytes*>(&whole), &small}) {
      const Bytes f = frame(*m);
      stream.insert(stream.end(), f.begin(), f.end());
    }
    Lander rec;
    std::size_t d = 0;
    // The small message and the first 30 bytes of the long one: too few to decide on.
    const std::size_t first = 4 + small.size() + 4 + 30;
    send_all(fd, stream.data(), first);
    const auto until = Clock::now() + 10s;
    while (rec.events.empty() && Clock::now() < until) ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    EXPECT_EQ(rec.asked, 0) << "asked before the head was in";
    send_all(fd, stream.data() + first, stream.size() - first);
    while (rec.events.size() < 4 && Clock::now() < until) ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    ASSERT_EQ(rec.events.size(), 4u);
    EXPECT_EQ(rec.events[0].data, small);
    EXPECT_EQ(rec.events[1].data, landed) << "head and body, landed";
    EXPECT_EQ(rec.events[2].data, whole);
    EXPECT_EQ(rec.events[3].data, small);
    ASSERT_EQ(rec.heads.size(), 1u);
    EXPECT_EQ(rec.heads[0], Bytes(landed.begin(), landed.begin() + 8));
    EXPECT_GE(rec.head_seen, 64u);
    EXPECT_EQ(rec.asked, 2) << "each long message once";
    EXPECT_EQ(as_tcp(&t)->counters().messages_landed, 1u);
  });
}

// A landing the handler abandons is written no more: the rest of its
// message is read elsewhere and dropped, and the stream goes on.
TEST(TcpReliable, AnAbandonedLandingIsWrittenNoMore) {
  with_fake_rank0([](ReliableTransport& t, int fd) {
    Bytes landed = pattern(0, 1, 3, 1 << 20);
    landed[0] = kLandMe;
    const Bytes small = pattern(0, 1, 4, 300);
    Bytes stream = frame(landed);
    const Bytes tail = frame(small);
    stream.insert(stream.end(), tail.begin(), tail.end());
    Lander rec;
    std::size_t d = 0;
    const std::size_t half = 4 + landed.size() / 2;
    send_all(fd, stream.data(), half);
    const auto until = Clock::now() + 10s;
    // Poll until the first half has landed (its last byte is in place).
    const std::size_t probe = landed.size() / 2 - 1;
    while (!(rec.dest.size() == landed.size() - 8 && rec.dest[probe - 8] == landed[probe]) &&
           Clock::now() < until) {
      ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    }
    ASSERT_EQ(rec.asked, 1);
    t.abandon_landing(0);
    std::fill(rec.dest.begin(), rec.dest.end(), std::byte{0x5A});
    send_all(fd, stream.data() + half, stream.size() - half);
    while (rec.events.empty() && Clock::now() < until) ASSERT_TRUE(t.poll(rec, 64, d).is_ok());
    ASSERT_EQ(rec.events.size(), 1u) << "the abandoned message is neither landed nor delivered";
    EXPECT_EQ(rec.events[0].data, small);
    EXPECT_TRUE(rec.heads.empty());
    EXPECT_TRUE(std::all_of(rec.dest.begin(), rec.dest.end(), [](std::byte b) {
      return b == std::byte{0x5A};
    })) << "written after it was abandoned";
    EXPECT_EQ(as_tcp(&t)->counters().landings_abandoned, 1u);
    t.abandon_landing(0);  // none under way: nothing happens
  });
}

// share_wait(): the datagram socket's readiness comes out of the poll that
// reads the sockets (an eventfd stands in for it here). The poll reports it
// and delivers nothing for it, messages still arrive beside it, the
// endpoint's wait_fd() wakes for it, and only one descriptor is taken.
TEST(TcpReliable, ASharedDescriptorIsReportedByTheSamePoll) {
  auto ts = make_mesh(2);
  const int shared = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(shared, 0);
  ASSERT_TRUE(ts[0]->share_wait(shared));
  EXPECT_FALSE(ts[0]->share_wait(shared)) << "one descriptor at most";
  EXPECT_FALSE(ts[1]->share_wait(-1));
  std::vector<Recorder> rec(2);
  std::size_t d = 0;
  ASSERT_TRUE(ts[0]->poll(rec[0], 64, d).is_ok());
  EXPECT_FALSE(ts[0]->shared_fd_readable());

  const std::uint64_t one = 1;
  ASSERT_EQ(::write(shared, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  pollfd wake{.fd = ts[0]->wait_fd(), .events = POLLIN, .revents = 0};
  EXPECT_EQ(::poll(&wake, 1, 0), 1) << "wait_fd() wakes for the shared descriptor";
  ASSERT_TRUE(ts[0]->poll(rec[0], 64, d).is_ok());
  EXPECT_TRUE(ts[0]->shared_fd_readable());
  EXPECT_EQ(d, 0u);
  EXPECT_TRUE(rec[0].events.empty()) << "nothing is delivered for it";

  const Bytes m = pattern(1, 0, 0, 1000);
  ASSERT_TRUE(ts[1]->send(0, m).is_ok());
  drive(ts, rec, [&] { return rec[0].events.size() == 1; });
  EXPECT_EQ(rec[0].from(1), std::vector<Bytes>{m});
  EXPECT_TRUE(ts[0]->shared_fd_readable()) << "still readable: level, not edge";

  std::uint64_t drained = 0;
  ASSERT_EQ(::read(shared, &drained, sizeof drained), static_cast<ssize_t>(sizeof drained));
  ASSERT_TRUE(ts[0]->poll(rec[0], 64, d).is_ok());
  EXPECT_FALSE(ts[0]->shared_fd_readable());
  EXPECT_FALSE(ts[1]->shared_fd_readable()) << "never given one";
  ts.clear();
  ::close(shared);
}

}  // namespace
}  // namespace mccl::transport::tcp
