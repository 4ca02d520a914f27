// What every reliable transport (transport/reliable.h) must do, as one
// typed suite: ordered whole delivery at every size, multi-part sends,
// peer failure reported once after the peer's last messages, poll() that
// never sleeps, wait_fd() that wakes for what is pending, a world of one.
//
// A transport's test instantiates it with a traits type:
//   struct Traits {
//     using Guard = ...;  // held for each test (a watchdog, or nothing)
//     static Mesh make_mesh(int n);
//     static common::Status create(int rank, int size, const OobAllgather&,
//                                  std::unique_ptr<ReliableTransport>&);
//     static common::Status create_alone(const OobAllgather&, std::unique_ptr<ReliableTransport>&);
//     static std::vector<std::size_t> sizes();  // the sizes its paths switch at
//     static constexpr std::size_t kLarge;      // a message on its bulk path
//     static constexpr bool kSelfSendWakes;     // a send to self makes wait_fd readable
//     // After the ordered-delivery test: its own counters (every path taken).
//     static void check_counters(const Mesh& ts, std::size_t messages_per_rank);
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(Tcp, ReliableConformance, Traits);
// What only one transport does (back-pressure, one-sided reads, its wire
// format, its setup errors) stays in that transport's own tests.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "reliable_test_support.h"

namespace mccl::transport::test {

template <typename Traits>
class ReliableConformance : public ::testing::Test {
 protected:
  typename Traits::Guard guard_;

