// The reliable multicast protocol (src/protocol) on the in-memory fabric
// (protocol_rig.h), with faults: repair under loss, duplication, reordering
// and corruption, the failure paths (mismatch, dead peer, timeout), and the
// defects found and fixed. Every fault test names its seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coll/collectives.h"
#include "protocol_rig.h"

namespace mccl::protocol {
namespace {

using namespace test;

// ---- (7) repair under loss -----------------------------------------------------------

TEST(ProtocolLoss, BroadcastUnder30PercentLossAtEveryRankSeed42) {
  Rig rig(5, lossy(0.3, 42), eager());
  Broadcast b(rig, 200 * kChunk + 11, 2, /*seed=*/81);
  b.start_all(rig);
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
  std::uint64_t requested = 0, served_by_non_roots = 0;
  for (int r = 0; r < 5; ++r) {
    requested += rig.stats(r).repairs_requested;
    if (r != 2) served_by_non_roots += rig.stats(r).repairs_served;
  }
  EXPECT_GT(requested, 0u);
  EXPECT_GT(served_by_non_roots, 0u);  // repairs come from the left neighbour, not the root
  EXPECT_EQ(rig.stats(2).repairs_requested, 0u);
}

TEST(ProtocolLoss, AllgatherUnder30PercentLossSeed7) {
  Rig rig(4, lossy(0.3, 7), eager());
  Allgather a(rig, 50 * kChunk + 1, /*seed=*/82, /*concurrent_roots=*/2);
  a.start_all(rig);
  ASSERT_TRUE(rig.run(a.ops));
  a.expect_exact();
}

// A stream's front is announced as it grows (McastSpec::on_stream_prefix,
// which the compressed collectives decode from), under loss, duplication
// and reordering: every announced prefix is final and right when it is
// announced, announcements only grow, the last is the whole stream and
// comes before the stream's completion.
TEST(ProtocolLoss, AStreamsFrontIsAnnouncedAsItGrowsAndIsFinalSeed5) {
  FabricConfig fc = lossy(0.1, 5);
  fc.duplicate = 0.05;
  fc.reorder = 0.2;
  Rig rig(4, fc, eager());
  const std::size_t bytes = 120 * kChunk + 7;
  const int root = 1;
  const Bytes expect = pattern(bytes, 85);
  std::vector<Bytes> bufs(4);
  std::vector<std::vector<std::uint64_t>> announced(4);
  std::vector<int> completed_after(4, -1);  // announcements before on_stream_complete
  std::vector<int> wrong(4, 0);
  OpList ops;
  for (int r = 0; r < 4; ++r) {
    bufs[r] = r == root ? expect : Bytes(bytes, std::byte{0xA5});
    McastSpec spec;
    spec.what = "broadcast watched from its front";
    spec.signature = 0xF00D;
    spec.streams.push_back({root, bufs[r].data(), bytes});
    spec.on_stream_prefix = [&, r](int s, std::uint64_t held) {
      EXPECT_EQ(s, root);
      announced[r].push_back(held);
      if (!std::equal(bufs[r].begin(), bufs[r].begin() + static_cast<std::ptrdiff_t>(held),
                      expect.begin())) {
        ++wrong[r];
      }
      return common::Status::ok();
    };
    spec.on_stream_complete = [&, r](int) {
      completed_after[r] = static_cast<int>(announced[r].size());
      return common::Status::ok();
    };
    ops.push_back(std::make_shared<McastCollective>(rig.ctx(r), std::move(spec)));
  }
  for (int r = 0; r < 4; ++r) rig.ctx(r).start(ops[r]);
  ASSERT_TRUE(rig.run(ops));
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(ops[r]->status().is_ok()) << ops[r]->status().message();
    EXPECT_EQ(bufs[r], expect);
    EXPECT_EQ(wrong[r], 0) << "a prefix was announced before all of it was here";
    ASSERT_FALSE(announced[r].empty());
    EXPECT_TRUE(std::is_sorted(announced[r].begin(), announced[r].end()));
    EXPECT_EQ(std::adjacent_find(announced[r].begin(), announced[r].end()), announced[r].end())
        << "announced twice";
    EXPECT_EQ(announced[r].back(), bytes);
    EXPECT_EQ(completed_after[r], static_cast<int>(announced[r].size()));
    if (r != root) {
      EXPECT_GT(announced[r].size(), 10u) << "announced as it grew, not at the end";
    }
  }
}

// Multicast delivers nothing at all: every byte travels the ring by repair,
// each rank serving its right neighbour what it has and the rest once it
// arrives (deferred serving).
TEST(ProtocolLoss, TotalLossIsRepairedAlongTheRingSeed3) {
  Rig rig(4, lossy(1.0, 3), eager());
  const std::size_t bytes = 25 * kChunk + 2;
  Broadcast b(rig, bytes, 1, /*seed=*/83);
  b.start_all(rig);
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
  for (int r = 0; r < 4; ++r) {
    if (r == 1) continue;
    EXPECT_EQ(rig.stats(r).repairs_requested, chunk_count(bytes, kChunk)) << "rank " << r;
    EXPECT_EQ(rig.stats(r).mcast_datagrams_received, 0u) << "rank " << r;
  }
}

TEST(ProtocolLoss, LossDuplicationReorderAndCorruptionSeed99) {
  FabricConfig f;
  f.loss = 0.05;
  f.duplicate = 0.1;
  f.reorder = 0.2;
  f.corrupt = 0.05;
  f.seed = 99;
  Rig rig(4, f, eager());
  Broadcast b(rig, 120 * kChunk + 5, 3, /*seed=*/84);
  Allgather a(rig, 30 * kChunk + 7, /*seed=*/85);
  b.start_all(rig);
  a.start_all(rig);
  OpList all = b.ops;
  all.insert(all.end(), a.ops.begin(), a.ops.end());
  ASSERT_TRUE(rig.run(all));
  b.expect_exact();
  a.expect_exact();
  std::uint64_t invalid = 0, duplicate = 0;
  for (int r = 0; r < 4; ++r) {
    invalid += rig.stats(r).dropped_invalid;
    duplicate += rig.stats(r).dropped_duplicate;
  }
  EXPECT_GT(invalid, 0u);    // corrupt datagrams fail the checksum
  EXPECT_GT(duplicate, 0u);  // duplicated datagrams are placed once
}

// ---- failures: mismatch, dead peer, timeout ---------------------------------------------

// Rank 2 thinks the broadcast is one byte longer: it sees the root's
// total_bytes disagree, poisons its context, and the abort floods the ring.
TEST(ProtocolFailure, SizeMismatchFailsEveryRank) {
  Rig rig(3, clean(), patient());
  Broadcast b(rig, 4 * kChunk, 0, /*seed=*/91);
  Bytes other(4 * kChunk + 1);
  McastSpec spec;
  spec.what = "broadcast of one more byte";
  spec.signature = 12345;
  spec.streams.push_back({0, other.data(), other.size()});
  b.ops[2] = std::make_shared<McastCollective>(rig.ctx(2), std::move(spec));
  b.start_all(rig);
  ASSERT_TRUE(rig.run(b.ops));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(b.ops[r]->status().code(), ErrorCode::kMismatch)
        << "rank " << r << ": " << b.ops[r]->status().message();
    EXPECT_EQ(rig.ctx(r).poisoned().code(), ErrorCode::kMismatch) << "rank " << r;
  }
  // A poisoned context fails every later collective at once.
  Broadcast later(rig, 10, 1, /*seed=*/92);
  later.start_all(rig);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(later.ops[r]->done());
    EXPECT_EQ(later.ops[r]->status().code(), ErrorCode::kMismatch);
  }
}

