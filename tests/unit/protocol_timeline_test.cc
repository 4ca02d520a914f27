// Stats::last_mcast on the in-memory rig: every rank reports the steps of
// its last multicast collective in the order they happened, and only the
// steps that happened there (a root receives nothing of its own stream, the
// root's left neighbour is released by nobody).
#include <gtest/gtest.h>

#include "protocol_rig.h"

namespace mccl::protocol::test {
namespace {

// The steps every rank goes through, in order, where they happened (0 = no).
void expect_ordered(const McastTimeline& t, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  EXPECT_GT(t.started_ns, 0u);
  EXPECT_GE(t.held_ns, t.started_ns);
  EXPECT_GE(t.completed_ns, t.held_ns);
  if (t.first_sent_ns != 0) {
    EXPECT_GE(t.first_sent_ns, t.started_ns);
    EXPECT_GE(t.last_sent_ns, t.first_sent_ns);
    EXPECT_GE(t.held_ns, t.last_sent_ns);
  }
  if (t.first_arrival_ns != 0) {
    EXPECT_GE(t.first_arrival_ns, t.started_ns);
    EXPECT_GE(t.last_arrival_ns, t.first_arrival_ns);
    EXPECT_GE(t.held_ns, t.last_arrival_ns);
  }
  if (t.released_ns != 0) {
    EXPECT_GE(t.completed_ns, t.released_ns);
  }
}

TEST(ProtocolTimeline, BroadcastReportsEachRanksStepsInOrder) {
  for (int n : {1, 2, 3, 8}) {
    for (int root : {0, n - 1}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " root=" + std::to_string(root));
      Rig rig(n, clean(), patient());
      Broadcast b(rig, 40 * kChunk + 3, root, 7);
      b.start_all(rig);
      ASSERT_TRUE(rig.run(b.ops));
      b.expect_exact();
      for (int r = 0; r < n; ++r) {
        const McastTimeline t = rig.stats(r).last_mcast;
        expect_ordered(t, r);
        const bool is_root = r == root;
        EXPECT_EQ(t.first_sent_ns != 0, is_root && n > 1) << "rank " << r;
        EXPECT_EQ(t.first_arrival_ns != 0, !is_root) << "rank " << r;
        // The right neighbour releases every rank but the root's left one
        // (the root pulls nothing), and nobody when the rank is alone.
        const bool released = n > 1 && (r + 1) % n != root;
        EXPECT_EQ(t.released_ns != 0, released) << "rank " << r;
      }
    }
  }
}

TEST(ProtocolTimeline, AllgatherReportsSendsAndArrivalsOnEveryRank) {
  const int n = 4;
  Rig rig(n, clean(), patient());
  Allgather a(rig, 10 * kChunk, 11);
  a.start_all(rig);
  ASSERT_TRUE(rig.run(a.ops));
  a.expect_exact();
  for (int r = 0; r < n; ++r) {
    const McastTimeline t = rig.stats(r).last_mcast;
    expect_ordered(t, r);
    EXPECT_NE(t.first_sent_ns, 0u) << "rank " << r;
    EXPECT_NE(t.first_arrival_ns, 0u) << "rank " << r;
    EXPECT_NE(t.released_ns, 0u) << "rank " << r;
  }
}

TEST(ProtocolTimeline, LaterCollectiveReplacesTheEarlier) {
  Rig rig(3, clean(), patient());
  Broadcast first(rig, 5 * kChunk, 0, 1);
  first.start_all(rig);
  ASSERT_TRUE(rig.run(first.ops));
  const McastTimeline before = rig.stats(1).last_mcast;
  Broadcast second(rig, 5 * kChunk, 2, 2);
  second.start_all(rig);
  ASSERT_TRUE(rig.run(second.ops));
  const McastTimeline after = rig.stats(1).last_mcast;
  EXPECT_GE(after.started_ns, before.completed_ns);
  // Rank 1 is the root's left neighbour now: nobody releases it.
  EXPECT_EQ(after.released_ns, 0u);
  EXPECT_NE(before.released_ns, 0u);
}

}  // namespace
}  // namespace mccl::protocol::test