  // Every rank sends every size to every rank (itself included); each
  // receives all of them whole and in order.
  static void expect_ordered_delivery(int n) {
    Mesh ts = Traits::make_mesh(n);
    ASSERT_EQ(ts.size(), static_cast<std::size_t>(n));
    for (const auto& t : ts) ASSERT_NE(t, nullptr);
    std::vector<std::size_t> sizes = Traits::sizes();
    for (int i = 0; i < 300; ++i) sizes.push_back(static_cast<std::size_t>(i % 97));
    for (int i = 0; i < 20; ++i) {
      sizes.push_back(Traits::kLarge + static_cast<std::size_t>(i));  // bulk among small ones
      sizes.push_back(static_cast<std::size_t>(i));
    }
    for (int from = 0; from < n; ++from) {
      for (int to = 0; to < n; ++to) {
        for (std::size_t k = 0; k < sizes.size(); ++k) {
          common::Status s = ts[static_cast<std::size_t>(from)]->send(
              to, pattern(from, to, static_cast<int>(k), sizes[k]));
          ASSERT_TRUE(s.is_ok()) << s.message();
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
    Traits::check_counters(ts, per_rank);
  }
};

TYPED_TEST_SUITE_P(ReliableConformance);

TYPED_TEST_P(ReliableConformance, DeliversEveryMessageWholeAndInOrderToThreeRanks) {
  this->expect_ordered_delivery(3);
}

TYPED_TEST_P(ReliableConformance, DeliversEveryMessageWholeAndInOrderToFourRanks) {
  this->expect_ordered_delivery(4);
}

TYPED_TEST_P(ReliableConformance, MultiPartSendsArriveConcatenated) {
  Mesh ts = TypeParam::make_mesh(3);
  const Bytes a = pattern(0, 0, 1, 3);
  const Bytes big = pattern(0, 0, 2, TypeParam::kLarge);
  const Bytes one = pattern(0, 0, 3, 1);
  std::vector<std::span<const std::byte>> parts = {{}, a, {}, big, one};
  ASSERT_TRUE(ts[0]->send(1, parts).is_ok());
  std::vector<Bytes> many;  // more parts than one gather-write takes
  for (int i = 0; i < 150; ++i) {
    many.push_back(pattern(0, 2, i, static_cast<std::size_t>(i % 5) * 10));
  }
  std::vector<std::span<const std::byte>> many_parts(many.begin(), many.end());
  ASSERT_TRUE(ts[0]->send(2, many_parts).is_ok());
  ASSERT_TRUE(ts[0]->send(0, parts).is_ok());  // to self
  std::vector<std::span<const std::byte>> none;
  ASSERT_TRUE(ts[0]->send(1, none).is_ok());  // no parts: an empty message

  Bytes want1;
  for (const auto& p : parts) want1.insert(want1.end(), p.begin(), p.end());
  Bytes want2;
  for (const auto& p : many) want2.insert(want2.end(), p.begin(), p.end());
  std::vector<Recorder> rec(3);
  drive(ts, rec, [&] {
    return rec[0].events.size() == 1 && rec[1].events.size() == 2 && rec[2].events.size() == 1;
  });
  EXPECT_EQ(rec[1].from(0).at(0), want1);
  EXPECT_TRUE(rec[1].from(0).at(1).empty());
  EXPECT_EQ(rec[2].from(0).at(0), want2);
  EXPECT_EQ(rec[0].from(0).at(0), want1);
}

TYPED_TEST_P(ReliableConformance, DestroyedPeerIsReportedOnceAfterItsLastMessages) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  Mesh ts = TypeParam::make_mesh(3);
  const std::size_t large = TypeParam::kLarge;
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(ts[2]->send(0, pattern(2, 0, k, 1000)).is_ok());
    ASSERT_TRUE(ts[2]->send(1, pattern(2, 1, k, large)).is_ok());
  }
  // Rank 2 goes away on a thread of its own (a destructor that lets its
  // sends finish may need the receivers to progress) while the others poll.
  std::atomic<bool> gone{false};
  std::thread killer([&] {
    ts[2].reset();
    gone = true;
  });
  std::vector<Recorder> rec(3);
  Mesh live(2);
  live[0] = std::move(ts[0]);
  live[1] = std::move(ts[1]);
  // max = 1: the failure must come even from a poll whose budget a message used up.
  drive(
      live, rec, [&] { return rec[0].failures(2) == 1 && rec[1].failures(2) == 1; },
      std::chrono::seconds(20), 1);
  killer.join();
  EXPECT_TRUE(gone);
  for (int r = 0; r < 2; ++r) {
    const Recorder& h = rec[static_cast<std::size_t>(r)];
    ASSERT_EQ(h.events.size(), 6u) << "five messages, then the failure";
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(h.events[static_cast<std::size_t>(k)].data,
                pattern(2, r, k, r == 0 ? 1000 : large));
    }
    const auto& f = h.events.back();
    EXPECT_TRUE(f.failure);
    EXPECT_EQ(f.why.code(), ErrorCode::kPeerFailure);
    EXPECT_THAT(f.why.message(),
                AllOf(HasSubstr("rank " + std::to_string(r)), HasSubstr("rank 2")));
  }
  // Reported exactly once, however long the survivors keep polling.
  for (int i = 0; i < 200; ++i) {
    for (int r = 0; r < 2; ++r) {
      std::size_t d = 0;
      ASSERT_TRUE(
          live[static_cast<std::size_t>(r)]->poll(rec[static_cast<std::size_t>(r)], 64, d).is_ok());
    }
  }
  EXPECT_EQ(rec[0].failures(2), 1);
  EXPECT_EQ(rec[1].failures(2), 1);
  for (std::size_t size : {std::size_t{10}, std::size_t{1} << 20}) {
    common::Status st = live[0]->send(2, pattern(0, 2, 0, size));
    EXPECT_EQ(st.code(), ErrorCode::kPeerFailure) << size;
    EXPECT_THAT(st.message(), HasSubstr("rank 2"));
  }
  // The survivors still talk to each other.
  ASSERT_TRUE(live[0]->send(1, pattern(0, 1, 9, 10)).is_ok());
  ASSERT_TRUE(live[1]->send(0, pattern(1, 0, 9, large)).is_ok());
  drive(
      live, rec, [&] { return rec[1].from(0).size() == 1 && rec[0].from(1).size() == 1; },
      std::chrono::seconds(10));
  EXPECT_EQ(rec[0].from(1).at(0), pattern(1, 0, 9, large));
}

TYPED_TEST_P(ReliableConformance, PollWithNothingPendingNeverSleeps) {
  Mesh ts = TypeParam::make_mesh(3);
  Recorder rec;
  const long sleeps_before = voluntary_sleeps();
  for (int i = 0; i < 1000; ++i) {
    std::size_t d = 7;
    ASSERT_TRUE(ts[1]->poll(rec, 64, d).is_ok());
    EXPECT_EQ(d, 0u);
  }
  // A poll that waited would put this thread to sleep about once a call;
  // the few allowed are a transport's own threads holding a lock a moment.
  EXPECT_LT(voluntary_sleeps() - sleeps_before, 100);
  EXPECT_TRUE(rec.events.empty());
  ASSERT_GE(ts[1]->wait_fd(), 0);
  pollfd p{ts[1]->wait_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "wait_fd must be quiet when nothing is pending";
}

TYPED_TEST_P(ReliableConformance, WaitFdWakesForArrivalsAndForMessagesHeldBackByMax) {
  Mesh ts = TypeParam::make_mesh(2);
  Recorder rec;
  std::size_t d = 0;
  ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());  // arms, where the transport needs it
  pollfd p{ts[1]->wait_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 0), 0);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(ts[0]->send(1, pattern(0, 1, k, 10)).is_ok());
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "arrivals must wake the sleeper";
  // The three may arrive in more than one piece: poll until the first.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rec.events.empty() && std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());
  }
  ASSERT_EQ(rec.events.size(), 1u);
  while (rec.events.size() < 3 && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(::poll(&p, 1, 5000), 1) << "messages still wait";
    ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());
  }
  ASSERT_EQ(rec.events.size(), 3u);
  ASSERT_TRUE(ts[1]->poll(rec, 1, d).is_ok());
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TYPED_TEST_P(ReliableConformance, WorldOfOneNeedsNoExchangeAndDeliversToSelf) {
  std::unique_ptr<ReliableTransport> t;
  bool called = false;
  common::Status st = TypeParam::create_alone(scripted([&](std::span<const std::byte> m) {
                                                called = true;
                                                return Bytes(m.begin(), m.end());
                                              }),
                                              t);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_FALSE(called);
  ASSERT_TRUE(t->send(0, pattern(0, 0, 0, 5)).is_ok());
  pollfd p{t->wait_fd(), POLLIN, 0};
  if (TypeParam::kSelfSendWakes) {
    EXPECT_EQ(::poll(&p, 1, 0), 1);
  }
  Recorder rec;
  std::size_t d = 0;
  ASSERT_TRUE(t->poll(rec, 8, d).is_ok());
  EXPECT_EQ(d, 1u);
  EXPECT_EQ(rec.from(0).at(0), pattern(0, 0, 0, 5));
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  EXPECT_EQ(t->send(1, pattern(0, 0, 0, 5)).code(), ErrorCode::kInvalidArgument);
}