// A zero-byte broadcast has no datagrams: the signature in the control
// messages is what finds the disagreement.
TEST(ProtocolFailure, SignatureMismatchFoundByControlMessages) {
  Rig rig(3, clean(), patient());
  Broadcast b(rig, 0, 0, /*seed=*/93);
  Broadcast other(rig, 0, 0, /*seed=*/93, /*signature_salt=*/1);
  b.ops[1] = other.ops[1];
  b.start_all(rig);
  ASSERT_TRUE(rig.run(b.ops));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(b.ops[r]->status().code(), ErrorCode::kMismatch) << "rank " << r;
  }
}

TEST(ProtocolFailure, DeadPeerFailsEveryRank) {
  Rig rig(4, clean(), patient());
  Broadcast b(rig, 50 * kChunk, 0, /*seed=*/94);
  b.start_all(rig);
  rig.fabric().kill_rank(2);
  ASSERT_TRUE(rig.run(b.ops));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(b.ops[r]->status().code(), ErrorCode::kPeerFailure)
        << "rank " << r << ": " << b.ops[r]->status().message();
  }
}

// Rank 2 never calls the collective: its left neighbour times out waiting
// for its release, and the abort reaches the others.
TEST(ProtocolFailure, MissingRankTimesOut) {
  ProtocolConfig pc = patient();
  pc.op_timeout = 300ms;
  Rig rig(3, clean(), pc);
  Broadcast b(rig, 3 * kChunk, 0, /*seed=*/95);
  b.start(rig, 0);
  b.start(rig, 1);
  OpList started{b.ops[0], b.ops[1]};
  ASSERT_TRUE(rig.run(started));
  EXPECT_EQ(b.ops[1]->status().code(), ErrorCode::kTimeout) << b.ops[1]->status().message();
  rig.progress_all(3);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(rig.ctx(r).poisoned().code(), ErrorCode::kTimeout) << "rank " << r;
  }
}

