// Landing on the UDP transport (transport/datagram.h, udp/landing.h): a
// handler that says where the next datagrams' payloads belong gets them
// written there by the kernel, and handed over as landed; datagrams that
// were not the expected ones (another stream's, reordered, of another
// size, duplicates) are copied back and handed over as usual. Whatever the
// order, every payload ends where its key says, byte for byte, and nothing
// is handed over twice or lost. Runs with GSO and GRO off and on.
//
// Network: udp_loopback.h (lo, a private network namespace when root; every
// test skips, saying why, when multicast on lo does not work).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "udp_loopback.h"

namespace mccl::transport::udp {
namespace {

using namespace test;

// udp_loopback.h's config (lo, unpaced, 8 MiB receive buffer, 8,972-byte
// datagrams: what MTU 9000 gives, and landing takes datagrams from 4 KiB)
// with GSO and GRO both `offloads`.
UdpConfig landing_config(std::uint32_t tag, const std::string& offloads,
                         std::size_t datagram = 8972) {
  UdpConfig c = config(tag);
  c.max_datagram = datagram;
  c.gso = offloads;
  c.gro = offloads;
  return c;
}

// The datagrams of this test: a 24-byte header whose bytes 4..19 are the
// key (stream, chunk, and the stream again, twice), then the chunk's bytes.
constexpr std::size_t kHeader = 24;
constexpr std::size_t kKeyOffset = 4;

std::array<std::byte, kLandingKeyBytes> key_of(std::uint32_t stream, std::uint32_t chunk) {
  std::array<std::byte, kLandingKeyBytes> k{};
  const std::uint32_t words[4] = {stream, chunk, ~stream, stream * 7919u};
  std::memcpy(k.data(), words, sizeof words);
  return k;
}

std::byte content(std::uint32_t stream, std::size_t at) {
  return static_cast<std::byte>((stream * 131 + at * 7 + at / 251) & 0xff);
}

// Stream `stream`'s chunks of `chunk` bytes (the last shorter where `bytes`
// says so), as the handler expects them at its buffer.
struct Stream {
  std::uint32_t id;
  std::size_t bytes;
  std::size_t chunk;
  std::size_t chunks() const { return (bytes + chunk - 1) / chunk; }
  std::size_t length(std::size_t c) const { return std::min(chunk, bytes - c * chunk); }
  Bytes datagram(std::size_t c) const {
    Bytes d(kHeader + length(c));
    const auto k = key_of(id, static_cast<std::uint32_t>(c));
    std::memcpy(d.data() + kKeyOffset, k.data(), k.size());
    for (std::size_t i = 0; i < length(c); ++i) d[kHeader + i] = content(id, c * chunk + i);
    return d;
  }
};

// A handler that expects one stream, in order: the landings after a
// datagram of it are its next chunks not yet held. It checks that a landed
// payload lies where its key says, and copies the others in.
class LandingHandler final : public DatagramHandler {
 public:
  explicit LandingHandler(const Stream& s) : s_(s), buf_(s.bytes), held_(s.chunks()) {}

  LandingLayout landing_layout() const override { return {kHeader, kKeyOffset}; }
  std::size_t landings(std::span<const std::byte> header, bool inclusive,
                       std::span<Landing> out) override {
    std::uint32_t words[2];
    std::memcpy(words, header.data() + kKeyOffset, sizeof words);
    if (words[0] != s_.id) return 0;
    std::size_t n = 0;
    for (std::size_t c = words[1] + (inclusive ? 0 : 1);
         c < s_.chunks() && n < out.size() && !held_[c]; ++c, ++n) {
      out[n].payload = buf_.data() + c * s_.chunk;
      out[n].bytes = s_.length(c);
      out[n].key = key_of(s_.id, static_cast<std::uint32_t>(c));
    }
    ++asked_;
    return n;
  }
  void on_landed(std::span<const LandedDatagram> batch) override {
    for (const LandedDatagram& d : batch) {
      const std::size_t c = chunk_of(d.header);
      EXPECT_EQ(d.header.size(), kHeader);
      ASSERT_LT(c, s_.chunks());
      EXPECT_EQ(d.payload.data(), buf_.data() + c * s_.chunk) << "chunk " << c;
      EXPECT_EQ(d.payload.size(), s_.length(c));
      EXPECT_FALSE(held_[c]) << "chunk " << c << " landed where it was held";
      held_[c] = true;
      ++landed_;
    }
  }
  void on_datagrams(DatagramBatch batch) override {
    for (const auto& d : batch) {
      ++other_;
      std::uint32_t words[2];
      std::memcpy(words, d.data() + kKeyOffset, sizeof words);
      if (words[0] != s_.id) continue;  // another stream's
      const std::size_t c = words[1];
      if (held_[c]) continue;  // a duplicate
      ASSERT_EQ(d.size(), kHeader + s_.length(c));
      std::memcpy(buf_.data() + c * s_.chunk, d.data() + kHeader, s_.length(c));
      held_[c] = true;
    }
  }
  void on_copied_back(std::size_t bytes) override { copied_back_ += bytes; }

