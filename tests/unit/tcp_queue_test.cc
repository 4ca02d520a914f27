// A connection's send queue (transport/tcp/connection.h): what the socket
// does not take is copied into queue chunks, and the chunk of a large
// remainder is kept for the next one, so a collective that sends a few MiB
// a call faults fresh pages in once per connection, not once per send.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/little_endian.h"
#include "transport/tcp/connection.h"

namespace mccl::transport::tcp {
namespace {

struct IgnoreControl final : ControlSink {
  void on_control(int, wire::ControlKind, std::uint32_t) override {}
};

class TcpQueue : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    const int small = 64 * 1024;  // the kernel doubles it; far below the messages
    ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(fds[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
    conn_ = std::make_unique<Connection>(1, Fd(fds[0]), counters_, sink_);
    reader_ = fds[1];
  }
  void TearDown() override {
    conn_.reset();
    ::close(reader_);
  }

  // Sends one message of `bytes` bytes (byte i is i * seed) and reads the
  // stream at the other end while flushing the queue, until it has it;
  // checks it. `before`: bytes of frames queued ahead of it, read first
  // and returned.
  std::vector<std::byte> send_and_drain(std::size_t bytes, std::uint8_t seed,
                                        std::size_t before = 0) {
    std::vector<std::byte> msg(bytes);
    for (std::size_t i = 0; i < bytes; ++i) msg[i] = static_cast<std::byte>(i * seed);
    const std::span<const std::byte> parts[1] = {msg};
    conn_->set_writable();
    EXPECT_TRUE(conn_->send(parts, bytes));
    std::vector<std::byte> got;
    std::vector<std::byte> buf(256 * 1024);
    const std::size_t want = before + wire::kFrameHeaderBytes + bytes;
    while (got.size() < want) {
      if (!conn_->flush()) break;
      const ssize_t n = ::recv(reader_, buf.data(), buf.size(), 0);
      if (n > 0) got.insert(got.end(), buf.begin(), buf.begin() + n);
    }
    EXPECT_FALSE(conn_->has_queued());
    EXPECT_EQ(conn_->queued_bytes(), 0u);
    EXPECT_EQ(got.size(), want);
    if (got.size() != want) return {};
    EXPECT_EQ(common::get_le<std::uint32_t>(got.data() + before), bytes);
    EXPECT_TRUE(std::equal(msg.begin(), msg.end(), got.begin() + before + wire::kFrameHeaderBytes))
        << "message of " << bytes << " bytes, seed " << int{seed};
    got.resize(before);
    return got;
  }

  TcpCounters counters_;
  IgnoreControl sink_;
  std::unique_ptr<Connection> conn_;
  int reader_ = -1;
};

TEST_F(TcpQueue, ALargeRemaindersChunkServesTheNextSends) {
  constexpr std::size_t kMessage = 4 * 1024 * 1024;
  for (std::uint8_t seed = 1; seed <= 4; ++seed) send_and_drain(kMessage, seed);
  EXPECT_EQ(counters_.sends_queued, 4u) << "each message left bytes in the queue";
  EXPECT_GT(counters_.bytes_queued, 3 * kMessage);
  EXPECT_EQ(counters_.queue_chunks_made, 1u);
}

TEST_F(TcpQueue, ALargerRemainderGetsANewChunkAndBothAreKept) {
  send_and_drain(2 * 1024 * 1024, 3);
  send_and_drain(6 * 1024 * 1024, 5);
  EXPECT_EQ(counters_.queue_chunks_made, 2u);
  send_and_drain(6 * 1024 * 1024, 7);
  send_and_drain(1 * 1024 * 1024, 9);
  EXPECT_EQ(counters_.queue_chunks_made, 2u);
}

// A collective's send may start while the last one's still drains: both
// chunks are kept, and the next such pair reuses them.
TEST_F(TcpQueue, TwoRemaindersQueuedAtOnceKeepBothChunks) {
  constexpr std::size_t kMessage = 4 * 1024 * 1024;
  for (std::uint8_t seed = 1; seed <= 3; ++seed) {
    std::vector<std::byte> first(kMessage, std::byte{seed});
    const std::span<const std::byte> parts[1] = {first};
    conn_->set_writable();
    ASSERT_TRUE(conn_->send(parts, first.size()));
    ASSERT_TRUE(conn_->has_queued());
    const std::vector<std::byte> got =
        send_and_drain(kMessage, seed + 1, wire::kFrameHeaderBytes + kMessage);
    ASSERT_EQ(got.size(), wire::kFrameHeaderBytes + kMessage);
    EXPECT_EQ(common::get_le<std::uint32_t>(got.data()), kMessage);
    EXPECT_TRUE(std::all_of(got.begin() + wire::kFrameHeaderBytes, got.end(),
                            [seed](std::byte b) { return b == std::byte{seed}; }));
  }
  EXPECT_EQ(counters_.queue_chunks_made, 2u);
}

TEST_F(TcpQueue, AChunkAboveTheKeptSizeIsFreedNotKept) {
  // Whatever the socket takes first, the remainder is above the bound.
  const std::size_t over = Connection::kKeepBigBytes + 2 * 1024 * 1024;
  send_and_drain(over, 11);
  send_and_drain(over, 13);
  EXPECT_EQ(counters_.queue_chunks_made, 2u);
}

TEST_F(TcpQueue, SmallRemaindersShareChunks) {
  // Fill the socket, then queue many small messages behind it.
  std::vector<std::byte> fill(1024 * 1024, std::byte{1});
  const std::span<const std::byte> big[1] = {fill};
  ASSERT_TRUE(conn_->send(big, fill.size()));
  std::vector<std::byte> small(100, std::byte{2});
  const std::span<const std::byte> parts[1] = {small};
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(conn_->send(parts, small.size()));
  EXPECT_EQ(conn_->queued_bytes() > 2000 * (small.size() + wire::kFrameHeaderBytes), true);
  // The large remainder's chunk (whose rounded tail may take some of them)
  // and 64 KiB chunks for 2,000 × 104 bytes: at most four, not 2,000.
  EXPECT_LE(counters_.queue_chunks_made, 1u + 4u);
}

// Lent sends (ReliableTransport::send_lent): the unwritten rest of the last
// part stays in the sender's memory until written or reclaimed.
class TcpLentQueue : public TcpQueue {
 protected:
  static constexpr std::size_t kMessage = 4 * 1024 * 1024;
  static constexpr std::uint64_t kLender = 7;