// ---- known defects (disabled until fixed; see docs/wire-protocol.md) -------------

// BUG: kHave is taken as proof of loss ("whatever is missing now is lost",
// McastCollective::on_control), but it travels on the reliable channel and
// can overtake multicast datagrams that are still queued or in flight. The
// loss timers respect Context::backlogged(); the kHave path does not. Here
// the root injects 2000 chunks and sends kHave before its right neighbour
// polls; Context::progress() reads at most 512 datagrams (kPollBudget) and
// then the reliable side, so the kHave is handled with 1488 chunks still
// queued, and every one of them is requested and served again over the
// reliable transport without any loss.
TEST(ProtocolFixedBug, HaveOvertakingQueuedDatagramsCausesSpuriousRepairs) {
  Rig rig(2, clean(), patient());
  const std::size_t bytes = 2000 * kChunk;
  Broadcast b(rig, bytes, 0, /*seed=*/101);
  b.start_all(rig);
  auto deadline = common::Deadline::after(kDeadline);
  while (rig.stats(0).mcast_datagrams_sent < chunk_count(bytes, kChunk)) {
    ASSERT_FALSE(deadline.expired());
    rig.ctx(0).progress();  // the receiver is busy elsewhere for a moment
  }
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
  EXPECT_EQ(rig.stats(1).repairs_requested, 0u) << "repairs requested without any loss";
  EXPECT_EQ(rig.stats(0).repairs_served, 0u);
}

// The same defect with datagrams in flight rather than queued: 50 us of
// fabric latency, a root that finishes injecting before its tail arrived,
// and its kHave (delivered at once by the sim's mesh) makes the right
// neighbour fetch that tail again.
TEST(ProtocolFixedBug, HaveOvertakingDatagramsInFlightCausesSpuriousRepairs) {
  FabricConfig f;
  f.latency = 50us;
  Rig rig(4, f, patient());
  const std::size_t bytes = 3000 * kChunk;
  Broadcast b(rig, bytes, 0, /*seed=*/103);
  b.start_all(rig);
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rig.stats(r).repairs_requested, 0u) << "rank " << r << ": repairs without loss";
    EXPECT_LE(rig.stats(r).control_messages_sent, 2u) << "rank " << r;
  }
}

// A root that starts late is no loss. Receivers that had started a
// broadcast and heard nothing for longer than the long silence
// (stall_max + first_timeout, 22 ms by default) pulled the whole stream
// from their left neighbours, which forwarded it over the reliable
// transport as it arrived: every byte crossed twice without a datagram
// lost (seen under MPI_Ibcast on an oversubscribed host, docs/mpi.md).
TEST(ProtocolFixedBug, LateRootOfABroadcastIsNoLoss) {
  Rig rig(4, clean(), eager());
  const std::size_t bytes = 200 * kChunk + 7;
  Broadcast b(rig, bytes, 0, /*seed=*/105);
  for (int r = 1; r < 4; ++r) b.start(rig, r);
  const ProtocolConfig pc = eager();
  const auto late = common::Deadline::after(3 * (pc.stall_max + pc.first_timeout));
  while (!late.expired()) {
    for (int r = 1; r < 4; ++r) rig.ctx(r).progress();
  }
  b.start(rig, 0);
  ASSERT_TRUE(rig.run(b.ops));
  b.expect_exact();
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(rig.stats(r).repair_bytes_requested, 0u) << "rank " << r << ": repairs without loss";
  }
}

