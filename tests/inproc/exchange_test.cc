// alltoall(v) and point-to-point send/receive (coll/alltoall.h,
// protocol/p2p.h) over the in-memory fabric, with loss on the multicast
// side (which these never use) and on both engines that serve them.
#include <gtest/gtest.h>

#include <numeric>

#include "harness.h"

namespace mccl::testing {
namespace {

class Exchange : public ::testing::TestWithParam<ProgressKind> {
 protected:
  std::vector<Communicator> make(InProcessWorld& world) {
    CommOptions o;
    o.progress = GetParam();
    return create_communicators(world, o);
  }
};

// Rank s sends (s + 2d) % 7 * 1000 + 1 bytes... to rank d: uneven, some 0.
std::size_t block(int from, int to) {
  const int k = (from + 2 * to) % 7;
  return k == 0 ? 0 : static_cast<std::size_t>(k) * 30011 - 5;
}

TEST_P(Exchange, AlltoallvUnevenFiveRanks) {
  const int n = 5;
  InProcessWorld world(n, {.loss = 0.05, .seed = 11});
  auto comms = make(world);
  run_on_threads(comms, [&](Communicator& c) {
    const int me = c.rank();
    std::vector<std::size_t> sc(n), sd(n), rc(n), rd(n);
    for (int r = 0; r < n; ++r) {
      sc[r] = block(me, r);
      rc[r] = block(r, me);
    }
    std::exclusive_scan(sc.begin(), sc.end(), sd.begin(), std::size_t{0});
    // Receive blocks in reverse order, to check the displacements are used.
    std::size_t off = 0;
    for (int r = n - 1; r >= 0; --r) rd[r] = std::exchange(off, off + rc[r]);
    std::vector<std::byte> send(sd[n - 1] + sc[n - 1]), recv(off);
    for (int r = 0; r < n; ++r) fill(send.data() + sd[r], sc[r], me * 100 + r, 5);
    c.alltoallv(send.data(), sc, sd, recv.data(), rc, rd);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(first_mismatch(recv.data() + rd[r], rc[r], r * 100 + me, 5), rc[r])
          << "rank " << me << " block from " << r;
    }
  });
}

TEST_P(Exchange, AlltoallEvenAndMismatchNamed) {
  const int n = 3;
  InProcessWorld world(n);
  auto comms = make(world);
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<std::byte> send(n * 1001), recv(n * 1001);
    for (int r = 0; r < n; ++r) fill(send.data() + r * 1001, 1001, c.rank() * 10 + r, 1);
    c.alltoall(send.data(), recv.data(), 1001);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(first_mismatch(recv.data() + r * 1001, 1001, r * 10 + c.rank(), 1), 1001u);
    }
  });
  // Rank 1 expects 8 bytes from rank 0, which sends 4: named, not a hang.
  std::vector<std::string> errors(n);
  run_on_threads(comms, [&](Communicator& c) {
    std::vector<std::size_t> sc(n, 4), rc(n, 4), d{0, 8, 16};
    if (c.rank() == 1) rc[0] = 8;
    std::vector<std::byte> send(24), recv(24);
    code_of([&] { c.alltoallv(send.data(), sc, d, recv.data(), rc, d); }, &errors[c.rank()]);
  });
  EXPECT_NE(errors[1].find("expects 8 bytes from rank 0, which sends 4"), std::string::npos)
      << errors[1];
}

TEST_P(Exchange, SendRecvTagsOrderAndAnySource) {
  const int n = 4;
  InProcessWorld world(n, {.loss = 0.05, .seed = 2});
  auto comms = make(world);
  const std::size_t big = 300001;  // several segments
  run_on_threads(comms, [&](Communicator& c) {
    const int me = c.rank();
    if (me != 0) {
      // Tag 2 first, then two messages under tag 1: rank 0 takes tag 1 first.
      std::vector<std::byte> a(big), b(7), z;
      fill(a.data(), big, me, 2);
      fill(b.data(), 7, me, 1);
      c.send(a.data(), big, 0, 2);
      c.send(b.data(), 7, 0, 1);
      c.send(z.data(), 0, 0, 1);
      return;
    }
    std::vector<bool> seen(n, false);
    for (int k = 1; k < n; ++k) {
      std::vector<std::byte> b(7);
      const int from = c.recv(b.data(), 7, kAnySource, 1);
      ASSERT_TRUE(from >= 1 && from < n && !seen[from]) << from;
      seen[from] = true;
      EXPECT_EQ(first_mismatch(b.data(), 7, from, 1), 7u);
      EXPECT_EQ(c.recv(nullptr, 0, from, 1), from);  // the empty one, after it
    }
    for (int from = n - 1; from >= 1; --from) {
      std::vector<std::byte> a(big);
      Request r = c.irecv(a.data(), big, from, 2);
      r.wait();
      EXPECT_EQ(r.source(), from);
      EXPECT_EQ(first_mismatch(a.data(), big, from, 2), big);
    }
  });
}