// Setup over an out-of-band allgather that fails, or returns what no rank
// of this transport would contribute: a status, never an exception.
TYPED_TEST_P(ReliableConformance, OutOfBandFailuresComeBackAsStatus) {
  using ::testing::HasSubstr;
  std::unique_ptr<ReliableTransport> t;
  common::Status st = TypeParam::create(
      0, 2,
      [](std::span<const std::byte>, Bytes&) {
        return common::timeout_error("bootstrap: ranks never arrived: 1");
      },
      t);
  EXPECT_EQ(st.code(), ErrorCode::kTimeout);
  EXPECT_THAT(st.message(), HasSubstr("never arrived: 1"));
  // Two ranks, but an allgather of the wrong length (mixed transports).
  st = TypeParam::create(
      0, 2, scripted([](std::span<const std::byte> m) { return Bytes(m.begin(), m.end()); }), t);
  EXPECT_EQ(st.code(), ErrorCode::kMismatch);
  // A contribution that is not this transport's address.
  st = TypeParam::create(0, 2, scripted([](std::span<const std::byte> m) {
                           Bytes all(m.begin(), m.end());
                           all.resize(2 * m.size(), std::byte{0x55});
                           return all;
                         }),
                         t);
  EXPECT_EQ(st.code(), ErrorCode::kMismatch);
  EXPECT_THAT(st.message(), HasSubstr("rank 1"));
}

REGISTER_TYPED_TEST_SUITE_P(ReliableConformance, DeliversEveryMessageWholeAndInOrderToThreeRanks,
                            DeliversEveryMessageWholeAndInOrderToFourRanks,
                            MultiPartSendsArriveConcatenated,
                            DestroyedPeerIsReportedOnceAfterItsLastMessages,
                            PollWithNothingPendingNeverSleeps,
                            WaitFdWakesForArrivalsAndForMessagesHeldBackByMax,
                            WorldOfOneNeedsNoExchangeAndDeliversToSelf,
                            OutOfBandFailuresComeBackAsStatus);

}  // namespace mccl::transport::test