// The same in an allgather: the other roots' streams arrive, the late
// root's does not, and after the long silence every rank pulled it whole.
TEST(ProtocolFixedBug, LateRootOfAnAllgatherIsNoLoss) {
  Rig rig(4, clean(), eager());
  const std::size_t bytes = 60 * kChunk + 3;
  Allgather a(rig, bytes, /*seed=*/107);
  for (int r = 1; r < 4; ++r) rig.ctx(r).start(a.ops[static_cast<std::size_t>(r)]);
  const ProtocolConfig pc = eager();
  const auto late = common::Deadline::after(3 * (pc.stall_max + pc.first_timeout));
  while (!late.expired()) {
    for (int r = 1; r < 4; ++r) rig.ctx(r).progress();
  }
  rig.ctx(0).start(a.ops[0]);
  ASSERT_TRUE(rig.run(a.ops));
  a.expect_exact();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(rig.stats(r).repair_bytes_requested, 0u) << "rank " << r << ": repairs without loss";
  }
}

// Holds back, on the way to this rank, the data datagrams `pick` chooses,
// until the test lets them through: late ones, or lost ones where it never
// does.
class DatagramHolder final : public ForwardingDatagram {
 public:
  using Pick = std::function<bool(const DataHeader&)>;
  DatagramHolder(std::unique_ptr<DatagramTransport> inner, Pick pick)
      : ForwardingDatagram(std::move(inner)), pick_(std::move(pick)) {}
  void let_through() { open_ = true; }
  common::Status poll(transport::DatagramHandler& h, std::size_t max,
                      std::size_t& delivered) override {
    if (open_ && !held_.empty()) {
      std::vector<std::span<const std::byte>> late(held_.begin(), held_.end());
      h.on_datagrams(late);
      held_.clear();
    }
    Filter f(h, *this);
    return inner_->poll(f, max, delivered);
  }

 private:
  struct Filter final : transport::DatagramHandler {
    Filter(transport::DatagramHandler& to, DatagramHolder& holder) : to_(to), holder_(holder) {}
    void on_datagrams(transport::DatagramBatch batch) override {
      std::vector<std::span<const std::byte>> kept;
      for (const auto& d : batch) {
        DataHeader h;
        std::span<const std::byte> payload;
        const bool hold = !holder_.open_ &&
                          decode_data(d, kTag, true, h, payload) == DataCheck::kOk &&
                          holder_.pick_(h);
        if (hold) {
          holder_.held_.emplace_back(d.begin(), d.end());
        } else {
          kept.push_back(d);
        }
      }
      to_.on_datagrams(kept);
    }
    void on_foreign_datagrams(std::size_t count) override { to_.on_foreign_datagrams(count); }
    transport::DatagramHandler& to_;
    DatagramHolder& holder_;
  };
  Pick pick_;
  bool open_ = false;
  std::vector<Bytes> held_;
};

// Every rank loses the tail of its right neighbour's stream, so no rank
// ever holds everything and no kHave comes: each rank asks for its tail
// once the rest has arrived and the group is quiet (a few chunks missing,
// mcast_collective_repair.cc). Before, a lost tail waited for the left
// neighbour's kHave or a long silence (stall_max + first_timeout), here a
// minute, beyond the test's deadline: the cycle held every rank.
TEST(ProtocolLoss, LostTailsAroundTheRingAreAskedForWithoutAHave) {
  ProtocolConfig pc = eager();
  pc.stall_max = std::chrono::seconds(60);
  pc.op_timeout = std::chrono::seconds(300);
  Rig rig(3, clean(), pc, [](std::unique_ptr<transport::DatagramTransport> t, int r) {
    // The last datagram of the right neighbour's stream: a lost tail, which
    // nothing later in that stream reveals.
    const auto root = static_cast<std::uint32_t>((r + 1) % 3);
    return std::make_unique<DatagramHolder>(std::move(t), [root](const DataHeader& h) {
      return h.root == root && h.chunk_index + 1ull == chunk_count(h.total_bytes, h.chunk_bytes);
    });
  });
  Allgather a(rig, 4 * kChunk + 5, /*seed=*/109);
  a.start_all(rig);
  ASSERT_TRUE(rig.run(a.ops)) << "a lost tail waited for a kHave that never comes";
  a.expect_exact();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(rig.stats(r).repairs_requested, 1u) << "rank " << r << ": its one lost tail";
  }
}

