// A stager's hooks (coll::StagingHooks, protocol::McastSpec::fill_own), as
// the offload daemon uses them for a client's ordinary memory: a root's
// bytes (a broadcast's, each allgather rank's own block) are filled in order
// just ahead of their injection, receivers hear of each block's final
// prefix as it grows, an algorithm without multicast gets everything filled
// when it is made, and a failed fill fails the collective with its reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "coll/collectives.h"
#include "protocol_rig.h"

namespace mccl::protocol {
namespace {

using namespace test;
using Range = std::pair<std::uint64_t, std::uint64_t>;

// Starts every rank's op and drives them all to their end; false on timeout.
bool start_and_run(Rig& rig, const OpList& ops) {
  for (int r = 0; r < rig.size(); ++r) rig.ctx(r).start(ops[static_cast<std::size_t>(r)]);
  return rig.run(ops);
}

// A block of `bytes` filled in consecutive ranges from byte 0 to its end,
// none of them after any of its bytes was sent (`sent_before`: the bytes
// sent when each fill began).
void expect_filled_ahead(const std::vector<Range>& fills,
                         const std::vector<std::uint64_t>& sent_before, std::uint64_t bytes) {
  std::uint64_t next = 0;
  for (std::size_t i = 0; i < fills.size(); ++i) {
    SCOPED_TRACE("fill " + std::to_string(i));
    EXPECT_EQ(fills[i].first, next) << "fills are consecutive from byte 0";
    EXPECT_GT(fills[i].second, fills[i].first);
    EXPECT_LE(sent_before[i], fills[i].first) << "a byte was sent before its fill";
    next = fills[i].second;
  }
  EXPECT_EQ(next, bytes);
}

// One broadcast from rank 0 whose root buffer starts as a sentinel: only the
// fill hook puts the root's bytes in it, so a byte sent before its fill
// reaches the receivers as a sentinel.
struct StagedBroadcast {
  StagedBroadcast(Rig& rig, std::size_t bytes, BroadcastAlgorithm algo)
      : expect(pattern(bytes, 21)),
        bufs(static_cast<std::size_t>(rig.size())),
        arrivals(bufs.size()) {
    coll::CollConfig cfg;
    cfg.broadcast = algo;
    for (int r = 0; r < rig.size(); ++r) {
      bufs[r] = Bytes(bytes, std::byte{0xA5});
      coll::StagingHooks hooks;
      hooks.fill = [this, &rig](std::uint64_t begin, std::uint64_t end) {
        fills.emplace_back(begin, end);
        sent_before_fill.push_back(rig.stats(0).mcast_bytes_sent);
        if (fills.size() == fail_at) return common::internal_error("the client has gone");
        std::memcpy(bufs[0].data() + begin, expect.data() + begin, end - begin);
        return common::Status::ok();
      };
      hooks.arrived = [this, r](int root, std::uint64_t held) {
        EXPECT_EQ(root, 0);
        arrivals[r].push_back(held);
        return common::Status::ok();
      };
      ops.push_back(coll::make_broadcast(rig.ctx(r), cfg, bufs[r].data(), bytes, 0, hooks));
    }
  }

  Bytes expect;
  std::vector<Bytes> bufs;
  std::vector<std::vector<std::uint64_t>> arrivals;  // by rank: held prefixes announced
  std::vector<Range> fills;
  std::vector<std::uint64_t> sent_before_fill;  // the root's bytes sent when each fill began
  std::size_t fail_at = 0;                      // the fill (1-based) that fails; 0: none
  OpList ops;
};

TEST(ProtocolStaging, ARootsBytesAreFilledInOrderJustAheadOfTheirInjection) {
  Rig rig(3, clean(), patient());
  const std::size_t bytes = 600 * kChunk + 11;
  StagedBroadcast b(rig, bytes, BroadcastAlgorithm::kMulticast);
  ASSERT_TRUE(start_and_run(rig, b.ops));
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(b.ops[r]->status().is_ok()) << "rank " << r << ": " << b.ops[r]->status().message();
    EXPECT_TRUE(b.bufs[r] == b.expect) << "rank " << r << " holds other bytes than the root's";
  }
  ASSERT_GT(b.fills.size(), 2u) << "filled in steps, not all before the first datagram";
  expect_filled_ahead(b.fills, b.sent_before_fill, bytes);
  EXPECT_LE(b.fills[0].second, bytes / 2) << "the first fill ran far ahead of the injection";
  EXPECT_EQ(b.arrivals[0], std::vector<std::uint64_t>{bytes}) << "the root's own, whole at start";
  for (int r = 1; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_GT(b.arrivals[r].size(), 2u) << "a receiver heard of its block as it grew";
    EXPECT_TRUE(std::is_sorted(b.arrivals[r].begin(), b.arrivals[r].end()));
    EXPECT_EQ(b.arrivals[r].back(), bytes);
  }
}

// The helpers seal a root's datagrams ahead of it from its buffer: not one
// whose bytes are filled as they are sent.
TEST(ProtocolStaging, HelpersDoNotSealAStreamFilledAsItIsSent) {
  ProtocolConfig pc = patient();
  pc.helper_threads = 1;
  Rig rig(2, clean(), pc);
  const std::size_t bytes = 300 * kChunk;
  StagedBroadcast b(rig, bytes, BroadcastAlgorithm::kMulticast);
  ASSERT_TRUE(start_and_run(rig, b.ops));
  ASSERT_TRUE(b.ops[1]->status().is_ok()) << b.ops[1]->status().message();
  EXPECT_TRUE(b.bufs[1] == b.expect);
  EXPECT_EQ(rig.stats(0).mcast_datagrams_sealed_ahead, 0u);
}

// A tree reads the root's buffer in any order: filled whole when it is made.
TEST(ProtocolStaging, ATreeIsFilledWholeBeforeItStarts) {
  Rig rig(3, clean(), patient());
  const std::size_t bytes = 20 * kChunk + 3;
  StagedBroadcast b(rig, bytes, BroadcastAlgorithm::kBinomial);
  ASSERT_EQ(b.fills.size(), 1u);
  EXPECT_EQ(b.fills[0], Range(0, bytes));
  ASSERT_TRUE(start_and_run(rig, b.ops));
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(b.ops[r]->status().is_ok()) << "rank " << r << ": " << b.ops[r]->status().message();
    EXPECT_TRUE(b.bufs[r] == b.expect) << "rank " << r;
    EXPECT_TRUE(b.arrivals[r].empty()) << "only the multicast algorithm announces arrivals";
  }
}