TEST_P(Exchange, RingOfSendsThenReceivesAndSelf) {
  const int n = 3;
  InProcessWorld world(n);
  auto comms = make(world);
  run_on_threads(comms, [&](Communicator& c) {
    const int me = c.rank(), right = (me + 1) % n, left = (me + n - 1) % n;
    std::vector<std::byte> out(5000), in(5000), self(3);
    fill(out.data(), 5000, me, 3);
    c.send(out.data(), 5000, right);  // buffered: no receive posted yet anywhere
    c.send(out.data(), 3, me, 9);
    c.recv(self.data(), 3, me, 9);
    EXPECT_EQ(first_mismatch(self.data(), 3, me, 3), 3u);
    c.recv(in.data(), 5000, left);
    EXPECT_EQ(first_mismatch(in.data(), 5000, left, 3), 5000u);
    c.barrier();  // collectives still line up after point-to-point traffic
  });
}

TEST_P(Exchange, BadArgumentsAndSizeMismatchAreNamed) {
  InProcessWorld world(2);
  CommOptions o;
  o.progress = GetParam();
  o.timeout = std::chrono::milliseconds(300);
  auto comms = create_communicators(world, o);
  std::string msg;
  std::byte b[8];
  EXPECT_EQ(code_of([&] { comms[0].send(b, 8, 2); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("send: peer 2 is out of range"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { comms[0].recv(b, 8, 1, -3); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("tag -3 is negative"), std::string::npos) << msg;
  // A message of 8 bytes into a receive of 4: refused on the receiver.
  comms[1].send(b, 8, 0);
  EXPECT_EQ(code_of([&] { comms[0].recv(b, 4, 1); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("matched a message of 8 bytes from rank 1"), std::string::npos) << msg;
  // Nothing sent: the receive times out, and the communicator still works.
  EXPECT_EQ(code_of([&] { comms[0].recv(b, 8, 1, 5); }, &msg), ErrorCode::kTimeout);
  EXPECT_NE(msg.find("no matching message"), std::string::npos) << msg;
  comms[1].send(b, 8, 0, 6);
  EXPECT_EQ(comms[0].recv(b, 8, kAnySource, 6), 1);
}

// reduce (torch's): a reduce-scatterv whose blocks are all empty but the
// root's.
TEST_P(Exchange, ReduceScatterToOneRank) {
  const int n = 4;
  InProcessWorld world(n);
  auto comms = make(world);
  for (std::size_t count : {std::size_t{1}, std::size_t{1001}, std::size_t{70000}}) {
    run_on_threads(comms, [&](Communicator& c) {
      const int root = 2;
      std::vector<std::size_t> counts(n, 0);
      counts[root] = count;
      std::vector<float> in(count, static_cast<float>(c.rank() + 1)), out(count, 0);
      c.reduce_scatterv(in.data(), c.rank() == root ? out.data() : nullptr, counts,
                        DataType::kFloat32, ReduceOp::kSum);
      if (c.rank() == root) {
        EXPECT_EQ(out.front(), 10.0f);
        EXPECT_EQ(out.back(), 10.0f);
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, Exchange,
                         ::testing::Values(ProgressKind::kInline, ProgressKind::kThread),
                         engine_name);

// The offload daemon does not carry these: refused, naming the engine, on
// every rank alike (a communicator's ranks all run under one engine).
class ExchangeOffload : public EngineTest {};

TEST_P(ExchangeOffload, RefusedNamingTheEngine) {
  InProcessWorld world(2);
  auto comms = create_communicators(world, options());
  std::byte b[4];
  std::vector<std::size_t> c(2, 0), d(2, 0);
  std::string msg;
  EXPECT_EQ(code_of([&] { comms[0].isend(b, 4, 1); }, &msg), ErrorCode::kUnavailable);
  EXPECT_NE(msg.find("send is not served under the offload engine"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { comms[1].irecv(b, 4, 0); }), ErrorCode::kUnavailable);
  for (auto& comm : comms) {
    EXPECT_EQ(code_of([&] { comm.ialltoallv(b, c, d, b + 2, c, d); }), ErrorCode::kUnavailable);
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, ExchangeOffload, ::testing::Values(ProgressKind::kOffload),
                         engine_name);

}  // namespace
}  // namespace mccl::testing
