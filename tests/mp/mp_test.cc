// Multi-process tests: 2-8 processes on this host over UDP loopback
// multicast and the TCP reliable transport, bootstrapped by the TCP store,
// under every progress engine (inline, thread, offload), with and without
// injected loss.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "launcher.h"

namespace mccl::testing {
using namespace mccl::launch;
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// The sum over every rank's output of each number that follows `key`
// (e.g. "repairs_requested=" in the workers' stats lines).
std::uint64_t total_counter(const JobResult& job, const std::string& key) {
  std::uint64_t total = 0;
  for (const auto& rank : job.ranks) {
    for (auto at = rank.output.find(key); at != std::string::npos;
         at = rank.output.find(key, at + key.size())) {
      total += std::strtoull(rank.output.c_str() + at + key.size(), nullptr, 10);
    }
  }
  return total;
}

// The number after `key` in the first line of `text` that contains it; -1
// when there is none.
double number_after(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + key.size(), nullptr);
}

using SweepParam = std::tuple<int, const char*, int>;  // ranks, progress, drop per mille
class MultiProcess : public ::testing::TestWithParam<SweepParam> {};

TEST_P(MultiProcess, SweepIsByteExact) {
  auto [ranks, progress, drop] = GetParam();
  Env env = {{"MCCL_PROGRESS", progress},
             {"MCCL_UDP_TEST_DROP_PERMILLE", std::to_string(drop)},
             {"MCCL_COLL_TIMEOUT_MS", "30000"}};
  JobResult job = run_job(MCCL_MP_WORKER, {"sweep"}, ranks, env, std::chrono::seconds(120));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  if (drop > 0) {
    // Loss was injected, so repairs must have happened somewhere: the
    // counter is printed whatever its value, so its number is what counts.
    EXPECT_GT(total_counter(job, "repairs_requested="), 0u) << describe(job);
  }
}

// Stable test names ("n4_thread_drop10"): the default prints the string's address.
std::string sweep_name(const ::testing::TestParamInfo<SweepParam>& param) {
  const auto& [ranks, progress, drop] = param.param;
  return "n" + std::to_string(ranks) + "_" + progress + "_drop" + std::to_string(drop);
}

INSTANTIATE_TEST_SUITE_P(Loopback, MultiProcess,
                         ::testing::Values(SweepParam{2, "inline", 0}, SweepParam{3, "thread", 0},
                                           SweepParam{4, "inline", 10}, SweepParam{4, "thread", 10},
                                           SweepParam{5, "thread", 0}, SweepParam{8, "thread", 10},
                                           SweepParam{3, "offload", 0},
                                           SweepParam{4, "offload", 10}),
                         sweep_name);

// Buffers overwritten as soon as a call returns: the point-to-point
// algorithms lend the TCP connection the collective's buffers for what the
// socket does not take at once (transport/reliable.h, send_lent), and a
// collective must not return while a send still reads them. 4 MiB per rank
// is far more than a socket takes at once, so each round leaves lent bytes
// queued; each algorithm pinned, each engine. The reductions copy what
// they send (docs/benchmarks/rs-lending-2026-11-29) and are checked the
// same way.
TEST(MultiProcessReuse, BuffersOverwrittenOnReturnArriveAsTheyWereSent) {
  const char* algos[][3] = {{"bruck", "binomial", "rs_mcast"}, {"ring", "chain", "ring"}};
  for (const char* progress : {"inline", "thread", "offload"}) {
    for (const auto& [allgather, bcast, allreduce] : algos) {
      Env env = {{"MCCL_PROGRESS", progress},
                 {"MCCL_COLL_ALLGATHER_ALGO", allgather},
                 {"MCCL_COLL_BCAST_ALGO", bcast},
                 {"MCCL_COLL_ALLREDUCE_ALGO", allreduce},
                 {"MCCL_COLL_TIMEOUT_MS", "30000"}};
      JobResult job = run_job(MCCL_MP_WORKER, {"reuse", std::to_string(4 << 20), "6"}, 3, env,
                              std::chrono::seconds(120));
      ASSERT_FALSE(job.timed_out) << progress << " " << allgather << describe(job);
      for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(job.ranks[r].exit_code, 0) << progress << " " << allgather << describe(job);
      }
    }
  }
}