// A chunk asked for that then comes by multicast was late, not lost: the
// loss deadline's floor rises to twice the silence that chunk needed (at
// least double, up to stall_max), so that the next
// collectives on a busy host do not ask for chunks still on their way, and
// each collective received without a late chunk takes a sixteenth of the
// rise back. At 32 hosts on 16 cores the fixed 1 ms floor asked for 0.2·m
// per rank that came anyway (docs/scale.md). The deadline is read through
// Context::stall_deadline with the observed-gap term off, so that nothing
// here depends on timing.
TEST(ProtocolLoss, ALateChunkRaisesTheLossDeadlineAndCleanCollectivesLowerIt) {
  ProtocolConfig pc = eager();
  pc.stall_factor = 0;  // the deadline is the floor alone, also before a gap was observed;
  pc.stall_min = 50ms;  // long enough that a slow (sanitizer) build loses nothing by chance
  pc.first_timeout = pc.stall_min;
  pc.stall_max = 1s;
  const common::Duration floor = pc.stall_min;
  std::vector<DatagramHolder*> holders(3, nullptr);
  Rig rig(3, clean(), pc, [&](std::unique_ptr<transport::DatagramTransport> t, int r) {
    auto holder = std::make_unique<DatagramHolder>(
        std::move(t), [](const DataHeader& h) { return h.chunk_index == 1; });
    holders[static_cast<std::size_t>(r)] = holder.get();
    if (r != 2) holder->let_through();
    return holder;
  });
  auto broadcast_once = [&](std::uint64_t seed) {
    Broadcast b(rig, 4 * kChunk + 9, /*root=*/0, seed);
    b.start_all(rig);
    ASSERT_TRUE(rig.run(b.ops));
    b.expect_exact();
  };
  {
    // Rank 2 asks for chunk 1, held back; then the chunk comes by multicast.
    Broadcast b(rig, 4 * kChunk + 9, /*root=*/0, /*seed=*/121);
    b.start_all(rig);
    const auto deadline = common::Deadline::after(kDeadline);
    while (rig.stats(2).repairs_requested == 0 && !deadline.expired()) {
      for (int r = 0; r < 3; ++r) rig.ctx(r).progress();
    }
    ASSERT_GT(rig.stats(2).repairs_requested, 0u) << "rank 2 never asked for the held chunk";
    holders[2]->let_through();
    ASSERT_TRUE(rig.run(b.ops));
    b.expect_exact();
  }
  // Twice the silence the late chunk needed: the floor and the time it came after the
  // request (the test's own, a few milliseconds at most).
  EXPECT_GE(rig.ctx(2).stall_deadline(), 2 * floor) << "a late chunk at least doubles the floor";
  EXPECT_LE(rig.ctx(2).stall_deadline(), pc.stall_max);
  EXPECT_EQ(rig.ctx(1).stall_deadline(), floor) << "rank 1 had no late chunk";
  common::Duration before = rig.ctx(2).stall_deadline();
  for (int i = 0; i < 60; ++i) {
    broadcast_once(200 + static_cast<std::uint64_t>(i));
    const common::Duration now = rig.ctx(2).stall_deadline();
    ASSERT_LT(now, before) << "after clean broadcast " << i;
    ASSERT_GE(now, floor);
    before = now;
  }
  EXPECT_LT(before, floor + floor / 10) << "sixty clean collectives bring it near stall_min";
  EXPECT_EQ(rig.stats(2).repairs_requested, 1u) << "the clean broadcasts asked for nothing";
}

