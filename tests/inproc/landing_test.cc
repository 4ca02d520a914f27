// One copy per byte on receive, end to end: over UDP on lo the payloads of
// a broadcast land straight in the receivers' buffers (Stats::
// mcast_bytes_copied counts the bytes that did not), with and without
// loss, under one root and under several (an allgather, whose roots'
// datagrams interleave). Over the in-memory fabric, which lands nothing,
// every byte received counts as copied. On the root's side, helper threads
// that seal its datagrams ahead of it (MCCL_PROTO_HELPER_THREADS) change no
// byte of what arrives.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "reduce_util.h"

namespace mccl::testing {
namespace {

using namespace std::chrono_literals;

struct Totals {
  std::uint64_t received = 0, copied = 0, repaired = 0;
  std::uint64_t sent = 0, sealed_ahead = 0, invalid = 0;
};

Totals totals(std::vector<Communicator>& comms) {
  Totals t;
  for (auto& c : comms) {
    const Stats s = c.stats();
    t.received += s.mcast_bytes_received;
    t.copied += s.mcast_bytes_copied;
    t.repaired += s.repairs_requested;
    t.sent += s.mcast_datagrams_sent;
    t.sealed_ahead += s.mcast_datagrams_sealed_ahead;
    t.invalid += s.dropped_invalid;
  }
  return t;
}

// `rounds` broadcasts of `bytes` from rank 0 then an allgather of `bytes`
// per rank, every byte checked on every rank.
void broadcast_and_allgather(std::vector<Communicator>& comms, std::size_t bytes, int rounds) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::vector<std::byte>> bufs(n, std::vector<std::byte>(bytes));
  for (int round = 0; round < rounds; ++round) {
    fill(bufs[0].data(), bytes, 0, 100 + round);
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) reqs.push_back(comms[r].ibroadcast(bufs[r].data(), bytes, 0));
    drive(reqs, 60s);
    for (int r = 1; r < n; ++r) {
      ASSERT_EQ(first_mismatch(bufs[r].data(), bytes, 0, 100 + round), bytes)
          << "broadcast " << round << ", rank " << r;
    }
  }
  std::vector<std::vector<std::byte>> send(n, std::vector<std::byte>(bytes));
  std::vector<std::vector<std::byte>> recv(n, std::vector<std::byte>(n * bytes));
  std::vector<Request> reqs;
  for (int r = 0; r < n; ++r) {
    fill(send[r].data(), bytes, r, 7);
    reqs.push_back(comms[r].iallgather(send[r].data(), recv[r].data(), bytes));
  }
  drive(reqs, 60s);
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b) {
      ASSERT_EQ(first_mismatch(recv[r].data() + b * bytes, bytes, b, 7), bytes)
          << "allgather: rank " << r << ", block " << b;
    }
  }
}

TEST(Landing, OverUdpMostBytesAreNotCopiedAgain) {
  InProcessWorld world(3);
  auto comms = create_communicators(
      world, {.transport = TransportKind::kUdp, .progress = ProgressKind::kInline, .timeout = 60s});
  broadcast_and_allgather(comms, 1 << 20, 6);
  const Totals t = totals(comms);
  ASSERT_GT(t.received, 0u);
  EXPECT_LT(t.copied, t.received / 2)
      << t.copied << " of " << t.received << " bytes received were copied after the kernel's copy";
}

TEST(Landing, OverUdpWithLossEveryByteIsStillRight) {
  ScopedEnv env;
  env.set("MCCL_UDP_TEST_DROP_PERMILLE", "50");
  InProcessWorld world(3);
  auto comms = create_communicators(
      world, {.transport = TransportKind::kUdp, .progress = ProgressKind::kInline, .timeout = 60s});
  broadcast_and_allgather(comms, 1 << 20, 4);
  const Totals t = totals(comms);
  EXPECT_GT(t.repaired, 0u) << "5% of the datagrams were dropped, yet nothing was repaired";
  EXPECT_LT(t.copied, t.received);
}

// The allreduce's allgather step (a schedule's multicast step) lands too,
// but only once it runs: before, the reduce-scatter stages partial sums in
// the same buffer. The sums are right and identical on every rank.
TEST(Landing, TheAllreducesAllgatherLandsOnceItRuns) {
  InProcessWorld world(3);
  auto comms =
      create_communicators(world, {.transport = TransportKind::kUdp,
                                   .progress = ProgressKind::kInline,
                                   .timeout = 60s,
                                   .allreduce_algorithm = AllreduceAlgorithm::kRsMulticast});
  const int n = 3;
  const std::size_t count = 3 << 18;  // 3 MiB of float32: 1 MiB per rank's block
  const DataType t = DataType::kFloat32;
  for (std::uint64_t salt = 1; salt <= 3; ++salt) {
    std::vector<std::vector<std::byte>> in(n), out(n, std::vector<std::byte>(count * 4));
    std::vector<Request> reqs;
    for (int r = 0; r < n; ++r) {
      in[r] = make_input(t, ReduceOp::kSum, r, 0, count, salt);
      reqs.push_back(comms[r].iallreduce(in[r].data(), out[r].data(), count, t, ReduceOp::kSum));
    }
    drive(reqs, 60s);
    ASSERT_TRUE(check_reduced(t, ReduceOp::kSum, out[0].data(), n, 0, count, salt));
    for (int r = 1; r < n; ++r) ASSERT_EQ(out[r], out[0]) << "rank " << r << ", salt " << salt;
  }
  const Totals tot = totals(comms);
  ASSERT_GT(tot.received, 0u) << "the allreduce's allgather did multicast";
  EXPECT_LT(tot.copied, tot.received / 2) << tot.copied << " of " << tot.received;
}

TEST(Landing, OverTheInMemoryFabricEveryByteIsCopied) {
  InProcessWorld world(3);
  auto comms = create_communicators(world);
  broadcast_and_allgather(comms, 200000, 2);
  const Totals t = totals(comms);
  ASSERT_GT(t.received, 0u);
  EXPECT_EQ(t.copied, t.received);
}

// Roots whose headers helpers seal ahead, over UDP with loss and over the
// in-memory fabric, both authenticating: every byte right, and no datagram
// refused for its MAC (a wrong header would be repaired, not seen, so the
// refusals are what tells).
TEST(SealAhead, HelpersSealingARootsDatagramsChangeNoByte) {
  ScopedEnv env;
  env.set("MCCL_PROTO_HELPER_THREADS", "2");
  env.set("MCCL_PROTO_AUTH", "on");
  Totals all;
  for (const TransportKind kind : {TransportKind::kUdp, TransportKind::kSim}) {
    env.set("MCCL_UDP_TEST_DROP_PERMILLE", kind == TransportKind::kUdp ? "20" : "0");
    InProcessWorld world(3);
    auto comms = create_communicators(
        world, {.transport = kind, .progress = ProgressKind::kInline, .timeout = 60s});
    broadcast_and_allgather(comms, 3 << 20, 4);
    const Totals t = totals(comms);
    EXPECT_EQ(t.invalid, 0u) << "datagrams refused as invalid";
    EXPECT_LE(t.sealed_ahead, t.sent);
    all.sealed_ahead += t.sealed_ahead;
  }
  EXPECT_GT(all.sealed_ahead, 0u) << "no helper sealed any datagram of 10 collectives";
}

}  // namespace
}  // namespace mccl::testing