// The same sweep with UCX as the reliable transport (over tcp on lo: UCX
// refuses shared memory when peer failures must be detected); skipped in a
// build without UCX, where every rank would refuse MCCL_RELIABLE=ucx.
TEST(MultiProcessUcx, SweepIsByteExact) {
  if (!MCCL_TEST_HAVE_UCX) GTEST_SKIP() << "this MCCL was built without UCX";
  for (const char* progress : {"inline", "thread"}) {
    Env env = {{"MCCL_PROGRESS", progress},
               {"MCCL_RELIABLE", "ucx"},
               {"UCX_TLS", "tcp"},
               {"UCX_NET_DEVICES", "lo"},
               {"MCCL_UDP_TEST_DROP_PERMILLE", "10"}};
    JobResult job = run_job(MCCL_MP_WORKER, {"sweep"}, 3, env, std::chrono::seconds(120));
    ASSERT_FALSE(job.timed_out) << describe(job);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << progress << describe(job);
  }
}

// Connections on demand: 32 processes, one loss-free broadcast and one
// allgather, then every rank counts what it holds with the communicator
// alive (bench/setup/setup_worker). A full mesh held 31 TCP connections
// per rank (and rank 0's bootstrap store 32 more): now a rank holds its two
// ring neighbours, and a repair source or a root it tells of loss only when
// the host dropped datagrams, within the connection cache's bound (8);
// descriptors stay under 32 on every rank, rank 0 included (the store lets
// the ranks' connections go once the communicator is created).
TEST(MultiProcessScale, ConnectionsPerRankStayFewAtThirtyTwoRanks) {
  const int ranks = 32;
  // Multicast pinned: its 4 KiB allgather would otherwise go through Bruck's
  // exchange (docs/algorithms.md), which talks to 2 log2(N) peers, up to the
  // cache's bound.
  JobResult job = run_job(MCCL_SETUP_WORKER, {}, ranks,
                          {{"MCCL_PROGRESS", "inline"},
                           {"MCCL_COLL_BCAST_ALGO", "multicast"},
                           {"MCCL_COLL_ALLGATHER_ALGO", "multicast"}},
                          std::chrono::seconds(120));
  ASSERT_FALSE(job.timed_out) << describe(job);
  int ring_only = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::string& out = job.ranks[r].output;
    ASSERT_EQ(job.ranks[r].exit_code, 0) << describe(job);
    ASSERT_NE(out.find("\"validated\":true"), std::string::npos) << describe(job);
    const double tcp = number_after(out, "\"tcp\":");
    const double fds = number_after(out, "\"fds\":");
    EXPECT_GE(tcp, 2) << "rank " << r << " is not connected to its ring neighbours";
    EXPECT_LE(tcp, 8) << "rank " << r << " holds more than the connection cache's bound";
    EXPECT_LE(fds, 32) << "rank " << r << " holds " << fds << " descriptors";
    ring_only += tcp <= 3 ? 1 : 0;
  }
  EXPECT_GE(ring_only, ranks / 2) << "most ranks should hold their ring neighbours and little more"
                                  << describe(job);
}

// Failure tests run under every progress engine, one CTest test each.
class MultiProcessFailure : public ::testing::TestWithParam<const char*> {};

// The daemon keeps its log when a client vanished: not wanted here.
Env failure_env(const char* progress) {
  return {{"MCCL_PROGRESS", progress},
          {"MCCL_COLL_TIMEOUT_MS", "20000"},
          {"MCCL_OFFLOAD_LOG", "/dev/null"}};
}