  std::size_t held() const {
    return static_cast<std::size_t>(std::count(held_.begin(), held_.end(), true));
  }
  // Every byte is the stream's.
  ::testing::AssertionResult exact() const {
    for (std::size_t i = 0; i < buf_.size(); ++i) {
      if (buf_[i] != content(s_.id, i)) {
        return ::testing::AssertionFailure() << "byte " << i << " (chunk " << i / s_.chunk << ")";
      }
    }
    return ::testing::AssertionSuccess();
  }

  std::size_t landed_ = 0, other_ = 0, asked_ = 0, copied_back_ = 0;

 private:
  std::size_t chunk_of(std::span<const std::byte> header) const {
    std::uint32_t c;
    std::memcpy(&c, header.data() + kKeyOffset + 4, sizeof c);
    return c;
  }
  Stream s_;
  Bytes buf_;
  std::vector<bool> held_;
};

// Sends `data` (each a header of kHeader bytes, then the payload), retrying
// while busy.
void send_all(DatagramTransport& t, const std::vector<Bytes>& data) {
  std::vector<OutDatagram> batch;
  for (const Bytes& d : data) {
    batch.push_back(OutDatagram{std::span(d).first(kHeader), std::span(d).subspan(kHeader)});
  }
  transport::test::send_all_datagrams(t, batch);
}

// Polls until `h` has handed over `want` datagrams or 3 s passed.
void drain(DatagramTransport& t, LandingHandler& h, std::size_t want) {
  const auto deadline = common::Deadline::after(3s);
  while (h.landed_ + h.other_ < want && !deadline.expired()) {
    std::size_t delivered = 0;
    ASSERT_TRUE(t.poll(h, 64, delivered).is_ok());
    if (delivered == 0) {
      pollfd p{t.wait_fd(), POLLIN, 0};
      ::poll(&p, 1, 5);
    }
  }
}

class UdpLanding : public ::testing::TestWithParam<std::string> {};

// One stream in order: after the first read, every datagram lands.
TEST_P(UdpLanding, AStreamInOrderLandsWhole) {
  SKIP_WITHOUT_MULTICAST();
  const Stream s{1, 300 * 8000 + 611, 8000};
  auto a = make(landing_config(2001, GetParam()));
  auto r = make(landing_config(2001, GetParam()));
  ASSERT_TRUE(a && r);
  std::vector<Bytes> data;
  for (std::size_t c = 0; c < s.chunks(); ++c) data.push_back(s.datagram(c));
  LandingHandler h(s);
  // In slices, so that the receiver's queue never overflows.
  for (std::size_t at = 0; at < data.size(); at += 50) {
    const std::vector<Bytes> slice(
        data.begin() + static_cast<std::ptrdiff_t>(at),
        data.begin() + static_cast<std::ptrdiff_t>(std::min(at + 50, data.size())));
    ASSERT_NO_FATAL_FAILURE(send_all(*a, slice));
    drain(*r, h, at + slice.size());
  }
  EXPECT_EQ(h.held(), s.chunks());
  EXPECT_TRUE(h.exact());
  EXPECT_EQ(h.copied_back_, 0u) << "in order, no guess is wrong";
  const UdpCounters k = counters(*r);
  EXPECT_EQ(k.landed, h.landed_);
  EXPECT_EQ(k.copied_back_bytes, 0u);
  // Only the first read of each slice's drain can have no guess.
  EXPECT_GE(h.landed_, s.chunks() - 64)
      << "landed " << h.landed_ << " of " << s.chunks() << ", reads " << k.reads << ", coalesced "
      << k.coalesced_reads;
}

// Blocks of the stream out of order, duplicates, and another stream's
// datagrams of the same size in between: guesses go wrong, yet every
// chunk ends in its place exactly once, and what was guessed wrong was
// copied back.
TEST_P(UdpLanding, WrongGuessesAreCopiedBackAndNothingIsMisplaced) {
  SKIP_WITHOUT_MULTICAST();
  const Stream s{2, 400 * 5000, 5000};
  const Stream other{3, 40 * 5000, 5000};
  auto a = make(landing_config(2002, GetParam()));
  auto r = make(landing_config(2002, GetParam()));
  ASSERT_TRUE(a && r);
  std::vector<std::size_t> blocks(40);
  for (std::size_t b = 0; b < blocks.size(); ++b) blocks[b] = b;
  std::shuffle(blocks.begin(), blocks.end(), std::mt19937(11));
  std::vector<Bytes> order;
  std::size_t sent = 0;
  LandingHandler h(s);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::size_t b = blocks[i];
    for (std::size_t c = b * 10; c < b * 10 + 10; ++c) order.push_back(s.datagram(c));
    order.push_back(other.datagram(i));                       // another stream, mid-run
    order.push_back(s.datagram((b * 10 + 15) % s.chunks()));  // ahead: a duplicate later
    if (i % 4 == 3) {
      ASSERT_NO_FATAL_FAILURE(send_all(*a, order));
      sent += order.size();
      drain(*r, h, sent);
      order.clear();
    }
  }
  EXPECT_EQ(h.held(), s.chunks());
  EXPECT_TRUE(h.exact());
  EXPECT_EQ(h.landed_ + h.other_, sent) << "every datagram handed over once";
  EXPECT_GT(h.landed_, 0u);
  EXPECT_GT(h.copied_back_, 0u) << "some guesses were wrong";
  EXPECT_EQ(counters(*r).copied_back_bytes, h.copied_back_);
}

// A handler that takes no landings gets every datagram as before.
TEST_P(UdpLanding, AHandlerWithoutLandingsGetsEverythingAsBefore) {
  SKIP_WITHOUT_MULTICAST();
  auto a = make(landing_config(2003, GetParam()));
  auto r = make(landing_config(2003, GetParam()));
  ASSERT_TRUE(a && r);
  const Stream s{4, 100 * 8000, 8000};
  std::vector<Bytes> data;
  for (std::size_t c = 0; c < s.chunks(); ++c) data.push_back(s.datagram(c));
  ASSERT_NO_FATAL_FAILURE(send_all(*a, data));
  Collector got;
  drain_until(*r, got, data.size());
  ASSERT_EQ(got.got.size(), data.size());
  for (std::size_t i = 0; i < data.size(); ++i) EXPECT_EQ(got.got[i], data[i]) << i;
  EXPECT_EQ(counters(*r).landed, 0u);
}

// Datagrams of MTU 1500 are not landed: two more iovec pieces per datagram
// cost the kernel more than the copy saves (udp/landing.h, kMinDatagram).
TEST_P(UdpLanding, SmallDatagramsAreNotLanded) {
  SKIP_WITHOUT_MULTICAST();
  const Stream s{5, 100 * 1400, 1400};
  auto a = make(landing_config(2004, GetParam(), 1472));
  auto r = make(landing_config(2004, GetParam(), 1472));
  ASSERT_TRUE(a && r);
  std::vector<Bytes> data;
  for (std::size_t c = 0; c < s.chunks(); ++c) data.push_back(s.datagram(c));
  LandingHandler h(s);
  ASSERT_NO_FATAL_FAILURE(send_all(*a, data));
  drain(*r, h, data.size());
  EXPECT_EQ(h.held(), s.chunks());
  EXPECT_TRUE(h.exact());
  EXPECT_EQ(h.landed_, 0u);
  EXPECT_EQ(h.asked_, 0u) << "the handler is not even asked";
}

INSTANTIATE_TEST_SUITE_P(Offloads, UdpLanding, ::testing::Values("off", "on"),
                         [](const auto& p) { return "gso_gro_" + p.param; });

}  // namespace
}  // namespace mccl::transport::udp
