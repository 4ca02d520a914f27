// protocol/early_messages.h: messages of collectives not started yet, kept
// whole in arrival order; long ones landed in memory that is kept for the
// next ones.
#include "protocol/early_messages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace mccl::protocol {
namespace {

std::vector<std::byte> bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<unsigned>(i * 7 + seed));
  return b;
}

std::vector<std::byte> copy_of(const EarlyMessages::Message& m) {
  return {m.bytes().begin(), m.bytes().end()};
}

TEST(EarlyMessages, KeptCopiesComeBackBySequenceInArrivalOrder) {
  EarlyMessages early;
  const auto a = bytes(100, 1), b = bytes(200 << 10, 2), c = bytes(3, 3);
  early.keep(7, 1, a);
  early.keep(8, 2, c);
  early.keep(7, 3, b);
  auto seven = early.take(7);
  ASSERT_EQ(seven.size(), 2u);
  EXPECT_EQ(seven[0].peer, 1);
  EXPECT_EQ(copy_of(seven[0]), a);
  EXPECT_EQ(seven[1].peer, 3);
  EXPECT_EQ(copy_of(seven[1]), b);
  EXPECT_TRUE(early.take(7).empty());
  auto eight = early.take(8);
  ASSERT_EQ(eight.size(), 1u);
  EXPECT_EQ(copy_of(eight[0]), c);
}

TEST(EarlyMessages, ALandedMessageIsItsHeadThenItsBody) {
  EarlyMessages early;
  const auto whole = bytes(100 << 10, 5);
  const std::size_t head = 40;
  const std::span<std::byte> body = early.land(4, head, whole.size());
  ASSERT_EQ(body.size(), whole.size() - head);
  EXPECT_TRUE(early.landing_from(4));
  EXPECT_FALSE(early.landing_from(3));
  std::memcpy(body.data(), whole.data() + head, body.size());  // as the transport would
  EarlyMessages::Message m = early.landed(4, {whole.data(), head});
  EXPECT_FALSE(early.landing_from(4));
  EXPECT_EQ(m.peer, 4);
  EXPECT_EQ(copy_of(m), whole);
  early.adopt(9, std::move(m));
  auto nine = early.take(9);
  ASSERT_EQ(nine.size(), 1u);
  EXPECT_EQ(copy_of(nine[0]), whole);
}

// The memory of a long message handled comes back for the next one: no
// fresh pages per collective. Short ones are not kept.
TEST(EarlyMessages, LongMessagesMemoryIsReused) {
  EarlyMessages early;
  const std::size_t n = 1 << 20;
  const std::byte* first = early.land(0, 16, n).data();
  EarlyMessages::Message m = early.landed(0, bytes(16, 0));
  early.recycle(std::move(m));
  EXPECT_GE(early.kept_bytes(), n);
  EXPECT_EQ(early.land(1, 16, n - 100).data(), first);
  early.recycle(early.landed(1, bytes(16, 0)));
  early.keep(3, 0, bytes(100, 0));
  early.recycle(std::move(early.take(3)[0]));
  EXPECT_EQ(early.kept_bytes(), n) << "a short message's memory is not kept";
}

// Kept memory goes back once no long message has used it for kKeepIdle,
// counted from the last pass that saw a use.
TEST(EarlyMessages, KeptMemoryIsFreedAfterAnIdleWhile) {
  EarlyMessages early;
  early.land(0, 16, 1 << 20);
  early.recycle(early.landed(0, bytes(16, 0)));
  const common::TimePoint t0{};
  early.release_idle(t0);
  early.release_idle(t0 + EarlyMessages::kKeepIdle - std::chrono::milliseconds(1));
  EXPECT_EQ(early.kept_bytes(), std::size_t{1} << 20) << "not idle long enough";
  early.land(1, 16, 1 << 20);  // used again: the idle time starts over
  early.recycle(early.landed(1, bytes(16, 0)));
  early.release_idle(t0 + EarlyMessages::kKeepIdle);
  early.release_idle(t0 + EarlyMessages::kKeepIdle + std::chrono::seconds(9));
  EXPECT_EQ(early.kept_bytes(), std::size_t{1} << 20);
  early.release_idle(t0 + 2 * EarlyMessages::kKeepIdle);
  EXPECT_EQ(early.kept_bytes(), 0u);
}

TEST(EarlyMessages, StoppingLandingsNamesTheirPeers) {
  EarlyMessages early;
  early.land(2, 16, 100 << 10);
  early.land(5, 16, 100 << 10);
  EXPECT_EQ(early.stop_landings(), (std::vector<int>{2, 5}));
  EXPECT_FALSE(early.landing_from(2));
  EXPECT_TRUE(early.stop_landings().empty());
}

}  // namespace
}  // namespace mccl::protocol