TEST(ProtocolStaging, AFailedFillFailsTheRootWithItsReason) {
  Rig rig(3, clean(), patient());
  StagedBroadcast b(rig, 600 * kChunk, BroadcastAlgorithm::kMulticast);
  b.fail_at = 2;
  for (int r = 0; r < 3; ++r) rig.ctx(r).start(b.ops[r]);
  ASSERT_TRUE(rig.run({b.ops[0]}));
  EXPECT_EQ(b.ops[0]->status().code(), ErrorCode::kInternal);
  EXPECT_NE(b.ops[0]->status().message().find("the client has gone"), std::string::npos)
      << b.ops[0]->status().message();
  EXPECT_EQ(b.fills.size(), 2u) << "no fill after the failed one";
}

// A tree's root that cannot fill refuses the call: its peers fail with its
// reason at once instead of waiting for data that never comes.
TEST(ProtocolStaging, ATreesFailedFillFailsEveryRankWithItsReason) {
  Rig rig(3, clean(), patient());
  std::size_t fail_first = 1;
  const std::size_t bytes = 20 * kChunk;
  coll::CollConfig cfg;
  cfg.broadcast = BroadcastAlgorithm::kBinomial;
  OpList ops;
  std::vector<Bytes> bufs(3, Bytes(bytes));
  for (int r = 0; r < 3; ++r) {
    coll::StagingHooks hooks;
    hooks.fill = [&](std::uint64_t, std::uint64_t) {  // called by the root only, once
      return fail_first-- > 0 ? common::internal_error("the client has gone")
                              : common::Status::ok();
    };
    ops.push_back(coll::make_broadcast(rig.ctx(r), cfg, bufs[r].data(), bytes, 0, hooks));
    rig.ctx(r).start(ops.back());
  }
  ASSERT_TRUE(rig.run(ops));
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(ops[r]->status().is_ok()) << "rank " << r;
    EXPECT_NE(ops[r]->status().message().find("the client has gone"), std::string::npos)
        << "rank " << r << ": " << ops[r]->status().message();
  }
}

// Accepts the first `allow` datagrams a rank sends, then none until opened:
// a root stalled (descheduled, say) a few chunks before its end.
class StalledSender final : public ForwardingDatagram {
 public:
  StalledSender(std::unique_ptr<transport::DatagramTransport> inner, std::size_t allow)
      : ForwardingDatagram(std::move(inner)), allow_(allow) {}
  void open() { open_ = true; }
  common::Status send(std::span<const transport::OutDatagram> batch,
                      std::size_t& accepted) override {
    const std::size_t n = open_ ? batch.size() : std::min(batch.size(), allow_ - sent_);
    accepted = 0;
    if (n == 0) return common::Status::ok();
    common::Status st = inner_->send(batch.first(n), accepted);
    sent_ += accepted;
    return st;
  }

 private:
  const std::size_t allow_;
  std::size_t sent_ = 0;
  bool open_ = false;
};