  // Reads everything queued at the other end.
  std::vector<std::byte> drain() {
    std::vector<std::byte> got, buf(256 * 1024);
    conn_->set_writable();
    while (conn_->has_queued()) {
      if (!conn_->flush()) break;
      const ssize_t n = ::recv(reader_, buf.data(), buf.size(), 0);
      if (n > 0) got.insert(got.end(), buf.begin(), buf.begin() + n);
    }
    for (ssize_t n; (n = ::recv(reader_, buf.data(), buf.size(), 0)) > 0;) {
      got.insert(got.end(), buf.begin(), buf.begin() + n);
    }
    return got;
  }
  bool send_lent(const std::vector<std::byte>& msg, std::uint64_t lender) {
    const std::span<const std::byte> header(msg.data(), 16);  // copied, as a protocol header is
    const std::span<const std::byte> body(msg.data() + 16, msg.size() - 16);
    const std::span<const std::byte> parts[2] = {header, body};
    conn_->set_writable();
    return conn_->send(parts, msg.size(), lender);
  }
};

TEST_F(TcpLentQueue, TheRestIsWrittenFromWhereItLiesNotCopied) {
  std::vector<std::byte> msg(kMessage, std::byte{1});
  ASSERT_TRUE(send_lent(msg, kLender));
  ASSERT_GT(conn_->lent_bytes(), kMessage / 2) << "the socket took most of it at once";
  EXPECT_EQ(counters_.bytes_lent, conn_->lent_bytes());
  EXPECT_EQ(counters_.bytes_queued, 0u);  // the header went whole: nothing copied
  // The sender changes its last bytes before they leave: they leave changed.
  msg.back() = std::byte{2};
  const std::vector<std::byte> got = drain();
  ASSERT_EQ(got.size(), wire::kFrameHeaderBytes + kMessage);
  EXPECT_EQ(got.back(), std::byte{2});
  EXPECT_EQ(conn_->lent_bytes(), 0u);
  EXPECT_EQ(counters_.lent_chunks_reclaimed, 0u);
}

TEST_F(TcpLentQueue, ReclaimCopiesWhatIsStillUnwritten) {
  std::vector<std::byte> msg(kMessage);
  for (std::size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<std::byte>(i * 13);
  const std::vector<std::byte> sent = msg;
  ASSERT_TRUE(send_lent(msg, kLender));
  ASSERT_GT(conn_->lent_bytes(), 0u);
  const std::size_t queued = conn_->queued_bytes();
  conn_->reclaim(kLender);
  EXPECT_EQ(conn_->lent_bytes(), 0u);
  EXPECT_EQ(conn_->queued_bytes(), queued);
  EXPECT_EQ(counters_.lent_chunks_reclaimed, 1u);
  std::fill(msg.begin(), msg.end(), std::byte{0xEE});  // the lender's memory changes
  const std::vector<std::byte> got = drain();
  ASSERT_EQ(got.size(), wire::kFrameHeaderBytes + kMessage);
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.begin() + wire::kFrameHeaderBytes));
}

TEST_F(TcpLentQueue, ReclaimTakesOnlyItsLendersBytesAndKeepsTheOrder) {
  std::vector<std::byte> first(kMessage, std::byte{3}), second(kMessage, std::byte{4});
  ASSERT_TRUE(send_lent(first, kLender));
  ASSERT_TRUE(send_lent(second, kLender + 1));  // wholly queued behind the first
  const std::vector<std::byte> small(100, std::byte{5});
  const std::span<const std::byte> parts[1] = {small};
  ASSERT_TRUE(conn_->send(parts, small.size()));  // copied, behind both
  EXPECT_EQ(conn_->lent_bytes() > kMessage, true);
  conn_->reclaim(kLender + 1);
  EXPECT_EQ(conn_->lent_bytes() < kMessage, true) << "the first lender's bytes stay lent";
  std::fill(second.begin(), second.end(), std::byte{0xEE});
  conn_->reclaim(kLender);
  EXPECT_EQ(conn_->lent_bytes(), 0u);
  std::fill(first.begin(), first.end(), std::byte{0xEE});
  const std::vector<std::byte> got = drain();
  const std::size_t frame = wire::kFrameHeaderBytes + kMessage;
  ASSERT_EQ(got.size(), 2 * frame + wire::kFrameHeaderBytes + small.size());
  EXPECT_TRUE(std::all_of(got.begin() + wire::kFrameHeaderBytes, got.begin() + frame,
                          [](std::byte b) { return b == std::byte{3}; }));
  EXPECT_TRUE(std::all_of(got.begin() + frame + wire::kFrameHeaderBytes, got.begin() + 2 * frame,
                          [](std::byte b) { return b == std::byte{4}; }));
  EXPECT_TRUE(std::all_of(got.end() - static_cast<std::ptrdiff_t>(small.size()), got.end(),
                          [](std::byte b) { return b == std::byte{5}; }));
}

}  // namespace
}  // namespace mccl::transport::tcp