TEST_P(MultiProcessFailure, KilledRankGivesPeerFailureEverywhere) {
  const int ranks = 4;
  // Under the offload engine the dying process's daemon session is what
  // must turn its exit into the peers' error.
  const char* progress = GetParam();
  JobResult job =
      run_job(MCCL_MP_WORKER, {"die", "2"}, ranks, failure_env(progress), std::chrono::seconds(60));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
    // The error arrives (well before the 20 s collective timeout, or the
    // job would have been killed) and names the dead rank.
    if (r != 2) {
      EXPECT_NE(job.ranks[r].output.find("rank 2"), std::string::npos) << describe(job);
    }
  }
  std::printf("%s", describe(job).c_str());
}

// A rank killed (SIGKILL) while an allgather's data flows: every survivor
// fails with kPeerFailure soon after. "Soon" is the defect this guards
// (under the offload engine the survivors learnt 0.6-1.1 s after the kill
// on a loaded 2-core host, the thread engine 0.07-0.25 s; now 0.03-0.15 s):
// the bound is loose, 3 s, so that a loaded machine passes, and still far
// below the 20 s collective timeout that a missed death would run into.
TEST_P(MultiProcessFailure, KilledRankIsNoticedPromptly) {
  const int ranks = 4, victim = 1;
  const char* progress = GetParam();
  JobResult job = run_job(MCCL_MP_WORKER, {"kill", std::to_string(victim)}, ranks,
                          failure_env(progress), std::chrono::seconds(60));
  ASSERT_FALSE(job.timed_out) << describe(job);
  const double killed_at = number_after(job.ranks[victim].output, "killed at ");
  ASSERT_GT(killed_at, 0) << describe(job);
  for (int r = 0; r < ranks; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
    EXPECT_NE(job.ranks[r].output.find("with peer failure"), std::string::npos) << describe(job);
    const double error_at = number_after(job.ranks[r].output, "error at ");
    ASSERT_GT(error_at, 0) << describe(job);
    std::printf("%s: rank %d failed %.3f s after rank %d was killed\n", progress, r,
                error_at - killed_at, victim);
    EXPECT_LT(error_at - killed_at, 3.0) << describe(job);
  }
}

// One rank cannot set up its multicast transport (its own MCCL_UDP_IFACE
// names no interface): every rank's creation fails in the same call,
// naming that rank. Under offload the setting must reach the daemon, which
// another rank may have started. Rank 0 and the last rank both: one of
// them is usually the rank that starts the daemon.
TEST_P(MultiProcessFailure, SetupFailsOnOneRankFailsEveryRank) {
  const int ranks = 3;
  for (int victim : {0, ranks - 1}) {
    JobResult job = run_job(MCCL_MP_WORKER, {"setup-fails", std::to_string(victim)}, ranks,
                            failure_env(GetParam()), std::chrono::seconds(60));
    ASSERT_FALSE(job.timed_out) << describe(job);
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
  }
}

// CommOptions::setup_timeout wins over MCCL_TRANSPORT_SETUP_TIMEOUT_MS under
// every engine (under offload the daemon gets it in the hello): no rank
// hears the group (every datagram received is dropped), so the multicast
// probe cannot succeed, and every rank must fail with kUnavailable quoting
// the option's 400 ms. The environment's 10 minutes would outlast the
// job's deadline, which is only a guard against a hang, not a timing check.
TEST_P(MultiProcessFailure, SetupTimeoutOptionBoundsCreation) {
  const int ranks = 3;
  Env env = failure_env(GetParam());
  env.emplace_back("MCCL_TRANSPORT_SETUP_TIMEOUT_MS", "600000");
  env.emplace_back("MCCL_UDP_TEST_DROP_PERMILLE", "1000");
  JobResult job =
      run_job(MCCL_MP_WORKER, {"setup-timeout", "400"}, ranks, env, std::chrono::seconds(90));
  ASSERT_FALSE(job.timed_out) << describe(job);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(job.ranks[r].exit_code, 0) << describe(job);
}

INSTANTIATE_TEST_SUITE_P(Engines, MultiProcessFailure,
                         ::testing::Values("inline", "thread", "offload"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

}  // namespace
}  // namespace mccl::testing