// Rank 2 misses chunk 1 of a broadcast from rank 0 and asks its left
// neighbour, rank 1; then the chunk comes by multicast after all, rank 2
// releases rank 1, completes and exits before rank 1 reads the request.
// Serving it fails on the gone peer. Rank 2 asked for nothing more, so
// that is no failure: rank 1 and the root complete. Before, rank 1 broke
// the communicator ("lost its connection to rank 2: closed by the peer",
// seen in Engines/DestroyWithoutBarrier on UDP). Both ways of serving:
// rank 1 holds the chunk when the request comes (served at once), or gets
// it late too (deferred, then served).
TEST(ProtocolFixedBug, ARequestFromANeighbourThatReleasedAndLeftIsNoFailure) {
  for (const bool left_late : {false, true}) {
    SCOPED_TRACE(left_late ? "rank 1 gets the chunk late too" : "rank 1 holds the chunk");
    std::vector<DatagramHolder*> holders(3, nullptr);
    Rig rig(3, clean(), eager(), [&](std::unique_ptr<transport::DatagramTransport> t, int r) {
      auto holder = std::make_unique<DatagramHolder>(
          std::move(t), [](const DataHeader& h) { return h.chunk_index == 1; });
      holders[static_cast<std::size_t>(r)] = holder.get();
      if (r == 0 || (r == 1 && !left_late)) holder->let_through();
      return holder;
    });
    Broadcast b(rig, 4 * kChunk + 9, /*root=*/0, /*seed=*/111);
    b.start_all(rig);
    auto drive = [&](std::initializer_list<int> ranks, auto until) {
      const auto deadline = common::Deadline::after(kDeadline);
      while (!until() && !deadline.expired()) {
        for (int r : ranks) rig.ctx(r).progress();
      }
      return until();
    };
    ASSERT_TRUE(drive({0, 2}, [&] { return rig.stats(2).repairs_requested > 0; }))
        << "rank 2 never asked for the chunk it missed";
    holders[2]->let_through();
    ASSERT_TRUE(drive({2}, [&] { return b.ops[2]->done(); }));
    ASSERT_TRUE(b.ops[2]->status().is_ok()) << b.ops[2]->status().message();
    rig.fabric().kill_rank(2);
    // Rank 1 reads the request and the release, then learns that rank 2 is gone.
    ASSERT_TRUE(drive({0, 1}, [&] { return !rig.ctx(1).failed_peer_ranks().empty(); }));
    holders[1]->let_through();
    ASSERT_TRUE(drive({0, 1}, [&] { return b.ops[0]->done() && b.ops[1]->done(); }));
    for (int r = 0; r < 3; ++r) {
      EXPECT_TRUE(b.ops[static_cast<std::size_t>(r)]->status().is_ok())
          << "rank " << r << ": " << b.ops[static_cast<std::size_t>(r)]->status().message();
      EXPECT_TRUE(b.bufs[static_cast<std::size_t>(r)] == b.expect) << "rank " << r;
    }
  }
}

// BUG: the signature (coll/collectives.cc) digests kind, root and sizes but
// not the algorithm, and the algorithm is a per-rank option
// (MCCL_COLL_BCAST_ALGO / CommOptions, never agreed at creation). A rank
// that runs the chain broadcast while the others run the multicast one
// passes every signature check: each side drops the other's messages as
// invalid and the collective hangs until op_timeout, reported as a
// timeout instead of a mismatch.
TEST(ProtocolFixedBug, AlgorithmDisagreementIsAMismatchNotATimeout) {
  ProtocolConfig pc = patient();
  pc.op_timeout = 300ms;
  Rig rig(3, clean(), pc);
  const std::size_t bytes = 4 * kChunk;
  std::vector<Bytes> bufs(3, pattern(bytes, 102));
  OpList ops;
  for (int r = 0; r < 3; ++r) {
    coll::CollConfig cfg;
    cfg.broadcast = r == 1 ? BroadcastAlgorithm::kChain : BroadcastAlgorithm::kMulticast;
    ops.push_back(coll::make_broadcast(rig.ctx(r), cfg, bufs[r].data(), bytes, 0));
    rig.ctx(r).start(ops.back());
  }
  ASSERT_TRUE(rig.run(ops));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(ops[r]->status().code(), ErrorCode::kMismatch)
        << "rank " << r << ": " << ops[r]->status().message();
  }
}

}  // namespace
}  // namespace mccl::protocol