// The receiver, holding all but the stalled root's last chunks and hearing
// nothing more, asks the root for them before they were injected: the root
// fills them before it serves them, not only before it sends them.
TEST(ProtocolStaging, ARepairAskedForBeforeItsChunkWasSentIsFilledFirst) {
  // The receiver asks for a tail of up to 2% of the stream ("a few"); the
  // root fills a batch and a fill step (256 KiB, 180 chunks) beyond what it
  // sent. A stream of 12,000 chunks sent in batches of 8 and stalled 230
  // chunks before its end leaves the last 40 or more unfilled.
  const std::size_t chunks = 12000, sent = chunks - 230;
  ProtocolConfig pc = eager();
  pc.send_batch = 8;
  StalledSender* stalled = nullptr;
  Rig rig(2, clean(), pc, [&](std::unique_ptr<transport::DatagramTransport> inner, int r) {
    if (r != 0) return inner;
    auto s = std::make_unique<StalledSender>(std::move(inner), sent);
    stalled = s.get();
    return std::unique_ptr<transport::DatagramTransport>(std::move(s));
  });
  StagedBroadcast b(rig, chunks * kChunk, BroadcastAlgorithm::kMulticast);
  for (int r = 0; r < 2; ++r) rig.ctx(r).start(b.ops[static_cast<std::size_t>(r)]);
  ASSERT_TRUE(rig.run({b.ops[1]})) << "the receiver did not get the root's tail by repair";
  ASSERT_TRUE(b.ops[1]->status().is_ok()) << b.ops[1]->status().message();
  EXPECT_GT(rig.stats(1).repairs_requested, 0u);
  EXPECT_EQ(rig.stats(0).mcast_datagrams_sent, sent) << "the tail went out by multicast";
  EXPECT_TRUE(b.bufs[1] == b.expect) << "the root served bytes it had not filled";
  stalled->open();
  ASSERT_TRUE(rig.run(b.ops));
  ASSERT_TRUE(b.ops[0]->status().is_ok()) << b.ops[0]->status().message();
  expect_filled_ahead(b.fills, std::vector<std::uint64_t>(b.fills.size(), 0), chunks * kChunk);
}

// Each rank's own block starts as a sentinel in its receive buffer: only
// its fills put the block there, so one sent before its fill reaches the
// others as a sentinel.
struct StagedAllgather {
  StagedAllgather(Rig& rig, std::size_t block_bytes, AllgatherAlgorithm algo)
      : n(rig.size()),
        block(block_bytes),
        expect(pattern(block * n, 31)),
        bufs(n),
        fills(n),
        sent_before_fill(n) {
    coll::CollConfig cfg;
    cfg.allgather = algo;
    const std::vector<std::size_t> counts(n, block);
    std::vector<std::size_t> displs(n);
    for (std::size_t r = 0; r < n; ++r) displs[r] = r * block;
    for (std::size_t r = 0; r < n; ++r) {
      bufs[r] = Bytes(block * n, std::byte{0xA5});
      coll::StagingHooks hooks;
      hooks.fill = [this, &rig, r](std::uint64_t begin, std::uint64_t end) {
        fills[r].emplace_back(begin, end);
        sent_before_fill[r].push_back(rig.stats(static_cast<int>(r)).mcast_bytes_sent);
        std::memcpy(bufs[r].data() + r * block + begin, expect.data() + r * block + begin,
                    end - begin);
        return common::Status::ok();
      };
      ops.push_back(coll::make_allgatherv(rig.ctx(static_cast<int>(r)), cfg, nullptr, true,
                                          bufs[r].data(), counts, displs, hooks));
    }
  }

  void expect_exact() const {
    for (std::size_t r = 0; r < n; ++r) {
      ASSERT_TRUE(ops[r]->status().is_ok()) << "rank " << r << ": " << ops[r]->status().message();
      EXPECT_TRUE(bufs[r] == expect) << "rank " << r << " holds other bytes than the roots'";
    }
  }

  std::size_t n, block;
  Bytes expect;
  std::vector<Bytes> bufs;
  std::vector<std::vector<Range>> fills;                     // by rank
  std::vector<std::vector<std::uint64_t>> sent_before_fill;  // by rank: its bytes sent by then
  OpList ops;
};

TEST(ProtocolStaging, AnAllgathersOwnBlocksAreFilledAsTheyAreSent) {
  Rig rig(3, clean(), patient());
  const std::size_t block = 400 * kChunk + 5;
  StagedAllgather a(rig, block, AllgatherAlgorithm::kMulticast);
  ASSERT_TRUE(start_and_run(rig, a.ops));
  a.expect_exact();
  for (std::size_t r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_GT(a.fills[r].size(), 1u) << "filled in steps";
    expect_filled_ahead(a.fills[r], a.sent_before_fill[r], block);
  }
}

TEST(ProtocolStaging, APointToPointAllgatherIsFilledWholeWhenMade) {
  Rig rig(3, clean(), patient());
  const std::size_t block = 10 * kChunk + 1;
  StagedAllgather a(rig, block, AllgatherAlgorithm::kRing);
  for (std::size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(a.fills[r].size(), 1u) << "rank " << r;
    EXPECT_EQ(a.fills[r][0], Range(0, block)) << "rank " << r;
  }
  ASSERT_TRUE(start_and_run(rig, a.ops));
  a.expect_exact();
}

// Alone, a rank sends nothing: its block is still filled, as it is its result.
TEST(ProtocolStaging, ALoneRanksBlockIsStillFilled) {
  Rig rig(1, clean(), patient());
  StagedAllgather a(rig, 300 * kChunk, AllgatherAlgorithm::kMulticast);
  ASSERT_TRUE(start_and_run(rig, a.ops));
  a.expect_exact();
}

}  // namespace
}  // namespace mccl::protocol
